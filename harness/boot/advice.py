"""What a failed boot tells the user to do, beside the log tail `harness.boot.service` shows:

    unconfirmed(report, run_id) -> ServiceError   the pids a teardown could not end, and how to
    import_hints(log, command, env, spec)         for "No module named X": which interpreter ran
                                                  the service, and the fix ({python}, the venv)
"""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Mapping
from pathlib import Path

from harness.boot.isolation import MARKER_ENV
from harness.boot.processes import TeardownReport
from harness.config import ServiceConfig
from harness.errors import ServiceError


def unconfirmed(report: TeardownReport, run_id: str) -> ServiceError:
    """The error of a teardown that left processes running: their pids and how to end them."""
    pids = " ".join(str(p) for p in report.survivors)
    return ServiceError(
        f"service teardown not confirmed: pids {pids} still running after SIGKILL",
        [
            f"they carry {MARKER_ENV}={run_id} in their environment; end them by hand "
            f"(kill -9 {pids}) and check for processes stuck in uninterruptible sleep (ps -o stat)"
        ],
        stage="teardown",
    )


_PYTHON_WORD = re.compile(r"^python(\d+(\.\d+)?)?$")


def import_hints(
    log: str, command: str, env: Mapping[str, str], spec: ServiceConfig
) -> list[str]:
    """When the service died of `No module named ...`: which interpreter ran it, and the fix."""
    missing = re.search(r"No module named '?([\w.]+)", log)
    if missing is None:
        return []
    module = missing.group(1)
    venv = env.get("VIRTUAL_ENV")
    if not venv:
        return [
            f"the service could not import {module!r}: set service.venv = true, install it "
            'in service.build (e.g. build = "python -m pip install -r requirements.txt"), '
            "and start it with {python}"
        ]
    ours = Path(venv) / "bin" / "python"
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    for word in words:
        if _PYTHON_WORD.match(word) or word.endswith("/python") or "/python3" in word:
            found = shutil.which(word, path=env.get("PATH")) if "/" not in word else word
            if found and Path(found).parent != ours.parent:
                return [
                    f"the service could not import {module!r}: `{word}` in service.start is "
                    f"{found}, not the venv's interpreter {ours}; write {{python}} instead"
                ]
    return [
        f"the service could not import {module!r} from the venv {venv}: install it in "
        "service.build (e.g. python -m pip install -e .), and start it with {python}"
    ]

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


_FORK_FAILED = re.compile(
    r"cannot fork|can't fork|fork: retry|resource temporarily unavailable|"
    r"can't start new thread|eagain|blockingioerror",
    re.IGNORECASE,
)
_DENIED = re.compile(r"permission denied|eacces", re.IGNORECASE)
_NO_SPACE = re.compile(r"no space left on device|enospc", re.IGNORECASE)


def limit_hints(log: str, spec: ServiceConfig, ids: tuple[int, int] | None) -> list[str]:
    """For a sandboxed service that failed: the sandbox's limit its log suggests it met (its
    processes, its writable folders) and, when it runs as a uid of its own (`ids`: the harness
    is root), that a file it could not open must be readable by others."""
    hints = []
    if _FORK_FAILED.search(log):
        hints.append(
            f"maybe: it met service.max_processes = {spec.max_processes} (processes and "
            "threads, counted together); raise it if the service needs more"
        )
    if _NO_SPACE.search(log):
        hints.append(
            f"maybe: HOME, TMPDIR, an XDG_* folder or /dev/shm is full: each holds at most "
            f"service.max_folder_bytes = {spec.max_folder_bytes} bytes, in memory; raise it, or "
            "write large files into the data copy ({data})"
        )
    if ids is not None and _DENIED.search(log):
        hints.append(
            f"maybe: harness runs as root, and the service as uid {ids[0]}, never root: what it "
            "reads (your files, the interpreter, the data) must be readable by others "
            "(chmod -R o+rX, or a umask of 022 when they are made)"
        )
    return hints

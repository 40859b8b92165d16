"""A service that starts many processes: the harness survives it, and says when it met its limit.

Each case boots, through the real boot path, a service whose start command forks N sleepers
before it serves, in a driver process of its own whose soft file-descriptor limit is far below
N (a soft `ulimit -n` of 1024 is common; here 128): one pidfd per process used to exhaust it in
the middle of the teardown (EMFILE, a traceback, exit 1, the boot root left behind).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.boot import sandbox

DRIVER = textwrap.dedent(
    """
    import json, resource, sys
    from pathlib import Path
    from harness.boot import service
    from harness.config import ServiceConfig
    from harness.errors import ServiceError

    work, mode, count, most = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (128, hard))
    start = (
        f"i=0; while [ $i -lt {count} ]; do sleep 300 & i=$((i+1)); done; "
        "exec {python} -m http.server {port} --bind 127.0.0.1"
    )
    spec = ServiceConfig(start, "/", ready_timeout=60.0, max_processes=most)
    ctx = service.running_service(
        spec, work, log_path=work / "svc.log", temp_parent=work / "roots", sandbox=mode
    )
    told = {}
    try:
        with ctx:
            pass
    except ServiceError as exc:
        told["error"] = str(exc)
    report = ctx.teardown
    told.update(confirmed=report.confirmed, killed=len(report.killed_pids), tasks=report.tasks,
                limit=ctx.limit_reached(), roots=[p.name for p in (work / "roots").iterdir()])
    print(json.dumps(told))
    """
)

MODES = [
    "plain",
    pytest.param(
        "bubblewrap",
        marks=pytest.mark.skipif(
            sandbox.sandbox_mode({}) != sandbox.BUBBLEWRAP, reason="no usable bubblewrap"
        ),
    ),
]


def _drive(tmp_path: Path, mode: str, count: int, most: int) -> dict[str, object]:
    work = tmp_path / "work"
    (work / "roots").mkdir(parents=True)
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(work), mode, str(count), str(most)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    told: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return told


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_a_teardown_ends_more_processes_than_the_harness_has_file_descriptors(
    tmp_path: Path, mode: str
) -> None:
    told = _drive(tmp_path, mode, count=400, most=4096)
    assert "error" not in told, told
    assert told["confirmed"] is True
    assert isinstance(told["killed"], int) and told["killed"] > 400  # > 128 descriptors
    assert told["roots"] == []  # the boot root is gone
    assert told["limit"] is None


@pytest.mark.slow
@pytest.mark.skipif(
    sandbox.sandbox_mode({}) != sandbox.BUBBLEWRAP, reason="no usable bubblewrap"
)
def test_a_service_past_its_process_limit_is_told_so(tmp_path: Path) -> None:
    # 200 sleepers asked for, 64 allowed: the shell's forks fail, the server still starts
    # (or not: either way the harness names the limit), and the teardown is confirmed.
    told = _drive(tmp_path, "bubblewrap", count=200, most=64)
    assert told["confirmed"] is True and told["roots"] == []
    said = str(told.get("limit") or "") + str(told.get("error") or "")
    assert "service.max_processes = 64" in said, told


def test_the_seccomp_program_is_whole_instructions_and_known_machines_only() -> None:
    from harness.boot import seccomp

    for machine in ("x86_64", "aarch64"):
        code = seccomp.program(machine)
        assert code is not None and len(code) % 8 == 0 and 0 < len(code) // 8 < 64
    assert seccomp.program("sparc64") is None

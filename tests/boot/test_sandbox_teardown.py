"""A service in the bubblewrap sandbox is stopped as docs/compare.md says, SIGTERM then grace
then SIGKILL: it sees its SIGTERM. Signalled together with bwrap, it did not: bwrap ended first,
and the kernel killed everything in its PID namespace before the service's handler ran (the
demo service's "svc: stopped" was in no sandboxed log, and in every plain one)."""

from __future__ import annotations

import os
from pathlib import Path

import cli_server
import pytest

from harness.boot import sandbox

pytestmark = [
    pytest.mark.skipif(
        sandbox.sandbox_mode({}) != sandbox.BUBBLEWRAP, reason="no usable bubblewrap"
    ),
    pytest.mark.slow,
]


def test_a_sandboxed_service_gets_its_sigterm(tmp_path: Path) -> None:
    from harness.demo import materialise

    repo = materialise(tmp_path / "demo")
    results = tmp_path / "results"
    done = cli_server.run(
        "-m harness.cli.main",
        ["run", "--ref", "main", "--repeats", "1", "-q", "--results", str(results)],
        cwd=repo, env=os.environ, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    logs = sorted((results / "logs").glob("*.log"))
    assert logs, "no service log"
    text = logs[-1].read_text(errors="replace")
    assert "svc: stopped" in text, text[-1500:]  # the demo's SIGTERM handler ran

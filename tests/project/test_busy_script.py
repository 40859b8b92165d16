"""scripts/busy.py: the command runs under bursts of busy loops, its exit status is the
script's, and no busy loop outlives it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psutil

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "busy.py"
SPIN = "while True: pass"


def _spinning() -> list[int]:
    return [
        p.pid
        for p in psutil.process_iter(["cmdline", "status"])
        if p.info["cmdline"]
        and p.info["cmdline"][-1] == SPIN
        and p.info["status"] != psutil.STATUS_ZOMBIE
    ]


def test_the_command_runs_under_bursts_and_its_status_is_returned() -> None:
    # The command waits until it has seen a busy loop running beside it, then exits 3.
    waits = (
        "import sys, time, psutil\n"
        "deadline = time.monotonic() + 60\n"
        "while not any(p.info['cmdline'] and p.info['cmdline'][-1] == 'while True: pass'\n"
        "              for p in psutil.process_iter(['cmdline'])):\n"
        "    assert time.monotonic() < deadline\n"
        "    time.sleep(0.05)\n"
        "sys.exit(3)\n"
    )
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--processes", "2", "--on", "0.3", "--off", "0.1", "--",
         sys.executable, "-c", waits],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "bursts of 1-2 busy loops" in done.stderr and "exited 3" in done.stderr
    assert _spinning() == []


def test_no_command_is_a_usage_error() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--on", "1"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2 and "give a COMMAND after --" in done.stderr

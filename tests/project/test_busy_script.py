"""scripts/busy.py: the command runs under bursts of busy loops, its exit status is the
script's, and no busy loop outlives it."""

from __future__ import annotations

import runpy
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "busy.py"


def _spinning(owner: int) -> list[int]:
    """The busy loops of the busy.py process `owner` still alive (each names its owner last:
    another busy.py, one running this very test, has loops of its own)."""
    return [
        p.pid
        for p in psutil.process_iter(["cmdline", "status"])
        if p.info["cmdline"]
        and p.info["cmdline"][-1] == f"busy.py:{owner}"
        and p.info["status"] != psutil.STATUS_ZOMBIE
    ]


def test_the_command_runs_under_bursts_and_its_status_is_returned() -> None:
    # The command waits until it has seen a busy loop of its parent's running, then exits 3.
    waits = (
        "import os, sys, time, psutil\n"
        "mine = f'busy.py:{os.getppid()}'\n"
        "deadline = time.monotonic() + 60\n"
        "while not any(p.info['cmdline'] and p.info['cmdline'][-1] == mine\n"
        "              for p in psutil.process_iter(['cmdline'])):\n"
        "    assert time.monotonic() < deadline\n"
        "    time.sleep(0.05)\n"
        "sys.exit(3)\n"
    )
    busy = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--processes", "2", "--on", "0.3", "--off", "0.1", "--",
         sys.executable, "-c", waits],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        _, stderr = busy.communicate(timeout=120)
    finally:
        if busy.poll() is None:
            busy.kill()
            busy.wait()
    assert busy.returncode == 3, stderr
    assert "bursts of 1-2 busy loops" in stderr and "exited 3" in stderr
    assert _spinning(busy.pid) == []


def test_a_busy_loop_whose_busy_py_is_gone_before_it_starts_ends_at_once() -> None:
    # busy.py killed before a loop's Python has started: the loop is already someone else's
    # child (here this test's, never the busy.py its name gives), and must not spin on.
    spin = runpy.run_path(str(SCRIPT))["SPIN"]
    gone = subprocess.Popen(["true"])
    gone.wait()
    done = subprocess.run([sys.executable, "-c", spin, f"busy.py:{gone.pid}"], timeout=30)
    assert done.returncode == 0


def test_no_command_is_a_usage_error() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--on", "1"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2 and "give a COMMAND after --" in done.stderr


def test_the_busy_loops_end_themselves_when_busy_py_is_killed() -> None:
    busy = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--processes", "2", "--on", "30", "--", "sleep", "60"],
        stderr=subprocess.DEVNULL,
    )
    command: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 30
        while not _spinning(busy.pid):
            assert time.monotonic() < deadline, "no busy loop started"
            time.sleep(0.05)
        command = [c for c in psutil.Process(busy.pid).children() if c.name() == "sleep"]
        busy.send_signal(signal.SIGKILL)  # no finally of its own runs
        busy.wait()
        deadline = time.monotonic() + 30
        while _spinning(busy.pid):
            assert time.monotonic() < deadline, "a busy loop outlived its busy.py"
            time.sleep(0.05)
    finally:
        if busy.poll() is None:
            busy.kill()
            busy.wait()
        for proc in command:  # the command itself is the caller's to end, as after any SIGKILL
            proc.kill()
        psutil.wait_procs(command, timeout=10)

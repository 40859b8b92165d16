"""A Ctrl-C that lands where Python cannot raise it (`harness.process.signals`'s
`interrupts_redelivered`).

A signal's KeyboardInterrupt is raised wherever the main thread is; inside a weakref callback or
a `__del__` that the garbage collector runs, Python cannot raise it: by default it prints
"Exception ignored in ... Traceback" and drops it.  A second Ctrl-C of an interrupted compare
once landed there in CI (tests/driver/test_recovery.py's three Ctrl-C 30 ms apart).  Each case
runs in a fresh interpreter: what is tested is the process's hook and its main thread's signals.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import signal, sys, time, weakref
from harness.process.signals import (
    Terminated, install_signal_handlers, interrupts_redelivered, signals_deferred)

raising = {"int": KeyboardInterrupt, "term": lambda: Terminated(signal.SIGTERM),
           "other": ZeroDivisionError}[sys.argv[1]]
install_signal_handlers()

class Thing:
    pass

def landed(ref):  # where the exception lands: a callback Python cannot raise from
    raise raising()

def work():
    thing = Thing()
    keep = weakref.ref(thing, landed)
    del thing  # the callback runs here
    for _ in range(2000):
        time.sleep(0.001)

try:
    with interrupts_redelivered():
        if sys.argv[2] == "deferred":
            with signals_deferred():
                work()
                print("the deferred block ran to its end")
        else:
            work()
    print("not raised")
except Terminated as exc:
    print(f"raised Terminated {exc.signum}")
except KeyboardInterrupt:
    print("raised KeyboardInterrupt")
"""


def _run(raising: str, guard: str = "plain") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, raising, guard],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("raising", "said"),
    [("int", "raised KeyboardInterrupt"), ("term", "raised Terminated 15")],
)
def test_an_interrupt_landing_in_a_gc_callback_is_raised_a_moment_later_not_printed(
    raising: str, said: str
) -> None:
    done = _run(raising)
    assert done.stdout.splitlines() == [said], done.stdout + done.stderr
    assert done.stderr == ""


def test_inside_a_deferred_block_it_waits_for_the_block_to_end() -> None:
    done = _run("int", "deferred")
    assert done.stdout.splitlines() == [
        "the deferred block ran to its end",
        "raised KeyboardInterrupt",
    ], done.stdout + done.stderr
    assert done.stderr == ""


def test_any_other_error_there_is_reported_as_python_reports_it() -> None:
    done = _run("other")
    assert done.stdout.splitlines() == ["not raised"]
    assert "Exception ignored in" in done.stderr and "ZeroDivisionError" in done.stderr


CLI = """
import sys, time, weakref
import harness.cli.main as cli

class Thing:
    pass

def landed(ref):
    raise KeyboardInterrupt()

def run(args):  # a command whose Ctrl-C lands in a weakref callback
    thing = Thing()
    keep = weakref.ref(thing, landed)
    del thing
    for _ in range(2000):
        time.sleep(0.001)
    return 0

cli.command = lambda name: run
sys.exit(cli.main(["clean", "--dry-run"]))
"""


def test_the_cli_ends_such_a_run_as_interrupted_without_a_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CLI], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 130, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert "harness: interrupted; every service and worktree was torn down" in done.stderr

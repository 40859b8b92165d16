"""How a service that stopped answering ended, in words: its exit status, awaited when its
connections were refused, and the round's message with the exit said first.

    exited(svc_cm, wait=False) -> int | None    the leader's exit status once it has exited
    ended(status) -> str                          "exited with status 7", "was killed by SIGKILL"
    unhinted(message) -> str                      a stopped round's message without its guess
    exit_first(said, message) -> str              how it ended, then why the round stopped

A round stopped for failures in a row (`harness.replay.client.Streak`) guesses why: stalled
(timeouts) or nothing taking its connections.  A service that exited while being queried has a
better answer, its exit status, and `RefSession` says that instead of the guess.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal

from harness.boot.deployed import DeployedContext
from harness.boot.processes import exit_status
from harness.boot.service import ServiceContext
from harness.replay.client import STOP_HINTS


def exited(svc_cm: ServiceContext | DeployedContext | None, *, wait: bool = False) -> int | None:
    """The exit status of a booted service's leader once it has exited (negative: the signal
    that killed it); None while it runs, and for a deployment, whose process is not ours.
    With `wait`, its exit is awaited up to service.kill_wait seconds: a process whose sockets
    the kernel has closed takes a moment more to be seen exited (its shell longer still)."""
    if not isinstance(svc_cm, ServiceContext) or svc_cm.service is None:
        return None
    pid = svc_cm.service.pid
    if wait and exit_status(pid) is None:
        with contextlib.suppress(OSError, AttributeError):  # no pidfd: no wait
            fd = os.pidfd_open(pid)
            try:
                select.select([fd], [], [], svc_cm.spec.kill_wait)  # readable once it exits
            finally:
                os.close(fd)
    return exit_status(pid)


def ended(status: int | None) -> str:
    """How a service's exit reads: "exited with status 3", "was killed by SIGKILL"."""
    if status is None:
        return "exited"
    if status >= 0:
        return f"exited with status {status}"
    try:
        return f"was killed by {signal.Signals(-status).name}"
    except ValueError:
        return f"was killed by signal {-status}"


def unhinted(message: str) -> str:
    """A stopped round's message without its guess at why (`STOP_HINTS`): the service exited."""
    for hint in STOP_HINTS.values():
        message = message.removesuffix(hint)
    return message


def exit_first(said: str, message: str) -> str:
    """`message` when it already begins with how the service ended, else `said; message`."""
    return message if message.startswith("the service ") else f"{said}; {message}"

"""The harness process's own signals: SIGTERM and SIGHUP unwind like Ctrl-C, and the few blocks
that no signal may cut short.

    with signals_unwind(): ...         # SIGTERM/SIGHUP raise Terminated, a KeyboardInterrupt
    with signals_deferred(): ...       # a teardown (or a state file's rewrite) no Ctrl-C cuts short
    with signals_ignored(): ...        # the last words of an interrupted run
    with interrupts_redelivered(): ... # a Ctrl-C that lands where Python cannot raise it

Python dies on SIGTERM without running `finally`; `signals_unwind()` (or
`install_signal_handlers()`) turns SIGTERM and SIGHUP into `Terminated`, so a `kill` of the
harness unwinds like Ctrl-C and every service is torn down (`harness.boot.processes` ends them).
Imports nothing of the harness: every stage that tears something down uses it.
"""

from __future__ import annotations

import _thread
import contextlib
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

DEFERRED = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP reached the harness: unwinds like Ctrl-C, so every `finally` (and every
    service teardown) runs. `signum` says which; a CLI exits 128 + signum."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"received {signal.Signals(signum).name}")
        self.signum = signum


def install_signal_handlers() -> Callable[[], None]:
    """Make SIGTERM and SIGHUP raise Terminated in the main thread; return a function that puts
    the previous handlers back. Python's default for SIGTERM is to die on the spot, skipping
    every `finally`: the services booted in their own sessions would be left running. SIGINT
    already raises KeyboardInterrupt. Call from the main thread (signal.signal's rule)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Terminated(signum)

    previous: dict[signal.Signals, Any] = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        previous[sig] = signal.signal(sig, handler)

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, signal.SIG_DFL if old is None else old)

    return restore


@contextlib.contextmanager
def signals_unwind() -> Iterator[None]:
    """`install_signal_handlers()` for the duration of a with-block."""
    restore = install_signal_handlers()
    try:
        yield
    finally:
        restore()


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP for the block (a second Ctrl-C must not cut a teardown short);
    they are re-raised as soon as it ends.

    Python-level handlers are swapped for a recorder rather than blocking the signals with
    pthread_sigmask: a mask is per thread, so with any other thread alive the kernel would deliver
    the signal there and the main thread would still raise KeyboardInterrupt mid-teardown.
    Handlers can only be set from the main thread; elsewhere the block runs unguarded.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []

    def record(signum: int, frame: object) -> None:
        pending.append(signum)

    old = {sig: signal.signal(sig, record) for sig in DEFERRED}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        for signum in dict.fromkeys(pending):
            signal.raise_signal(signum)


@contextlib.contextmanager
def signals_ignored(*, restore: bool = True) -> Iterator[None]:
    """Ignore SIGINT/SIGTERM/SIGHUP for the block, and drop them: the run is already ending on
    one, so a third Ctrl-C must not cut short the check of what is left nor the line saying it.
    With restore=False they stay ignored after it (a process about to exit 130, which a Ctrl-C
    during the interpreter's shutdown would turn into a death by SIGINT). Main thread only;
    elsewhere unguarded."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {sig: signal.signal(sig, signal.SIG_IGN) for sig in DEFERRED}
    try:
        yield
    finally:
        for sig, handler in old.items():
            if restore:
                signal.signal(sig, handler)


@contextlib.contextmanager
def interrupts_redelivered() -> Iterator[None]:
    """A Ctrl-C (or SIGTERM/SIGHUP's Terminated) whose KeyboardInterrupt lands where Python
    cannot raise it (a weakref callback or a `__del__` run by the garbage collector) is not
    dropped with an "Exception ignored in ... Traceback" on stderr: it is delivered again a
    moment later, as if the signal had come then, so the main thread raises it (or records it
    inside `signals_deferred`, or drops it while `signals_ignored`) in code that can.  A second
    Ctrl-C during an interrupted run's unwinding once landed there (CI, under load).  Every other
    unraisable exception is reported as before.  The hook is the process's: restored after."""
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        exc = unraisable.exc_value
        if not isinstance(exc, KeyboardInterrupt):
            previous(unraisable)
            return
        # From another thread, a moment later: set here, the flag would be acted on inside this
        # hook at once (an "Exception ignored in sys.unraisablehook"); threading.Thread.start
        # would wait here for the thread.  Should it land in a callback again, this runs again.
        with contextlib.suppress(RuntimeError):  # shutting down: the run is ending anyway
            _thread.start_new_thread(_interrupt_later, (getattr(exc, "signum", signal.SIGINT),))

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


def _interrupt_later(signum: signal.Signals) -> None:
    time.sleep(0.001)  # the main thread is back out of the callback by then (else: again)
    _thread.interrupt_main(signum)

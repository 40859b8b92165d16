"""Ending what the harness started, and the harness's own signals.

    tree = ProcessTree(run_id, poll_interval=0.05, kill_rounds=3)   # one boot's processes
    tree.leader = popen; tree.collect()                # at ready: walk its descendants
    report = tree.stop(stop_timeout, kill_wait)        # TeardownReport: confirmed dead or not
    kill_group(popen, grace)                           # one command's process group (the build)
    with signals_unwind(): ...                         # SIGTERM/SIGHUP unwind like Ctrl-C
    with signals_deferred(): ...                       # a teardown no second Ctrl-C can cut short

Teardown is by process group, SIGTERM then SIGKILL. A boot's processes are found three ways: the
leader (our child, never reaped before the end), its descendants (walked while alive), and any
process whose environment carries MARKER_ENV=run_id (orphans re-parented to init, daemons that
called setsid(), leftovers of prepare commands).

The harness itself: Python dies on SIGTERM without running `finally`; `signals_unwind()` (or
`install_signal_handlers()`) turns SIGTERM and SIGHUP into `Terminated`, a KeyboardInterrupt, so a
`kill` of the harness unwinds like Ctrl-C and every service is torn down.

In a bubblewrap sandbox (`harness.boot.sandbox`) every process of the boot, an orphan included,
stays a descendant of the leader (bwrap) inside its PID namespace, so the walk finds them all; and
when the namespace's init ends, the kernel kills whatever is left. Plain isolation's limitation
(stated in the README too): a process found neither in the service's descendant tree (walked
before SIGTERM and again before SIGKILL) nor by the MARKER_ENV marker in its environment (a
double-forked daemon that also scrubbed its environment) cannot be found without cgroups.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any

import psutil

from harness.boot.isolation import MARKER_ENV

_DEFERRED_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


@dataclass(frozen=True)
class TeardownReport:
    """How a service was taken down. `confirmed` only when no process of it is left running."""

    confirmed: bool
    killed_pids: tuple[int, ...]  # every process of the service alive when signalled
    used_sigkill: bool  # something outlived SIGTERM and stop_timeout
    seconds: float
    survivors: tuple[int, ...] = ()  # still running after every kill round
    exit_status: int | None = None  # of the leader: negative = killed by that signal
    died_before_teardown: bool = False  # the leader had already exited when teardown began


def exit_status(pid: int) -> int | None:
    """The exit status of our child `pid` if it has ended, WITHOUT reaping it: while it is a
    zombie its pid (and so its process group id) cannot be reused, so signalling the group can
    never hit a stranger. Negative = killed by that signal."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return None
    if info is None or info.si_pid == 0:
        return None
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


def _alive(proc: psutil.Process) -> bool:
    """Running and not a zombie (a zombie holds no resources; init or we will reap it)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def find_marked(run_id: str) -> list[psutil.Process]:
    """Every live process of our uid whose environment carries MARKER_ENV=run_id."""
    found = []
    for proc in psutil.process_iter(["uids"]):
        uids = proc.info.get("uids")
        if uids is None or uids.real != os.getuid() or proc.pid == os.getpid():
            continue
        try:
            if proc.environ().get(MARKER_ENV) == run_id and _alive(proc):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _signal(proc: psutil.Process, sig: signal.Signals) -> None:
    with contextlib.suppress(psutil.Error):  # gone meanwhile, or never ours
        proc.send_signal(sig)


class ProcessTree:
    """Every process one boot started, found three ways: the leader (our child, never reaped
    before the end), its descendants (walked while alive: at ready, before SIGTERM, before each
    SIGKILL), and any process carrying MARKER_ENV=run_id (orphans re-parented to init, daemons
    that called setsid(), leftovers of prepare commands).

    `poll_interval` (seconds) is how often `stop` checks whether they are gone; `kill_rounds` is
    how many collect-then-SIGKILL rounds it makes before declaring survivors."""

    def __init__(self, run_id: str, *, poll_interval: float, kill_rounds: int) -> None:
        self.run_id = run_id
        self.poll_interval = poll_interval
        self.kill_rounds = kill_rounds
        self.leader: subprocess.Popen[bytes] | None = None
        self.tracked: dict[int, psutil.Process] = {}

    def collect(self) -> list[psutil.Process]:
        """Track every process found now; return the live ones."""
        roots = list(self.tracked.values())
        if self.leader is not None:
            with contextlib.suppress(psutil.Error):
                roots.append(psutil.Process(self.leader.pid))
        found = [*roots, *find_marked(self.run_id)]
        for proc in list(found):
            with contextlib.suppress(psutil.Error):
                found += proc.children(recursive=True)
        for proc in found:
            self.tracked.setdefault(proc.pid, proc)
        return [p for p in self.tracked.values() if _alive(p)]

    def _wait_gone(self, timeout: float) -> list[psutil.Process]:
        deadline = time.monotonic() + timeout
        while (
            live := [p for p in self.tracked.values() if _alive(p)]
        ) and time.monotonic() < deadline:
            time.sleep(self.poll_interval)
        return live

    def _signal_all(self, live: list[psutil.Process], sig: signal.Signals) -> None:
        if self.leader is not None:  # the group: also reaches members we have not seen
            with contextlib.suppress(OSError):
                os.killpg(self.leader.pid, sig)
        for proc in live:
            _signal(proc, sig)

    def stop(self, stop_timeout: float, kill_wait: float) -> TeardownReport:
        """SIGTERM to the group and to every tracked process, up to `stop_timeout` s of grace,
        then rounds of (collect again, SIGKILL the group and every live process, wait
        `kill_wait` s); finally reap the leader. Confirmed only when nothing tracked is alive."""
        t0 = time.monotonic()
        early = None if self.leader is None else exit_status(self.leader.pid)
        live = self.collect()
        ended = {p.pid for p in live}
        self._signal_all(live, signal.SIGTERM)
        self._signal_all(live, signal.SIGCONT)  # a stopped process acts on SIGTERM once resumed
        self._wait_gone(stop_timeout)
        used_sigkill = False
        survivors = self.collect()
        for _ in range(self.kill_rounds):
            if not survivors:
                break
            used_sigkill = True
            ended |= {p.pid for p in survivors}
            self._signal_all(survivors, signal.SIGKILL)
            self._wait_gone(kill_wait)
            survivors = self.collect()
        status = None
        if self.leader is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                status = self.leader.wait(timeout=kill_wait if survivors else None)
        return TeardownReport(
            confirmed=not survivors,
            killed_pids=tuple(sorted(ended)),
            used_sigkill=used_sigkill,
            seconds=time.monotonic() - t0,
            survivors=tuple(sorted(p.pid for p in survivors)),
            exit_status=status,
            died_before_teardown=early is not None,
        )


def kill_group(proc: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM the process group of `proc` (started in its own session), give the leader `grace`
    seconds, then SIGKILL what is left of the group and reap the leader. With `grace` 0 (or the
    leader already gone) the group is SIGKILLed at once."""
    if grace > 0 and proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


# --------------------------------------------------------------------------- signals


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

    old = {sig: signal.signal(sig, record) for sig in _DEFERRED_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        for signum in dict.fromkeys(pending):
            signal.raise_signal(signum)

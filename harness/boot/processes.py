"""Ending what the harness started (the harness's own signals are `harness.process.signals`').

    tree = ProcessTree(run_id, poll_interval=0.05, kill_rounds=3)   # one boot's processes
    tree.leader = popen; tree.collect()                # at ready: walk its descendants
    report = tree.stop(stop_timeout, kill_wait)        # TeardownReport: confirmed dead or not
    kill_group(popen, grace)                           # one command's process group (the build)

Teardown is by process group, SIGTERM then SIGKILL. Each process found is held by a pidfd (Linux
>= 5.3): whether any of them is still running is one poll() over them all, a teardown waits on
their exits rather than polling, and a signal reaches that process only, never a stranger that
reused its pid (psutil's start-time check where pidfds are missing). A boot's processes are found
three ways: the leader (our child, never reaped before the end), its descendants (walked while
alive), and any process whose environment carries MARKER_ENV=run_id (orphans, daemons that
called setsid(), leftovers of prepare commands). Every walk reads only a tree's own
/proc/PID/task/*/children files: the harness makes itself its descendants' subreaper (prctl
PR_SET_CHILD_SUBREAPER), so an orphan is re-parented to the harness, not to init, and the marker
is looked for among the harness's own descendants; a teardown never scans every process on the
machine (it did, twice per teardown, at a cost that grew with everything else running there).

In a bubblewrap sandbox (`harness.boot.sandbox`) every process of the boot, an orphan included,
stays a descendant of the leader (bwrap) inside its PID namespace, so the walk finds them all; and
when the namespace's init ends, the kernel kills whatever is left. Plain isolation's limitation
(stated in the README too): a process found neither in the service's descendant tree (walked
before SIGTERM and again before SIGKILL) nor by the MARKER_ENV marker in its environment (a
double-forked daemon that also scrubbed its environment) cannot be found without cgroups; where
prctl is unavailable, the marker search falls back to a scan of every process.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass

import psutil

from harness.boot.isolation import MARKER_ENV

MAX_PIDFDS = 256
"""Pidfds one teardown holds at most, and never more than a quarter of the harness's soft
file-descriptor limit (`_pidfd_budget`); past it, a process is held by psutil (its start time
checked). A service may start thousands of processes: one descriptor each would exhaust the
harness's own (a soft limit of 1,024 is common) in the middle of a teardown."""


def _pidfd_budget() -> int:
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return MAX_PIDFDS if soft == resource.RLIM_INFINITY else min(MAX_PIDFDS, soft // 4)


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
    tasks: int = 0  # processes and threads of the service running when teardown began


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


def find_marked(run_id: str, *, under: int | None = None) -> list[psutil.Process]:
    """Every live process of our uid whose environment carries MARKER_ENV=run_id: among the
    descendants of `under` when given (a walk of that tree only), else among all processes."""
    if under is not None:
        procs = []
        for pid in descendants(under):
            with contextlib.suppress(psutil.Error):
                procs.append(psutil.Process(pid))
    else:
        procs = [
            p
            for p in psutil.process_iter(["uids"])
            if (uids := p.info.get("uids")) is not None and uids.real == os.getuid()
        ]
    found = []
    for proc in procs:
        if proc.pid == os.getpid():
            continue
        try:
            if proc.environ().get(MARKER_ENV) == run_id and _alive(proc):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _children(pid: int) -> list[int] | None:
    """`pid`'s children from /proc/PID/task/*/children (Linux >= 3.5 with CONFIG_PROC_CHILDREN),
    reading only that process's own entries; None when the kernel does not offer the file."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return [] if os.path.isdir("/proc/self/task") else None  # gone, or no procfs at all
    found: list[int] = []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                found += map(int, fh.read().split())
        except FileNotFoundError:
            if not os.path.exists(f"/proc/self/task/{os.getpid()}/children"):
                return None
        except OSError:
            continue  # that thread ended meanwhile
    return found


def descendants(pid: int) -> list[int]:
    """Every descendant of `pid` now, found by walking its tree (never a scan of every
    process on the machine, unless the kernel offers no children file: then psutil's)."""
    out: list[int] = []
    stack = [pid]
    while stack:
        children = _children(stack.pop())
        if children is None:  # no children file: psutil builds the ppid map instead
            with contextlib.suppress(psutil.Error):
                return [p.pid for p in psutil.Process(pid).children(recursive=True)]
            return out
        out += children
        stack += children
    return out


_SUBREAPER: list[bool] = []  # once per process: did prctl(PR_SET_CHILD_SUBREAPER) succeed


def become_subreaper() -> bool:
    """Make this process the subreaper of its descendants (Linux prctl PR_SET_CHILD_SUBREAPER):
    an orphan of a service (a daemon that double-forked or called setsid()) is re-parented to
    the harness instead of init, so it stays in the harness's own process tree, where teardown
    looks for it. False where the call is unavailable (then teardown scans every process)."""
    if not _SUBREAPER:
        ok = False
        if sys.platform.startswith("linux"):
            import ctypes

            with contextlib.suppress(OSError, AttributeError):
                libc = ctypes.CDLL(None, use_errno=True)
                ok = libc.prctl(36, 1, 0, 0, 0) == 0  # 36 = PR_SET_CHILD_SUBREAPER
        _SUBREAPER.append(ok)
    return _SUBREAPER[0]


def reap(pids: Iterable[int]) -> None:
    """Reap those of `pids` that are our ended children (orphans re-parented to us as
    subreaper), without touching any other child: subprocess.Popen reaps its own."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def _signal(proc: psutil.Process, sig: signal.Signals) -> None:
    with contextlib.suppress(psutil.Error):  # gone meanwhile, or never ours
        proc.send_signal(sig)


class _Handle:
    """One process of a boot, held from the moment it is found: a pidfd (Linux >= 5.3), which
    names that process and no other, so a later check or signal can never reach a stranger that
    reused its pid, and which polls readable once it has exited (a zombie included). Where
    pidfd_open is unavailable, a psutil.Process (which checks the pid's start time instead).
    Raises psutil.NoSuchProcess when `pid` is already gone."""

    __slots__ = ("_proc", "fd", "pid")

    def __init__(self, pid: int, *, pidfd: bool = True) -> None:
        self.pid = pid
        self.fd: int | None = None
        self._proc: psutil.Process | None = None
        try:
            if not pidfd:
                raise OSError("past MAX_PIDFDS")
            self.fd = os.pidfd_open(pid)
        except ProcessLookupError:
            raise psutil.NoSuchProcess(pid) from None
        except (AttributeError, OSError):  # no pidfd here (or too many): psutil's check
            self._proc = psutil.Process(pid)

    def alive(self) -> bool:
        """Running and not a zombie (a zombie holds no resources; init or we will reap it)."""
        if self._proc is not None:
            return _alive(self._proc)
        return self.fd is not None and bool(_live([self]))  # poll(): no FD_SETSIZE limit

    def signal(self, sig: signal.Signals) -> None:
        if self._proc is not None:
            _signal(self._proc, sig)
        elif self.fd is not None:
            with contextlib.suppress(OSError):  # exited meanwhile
                signal.pidfd_send_signal(self.fd, sig)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _name(pid: int) -> str:
    """The process's name ("" once it is gone)."""
    try:
        return str(psutil.Process(pid).name())
    except psutil.Error:
        return ""


def _threads(pid: int) -> int:
    """How many threads `pid` runs (0 once it is gone): what RLIMIT_NPROC counts."""
    try:
        return int(psutil.Process(pid).num_threads())
    except psutil.Error:
        return 0


def _live(handles: Iterable[_Handle]) -> list[_Handle]:
    """Those of `handles` still running: one poll() for every pidfd, however many."""
    handles = list(handles)
    polled = [h.fd for h in handles if h.fd is not None]
    if not polled:
        return [h for h in handles if h.alive()]
    poller = select.poll()
    for fd in polled:
        poller.register(fd, select.POLLIN)
    ended = {fd for fd, _ in poller.poll(0)}
    return [h for h in handles if (h.fd not in ended if h.fd is not None else h.alive())]


def _wait_exit(handles: list[_Handle], timeout: float, fallback_interval: float) -> None:
    """Return once every one of `handles` has exited, or after `timeout` s: woken by each exit
    (pidfds polled together), else, without pidfds, after `fallback_interval` s."""
    fds = [h.fd for h in handles if h.fd is not None]
    if len(fds) < len(handles):
        time.sleep(min(fallback_interval, max(0.0, timeout)))
        return
    deadline = time.monotonic() + timeout
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    pending = len(fds)
    while pending and (left := deadline - time.monotonic()) > 0:
        for fd, _ in poller.poll(math.ceil(left * 1000)):
            poller.unregister(fd)
            pending -= 1


class ProcessTree:
    """Every process one boot started, found three ways: the leader (our child, never reaped
    before the end), its descendants (walked while alive: at ready, before SIGTERM, before each
    SIGKILL), and any process carrying MARKER_ENV=run_id (orphans re-parented to init, daemons
    that called setsid(), leftovers of prepare commands).

    Each process is held by a pidfd from the moment it is found (`_Handle`): `stop` is woken by
    each exit instead of polling, and no check or signal can reach a process that reused a pid.
    `poll_interval` (seconds) is how often `stop` checks whether they are gone where the kernel
    offers no pidfd (before Linux 5.3: then psutil checks each pid's start time); `kill_rounds` is
    how many collect-then-SIGKILL rounds it makes before declaring survivors. `contained`: every
    process of the boot stays a descendant of the leader (a bubblewrap PID namespace), so the
    marker search is skipped. Otherwise the harness is made a subreaper (`become_subreaper`) and
    the marker is looked for among its own descendants only; every walk reads the boot's (or
    the harness's) own tree, never every process on the machine."""

    def __init__(
        self, run_id: str, *, poll_interval: float, kill_rounds: int, contained: bool = False
    ) -> None:
        self.run_id = run_id
        self.poll_interval = poll_interval
        self.kill_rounds = kill_rounds
        self.contained = contained
        self._scoped = contained or become_subreaper()
        self.leader: subprocess.Popen[bytes] | None = None
        self.tracked: dict[int, _Handle] = {}
        self._pidfds = 0  # of `tracked`'s handles, those holding a pidfd (`MAX_PIDFDS`)
        self._budget = _pidfd_budget()

    def _track(self, pid: int, found: dict[int, _Handle]) -> None:
        if pid not in found and pid not in self.tracked:
            with contextlib.suppress(psutil.Error):
                found[pid] = handle = _Handle(pid, pidfd=self._pidfds < self._budget)
                self._pidfds += handle.fd is not None

    def collect(self) -> list[_Handle]:
        """Track every process found now; return the live ones."""
        roots = _live(self.tracked.values())
        found: dict[int, _Handle] = {}
        if self.leader is not None:  # our child, not reaped before the end: its pid is its own
            self._track(self.leader.pid, found)
        if not self.contained:
            for marked in find_marked(self.run_id, under=os.getpid() if self._scoped else None):
                self._track(marked.pid, found)
                # The marker was read before the pidfd was opened: still the same process?
                if marked.pid in found and not marked.is_running():
                    stale = found.pop(marked.pid)
                    self._pidfds -= stale.fd is not None
                    stale.close()
        roots += found.values()
        # One walk of the union of the roots' trees: each process's children read once, however
        # many of its ancestors are roots too.
        stack, walked = [root.pid for root in roots], set()
        while stack:
            pid = stack.pop()
            if pid in walked:
                continue
            walked.add(pid)
            children = _children(pid)
            if children is None:  # no children file: psutil's walk of that subtree
                children = descendants(pid)
                walked.update(children)
            for child in children:
                self._track(child, found)
            stack += children
        self.tracked.update(found)
        return _live(self.tracked.values())

    def _wait_gone(self, timeout: float) -> list[_Handle]:
        deadline = time.monotonic() + timeout
        while (live := _live(self.tracked.values())) and (
            left := deadline - time.monotonic()
        ) > 0:
            _wait_exit(live, left, self.poll_interval)
        return live

    def _signal_all(self, live: list[_Handle], sig: signal.Signals, *, group: bool = True) -> None:
        """`sig` to each of `live`, and (`group`) to the leader's process group."""
        if group and self.leader is not None:  # the group: also reaches members not yet seen
            with contextlib.suppress(OSError):
                os.killpg(self.leader.pid, sig)
        for proc in live:
            proc.signal(sig)

    def stop(self, stop_timeout: float, kill_wait: float) -> TeardownReport:
        """SIGTERM to the group and to every tracked process, up to `stop_timeout` s of grace,
        then rounds of (collect again, SIGKILL the group and every live process, wait
        `kill_wait` s); finally reap the leader. Confirmed only when nothing tracked is alive."""
        t0 = time.monotonic()
        early = None if self.leader is None else exit_status(self.leader.pid)
        live = self.collect()
        ended = {p.pid for p in live}
        tasks = sum(_threads(p.pid) for p in live)
        # In a bubblewrap PID namespace, SIGTERM goes to the processes inside it, not to bwrap:
        # bwrap ending first ends the namespace, whose every process the kernel then SIGKILLs
        # before any SIGTERM handler has run (a service never saw its SIGTERM). The sandbox
        # helper waits for the service's processes to finish (`inside._drain`), then exits, and
        # bwrap with it; what outlives the grace gets SIGKILL.
        inside = [p for p in live if _name(p.pid) != "bwrap"] if self.contained else []
        targets = inside or live
        self._signal_all(targets, signal.SIGTERM, group=not inside)
        self._signal_all(targets, signal.SIGCONT, group=not inside)  # resumed, acts on SIGTERM
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
        reap(pid for pid in self.tracked if self.leader is None or pid != self.leader.pid)
        for handle in self.tracked.values():
            handle.close()
        return TeardownReport(
            confirmed=not survivors,
            killed_pids=tuple(sorted(ended)),
            used_sigkill=used_sigkill,
            seconds=time.monotonic() - t0,
            survivors=tuple(sorted(p.pid for p in survivors)),
            exit_status=status,
            died_before_teardown=early is not None,
            tasks=tasks,
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

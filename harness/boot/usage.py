"""What one boot costs: the peak memory and the CPU time of a service's whole process tree.

    meter = UsageMeter(leader_pid, tree)     # sampling starts at once, in a daemon thread
    meter.replay_begins(ready_s)             # ready and prepared: CPU counts from here
    usage = meter.stop(queries)              # a final sample, before teardown; a `Usage`

A background thread reads the tree every `SAMPLE_INTERVAL` seconds: the leader the harness
started, its descendants (walked through /proc/PID/task/*/children, so in a bubblewrap sandbox
the pids are those seen from outside its PID namespace: bwrap, its helper and the service) and
the processes `ProcessTree` tracks (without a sandbox: orphans found by the run marker).

Memory: the largest summed RSS of the tree at any sample, or, when larger, any one process's
own peak as the kernel keeps it (VmHWM in /proc/PID/status), which no sample can miss. A spike
shared by several processes shorter than the interval can still be missed: the figure is a
lower bound of the tree's true peak.

CPU: user + system seconds of each process (psutil's cpu_times), and of its children it has
reaped (children_user + children_system), so a worker that ends and is reaped inside the tree
still counts. A process gone since its last sample keeps that sample unless its parent is in
the tree (then the parent's reaped-children time holds it); what it spent after its last sample
is lost when the harness itself reaped it (an orphan, without a sandbox).

The thread reads /proc only, holds the GIL for a fraction of a millisecond per sample, and never
signals anything; a process that is gone or unreadable is skipped.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable

import psutil

from harness.boot.processes import descendants
from harness.values.costs import Usage

SAMPLE_INTERVAL = 0.1
"""Seconds between two readings of a boot's process tree: light beside the replay (one reading
costs well under a millisecond), frequent enough for a tree's steady state; a process's own peak
comes from the kernel (VmHWM) whatever the interval."""

_PAGE = 1024  # VmHWM is given in kB


def own_peak(pid: int) -> int | None:
    """The kernel's record of `pid`'s largest resident set, in bytes (VmHWM); None when
    unreadable."""
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None
    return None


class UsageMeter:
    """Samples one boot's process tree until `stop` (see the module docstring).  `others`
    gives further pids of the boot (the ProcessTree's tracked ones)."""

    def __init__(
        self,
        leader: int,
        others: Callable[[], Iterable[int]] | None = None,
        *,
        interval: float = SAMPLE_INTERVAL,
    ) -> None:
        self.leader = leader
        self._others = others
        self._interval = interval
        self._lock = threading.Lock()
        self._procs: dict[int, psutil.Process] = {}
        # pid -> (own CPU s, reaped children's CPU s, parent pid) at its latest sample
        self._cpu: dict[int, tuple[float, float, int]] = {}
        self._live: set[int] = set()
        self._peak_sum = 0
        self._peak_own = 0
        self._samples = 0
        self._base: float | None = None  # tree CPU when the replay began
        self._ready_s: float | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"usage-{leader}", daemon=True)
        self._thread.start()

    def _pids(self) -> set[int]:
        pids = {self.leader, *descendants(self.leader)}
        if self._others is not None:
            with contextlib.suppress(RuntimeError):  # changed while copied: next time
                pids.update(list(self._others()))
        return pids

    def sample(self) -> None:
        """Read every process of the tree once."""
        with self._lock:
            live: set[int] = set()
            rss = 0
            for pid in self._pids():
                proc = self._procs.get(pid)
                try:
                    if proc is None:
                        proc = self._procs[pid] = psutil.Process(pid)
                    with proc.oneshot():
                        mem = proc.memory_info().rss
                        cpu = proc.cpu_times()
                        parent = proc.ppid()
                except psutil.Error:
                    continue
                live.add(pid)
                rss += mem
                self._peak_own = max(self._peak_own, mem, own_peak(pid) or 0)
                kids = cpu.children_user + cpu.children_system
                self._cpu[pid] = (cpu.user + cpu.system, kids, parent)
            self._live = live
            self._peak_sum = max(self._peak_sum, rss)
            self._samples += 1

    def _total_cpu(self) -> float:
        """The tree's CPU seconds so far (the module docstring says what is counted)."""
        total = 0.0
        for pid, (own, kids, parent) in self._cpu.items():
            if pid in self._live or parent not in self._cpu:
                total += own + kids
        return total

    def _run(self) -> None:
        while not self._done.wait(self._interval):
            self.sample()

    def replay_begins(self, ready_s: float) -> None:
        """The service is ready (after `ready_s` s) and prepared: CPU time counts from here."""
        self.sample()
        with self._lock:
            self._ready_s = ready_s
            self._base = self._total_cpu()

    def stop(self) -> Usage | None:
        """A last sample, then no more: what the boot cost, or None when it never became
        ready (its `queries` are the replay's to fill in)."""
        if not self._done.is_set():
            self.sample()
            self._done.set()
            self._thread.join()
        with self._lock:
            if self._ready_s is None or self._base is None:
                return None
            return Usage(
                ready_s=self._ready_s,
                peak_rss_bytes=max(self._peak_sum, self._peak_own),
                cpu_s=max(0.0, self._total_cpu() - self._base),
                samples=self._samples,
            )

"""The longest test files first: how `pytest -n auto --dist loadfile` keeps both cores busy.

xdist hands out whole files, by default the files with the most tests first; the end-to-end
files (two tests of a minute each) then started last and ran alone at the end, the other
workers idle: a 465 s run whose files summed to 1,614 worker-seconds.  Ordered longest first
(the LPT rule), the long files start at once and the short ones fill the gaps.

tests/durations.json holds each file's seconds, from a whole run (scripts/test_durations.py
writes it): `inner`, its tests that are not `slow`, and `slow`, the others; `inner_cpu` and
`slow_cpu`, the CPU seconds of the test process and every process under it over those tests.
A file it does not name (a new one) goes last; a stale figure only costs packing, never a result.

Two lanes (`LaneScheduling`, xdist's loadfile scheduler with one change: which file a worker is
handed next).  `-n auto` starts two workers a core because most end-to-end files wait (a service's
sleeps, a boot, a rate), but handed out longest first, the four longest (the watch, load and
compare end-to-end files: 0.1-0.3 of a core each) ran together and left the cores half idle for
the first two minutes.  Now `workers - cores` workers take the waiting files (CPU under WAITING
of their wall) and the other `cores` workers the busy ones, each lane longest first, and a worker
whose lane is empty takes the other lane's next file: the waits overlap with work, never with
each other alone.
"""

from __future__ import annotations

import json
import os
import resource
from collections import defaultdict
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

import psutil
import pytest

FILE = Path(__file__).resolve().parent / "durations.json"
RECORD_ENV = "HARNESS_TEST_DURATIONS"  # a path: write the run's durations there at its end
# A file whose CPU seconds are under this share of its wall waits, mostly: recorded by `-n auto`
# (two workers a core), a file that only computes shows about 0.5, one that sleeps 0.1-0.3.
WAITING = 0.3


def load(path: Path = FILE) -> dict[str, dict[str, float]]:
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def longest_first(
    items: list[pytest.Item], durations: dict[str, dict[str, float]], *, inner: bool
) -> list[pytest.Item]:
    """`items` with whole files in decreasing recorded seconds (only the inner loop's share of
    each when `inner`), each file's tests in their own order; unknown files last, as found."""
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        first.setdefault(file_of(item.nodeid), index)

    def seconds(name: str) -> float:
        entry = durations.get(name, {})
        return float(entry.get("inner", 0.0)) + (0.0 if inner else float(entry.get("slow", 0.0)))

    rank = {name: (-seconds(name), at) for name, at in first.items()}
    return sorted(items, key=lambda item: rank[file_of(item.nodeid)])


def register(config: pytest.Config) -> None:
    """With HARNESS_TEST_DURATIONS=PATH, record this run's durations into PATH: in the process
    that sees every report (xdist's controller, or the only one); each process that runs tests
    adds their CPU seconds to the reports."""
    path = os.environ.get(RECORD_ENV)
    if not path:
        return
    if not config.pluginmanager.has_plugin("durations-cpu"):
        config.pluginmanager.register(CpuMeter(), "durations-cpu")
    if not hasattr(config, "workerinput") and not config.pluginmanager.has_plugin(
        "durations-recorder"
    ):
        config.pluginmanager.register(Recorder(Path(path)), "durations-recorder")


def pytest_configure(config: pytest.Config) -> None:
    """As a plugin of its own (`-p durations_support`): record as `register` says."""
    register(config)


class Recorder:
    """Each file's seconds in this run (setup, call and teardown of every test), split into
    slow and not; written as JSON at the end of the session."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seconds: dict[str, dict[str, float]] = defaultdict(
            lambda: {"inner": 0.0, "slow": 0.0, "inner_cpu": 0.0, "slow_cpu": 0.0}
        )

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        part = "slow" if "slow" in report.keywords else "inner"
        entry = self.seconds[file_of(report.nodeid)]
        entry[part] += report.duration
        entry[f"{part}_cpu"] += sum(v for k, v in report.user_properties if k == CpuMeter.KEY)

    def pytest_sessionfinish(self) -> None:
        rounded = {
            name: {part: round(value, 1) for part, value in entry.items()}
            for name, entry in sorted(self.seconds.items())
        }
        self.path.write_text(json.dumps(rounded, indent=1) + "\n")


def makespan(seconds: Sequence[float], workers: int) -> float:
    """The wall of jobs of these lengths handed out in this order to the first free worker."""
    ends = [0.0] * workers
    for length in seconds:
        ends[ends.index(min(ends))] += length
    return max(ends)


def tree_cpu() -> float:
    """CPU seconds of this process, of its children it has waited for, and of every process
    still running under it (a browser, a service, a Ray daemon) with the children they waited
    for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    done = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + done.ru_utime + done.ru_stime
    for child in psutil.Process().children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


class CpuMeter:
    """Adds each phase's CPU seconds (`tree_cpu`, from the end of the phase before) to its
    report's user_properties, which xdist carries to the controller's Recorder."""

    KEY = "durations_cpu_s"

    def __init__(self) -> None:
        self.mark = tree_cpu()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: Any) -> Generator[None, Any, None]:
        outcome = yield
        report = outcome.get_result()
        now = tree_cpu()
        report.user_properties = [*report.user_properties, (self.KEY, max(0.0, now - self.mark))]
        self.mark = now


def waiting_files(durations: dict[str, dict[str, float]], *, inner: bool) -> set[str]:
    """The files that mostly wait: recorded CPU under WAITING of their wall (in the inner
    loop's share of each when `inner`). A file recorded without CPU is not one."""
    parts = ("inner",) if inner else ("inner", "slow")
    found = set()
    for name, entry in durations.items():
        wall = sum(float(entry.get(part, 0.0)) for part in parts)
        cpu = [entry.get(f"{part}_cpu") for part in parts]
        if wall > 0 and None not in cpu and sum(float(c) for c in cpu) < WAITING * wall:
            found.add(name)
    return found


def lane_of(worker: int, workers: int, cores: int) -> bool:
    """Whether worker number `worker` (of `workers`) takes the waiting files first: the first
    `workers - cores` do."""
    return worker < workers - cores


def next_unit(queue: Sequence[str], waiting: set[str], *, wants_waiting: bool) -> int:
    """Index in `queue` (files, in the suite's order) of the next file for a worker of that
    lane: the first of its lane, else the first of all."""
    for index, name in enumerate(queue):
        if (file_of(name) in waiting) == wants_waiting:
            return index
    return 0


def make_scheduler(config: pytest.Config, log: Any, *, inner: bool) -> Any:
    """xdist's loadfile scheduler, handing each worker the next file of its lane."""
    from xdist.scheduler import LoadFileScheduling

    cores = os.cpu_count() or 1
    waiting = waiting_files(load(FILE), inner=inner)

    class LaneScheduling(LoadFileScheduling):  # type: ignore[misc]
        def _assign_work_unit(self, node: Any) -> None:
            workers = len(self.nodes)
            worker = int(str(node.gateway.id).removeprefix("gw") or 0)
            wants = lane_of(worker, workers, cores)
            keys = list(self.workqueue)
            if keys and waiting and workers > cores:  # else no lane waits: longest first
                chosen = keys[next_unit(keys, waiting, wants_waiting=wants)]
                self.workqueue.move_to_end(chosen, last=False)
            super()._assign_work_unit(node)

    return LaneScheduling(config, log)

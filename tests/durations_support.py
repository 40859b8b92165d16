"""The longest test files first: how `pytest -n auto --dist loadfile` keeps both cores busy.

xdist hands out whole files, by default the files with the most tests first; the end-to-end
files (two tests of a minute each) then started last and ran alone at the end, the other
workers idle: a 465 s run whose files summed to 1,614 worker-seconds.  Ordered longest first
(the LPT rule), the long files start at once and the short ones fill the gaps.

tests/durations.json holds each file's seconds, from a whole run (scripts/test_durations.py
writes it): `inner`, its tests that are not `slow`, and `slow`, the others.  A file it does not
name (a new one) goes last; a stale figure only costs packing, never a result.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import pytest

FILE = Path(__file__).resolve().parent / "durations.json"
RECORD_ENV = "HARNESS_TEST_DURATIONS"  # a path: write the run's durations there at its end


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
    that sees every report (xdist's controller, or the only one)."""
    import os

    path = os.environ.get(RECORD_ENV)
    if path and not hasattr(config, "workerinput") and not config.pluginmanager.has_plugin(
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
        self.seconds: dict[str, dict[str, float]] = defaultdict(lambda: {"inner": 0.0, "slow": 0.0})

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        part = "slow" if "slow" in report.keywords else "inner"
        self.seconds[file_of(report.nodeid)][part] += report.duration

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

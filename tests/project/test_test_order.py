"""The suite hands its files out longest first (tests/durations_support.py, tests/durations.json):
the minute-long end-to-end files start at once instead of running alone at the end."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import durations_support
import pytest

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Item:
    nodeid: str


def _ids(items: list[Any]) -> list[str]:
    return [item.nodeid for item in items]


def test_files_go_longest_first_each_in_its_own_order() -> None:
    items = [Item(n) for n in ("a.py::1", "a.py::2", "b.py::1", "c.py::1", "c.py::2", "new.py::1")]
    durations = {"a.py": {"inner": 1.0, "slow": 0.0}, "b.py": {"inner": 0.5, "slow": 60.0},
                 "c.py": {"inner": 5.0, "slow": 0.0}}  # fmt: skip
    ordered = durations_support.longest_first(items, durations, inner=False)  # type: ignore[arg-type]
    assert _ids(ordered) == ["b.py::1", "c.py::1", "c.py::2", "a.py::1", "a.py::2", "new.py::1"]
    # The inner loop runs no slow test: only the inner seconds count.
    inner = durations_support.longest_first(items, durations, inner=True)  # type: ignore[arg-type]
    assert _ids(inner) == ["c.py::1", "c.py::2", "a.py::1", "a.py::2", "b.py::1", "new.py::1"]


def test_longest_first_packs_tighter_than_most_tests_first() -> None:
    # Two one-minute files of two tests each and twenty small files of many tests: xdist's own
    # order (most tests first) leaves them to the end.
    lengths = {f"small{i}.py": 6.0 for i in range(20)} | {"load.py": 60.0, "watch.py": 60.0}
    by_count = [6.0] * 20 + [60.0, 60.0]
    assert durations_support.makespan(sorted(lengths.values(), reverse=True), 4) == 60.0
    assert durations_support.makespan(by_count, 4) == 90.0


def test_the_real_collection_starts_with_the_longest_recorded_file() -> None:
    recorded = durations_support.load()
    assert recorded, "tests/durations.json is missing: python scripts/test_durations.py"
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p",
         "no:cacheprovider"],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert collected.returncode == 0, collected.stdout[-2000:] + collected.stderr[-2000:]
    files = [line.split("::")[0] for line in collected.stdout.splitlines() if "::" in line]
    longest = max(set(files) & set(recorded), key=lambda n: sum(recorded[n].values()))
    assert files[0] == longest


def test_a_run_records_each_files_seconds_split_by_slow(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(
        "import time, pytest\n"
        "def test_fast():\n    time.sleep(0.05)\n"
        "@pytest.mark.slow\ndef test_slow():\n    time.sleep(0.3)\n"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: slow\n")
    out = tmp_path / "durations.json"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "durations_support",
         "-n", "2", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300,
        env={**os.environ, durations_support.RECORD_ENV: str(out),
             "PYTHONPATH": str(ROOT / "tests")},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:]
    (name,) = json.loads(out.read_text())
    entry = json.loads(out.read_text())[name]
    assert name.endswith("test_x.py")
    assert entry["slow"] >= 0.3 and 0.05 <= entry["inner"] < 0.3
    # Both sleep: little CPU beside their wall, so the file goes to the waiting lane.
    assert 0 <= entry["slow_cpu"] < 0.3 * entry["slow"] and entry["inner_cpu"] >= 0
    assert durations_support.waiting_files({name: entry}, inner=False) == {name}


def test_a_busy_child_process_counts_as_the_files_cpu() -> None:
    # What a test's service or CLI spends counts too: here a child spinning 0.3 s.
    before = durations_support.tree_cpu()
    subprocess.run(
        [sys.executable, "-c", "import time\nt = time.process_time()\n"
         "while time.process_time() - t < 0.3: pass"],
        check=True, timeout=60,
    )  # fmt: skip
    assert durations_support.tree_cpu() - before >= 0.25


RECORDED = {
    "watch.py": {"inner": 0.0, "slow": 160.0, "inner_cpu": 0.0, "slow_cpu": 25.0},
    "recipes.py": {"inner": 1.0, "slow": 40.0, "inner_cpu": 0.8, "slow_cpu": 32.0},
    "load.py": {"inner": 0.0, "slow": 74.0, "inner_cpu": 0.0, "slow_cpu": 9.0},
    "units.py": {"inner": 9.0, "slow": 0.0, "inner_cpu": 8.0, "slow_cpu": 0.0},
    "old.py": {"inner": 5.0, "slow": 50.0},  # recorded before CPU was: never waiting
}


def test_the_files_that_mostly_wait_are_those_under_the_cpu_share() -> None:
    assert durations_support.waiting_files(RECORDED, inner=False) == {"watch.py", "load.py"}
    # The inner loop weighs only its own tests: watch.py and load.py have none there.
    assert durations_support.waiting_files(RECORDED, inner=True) == set()


@pytest.mark.parametrize(
    ("workers", "cores", "lanes"),
    [
        (4, 2, [True, True, False, False]),
        (2, 2, [False, False]),
        (6, 4, [True, True] + [False] * 4),
    ],
)
def test_workers_beyond_the_cores_take_the_waiting_lane(
    workers: int, cores: int, lanes: list[bool]
) -> None:
    assert [durations_support.lane_of(w, workers, cores) for w in range(workers)] == lanes


def test_a_worker_takes_its_lanes_next_file_else_the_next_of_all() -> None:
    queue = ["recipes.py", "watch.py", "units.py", "load.py"]  # longest first, as collected
    waiting = {"watch.py", "load.py"}
    assert durations_support.next_unit(queue, waiting, wants_waiting=True) == 1
    assert durations_support.next_unit(queue, waiting, wants_waiting=False) == 0
    assert durations_support.next_unit(["load.py"], waiting, wants_waiting=False) == 0
    assert durations_support.next_unit(["units.py"], waiting, wants_waiting=True) == 0


def test_a_real_run_hands_the_waiting_files_to_the_first_workers(tmp_path: Path) -> None:
    # Through xdist's own scheduler hook, 4 workers: two files that sleep, recorded as waiting,
    # run on gw0 and gw1; the two that spin on gw2 and gw3 (cores: the test's process sees 2).
    spin = "import time\ndef test_spin():\n    t = time.process_time()\n"
    spin += "    while time.process_time() - t < 0.2: pass\n"
    sleep = "import time\ndef test_sleep():\n    time.sleep(0.2)\n"
    recorded = {}
    for name, text in [("busy_a", spin), ("busy_b", spin), ("wait_a", sleep), ("wait_b", sleep)]:
        (tmp_path / f"test_{name}.py").write_text(text)
        waits = name.startswith("wait")
        cpu = 0.1 if waits else 1.0
        recorded[f"test_{name}.py"] = {"inner": 1.0, "slow": 0.0, "inner_cpu": cpu, "slow_cpu": 0.0}
    (tmp_path / "durations.json").write_text(json.dumps(recorded))
    (tmp_path / "conftest.py").write_text(
        "import json, os, pathlib\nimport durations_support\n"
        "def pytest_xdist_make_scheduler(config, log):\n"
        "    durations_support.FILE = pathlib.Path(__file__).parent / 'durations.json'\n"
        "    os.cpu_count = lambda: 2\n"
        "    return durations_support.make_scheduler(config, log, inner=False)\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-n", "4",
         "--dist", "loadfile", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT / "tests")},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:]
    ran_on = {  # "[gw0] [ 25%] PASSED test_wait_a.py::test_sleep"
        found[2]: found[1]
        for found in re.finditer(r"\[(gw\d+)\].* PASSED (?:\S*/)?(test_\w+\.py)::", done.stdout)
    }
    assert {ran_on["test_wait_a.py"], ran_on["test_wait_b.py"]} == {"gw0", "gw1"}, ran_on
    assert {ran_on["test_busy_a.py"], ran_on["test_busy_b.py"]} == {"gw2", "gw3"}, ran_on


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_makespan_of_one_job_is_its_length(workers: int) -> None:
    assert durations_support.makespan([7.0], workers) == 7.0

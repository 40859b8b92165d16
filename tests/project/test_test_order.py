"""The suite hands its files out longest first (tests/durations_support.py, tests/durations.json):
the minute-long end-to-end files start at once instead of running alone at the end."""

from __future__ import annotations

import json
import os
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


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_makespan_of_one_job_is_its_length(workers: int) -> None:
    assert durations_support.makespan([7.0], workers) == 7.0

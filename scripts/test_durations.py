"""Record each test file's seconds (tests/durations.json), by which the suite orders its files.

    python scripts/test_durations.py [--check] [PYTEST ARGS...]

Runs the whole `pytest` (as CI does, plus any arguments given) with HARNESS_TEST_DURATIONS set,
so that the controller sums each file's setup, call and teardown seconds, split into its `slow`
tests and the others, and the CPU seconds its tests' processes spent (tests/durations_support.py:
the suite's two lanes hand the files that mostly wait to their own workers).  The run must
pass; then the figures replace tests/durations.json, unless --check, which only prints them
beside the file's.  Prints the sum, the files that mostly wait, the longest files, and the wall
that handing the files out longest first to `-n auto`'s workers would take if each kept its
recorded length (it does not under contention: a guide, not a promise; the suite's measured
time is in docs/develop.md).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from durations_support import FILE, RECORD_ENV, load, makespan, waiting_files  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="print, do not rewrite the file")
    args, pytest_args = parser.parse_known_args()
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "durations.json"
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", *pytest_args],
            cwd=ROOT,
            env={**os.environ, RECORD_ENV: str(out)},
            check=False,
        )
        if done.returncode != 0:
            print(f"pytest exited {done.returncode}: {FILE} left as it is", file=sys.stderr)
            return done.returncode
        new = load(out)
        written = out.read_text()  # what the recorder wrote: sorted, rounded
    old = load()
    totals = {name: entry["inner"] + entry["slow"] for name, entry in new.items()}
    order = sorted(totals, key=lambda name: -totals[name])
    workers = max(2, min(2 * (os.cpu_count() or 1), (os.cpu_count() or 1) + 4))
    print(f"{len(new)} files, {sum(totals.values()):.0f} s of tests in all")
    longest = makespan([totals[n] for n in order], workers)
    by_name = makespan([totals[n] for n in sorted(totals)], workers)
    print(f"longest first to {workers} workers: {longest:.0f} s (by name: {by_name:.0f} s)")
    waiting = waiting_files(new, inner=False)
    print(f"{len(waiting)} files mostly wait (the waiting lane), "
          f"{sum(totals[n] for n in waiting):.0f} s of them")
    print("longest files (s; recorded before):")
    for name in order[:12]:
        before = sum(old.get(name, {}).get(part, 0.0) for part in ("inner", "slow"))
        print(f"  {totals[name]:7.1f}  {before:7.1f}  {name}")
    if not args.check:
        FILE.write_text(written)
        print(f"written: {FILE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python
"""The harness's fixed costs: start-up against `python -c pass`, and its own CPU in a demo compare.

    python scripts/bench_overhead.py [--runs 15] [--demos 1] [--skip-demo]

Start-up: `harness --help`, `harness --version` and `python -c pass` (the floor any Python tool
pays), each run `--runs` times, interleaved (pass, --help, --version, pass, ...) so the machine's
load hits all three alike; the median wall time of each and its excess over the floor.

Demo: `compare --demo` in a fresh interpreter that runs the CLI in-process, then reads
getrusage: RUSAGE_SELF is the harness's own CPU (parsing, scoring, statistics, rendering, the
HTTP client), RUSAGE_CHILDREN everything it started and waited for (the services, inside
bubblewrap or not, git, the build commands). Target (issue 17): the harness's own CPU at most
25% of the compare's wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

INNER = """
import json, resource, sys, time
t0 = time.perf_counter()
from harness.cli.main import main
status = main(["compare", "--demo", "--results", sys.argv[2]])
wall = time.perf_counter() - t0
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as out:
    json.dump({"status": status, "wall": wall, "self": me.ru_utime + me.ru_stime,
               "children": kids.ru_utime + kids.ru_stime, "self_rss_kib": me.ru_maxrss}, out)
"""


def harness_exe() -> list[str]:
    found = Path(sys.executable).with_name("harness")
    return [str(found)] if found.exists() else [sys.executable, "-m", "harness.cli.main"]


def startup(runs: int) -> None:
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "harness --help": [*harness_exe(), "--help"],
        "harness --version": [*harness_exe(), "--version"],
    }
    seconds: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            t0 = time.perf_counter()
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
            seconds[name].append(time.perf_counter() - t0)
    floor = statistics.median(seconds["python -c pass"])
    print(f"start-up, median of {runs} interleaved runs (target: --help, --version < 0.15 s)")
    print(f"  {'command':<20} {'median s':>9} {'min s':>7} {'over python -c pass':>20}")
    for name, times in seconds.items():
        median = statistics.median(times)
        print(f"  {name:<20} {median:9.3f} {min(times):7.3f} {median - floor:+19.3f} s")


def demo(count: int) -> None:
    print("\ncompare --demo: the harness's own CPU vs what it started (target: own CPU <= 25%)")
    print(f"  {'wall s':>7} {'harness CPU s':>14} {'children CPU s':>15} {'own / wall':>11}")
    for _ in range(count):
        with tempfile.TemporaryDirectory(prefix="bench-overhead-") as tmp:
            out = Path(tmp) / "usage.json"
            subprocess.run(
                [sys.executable, "-c", INNER, str(out), str(Path(tmp) / "results")],
                check=False,
                cwd=tmp,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
            )
            found = json.loads(out.read_text())
        share = found["self"] / found["wall"]
        print(
            f"  {found['wall']:7.2f} {found['self']:14.2f} {found['children']:15.2f}"
            f" {share:10.0%}   (exit status {found['status']})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--demos", type=int, default=1)
    parser.add_argument("--skip-demo", action="store_true")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    startup(args.runs)
    if not args.skip_demo:
        demo(args.demos)


if __name__ == "__main__":
    main()

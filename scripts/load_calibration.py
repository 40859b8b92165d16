#!/usr/bin/env python
"""Calibrate compare --rate: how often an A/A is called at two rates, and how often a branch that
serializes its searches (a 20 ms global lock: at most 50 answers/s) is called slower at 80/s and
named as missing the SLO there.

    python scripts/load_calibration.py [--runs 10] [--rates 10,80] [--duration 4s] [--rounds 3]

Every compare is the real CLI in a subprocess over the e2e fixture service
(tests/e2e_support.build_sandbox: main sleeps 5 ms a search; branch lock adds serialize_ms 20),
its JSON read back.  Rows, each a count of calls out of the runs with its Wilson 95% interval:

    A/A called at R/s          slower or faster of main against main (target: at most 5%)
    lock called slower at R/s  (target at 80/s: every run; at 10/s it is 5x slower too)
    lock misses SLO at R/s     p99<100ms (target: every run at 80/s, none at 10/s)
    client lag flagged         rates at which the client could not keep its schedule
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from e2e_support import build_sandbox


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--rates", default="10,80")
    parser.add_argument("--duration", default="4s")
    parser.add_argument("--rounds", default="3")
    args = parser.parse_args()
    counts: Counter[str] = Counter()
    runs: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="load-calibration-") as tmp:
        sandbox = build_sandbox(Path(tmp) / "s", {"lock": {"serialize_ms": 20}})
        for i in range(args.runs):
            for candidate in ("main", "lock"):
                started = time.monotonic()
                done = sandbox.harness(
                    "compare", "--baseline", "main", "--candidate", candidate,
                    "--rate", args.rates, "--slo", "p99<100ms", "--rate-duration", args.duration,
                    "--rate-rounds", args.rounds, "--format", "json", "--repeats", "2",
                    "--no-sequential", "--seed", str(i), results=Path(tmp) / "r",
                )
                if done.returncode not in (0, 1):
                    print(f"run {i} {candidate}: exit {done.returncode}: {done.stderr[-500:]}")
                    continue
                load = json.loads(done.stdout)["load"]
                name = "A/A" if candidate == "main" else "lock"
                for row in load["rates"]:
                    rate = f"{row['rate']:g}/s"
                    runs[f"{name} {rate}"] += 1
                    called = row["verdict"] in ("regressed", "improved")
                    counts[f"{name} called at {rate}"] += called
                    counts[f"{name} misses SLO at {rate}"] += not row["candidate"]["meets_slo"]
                    counts[f"{name} client lag flagged at {rate}"] += row["lag_note"] is not None
                print(f"run {i} {candidate}: {load['verdict']}, {load['words'][:120]} "
                      f"({time.monotonic() - started:.0f}s)", flush=True)
    print()
    for key in sorted(counts):
        name, _, _rest = key.partition(" ")
        rate = key.rsplit(" ", 1)[1]
        n = runs[f"{name} {rate}"]
        lo, hi = wilson(counts[key], n)
        print(f"{key:36} {counts[key]:3}/{n:<3} ({lo:.0%}-{hi:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

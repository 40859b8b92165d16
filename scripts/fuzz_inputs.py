#!/usr/bin/env python
"""Random inputs to every command that reads a user's file, for a fixed time: no traceback.

    python scripts/fuzz_inputs.py [--seconds 60] [--seed N]

Each case overwrites one or more of a throwaway repository's input files (harness.toml, the gold
set, the corpus, qrels, topics, a run file, a run record, a gate baseline, a matrix file, an
answers file) with random bytes, random TOML or mutated JSON lines, or puts a special file in
the place of one (a FIFO, /dev/zero, /dev/null, a folder, a sparse file past its size cap), or
gives compare a deployment URL, and runs one command on it under a time limit (the strategies are
tests/fuzz_support.py's, the same tests/e2e/test_fuzz_inputs.py runs a fixed number of): in this
process through the real entry point, `harness.cli.main.main`, or, for a special file, the
console script in a subprocess. A case fails when an exception escapes, "Traceback" is on
stderr, the exit status is not one of 0-4, or it is still running after the limit (a hang).
Nothing is booted: compare, run, gate and matrix name a ref that does not exist.

Printed: the number of cases, of tracebacks and of hangs, the statuses seen, and the first
failing input with its traceback; the exit status is 1 when any case failed, else 0.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import fuzz_support
import hypothesis
from hypothesis import HealthCheck, Phase, given, settings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to fuzz")
    parser.add_argument("--seed", type=int, help="the random seed (default: random)")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    with tempfile.TemporaryDirectory(prefix="harness-fuzz-") as tmp:
        os.environ["HARNESS_CACHE_DIR"] = str(Path(tmp) / "cache")
        workspace = fuzz_support.Workspace(Path(tmp) / "ws").create()
        statuses: collections.Counter[object] = collections.Counter()
        failures: list[tuple[fuzz_support.Case, fuzz_support.Outcome]] = []
        deadline = time.monotonic() + args.seconds
        specials = urls = 0

        class TimeUp(Exception):
            """Raised by the first case past the deadline: how a @given loop is stopped."""

        # Hypothesis draws the cases; only its generate phase runs (no shrinking, no example
        # database), so the first failure is printed as it was found.
        @hypothesis.seed(seed)
        @settings(max_examples=10**9, deadline=None, database=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(fuzz_support.case_strategy(workspace))
        def one(case: fuzz_support.Case) -> None:
            nonlocal specials, urls
            if time.monotonic() > deadline:
                raise TimeUp
            outcome = fuzz_support.run_case(case, workspace)
            statuses[outcome.status] += 1
            specials += bool(case.special)
            urls += any(arg.endswith("-url") for arg in case.argv)
            if outcome.bad:
                failures.append((case, outcome))

        with contextlib.suppress(TimeUp):
            one()
    cases = sum(statuses.values())
    tracebacks = sum(1 for _, o in failures if o.traceback or "Traceback" in o.stderr)
    hangs = sum(1 for _, o in failures if o.hung)
    print(f"fuzz_inputs: seed {seed}, {args.seconds:.0f} s: {cases} cases "
          f"({specials} special files, {urls} URLs): {tracebacks} tracebacks, {hangs} hangs, "
          f"{len(failures) - tracebacks - hangs} other failures (an unexpected status)")
    print("exit statuses: " + ", ".join(f"{k}: {v}" for k, v in sorted(
        statuses.items(), key=lambda kv: str(kv[0]))))
    kinds = collections.Counter(
        (outcome.traceback or outcome.stderr).strip().splitlines()[-1][:160]
        for _, outcome in failures
    )
    for kind, count in kinds.most_common():
        print(f"  {count} x {kind}")
    if failures:
        case, outcome = failures[0]
        print("first failing input:\n" + case.describe())
        print(f"status {outcome.status}\n{outcome.traceback or outcome.stderr[-3000:]}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

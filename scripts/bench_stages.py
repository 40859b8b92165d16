#!/usr/bin/env python
"""The CPU of the fixed-cost stages of `compare --demo` outside the replay, each in a fresh process.

    python scripts/bench_stages.py [--runs 5] [--python OTHER_VENV/bin/python ...]

Each run is a new interpreter (so every figure is a first call, as in a compare: no warm caches)
that measures with time.process_time(): importing harness.demo.generate; `generate()`, the demo
corpus and gold set; `harness.gold.check_files` on them (numpy and the verdict statistics are
imported first, as any compare has them); `load_corpus_ids`, the corpus re-read after the runs;
and, for a run record shaped like the demo's (210 queries x 5 repeats, 10 ids and scores each),
the indented json.dumps that `write_json_new` uses against the compact C encoding, the floor any
byte-identical rewrite of it could reach. With `--python`, other interpreters (another venv: say
main's) run interleaved with this one, and the medians print side by side. A companion of
scripts/bench_overhead.py (issue 17: the harness's own CPU in a demo compare); like it, it brings
each harness's .pyc files up to date first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_overhead import prepare

INNER = """
import json, random, sys, tempfile, time
from pathlib import Path
def cpu(f):
    t = time.process_time(); f(); return time.process_time() - t
found = {}
t = time.process_time()
from harness.demo.generate import generate, write
found["import harness.demo.generate"] = time.process_time() - t
found["generate()"] = cpu(generate)
import harness.gold.check  # numpy and the verdict statistics: any compare imports them
from harness.gold import check_files
from harness.gold.corpus import load_corpus_ids
with tempfile.TemporaryDirectory() as tmp:
    corpus, gold = write(Path(tmp))
    found["gold check_files"] = cpu(lambda: check_files(gold, corpus))
    found["load_corpus_ids"] = cpu(lambda: load_corpus_ids(corpus))
rng = random.Random(17)
record = {"repeats": [{"index": r, "results": [
    {"detail": None, "error": None, "ids": [f"kb-{rng.randrange(3000):05d}" for _ in range(10)],
     "latency_ns": rng.randrange(10**5, 10**7), "query_id": f"q{q:03d}",
     "scores": [rng.random() / 30 for _ in range(10)], "status": 200}
    for q in range(210)]} for r in range(5)]}
found["run record json.dumps indent=1"] = cpu(
    lambda: json.dumps(record, sort_keys=True, indent=1, ensure_ascii=False))
found["  the same, compact (C encoder)"] = cpu(
    lambda: json.dumps(record, sort_keys=True, ensure_ascii=False))
print(json.dumps(found))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--python", action="append", default=[], help="also measure this interpreter, interleaved"
    )
    args = parser.parse_args()
    pythons = {"[0]": sys.executable} | {f"[{i}]": p for i, p in enumerate(args.python, 1)}
    for label, python in pythons.items():
        print(f"{label} {python}: harness {prepare(python, False)}")
    samples: dict[str, dict[str, list[float]]] = {label: {} for label in pythons}
    for _ in range(args.runs):
        for label, python in pythons.items():
            done = subprocess.run(
                [python, "-c", INNER], check=True, capture_output=True, text=True, cwd="/"
            )
            for stage, seconds in json.loads(done.stdout.splitlines()[-1]).items():
                samples[label].setdefault(stage, []).append(seconds)
    print(f"\nCPU ms, median of {args.runs} fresh processes")
    print(f"  {'stage':<36}" + "".join(f"{label:>10}" for label in pythons))
    for stage in samples["[0]"]:
        row = "".join(
            f"{1000 * statistics.median(samples[label][stage]):10.1f}" for label in pythons
        )
        print(f"  {stage:<36}{row}")


if __name__ == "__main__":
    main()

"""`harness twobytwo`: retrieval against generation, a run's top-k hits against the answer
grades (harness.verdict.twobytwo)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.cli.options import add_format, add_gold_source, add_record_side

EXAMPLES = {
    "twobytwo": "harness twobytwo --run results/runs/RECORD.json --answers answers.tsv --k 5",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--run", required=True, type=Path, help="a run record, or a comparison directory"
    )
    p.add_argument(
        "--answers",
        required=True,
        type=Path,
        help='answer grades: JSONL {"query_id": ..., "correct": true} or TSV qid<TAB>1/0',
    )
    p.add_argument("--k", type=int, help="retrieved = a relevant document in the top K "
                   "(default: the config's first compare.k, else 5)")
    add_record_side(p)
    add_gold_source(p)
    p.add_argument("--rel-level", type=int, default=1, help="minimum grade that counts as relevant")
    add_format(p)


def run(args: argparse.Namespace) -> int:
    from harness.cli.exits import EXIT_OK
    from harness.config import load_config
    from harness.config.values import CompareConfig
    from harness.errors import HarnessError
    from harness.gold import load_gold
    from harness.gold.grades import read_grades
    from harness.report.twobytwo import render_twobytwo
    from harness.results.records import load_record
    from harness.verdict.twobytwo import two_by_two

    run = load_record(args.run, args.side)
    k = args.k
    if args.gold is not None:
        gold = load_gold(args.gold)
    else:
        config = load_config(args.config, repo=args.repo)
        gold = load_gold(config.gold, corpus=config.corpus)
        k = k or config.compare.k[0]
    k = k or CompareConfig().k[0]
    if k < 1:
        raise HarnessError(f"--k must be 1 or more, not {k}")
    if run.gold_hash != gold.hash:
        raise HarnessError(
            f"{run.record_path}: measured against gold {run.gold_hash[:12]}, not the gold set "
            f"given ({gold.hash[:12]})",
            ["pass the gold set the run was measured with (--gold)"],
        )
    grades = read_grades(args.answers, known=gold.by_id.keys(), named="--answers")
    table = two_by_two(
        gold, run, grades.correct, k, rel_level=args.rel_level, answers=str(args.answers)
    )
    print(render_twobytwo(table, args.format, run=f"{run.ref} ({run.sha[:8]})"), end="")
    return EXIT_OK

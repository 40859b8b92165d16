"""`harness threshold`: the top-result scores of answerable and unanswerable queries, and the
cutoff that best tells them apart (harness.verdict.threshold)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.cli.options import FORMAT, add_gold_source, add_record_side

EXAMPLES = {"threshold": "harness threshold results/runs/<record>.json"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "source", type=Path, help="a run record (results/runs/*.json) or a comparison directory"
    )
    add_record_side(p)
    add_gold_source(p)
    p.add_argument("--bins", type=int, default=10, help="histogram bins (default 10)")
    p.add_argument("--format", choices=("text", "json"), default="text", help=f"{FORMAT} or json")


def run(args: argparse.Namespace) -> int:
    from harness.cli.exits import EXIT_OK
    from harness.config import load_config
    from harness.errors import HarnessError
    from harness.gold import load_gold
    from harness.results.records import load_record
    from harness.verdict.threshold import analyse, render_threshold

    if args.bins < 1:
        raise HarnessError(f"--bins must be 1 or more, not {args.bins}")
    run = load_record(args.source, args.side)
    if args.gold is not None:
        gold = load_gold(args.gold)
    else:
        config = load_config(args.config, repo=args.repo)
        gold = load_gold(config.gold, corpus=config.corpus)
    print(render_threshold(analyse(gold, run, bins=args.bins), args.format), end="")
    return EXIT_OK

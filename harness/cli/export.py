"""`harness export`: a run record as a TREC run file, or its per-query results as CSV or
Parquet (harness.results.export)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.cli.options import add_record_side

EXAMPLES = {
    "export": "harness export results/runs/<record>.json > run.trec"
    "\n  harness export results/<stamp>_<sha8>_<sha8>/ --format parquet --output q.parquet "
    "--gold gold/gold.jsonl",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "run", type=Path, help="a run record (results/runs/*.json) or a comparison directory"
    )
    add_record_side(p)
    p.add_argument(
        "--format",
        choices=("trec", "csv", "parquet"),
        default="trec",
        help="trec: qid Q0 docid rank score tag (one repeat); csv, parquet: one row per "
        "repeat and query (default trec)",
    )
    p.add_argument(
        "--output", type=Path, help="write here (default: stdout; parquet needs a file)"
    )
    p.add_argument("--force", action="store_true", help="overwrite --output")
    p.add_argument(
        "--repeat",
        type=int,
        help="trec: which repeat (round) to write, by its index in the record, from 0 "
        "(default: the first)",
    )
    p.add_argument(
        "--gold", type=Path, help="csv, parquet: add slice and per-query metric columns"
    )
    p.add_argument(
        "--metrics",
        default="hit@5,recall@10,mrr@10,ndcg@10",
        help="csv, parquet with --gold: the metric columns "
        "(default hit@5,recall@10,mrr@10,ndcg@10)",
    )


def run(args: argparse.Namespace) -> int:
    from harness.cli.exits import EXIT_OK
    from harness.cli.output import write_output
    from harness.cli.plan import metric_specs
    from harness.errors import HarnessError
    from harness.results.export import per_query_frame, to_table, to_trec
    from harness.results.records import load_record

    if args.format == "parquet" and args.output is None:
        raise HarnessError("--format parquet writes a binary file: pass --output FILE")
    run = load_record(args.run, args.side)
    if args.format == "trec":
        data = to_trec(run, args.repeat).encode("utf-8")
    else:
        from harness.gold import load_gold

        gold = load_gold(args.gold) if args.gold is not None else None
        specs = metric_specs(args.metrics) if gold is not None else ()
        data = to_table(per_query_frame(run, gold, specs), args.format)
    if args.output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return EXIT_OK
    write_output(args.output, data, force=args.force)
    print(f"harness: wrote {args.format} to {args.output}", file=sys.stderr)
    return EXIT_OK

"""`harness gold check|build|convert|stats`: the gold-set tools, one function each."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.cli.options import FORMAT

EXAMPLES = {
    "gold check": "harness gold check gold/example.jsonl --corpus gold/example-corpus.jsonl",
    "gold build": "harness gold build --corpus corpus.jsonl --out gold/mined.jsonl "
    "--exact-rare 100 --nonsense 30",
    "gold convert": "harness gold convert gold/example.jsonl --to beir --out /tmp/beir"
    "\n  harness gold convert qrels.txt --queries topics.tsv --corpus corpus.jsonl "
    "--to native --out gold.jsonl",
    "gold stats": "harness gold stats gold/example.jsonl",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    # Each subcommand parsed by the same parser class as the command (harness.cli.parser's).
    gold = p.add_subparsers(dest="gold_command", required=True, parser_class=type(p))
    p = gold.add_parser("check", help="integrity, staleness, winnability, leaks, controls, power")
    p.add_argument("gold", type=Path, help="native JSONL, BEIR dir or TREC qrels")
    p.add_argument("--corpus", type=Path, help="corpus JSONL or BEIR dir")
    p.add_argument("--queries", type=Path, help="topics/queries file for TREC qrels")
    p.add_argument("--split", default="test", help="BEIR qrels split (default test)")
    p.add_argument("--alpha", type=float, default=0.05, help="for the power check (0.05)")
    p.add_argument(
        "--require-slice",
        action="append",
        metavar="NAME",
        help="a slice that must have at least one query (repeatable)",
    )
    p.add_argument("--format", choices=("text", "json"), default="text", help=f"{FORMAT} or json")

    p = gold.add_parser("build", help="mine queries whose answer is known by construction")
    p.add_argument(
        "--corpus", type=Path, required=True, help="corpus JSONL or BEIR dir to mine queries from"
    )
    p.add_argument("--out", type=Path, required=True, help="the native gold file to write")
    p.add_argument("--exact-rare", type=int, default=0, help="queries on a token in one doc")
    p.add_argument("--phrase", type=int, default=0, help="queries on a verbatim phrase")
    p.add_argument("--nonsense", type=int, default=0, help="unanswerable controls")
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the sampling (default 0; one corpus, one seed: one set)",
    )
    p.add_argument("--include", type=Path, help="hand-written rows to merge (checked too)")
    p.add_argument("--min-words", type=int, default=20, help="shortest useful document")
    p.add_argument("--max-words", type=int, default=2000, help="longest useful document")
    p.add_argument("--phrase-words", type=int, default=3, help="words per phrase")
    p.add_argument("--max-phrase-docs", type=int, default=25, help="most docs a phrase may match")
    p.add_argument("--description", help="recorded in the gold header")
    p.add_argument("--force", action="store_true", help="overwrite --out")

    p = gold.add_parser("convert", help="native <-> BEIR <-> TREC, saying what was dropped")
    p.add_argument("gold", type=Path, help="native JSONL, BEIR dir or TREC qrels")
    p.add_argument(
        "--corpus",
        type=Path,
        help="corpus JSONL or BEIR dir: check every judged id and record its sha256 in the "
        "native header (what gold check needs to tell a stale gold set)",
    )
    p.add_argument(
        "--to", choices=("native", "beir", "trec"), required=True, help="target format"
    )
    p.add_argument("--out", type=Path, required=True, help="a file (native) or a directory")
    p.add_argument("--queries", type=Path, help="topics/queries file for TREC qrels")
    p.add_argument("--split", default="test", help="BEIR split to read (default test)")
    p.add_argument("--out-split", default="test", help="BEIR split to write (default test)")
    p.add_argument(
        "--topics", choices=("jsonl", "tsv"), default="jsonl", help="TREC topics file format"
    )
    p.add_argument("--force", action="store_true", help="overwrite --out")

    p = gold.add_parser("stats", help="queries per slice, relevant per query, grades")
    p.add_argument("gold", type=Path, help="native JSONL, BEIR dir or TREC qrels")
    p.add_argument("--queries", type=Path, help="topics/queries file for TREC qrels")
    p.add_argument("--split", default="test", help="BEIR qrels split (default test)")
    p.add_argument("--format", choices=("text", "json"), default="text", help=f"{FORMAT} or json")


def check(args: argparse.Namespace) -> int:
    from harness.cli.exits import check_status
    from harness.gold import check_files
    from harness.gold.render import render_check

    _, report = check_files(
        args.gold,
        args.corpus,
        queries=args.queries,
        split=args.split,
        alpha=args.alpha,
        slices=tuple(args.require_slice or ()),
    )
    print(render_check(report, args.format), end="")
    return check_status(report.ok)


def build(args: argparse.Namespace) -> int:
    from harness.cli.exits import EXIT_OK
    from harness.gold import load_gold, write_native
    from harness.gold.build import build_gold
    from harness.gold.corpus import load_corpus

    corpus = load_corpus(args.corpus)
    rows = build_gold(
        corpus,
        exact_rare=args.exact_rare,
        phrase=args.phrase,
        nonsense=args.nonsense,
        seed=args.seed,
        include=load_gold(args.include) if args.include else None,
        min_words=args.min_words,
        max_words=args.max_words,
        phrase_words=args.phrase_words,
        max_phrase_docs=args.max_phrase_docs,
    )
    write_native(
        rows, args.out, corpus=corpus.info, description=args.description, overwrite=args.force
    )
    print(f"harness: wrote {len(rows)} queries to {args.out}", file=sys.stderr)
    return EXIT_OK


def convert(args: argparse.Namespace) -> int:
    from harness.cli.exits import EXIT_OK
    from harness.gold import load_gold
    from harness.gold.convert import convert as convert_gold
    from harness.gold.convert import written

    # With --corpus every judged id is checked against it and its sha256 recorded (in the
    # native header), which is what `gold check` needs to tell a stale gold set.
    gold = load_gold(args.gold, queries=args.queries, split=args.split, corpus=args.corpus)
    warnings = convert_gold(
        gold, args.to, args.out, overwrite=args.force, split=args.out_split, topics=args.topics
    )
    for warning in warnings:
        print(f"harness: warning: {warning}", file=sys.stderr)
    count = written(gold, args.to)
    print(f"harness: wrote {count} queries as {args.to} to {args.out}", file=sys.stderr)
    return EXIT_OK


def stats(args: argparse.Namespace) -> int:
    from harness.cli.exits import EXIT_OK
    from harness.gold import load_gold
    from harness.gold.render import render_stats
    from harness.gold.summary import gold_stats

    gold = load_gold(args.gold, queries=args.queries, split=args.split)
    stats = gold_stats(gold)
    if gold.format == "native":  # its "machine" and "judged_by" keys: the agreement
        from harness.gold.native import read_native_labels
        from harness.gold.provenance import labelled_stats

        stats = labelled_stats(gold, read_native_labels(args.gold))
    print(render_stats(stats, args.format), end="")
    return EXIT_OK

"""`harness compare-runs`: run files of two or more systems, each compared with the first by
compare's paired tests, Holm across the systems."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.cli.options import add_strict

EXAMPLES = {
    "compare-runs": "harness compare-runs bm25.run dense.run --gold qrels.txt"
    "\n  harness compare-runs base.run a.run b.run --gold beir/scifact --format markdown",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "runs",
        nargs="+",
        type=Path,
        metavar="RUN",
        help="TREC or native JSONL run files: the first is the baseline, each later one a "
        "candidate compared with it",
    )
    p.add_argument("--gold", required=True, type=Path, help="native JSONL, BEIR dir or TREC qrels")
    p.add_argument(
        "--queries", type=Path, help="topics file for TREC qrels (optional: query texts in flips)"
    )
    p.add_argument(
        "--corpus", type=Path, help="corpus JSONL or BEIR dir: returned ids must be in it"
    )
    p.add_argument("--k", type=int, action="append", help="cutoff (repeatable; default 5 and 10)")
    p.add_argument(
        "--gate-on",
        "--metric",
        dest="gate_on",
        action="append",
        metavar="METRIC",
        help="also let METRIC (e.g. ndcg@10) decide the quality verdict (repeatable)",
    )
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument(
        "--min-effect",
        type=float,
        default=0.05,
        help="the band: 'no measurable difference' when every headline change's interval lies "
        "inside +/- it (a smaller change the test sees is still a call; default 0.05)",
    )
    add_strict(p)
    p.add_argument("--rel-level", type=int, default=1, help="minimum grade that counts as relevant")
    p.add_argument(
        "--max-unknown-ids",
        type=int,
        default=0,
        help="with --corpus: returned ids absent from it tolerated per run (default 0)",
    )
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the bootstrap and randomization tests (0)"
    )
    p.add_argument(
        "--format",
        choices=("text", "markdown", "json", "html"),
        default="text",
        help="what to write (default text); html: one self-contained page per candidate",
    )
    p.add_argument(
        "--output",
        "-o",
        type=Path,
        metavar="PATH",
        help="write the report here instead of stdout (html with several candidates: a "
        "directory, one page per candidate and index.html)",
    )
    p.add_argument(
        "--force", action="store_true", help="overwrite --output if it exists"
    )
    p.add_argument(
        "--redact", action="store_true", help="leave query text out of every output"
    )


def check_runs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if len(args.runs) < 2:
        parser.error(
            f"compare-runs needs a baseline and at least one candidate run file, not "
            f"{len(args.runs)}: harness compare-runs BASELINE.run CANDIDATE.run --gold GOLD"
        )


def run(args: argparse.Namespace) -> int:
    from harness.cli.exits import exit_status, worst_status
    from harness.cli.output import emit, write_pages
    from harness.gold import detect_format, load_gold
    from harness.gold.corpus import load_corpus_ids
    from harness.report.systems import html_pages, render_systems
    from harness.score.runfile import load_run, require_gold_queries, require_known_queries
    from harness.verdict.comparison import CompareSettings
    from harness.verdict.systems import SystemRun, compare_systems

    if args.format == "html" and len(args.runs) > 2 and args.output is None:
        from harness.errors import HarnessError

        raise HarnessError(
            f"--format html with {len(args.runs) - 1} candidates writes one page each: "
            "give --output DIR (a new directory)"
        )
    settings = CompareSettings(
        k=tuple(args.k or (5, 10)),
        alpha=args.alpha,
        min_effect=args.min_effect,
        max_unknown_ids=args.max_unknown_ids,
        seed=args.seed,
        rel_level=args.rel_level,
        gate_on=tuple(args.gate_on or ()),
    )
    missing = [str(path) for path in args.runs if not path.exists()]
    if missing:
        from harness.errors import ResultsError

        raise ResultsError(
            f"run file{'s' * (len(missing) > 1)} not found: {', '.join(missing)}",
            ["check the RUN arguments: the baseline's run file first, then each candidate's"],
        )
    texts = args.queries is not None or detect_format(args.gold) != "trec"
    gold = load_gold(args.gold, queries=args.queries, texts=texts)
    corpus_ids = load_corpus_ids(args.corpus)[0] if args.corpus is not None else None
    systems = []
    for path in args.runs:
        run = load_run(path)
        require_gold_queries(run, gold, args.gold)
        require_known_queries(run, gold, args.gold)
        systems.append(SystemRun(str(path), run.sha256, run.rankings, run.scores))
    result = compare_systems(gold, systems, settings, corpus_ids)
    if args.format == "html":
        pages = html_pages(result, redact=args.redact)
        if len(pages) == 2:  # one candidate: its page alone, as `harness compare` writes it
            emit(args, pages.popitem()[1])
        else:
            write_pages(args.output, pages, force=args.force)
    else:
        emit(args, render_systems(result, args.format, redact=args.redact))
    statuses = [
        exit_status((c.verdict_quality,), strict=args.strict) for c in result.comparisons
    ]
    return worst_status(statuses)

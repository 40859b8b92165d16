"""Command line: parse, call the pipeline, render, map the outcome to an exit status.

Exit status: 0 no regression; 1 a regression in quality or latency outside the noise;
2 usage, configuration, gold-set or build error; 3 invalid (errors, boot failure, mismatched
inputs). The mapping from a verdict to a status lives in `exit_status` and nowhere else.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness import __version__
from harness.errors import HarnessError, ResultsError
from harness.types import RefRun, Verdict

if TYPE_CHECKING:
    from harness.comparison import CompareSettings
    from harness.metrics import MetricSpec
    from harness.runner import RunPlan

EXIT_OK, EXIT_REGRESSED, EXIT_USAGE, EXIT_INVALID = 0, 1, 2, 3


def exit_status(verdicts: Sequence[Verdict]) -> int:
    """Invalid beats regressed beats everything else."""
    if Verdict.INVALID in verdicts:
        return EXIT_INVALID
    if Verdict.REGRESSED in verdicts:
        return EXIT_REGRESSED
    return EXIT_OK


# --------------------------------------------------------------------------- commands


def cmd_metrics(args: argparse.Namespace) -> int:
    from harness.evaluation import evaluate
    from harness.gold import load_gold
    from harness.report import render_evaluation
    from harness.runfile import load_run

    specs = _metric_specs(args.metrics)
    gold = load_gold(args.gold, queries=args.queries, corpus=args.corpus)
    run = load_run(args.run)
    if not set(run.rankings) & set(gold.by_id):
        raise ResultsError(
            f"{args.run}: names none of the {len(gold)} queries of {args.gold}",
            ["check that the run and the gold set use the same query ids"],
        )
    evaluation = evaluate(gold, run.rankings, specs, args.rel_level, scores=run.scores)
    print(render_evaluation(evaluation, args.format, args.per_query, gold=gold), end="")
    return EXIT_OK


def cmd_gold_check(args: argparse.Namespace) -> int:
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
    return EXIT_OK if report.ok else EXIT_USAGE


def cmd_gold_build(args: argparse.Namespace) -> int:
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


def cmd_gold_convert(args: argparse.Namespace) -> int:
    from harness.gold import load_gold
    from harness.gold.convert import convert

    gold = load_gold(args.gold, queries=args.queries, split=args.split)
    warnings = convert(
        gold, args.to, args.out, overwrite=args.force, split=args.out_split, topics=args.topics
    )
    for warning in warnings:
        print(f"harness: warning: {warning}", file=sys.stderr)
    print(f"harness: wrote {len(gold)} queries as {args.to} to {args.out}", file=sys.stderr)
    return EXIT_OK


def cmd_gold_stats(args: argparse.Namespace) -> int:
    from harness.gold import load_gold
    from harness.gold.render import render_stats
    from harness.gold.summary import gold_stats

    gold = load_gold(args.gold, queries=args.queries, split=args.split)
    print(render_stats(gold_stats(gold), args.format), end="")
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    from harness.compare import summarise_run
    from harness.report import render_failures, render_run

    plan, settings = _plan(args)
    run = _run_ref(plan, args)
    summary = summarise_run(plan.gold, run, settings)
    print(render_run(summary, args.format), end="")
    # The table has room for one line per failure; the log tail that says why goes to stderr.
    print(render_failures(run), end="", file=sys.stderr)
    print(f"harness: run record: {run.record_path}", file=sys.stderr)
    return EXIT_OK if summary.complete else EXIT_INVALID


def cmd_compare(args: argparse.Namespace) -> int:
    if args.demo:
        return _compare_demo(args)
    from harness.compare import compare
    from harness.processes import signals_unwind
    from harness.report import render
    from harness.results import save_comparison
    from harness.runner import run_pair

    plan, settings = _plan(args)
    repeats = args.repeats or plan.config.compare.repeats
    with signals_unwind():
        baseline, candidate = run_pair(
            plan, args.baseline, args.candidate, repeats=repeats, fresh=args.fresh
        )
    comparison = compare(plan.gold, baseline, candidate, settings)
    saved = save_comparison(plan.results_dir, comparison, (baseline, candidate), redact=args.redact)
    print(render(comparison, args.format, redact=args.redact), end="")
    print(f"harness: results saved in {saved}", file=sys.stderr)
    return exit_status([comparison.verdict_quality, comparison.verdict_latency])


def cmd_report(args: argparse.Namespace) -> int:
    from harness.report import render
    from harness.results import load_comparison

    comparison = load_comparison(args.dir)
    print(render(comparison, args.format, redact=args.redact), end="")
    return exit_status([comparison.verdict_quality, comparison.verdict_latency])


def cmd_sweep(args: argparse.Namespace) -> int:
    from harness.processes import signals_unwind
    from harness.sweep.params import read_grid
    from harness.sweep.render import render_sweep
    from harness.sweep.run import overridden_pins, run_sweep, save_sweep
    from harness.sweep.summary import summarise

    grid = read_grid(args.param, args.reference)
    metrics = [str(spec) for spec in _metric_specs(args.metrics)]
    plan, settings = _plan(args)
    repeats = args.repeats or plan.config.compare.repeats
    with signals_unwind():
        runs = run_sweep(plan, args.side, args.ref, grid.points, repeats=repeats, fresh=args.fresh)
    sweep, comparisons = summarise(
        plan.gold,
        grid.points,
        runs,
        grid.reference,
        metrics,
        settings,
        side=args.side,
        overridden=overridden_pins(plan.config, args.side, grid.params),
    )
    saved = save_sweep(plan.results_dir, sweep, comparisons)
    print(render_sweep(sweep, args.format), end="")
    print(f"harness: results saved in {saved}", file=sys.stderr)
    return EXIT_OK if sweep.valid else EXIT_INVALID


def cmd_gate(args: argparse.Namespace) -> int:
    from harness.gate.baseline_file import read_baseline, read_baseline_or_none, write_baseline
    from harness.gate.measure import measure
    from harness.gate.render import render_gate
    from harness.gate.rule import Outcome, conclude, gated_metrics

    path: Path = args.baseline_file
    # A missing file is only fine when we are about to write it.
    recorded = read_baseline_or_none(path) if args.update_baseline else read_baseline(path)
    chosen = [str(spec) for spec in _metric_specs(args.metrics)] if args.metrics else None
    plan, _ = _plan(args)
    run = _run_ref(plan, args)
    measured = measure(
        plan.gold, run, gated_metrics(chosen, recorded), max_errors=plan.config.compare.max_errors
    )
    result = conclude(
        recorded,
        measured,
        update_baseline=args.update_baseline,
        strict=args.strict,
        metrics=chosen,
    )
    if result.outcome is Outcome.UPDATED and measured.baseline is not None:
        written = write_baseline(path, measured.baseline)
        what = "rewritten" if written else "unchanged (the same bytes)"
        print(f"harness: baseline {path} {what}", file=sys.stderr)
    print(render_gate(result, args.format, baseline_file=str(path)), end="")
    print(f"harness: run record: {run.record_path}", file=sys.stderr)
    return _GATE_EXIT[result.outcome]


_GATE_EXIT = {
    "pass": EXIT_OK,
    "updated": EXIT_OK,
    "fail": EXIT_REGRESSED,
    "not comparable": EXIT_INVALID,  # never a pass
    "invalid": EXIT_INVALID,
}


def cmd_threshold(args: argparse.Namespace) -> int:
    from harness.config import load_config
    from harness.gold import load_gold
    from harness.results import load_record
    from harness.threshold import analyse, render_threshold

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


def cmd_demo(args: argparse.Namespace) -> int:
    from harness.demo import materialise

    dest = materialise(args.dir)
    print(f"harness: the example repository is in {dest} (branches main and feat/x)")
    print(f"  cd {dest} && compare --baseline main --candidate feat/x")
    return EXIT_OK


def _compare_demo(args: argparse.Namespace) -> int:
    """Materialise the bundled example as a throwaway repository and compare main with feat/x
    there, exactly as a user would in their own repository; results stay in ./results."""
    from harness.demo import materialise

    results = Path(args.results).resolve()
    with tempfile.TemporaryDirectory(prefix="harness-demo-") as tmp:
        repo = materialise(Path(tmp) / "demo")
        args.config, args.repo = repo / "harness.toml", repo
        args.baseline = args.baseline or "main"
        args.candidate = args.candidate or "feat/x"
        # Always measured afresh: a demo that boots nothing the second time shows nothing.
        args.results, args.demo, args.fresh = results, False, True
        status = cmd_compare(args)
    print(
        "\nThat was the bundled example (`harness demo DIR` writes it out to copy from).\n"
        "On your own repository: add a harness.toml (the example's is the template), then\n"
        "  compare --baseline main --candidate YOUR-BRANCH",
        file=sys.stderr,
    )
    return status


# --------------------------------------------------------------------------- shared set-up


def _run_ref(plan: RunPlan, args: argparse.Namespace) -> RefRun:
    """`args.ref` run on its own, `args.repeats` times (default compare.repeats)."""
    from harness.processes import signals_unwind
    from harness.runner import run_ref

    repeats = args.repeats or plan.config.compare.repeats
    with signals_unwind():
        return run_ref(plan, args.side, args.ref, repeats=repeats)


def _metric_specs(text: str) -> tuple[MetricSpec, ...]:
    from harness.metrics import parse_metrics

    try:
        return parse_metrics(text)
    except ValueError as exc:
        raise HarnessError(f"--metrics: {exc}") from None


def _plan(args: argparse.Namespace) -> tuple[RunPlan, CompareSettings]:
    """Load config and gold (failing fast, before anything is built) into a RunPlan."""
    from dataclasses import replace

    from harness.comparison import CompareSettings
    from harness.config import load_config
    from harness.gold import check_files
    from harness.progress import Progress
    from harness.runner import RunPlan

    config = load_config(args.config, repo=args.repo)
    overrides: dict[str, object] = {
        name: getattr(args, name)
        for name in ("alpha", "latency_tolerance", "max_errors", "seed")
        if getattr(args, name, None) is not None
    }
    if getattr(args, "k", None):
        overrides["k"] = tuple(args.k)
    config = replace(config, compare=replace(config.compare, **overrides))  # type: ignore[arg-type]
    # The same checks as `harness gold check`, before anything is built or booted.
    gold, report = check_files(config.gold, config.corpus, alpha=config.compare.alpha)
    report.raise_if_errors()
    plan = RunPlan(
        config=config,
        gold=gold,
        corpus_hash=gold.corpus.sha256 if gold.corpus else None,
        results_dir=Path(args.results).resolve(),
        concurrency=args.concurrency,
        keep=args.keep,
        progress=Progress(),
    )
    settings = CompareSettings.from_config(
        config.compare,
        gate_on=getattr(args, "gate_on", None) or (),
        query_differences=config.differences(),
    )
    return plan, settings


# --------------------------------------------------------------------------- parser


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        type=Path,
        help="harness.toml (default: ./harness.toml or [tool.harness] in ./pyproject.toml)",
    )
    p.add_argument(
        "--repo", type=Path, help="the git repository (default: the one holding the config)"
    )
    p.add_argument("--repeats", type=int, help="boots per ref (default: compare.repeats)")
    p.add_argument("--results", default="results", help="where records go (default: ./results)")
    p.add_argument(
        "--concurrency", type=int, default=1, help="queries in flight (default 1: latency fidelity)"
    )
    p.add_argument("--keep", action="store_true", help="keep the worktrees and print where")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="harness",
        description="Does a ranking branch really change a retrieval service? "
        "Quality and latency, with a verdict that refuses to cry wolf.",
    )
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("compare", help="compare two refs: quality and latency verdicts")
    p.add_argument("--baseline", help="the ref to compare against (e.g. main)")
    p.add_argument("--candidate", help="the ref under review (e.g. feat/x)")
    p.add_argument(
        "--demo",
        action="store_true",
        help="run on the bundled example (main vs feat/x in a throwaway repository)",
    )
    _add_run_options(p)
    p.add_argument("--fresh", action="store_true", help="never reuse earlier run records")
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    p.add_argument(
        "--redact", action="store_true", help="leave query and document text out of every output"
    )
    p.add_argument("--k", type=int, action="append", help="cutoff (repeatable; default compare.k)")
    p.add_argument("--alpha", type=float, help="significance level (default compare.alpha)")
    p.add_argument(
        "--latency-tolerance",
        type=float,
        help="latency ratio band counted as no change (default 0.10)",
    )
    p.add_argument("--max-errors", type=int, help="errored queries tolerated (default 0)")
    p.add_argument("--seed", type=int, help="seed of the bootstrap and randomization tests")
    p.add_argument(
        "--gate-on",
        action="append",
        metavar="METRIC",
        help="also let METRIC (e.g. mrr@10) decide the quality verdict",
    )
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("run", help="run one ref in isolation and record every answer")
    p.add_argument("--ref", required=True, help="branch, tag, SHA, HEAD or WORKTREE")
    p.add_argument(
        "--side",
        choices=("baseline", "candidate"),
        default="baseline",
        help="which side's per-side overrides apply (default baseline)",
    )
    _add_run_options(p)
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("report", help="re-render a saved comparison without running anything")
    p.add_argument("dir", type=Path, help="a results/<stamp>_<sha8>_<sha8>/ directory")
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    p.add_argument("--redact", action="store_true")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("metrics", help="evaluate a run file against a gold set (a trec_eval)")
    p.add_argument("--gold", required=True, type=Path, help="native JSONL, BEIR dir or TREC qrels")
    p.add_argument("--run", required=True, type=Path, help="TREC run file or native JSONL run")
    p.add_argument("--queries", type=Path, help="topics/queries file for TREC qrels")
    p.add_argument("--corpus", type=Path, help="corpus JSONL: also check judged ids exist")
    p.add_argument("--metrics", default="hit@5,recall@10,mrr@10,ndcg@10,p@5")
    p.add_argument("--rel-level", type=int, default=1, help="minimum grade that counts as relevant")
    p.add_argument("--per-query", action="store_true")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table")
    p.set_defaults(func=cmd_metrics)

    gold = sub.add_parser("gold", help="gold-set tools").add_subparsers(
        dest="gold_command", required=True, parser_class=_Parser
    )
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
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=cmd_gold_check)

    p = gold.add_parser("build", help="mine queries whose answer is known by construction")
    p.add_argument("--corpus", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--exact-rare", type=int, default=0, help="queries on a token in one doc")
    p.add_argument("--phrase", type=int, default=0, help="queries on a verbatim phrase")
    p.add_argument("--nonsense", type=int, default=0, help="unanswerable controls")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--include", type=Path, help="hand-written rows to merge (checked too)")
    p.add_argument("--min-words", type=int, default=20, help="shortest useful document")
    p.add_argument("--max-words", type=int, default=2000, help="longest useful document")
    p.add_argument("--phrase-words", type=int, default=3, help="words per phrase")
    p.add_argument("--max-phrase-docs", type=int, default=25, help="most docs a phrase may match")
    p.add_argument("--description", help="recorded in the gold header")
    p.add_argument("--force", action="store_true", help="overwrite --out")
    p.set_defaults(func=cmd_gold_build)

    p = gold.add_parser("convert", help="native <-> BEIR <-> TREC, saying what was dropped")
    p.add_argument("gold", type=Path)
    p.add_argument("--to", choices=("native", "beir", "trec"), required=True)
    p.add_argument("--out", type=Path, required=True, help="a file (native) or a directory")
    p.add_argument("--queries", type=Path, help="topics/queries file for TREC qrels")
    p.add_argument("--split", default="test", help="BEIR split to read (default test)")
    p.add_argument("--out-split", default="test", help="BEIR split to write (default test)")
    p.add_argument(
        "--topics", choices=("jsonl", "tsv"), default="jsonl", help="TREC topics file format"
    )
    p.add_argument("--force", action="store_true", help="overwrite --out")
    p.set_defaults(func=cmd_gold_convert)

    p = gold.add_parser("stats", help="queries per slice, relevant per query, grades")
    p.add_argument("gold", type=Path)
    p.add_argument("--queries", type=Path, help="topics/queries file for TREC qrels")
    p.add_argument("--split", default="test")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=cmd_gold_stats)

    p = sub.add_parser("sweep", help="set a knob from measurement: one isolated run per value")
    p.add_argument("--ref", required=True, help="branch, tag, SHA, HEAD or WORKTREE")
    p.add_argument(
        "--param",
        required=True,
        action="append",
        metavar="NAME=V1,V2,...",
        help="an environment variable pinned on the service, and its values (repeat for a grid)",
    )
    p.add_argument(
        "--reference", help="the value the others are compared with (default: the first)"
    )
    p.add_argument(
        "--metrics", default="mrr@10,recall@10", help="columns (default: mrr@10,recall@10)"
    )
    p.add_argument(
        "--side",
        choices=("baseline", "candidate"),
        default="baseline",
        help="which side's per-side overrides apply (default baseline)",
    )
    _add_run_options(p)
    p.add_argument("--fresh", action="store_true", help="never reuse earlier run records")
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    p.add_argument("--alpha", type=float, help="significance level (default compare.alpha)")
    p.add_argument("--max-errors", type=int, help="errored queries tolerated (default 0)")
    p.add_argument("--seed", type=int, help="seed of the bootstrap and randomization tests")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("gate", help="fail when a ref drops below a committed baseline")
    p.add_argument("--ref", required=True, help="branch, tag, SHA, HEAD or WORKTREE")
    p.add_argument(
        "--baseline-file", required=True, type=Path, help="the committed baseline (JSON)"
    )
    p.add_argument(
        "--update-baseline",
        action="store_true",
        help="measure the ref and rewrite the baseline file (its diff is the before/after table)",
    )
    p.add_argument(
        "--metrics",
        help="gated metrics (default: the baseline file's; mrr@10,recall@10 for a new file)",
    )
    p.add_argument("--strict", action="store_true", help="zero tolerance: any drop fails")
    p.add_argument(
        "--side",
        choices=("baseline", "candidate"),
        default="baseline",
        help="which side's per-side overrides apply (default baseline)",
    )
    _add_run_options(p)
    p.add_argument("--max-errors", type=int, help="errored queries tolerated (default 0)")
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    p.set_defaults(func=cmd_gate)

    p = sub.add_parser(
        "threshold", help="top-result scores of answerable vs unanswerable queries, best cutoff"
    )
    p.add_argument(
        "source", type=Path, help="a run record (results/runs/*.json) or a comparison directory"
    )
    p.add_argument(
        "--side",
        choices=("baseline", "candidate"),
        default="candidate",
        help="in a comparison directory, which side's record (default candidate)",
    )
    p.add_argument("--gold", type=Path, help="the gold set (default: the config's)")
    p.add_argument("--config", type=Path, help="harness.toml (default: discovered in the cwd)")
    p.add_argument("--repo", type=Path, help="the git repository (default: the config's)")
    p.add_argument("--bins", type=int, default=10, help="histogram bins (default 10)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=cmd_threshold)

    p = sub.add_parser("demo", help="write the bundled example repository to DIR, to copy from")
    p.add_argument("dir", type=Path)
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "compare" and not args.demo and not (args.baseline and args.candidate):
        parser.error("compare needs --baseline and --candidate (or --demo)")
    from harness.processes import Terminated

    try:
        status: int = args.func(args)
    except HarnessError as exc:
        print(f"harness: error: {exc.message}", file=sys.stderr)
        for line in exc.details:
            print(line, file=sys.stderr)
        return exc.exit_status
    except Terminated as exc:
        print("harness: terminated; every service and worktree was torn down", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        print("harness: interrupted; every service and worktree was torn down", file=sys.stderr)
        return 130
    return status


def compare_main(argv: Sequence[str] | None = None) -> int:
    """The `compare` console script: the same as `harness compare`."""
    return main(["compare", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())

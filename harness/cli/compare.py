"""`harness compare` (and the `compare` program): two refs, or two running deployments,
measured together, compared, rendered and saved.

    load config and gold -> measure both sides -> analyse -> render -> save -> exit status

The engine is `harness.compare` (measure, analysis, answers, settings); this module reads the
options, says on stderr what happened, and maps the verdicts to the exit status.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.cli.load_options import add_load_options, load_ask
from harness.cli.options import (
    add_non_inferior,
    add_ray,
    add_run_options,
    add_seed,
    add_strict,
    latency_budget,
)

EXAMPLES = {
    "compare": "compare --demo\n  compare --baseline main --candidate feat/x"
    "\n  compare --baseline main --candidate WORKTREE --repeats 10 --format markdown > c.md",
}

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--baseline", help="the ref to compare against (e.g. main)")
    p.add_argument("--candidate", help="the ref under review (e.g. feat/x)")
    p.add_argument(
        "--demo",
        action="store_true",
        help="run on the bundled example (main vs feat/x in a throwaway repository)",
    )
    p.add_argument(
        "--baseline-url",
        metavar="URL",
        help="compare running deployments instead of refs: the baseline's base URL "
        "(nothing is checked out, built, booted or isolated)",
    )
    p.add_argument(
        "--candidate-url", metavar="URL", help="the candidate deployment's base URL"
    )
    add_run_options(p)
    p.add_argument(
        "--fresh",
        action="store_true",
        help="measure both sides now (the default: kept for scripts that say so)",
    )
    p.add_argument(
        "--reuse-runs",
        action="store_true",
        help="reuse matching run records instead of measuring again: quality only, latency "
        "not compared (a stored run was measured at another time)",
    )
    p.add_argument(
        "--latency-budget",
        type=latency_budget,
        metavar="N|TIME",
        help="the most latency rounds (12) or their time (5m, 300s): rounds go on past "
        "--repeats until the latency verdict is decided (default compare.latency_budget, 15)",
    )
    add_ray(p)
    p.add_argument(
        "--sequential",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="ask the queries block by block in a random order (from --seed) and stop as soon "
        "as the quality headline is decided, by an anytime-valid rule (the default, "
        "compare.sequential; --no-sequential asks the whole gold set)",
    )
    p.add_argument(
        "--format",
        choices=("text", "markdown", "json", "html"),
        default="text",
        help="what to print (default text); html: the self-contained page, also saved as "
        "report.html beside report.md",
    )
    p.add_argument(
        "--redact", action="store_true", help="leave query and document text out of every output"
    )
    p.add_argument("--k", type=int, action="append", help="cutoff (repeatable; default compare.k)")
    p.add_argument("--alpha", type=float, help="significance level (default compare.alpha)")
    p.add_argument(
        "--min-effect",
        type=float,
        help="the band: 'no measurable difference' when every headline change's interval lies "
        "inside +/- it (a smaller change the test sees is still a call; default "
        "compare.min_effect, 0.05)",
    )
    add_strict(p)
    add_non_inferior(p)
    p.add_argument(
        "--latency-tolerance",
        type=float,
        help="latency ratio band counted as no change (default 0.10)",
    )
    p.add_argument("--max-errors", type=int, help="errored queries tolerated (default 0)")
    add_seed(p)
    p.add_argument(
        "--gate-on",
        action="append",
        metavar="METRIC",
        help="also let METRIC (e.g. mrr@10) decide the quality verdict",
    )
    p.add_argument(
        "--baseline-answers",
        type=Path,
        metavar="FILE",
        help="the baseline's answer grades (JSONL or TSV, see `harness twobytwo`): adds the "
        "retrieval/generation 2x2 of each side and how queries moved",
    )
    p.add_argument("--candidate-answers", type=Path, metavar="FILE", help="the candidate's")
    p.add_argument(
        "--answers-k", type=int, metavar="K", help="the 2x2's cutoff (default: the first k)"
    )
    add_load_options(p)  # --rate --rate-duration --rate-rounds --arrivals --slo


def check_sides(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """What argparse cannot say: which of --baseline/--candidate, the URLs, --demo and
    --reuse-runs go together (a usage error otherwise)."""
    urls = (args.baseline_url, args.candidate_url)
    if any(urls):
        if not all(urls):
            parser.error("--baseline-url and --candidate-url go together: give both")
        if args.demo or args.baseline or args.candidate:
            parser.error(
                "--baseline-url/--candidate-url compare running deployments: drop --demo, "
                "--baseline and --candidate"
            )
    elif args.demo and (args.baseline or args.candidate):
        parser.error(
            "--demo compares the bundled example's own refs (main and feat/x): drop --baseline "
            "and --candidate, or drop --demo to compare your refs"
        )
    elif not args.demo and not (args.baseline and args.candidate):
        parser.error("compare needs --baseline and --candidate (or --demo, or the two --*-url)")
    if args.reuse_runs and args.fresh:
        parser.error("--reuse-runs and --fresh contradict each other: give one")
    if args.reuse_runs and any(urls):
        parser.error(
            "--reuse-runs: a deployment is never reused (what answers at a URL changes without "
            "a commit): drop --reuse-runs"
        )


def run(args: argparse.Namespace) -> int:
    if args.demo:
        return _demo(args)
    from harness.cli.exits import comparison_status, not_saved_status, unsaved_status
    from harness.cli.output import (
        html_notes,
        invalid_document,
        page_to_terminal,
        require_html,
        say_read_back,
    )
    from harness.cli.plan import close, load_plan, repeats

    require_html(args.format)
    plan, gold, settings = load_plan(args)
    # What measures, decides and reports, once config and gold are read and checked: a config
    # refused above costs no import of the stages (0.1 s instead of 0.3 s).
    from harness.compare.analysis import analyse
    from harness.compare.answer_grades import answer_grades, with_twobytwo
    from harness.compare.measure import fewer_repeats, measure, sequential_order
    from harness.compare.settings import ref_differences
    from harness.errors import ResultsError
    from harness.gate.floors import config_floors
    from harness.process.signals import signals_unwind
    from harness.report.page import render
    from harness.report.runs import render_failures
    from harness.report.saved import save_comparison

    floors = config_floors(plan.config, gold)
    grades = answer_grades(args.baseline_answers, args.candidate_answers, args.answers_k, gold)
    ask = load_ask(args)  # before anything is built: --slo without --rate is refused
    urls = bool(args.baseline_url)
    if plan.config.refs and not urls:  # [ref."PATTERN"]: as the two refs make them
        settings = ref_differences(plan.config, settings, args.baseline, args.candidate)
    order, why_not = sequential_order(plan, settings, reuse=args.reuse_runs)
    if why_not is not None:
        print(
            f"harness: warning: not sequential: {why_not}; the whole gold set is asked "
            "(--no-sequential says so quietly)",
            file=sys.stderr,
        )
    costs = fewer_repeats(plan, repeats(args, plan), reuse=args.reuse_runs, urls=urls)
    if costs is not None:  # said once, before the first boot: --repeats N is no cap on rounds
        print(f"harness: note: {costs}", file=sys.stderr)
    with signals_unwind(), invalid_document(args.format):
        runs = measure(
            plan,
            gold,
            settings,
            args.baseline_url if urls else args.baseline,
            args.candidate_url if urls else args.candidate,
            repeats=repeats(args, plan),
            urls=urls,
            reuse=args.reuse_runs,
            order=order,
        )
    comparison, cached = analyse(
        plan, gold, settings, floors, runs, redact=args.redact, order=order
    )
    say_read_back(cached)
    comparison = with_twobytwo(comparison, gold, runs, grades, args.answers_k)
    if ask is not None:  # compare --rate: the load phase, after the timed rounds
        from harness.compare.load import measure_load
        from harness.verdict.load_join import with_load

        with signals_unwind(), invalid_document(args.format):
            sides = (args.baseline_url, args.candidate_url) if urls else (args.baseline,
                                                                          args.candidate)
            load = measure_load(plan, comparison.settings, *sides, ask, urls=urls)
        comparison = with_load(comparison, load)
    close(plan)
    # The report first: both sides were measured, and a full disk must not hide what they showed.
    page = (
        None
        if page_to_terminal(args.format)
        else render(comparison, args.format, redact=args.redact)
    )
    if page is not None:
        print(page, end="", flush=True)
    saved, unsaved = None, None
    try:
        saved = save_comparison(plan.results_dir, comparison, runs, redact=args.redact)
    except ResultsError as exc:  # a full disk: the verdict above stands, unsaved
        unsaved = exc
    for side in runs:  # the report names a failed build or boot; its log's last lines say why
        if side.failures:
            print(render_failures(side), end="", file=sys.stderr)
    status = comparison_status(comparison, strict=args.strict)
    if saved is None:
        assert unsaved is not None  # the one way not to have saved
        print(f"harness: error: {unsaved.message}", file=sys.stderr)
        print(
            f"the comparison above was NOT saved: {not_saved_status(status)}",
            file=sys.stderr,
        )
        return unsaved_status(status)
    print(f"harness: results saved in {saved}", file=sys.stderr)
    html_notes(page is None, saved / "report.html")
    return status


def _demo(args: argparse.Namespace) -> int:
    """Materialise the bundled example as a throwaway repository and compare main with feat/x
    there, exactly as a user would in their own repository; results stay in ./results."""
    import tempfile

    from harness.demo import materialise
    from harness.process.leftovers import temp_dir
    from harness.results.files import check_writable

    results = check_writable(Path(args.results).resolve())
    with temp_dir(Path(tempfile.gettempdir()), "harness-demo-") as tmp:  # recorded before made
        repo = materialise(tmp / "demo")
        args.config, args.repo = repo / "harness.toml", repo
        args.baseline = args.baseline or "main"
        args.candidate = args.candidate or "feat/x"
        # Always measured afresh: a demo that boots nothing the second time shows nothing.
        args.results, args.demo, args.fresh = results, False, True
        status = run(args)
    print(
        "\nThat was the bundled example (`harness demo DIR` writes it out to copy from).\n"
        "On your own repository: add a harness.toml (the example's is the template), then\n"
        "  compare --baseline main --candidate YOUR-BRANCH",
        file=sys.stderr,
    )
    return status

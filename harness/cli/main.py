"""Command line: parse, call the pipeline, render, map the outcome to an exit status.

    main(argv) -> int: parse (`harness.cli.parser`), run the named command, and turn a
    HarnessError into `harness: error: ...` and its exit status (a signal into 128 + N)

Every cmd_* is the same four steps: load (config, gold, records), call the stages, render to
stdout (notes to stderr), and return the exit status that `harness.cli.exits` maps its outcome
to.  Anything that decides or computes lives in the stage it belongs to.  Stage modules are
imported inside each command, so that `harness --help` loads none of them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from harness.cli.exits import (
    EXIT_OK,
    bisect_status,
    check_status,
    exit_status,
    gate_status,
    matrix_status,
    signal_status,
    valid_status,
    worst_status,
)
from harness.cli.parser import parse_args

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing for `harness --help`
if TYPE_CHECKING:
    from harness.config import HarnessConfig
    from harness.gate.floors import Floor
    from harness.gold.grades import Grades
    from harness.replay.runner import RemoteRounds, RunPlan
    from harness.score.metrics import MetricSpec
    from harness.types import GoldSet, RefRun
    from harness.verdict.comparison import CompareSettings, Comparison
    from harness.verdict.latency_rule import LatencyBudget


def main(argv: Sequence[str] | None = None) -> int:
    return _main(argv, exiting=argv is None)


def _main(argv: Sequence[str] | None, *, exiting: bool) -> int:
    """`main`; `exiting`: called as the program (the process ends when this returns)."""
    args = parse_args(argv)  # --help, --version and usage errors exit here, having loaded no stage
    import os

    from harness.scrub import guard_output, register_environment, register_url, release_output

    register_environment(os.environ)  # API_TOKEN and the like: never printed or written
    for url in (getattr(args, "baseline_url", None), getattr(args, "candidate_url", None)):
        if url:
            register_url(url)  # before anything can quote it, a usage error included
    guard_output()  # a URL's password, an Authorization header: never printed (harness.scrub)
    try:
        return _run(args, exiting=exiting)
    finally:
        release_output()


def _run(args: argparse.Namespace, *, exiting: bool) -> int:
    from harness.cli.checks import check_args
    from harness.errors import HarnessError
    from harness.leftovers import anything_left
    from harness.signals import Terminated

    name = f"gold {args.gold_command}" if args.command == "gold" else args.command
    if name not in WITHOUT_NUMPY:
        _import_numpy()
    command = COMMANDS[name]
    try:
        check_args(args)
        if anything_left():
            from harness.boot.recovery import recover

            recover()  # what an earlier run killed with SIGKILL left: its worktrees and temp dirs
        try:
            return command(args)
        finally:
            live = sys.modules.get("harness.cli.progress")  # loaded only by commands that run
            if live is not None:
                live.close_all()
    except HarnessError as exc:
        print(f"harness: error: {exc.message}", file=sys.stderr)
        for line in exc.details:
            print(line, file=sys.stderr)
        return exc.exit_status
    except Terminated as exc:
        _say_torn_down("terminated", exiting=exiting)
        return signal_status(exc.signum)
    except KeyboardInterrupt:
        import signal

        _say_torn_down("interrupted", exiting=exiting)
        return signal_status(signal.SIGINT)


def _say_torn_down(what: str, *, exiting: bool) -> None:
    """The last line of a run a signal ended: "torn down" only when it is true, checked against
    the disk, git's worktree list and the process table (`recovery.remaining`); else what is
    left, which stays in the leftovers state for the next run or `harness clean` to remove.
    `exiting` (main called as the program, argv None): signals stay ignored to the exit."""
    from harness.signals import signals_ignored

    # The teardown is over: one more Ctrl-C must not cut this short (nor the exit, as the program),
    # nor the import of the recovery, not loaded at the start when nothing was left to recover.
    with signals_ignored(restore=not exiting):
        from harness.boot.recovery import remaining

        left = remaining()
        if not left:
            print(f"harness: {what}; every service and worktree was torn down", file=sys.stderr)
            return
        print(
            f"harness: {what}; not everything was torn down: {'; '.join(left)} "
            f"{'is' if len(left) == 1 else 'are'} left, and the next run (or `harness clean`) "
            "will remove "
            + ("it" if len(left) == 1 else "them"),
            file=sys.stderr,
        )


def _import_numpy() -> None:
    """Import numpy (every command but WITHOUT_NUMPY's will) with OpenBLAS on one thread.

    OpenBLAS starts a thread per CPU when numpy loads, and they spin: about 0.1 CPU-second of a
    command's own, for matrix products too small to gain from threads (`bench_scale.py` at 50k
    queries takes the same time either way). OPENBLAS_NUM_THREADS is read only as the library
    loads: it is set for the import and removed again, so no build or service the harness starts
    ever sees it. A value the user set is left alone."""
    import os

    if "numpy" in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ:
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]


def compare_main(argv: Sequence[str] | None = None) -> int:
    """The `compare` console script: the same as `harness compare`."""
    return _main(["compare", *(sys.argv[1:] if argv is None else argv)], exiting=argv is None)


# --------------------------------------------------------------------------- commands


def cmd_metrics(args: argparse.Namespace) -> int:
    from harness.cli.metrics import metrics

    return metrics(args, _metric_specs(args.metrics))


def cmd_compare_runs(args: argparse.Namespace) -> int:
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
            _emit(args, pages.popitem()[1])
        else:
            _write_pages(args.output, pages, force=args.force)
    else:
        _emit(args, render_systems(result, args.format, redact=args.redact))
    statuses = [
        exit_status((c.verdict_quality,), strict=args.strict) for c in result.comparisons
    ]
    return worst_status(statuses)


def _emit(args: argparse.Namespace, text: str) -> None:
    """The report to --output (refused if it exists, unless --force), else to stdout."""
    if args.output is None:
        print(text, end="")
        return
    _write_output(args.output, text.encode("utf-8"), force=args.force)
    print(f"harness: wrote {args.output}", file=sys.stderr)


def _write_pages(out: Path, pages: Mapping[str, str], *, force: bool) -> None:
    from harness.errors import HarnessError

    if out.exists() and not out.is_dir():
        raise HarnessError(f"--output {out}: not a directory; give a new directory for the pages")
    out.mkdir(parents=True, exist_ok=True)
    for name, page in pages.items():
        _write_output(out / name, page.encode("utf-8"), force=force)
    index = out / "index.html"
    print(f"harness: wrote {len(pages)} pages in {out} (open {index})", file=sys.stderr)


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
    return check_status(report.ok)


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
    from harness.gold.convert import convert, written

    # With --corpus every judged id is checked against it and its sha256 recorded (in the
    # native header), which is what `gold check` needs to tell a stale gold set.
    gold = load_gold(args.gold, queries=args.queries, split=args.split, corpus=args.corpus)
    warnings = convert(
        gold, args.to, args.out, overwrite=args.force, split=args.out_split, topics=args.topics
    )
    for warning in warnings:
        print(f"harness: warning: {warning}", file=sys.stderr)
    count = written(gold, args.to)
    print(f"harness: wrote {count} queries as {args.to} to {args.out}", file=sys.stderr)
    return EXIT_OK


def cmd_gold_stats(args: argparse.Namespace) -> int:
    from harness.gold import load_gold
    from harness.gold.render import render_stats
    from harness.gold.summary import gold_stats

    gold = load_gold(args.gold, queries=args.queries, split=args.split)
    print(render_stats(gold_stats(gold), args.format), end="")
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    from harness.report.runs import render_failures, render_run
    from harness.verdict.compare import summarise_run

    plan, settings = _plan(args)
    run = _run_ref(plan, args)
    _phase(plan, "analysis", "scoring")
    summary = summarise_run(plan.gold, run, settings)
    _close(plan)
    print(render_run(summary, args.format, redact=plan.redact), end="")
    # The table has room for one line per failure; the log tail that says why goes to stderr.
    print(render_failures(run), end="", file=sys.stderr)
    print(f"harness: run record: {run.record_path}", file=sys.stderr)
    return valid_status(summary.complete)


def cmd_compare(args: argparse.Namespace) -> int:
    if args.demo:
        return _compare_demo(args)
    from harness.replay.runner import run_deployed, run_pair
    from harness.report.page import render
    from harness.report.runs import render_failures
    from harness.results.comparisons import save_comparison
    from harness.signals import signals_unwind

    _require_html(args.format)
    plan, settings = _plan(args)
    floors = _floors(plan)
    grades = _answer_grades(args, plan.gold)
    if plan.config.refs and not args.baseline_url:  # [ref."PATTERN"]: as the two refs make them
        settings = _ref_differences(plan.config, settings, args.baseline, args.candidate)
    order = _sequential_order(args, plan, settings)
    with signals_unwind():
        if order is not None:
            from harness.replay.blocks import run_sequential_pair
            from harness.verdict.asked import plan_for, stop_rule

            deployed = bool(args.baseline_url)
            baseline, candidate, _ = run_sequential_pair(
                plan,
                args.baseline_url if deployed else args.baseline,
                args.candidate_url if deployed else args.candidate,
                repeats=_repeats(args, plan),
                order=order,
                block=plan_for(plan.gold, settings).block_size,
                look=stop_rule(plan.gold, settings, order),
                latency_budget=_latency_budget(plan),
                urls=deployed,
            )
        elif args.baseline_url:
            baseline, candidate = run_deployed(
                plan,
                args.baseline_url,
                args.candidate_url,
                repeats=_repeats(args, plan),
                latency_budget=_latency_budget(plan),
            )
        else:
            # Both sides measured together unless --reuse-runs: latency is what a re-compare
            # is most often for, and a stored run cannot be paired with a new one.
            baseline, candidate = run_pair(
                plan,
                args.baseline,
                args.candidate,
                repeats=_repeats(args, plan),
                reuse=args.reuse_runs,
                latency_budget=_latency_budget(plan),
            )
    comparison = _analyse(
        plan, settings, floors, (baseline, candidate), redact=args.redact, order=order
    )
    comparison = _with_twobytwo(args, plan.gold, comparison, (baseline, candidate), grades)
    _close(plan)
    # The report first: both sides were measured, and a full disk must not hide what they showed.
    page = (
        None
        if _page_to_terminal(args.format)
        else render(comparison, args.format, redact=args.redact)
    )
    if page is not None:
        print(page, end="", flush=True)
    saved = save_comparison(plan.results_dir, comparison, (baseline, candidate), redact=args.redact)
    for run in (baseline, candidate):  # the report names a failed build; its log says why
        if run.build_failure is not None:
            print(render_failures(run), end="", file=sys.stderr)
    print(f"harness: results saved in {saved}", file=sys.stderr)
    _html_notes(page is None, saved / "report.html")
    return exit_status(
        comparison.verdicts, strict=args.strict, floors_failed=comparison.floors_failed
    )


def _analyse(
    plan: RunPlan,
    settings: CompareSettings,
    floors: Sequence[Floor],
    runs: tuple[RefRun, RefRun],
    *,
    redact: bool,
    order: Sequence[str] | None = None,
) -> Comparison:
    """compare's analysis of two runs measured together: scored, tested, checked against the
    corpus and [gate.floors] (read back from the comparison cache when nothing changed); with
    `order` (compare --sequential), over the queries asked, by the sequential rule."""
    from dataclasses import replace

    from harness.gold.corpus import load_corpus_ids
    from harness.results.cache import cached_compare

    baseline, candidate = runs
    _phase(plan, "analysis", "scoring, paired tests, latency")
    corpus = plan.config.corpus
    corpus_ids = load_corpus_ids(corpus)[0] if corpus is not None else None
    # The gold set as the repository names it: the checkout's absolute path means nothing in a
    # saved comparison or a pull-request comment.
    gold = replace(plan.gold, source=_in_repo(plan.gold.source, plan.config.repo))
    if order is not None:
        from harness.verdict.asked import compare_asked

        comparison = compare_asked(gold, baseline, candidate, settings, list(order), corpus_ids)
        cached = False
    else:
        comparison, cached = cached_compare(
            plan.results_dir,
            gold,
            baseline,
            candidate,
            settings,
            corpus_ids,
            corpus_hash=plan.corpus_hash,
            use=not redact,  # an entry holds query texts: none is written under --redact
        )
    if cached:
        print(
            "harness: both runs and every setting as before: the comparison is read back "
            "from the cache",
            file=sys.stderr,
        )
    return _with_floors(comparison, floors, plan, candidate)


def cmd_bisect(args: argparse.Namespace) -> int:
    from harness.bisect.judge import Criterion
    from harness.bisect.path import first_parent_path
    from harness.bisect.render import render_bisection
    from harness.bisect.run import Commit, Step, StepResult, bisect
    from harness.bisect.saved import save_bisection, step_line
    from harness.replay.runner import run_pair
    from harness.results.comparisons import save_comparison
    from harness.signals import signals_unwind

    metric = str(_metric_specs(args.metric)[0]) if args.metric else None
    args.gate_on = [metric] if metric else None  # a row of every step's comparison
    criterion = Criterion(metric=metric, latency=args.latency)
    plan, settings = _plan(args)
    good, bad, path = first_parent_path(plan.config.repo, args.good, args.bad)

    def compare_step(commit: Commit) -> StepResult:
        with signals_unwind():
            runs = run_pair(
                plan,
                good.sha,
                commit.sha,
                repeats=_repeats(args, plan),
                latency_budget=_latency_budget(plan),
            )
        comparison = _analyse(plan, settings, (), runs, redact=False)
        return StepResult(comparison, runs, save_comparison(plan.results_dir, comparison, runs))

    def said(step: Step, left: int) -> None:
        if plan.observer is not None:
            plan.observer.note(step_line(step, left))

    bisection = bisect(good, bad, path, criterion, compare_step, on_step=said)
    _close(plan)
    saved = save_bisection(plan.results_dir, bisection)
    print(render_bisection(bisection, args.format), end="")
    print(f"harness: bisect report saved in {saved}", file=sys.stderr)
    return bisect_status(bisection.outcome)


def _page_to_terminal(fmt: str) -> bool:
    """An HTML page (megabytes of it) is not written to a terminal: only redirected."""
    return fmt == "html" and sys.stdout.isatty()


def _require_html(fmt: str) -> None:
    """--format html without plotly: the error before anything is measured."""
    from harness.errors import HarnessError
    from harness.report.page import PLOTLY_MISSING, html_available

    if fmt == "html" and not html_available():
        raise HarnessError(*PLOTLY_MISSING)


def _html_notes(withheld: bool, page: Path) -> None:
    from harness.report.page import PLOTLY_MISSING, html_available

    if not html_available():
        print(
            f"harness: note: no report.html: {PLOTLY_MISSING[0]}; {PLOTLY_MISSING[1][0]}",
            file=sys.stderr,
        )
    elif withheld:
        print(
            f"harness: the HTML page is not written to a terminal; open {page} "
            "(or redirect: > page.html)",
            file=sys.stderr,
        )


def cmd_report(args: argparse.Namespace) -> int:
    from harness.errors import HarnessError
    from harness.report.page import render
    from harness.results.comparisons import load_comparison

    comparison = load_comparison(args.dir)
    _require_html(args.format)
    if args.output is None and _page_to_terminal(args.format):
        raise HarnessError(
            "--format html writes a page of several MB: not to a terminal",
            [
                f"write it to a file: harness report {args.dir} --format html --output page.html",
                f"or redirect it (a self-contained page): harness report {args.dir} "
                "--format html > page.html",
            ],
        )
    if args.against is not None:
        from harness.report.against import render_against
        from harness.verdict.comparable import same_definition

        other = load_comparison(args.against)
        note = same_definition(comparison, args.dir, other, args.against)
        print(f"harness: {note}", file=sys.stderr)
        # Side by side (DIR as A, OTHER as B); the exit status is DIR's, as without --against.
        page = render_against(comparison, str(args.dir), other, str(args.against), args.format)
        if args.output is None:
            print(page, end="")
        else:
            from harness.results.files import write_text_new

            write_text_new(args.output, page)
    elif args.output is None:
        print(render(comparison, args.format, redact=args.redact), end="")
    else:
        _write_page(args.output, comparison, args.format, redact=args.redact)
    return exit_status(
        comparison.verdicts, strict=args.strict, floors_failed=comparison.floors_failed
    )


def _write_page(path: Path, comparison: Comparison, fmt: str, *, redact: bool) -> None:
    """`harness report --output`: the page at `path` (never overwritten); an HTML page loads
    plotly.js from beside it, copied there once (a page on stdout has it inlined instead)."""
    from harness.report.page import render
    from harness.results.files import write_text_new

    if fmt == "html":
        from harness.report.html_page import render_html
        from harness.results.bundle import plotly_beside

        page = render_html(comparison, redact, plotly_src=plotly_beside(path.parent))
    else:
        page = render(comparison, fmt, redact=redact)
    write_text_new(path, page)
    print(f"harness: wrote {path}", file=sys.stderr)


def cmd_sweep(args: argparse.Namespace) -> int:
    from harness.signals import signals_unwind
    from harness.sweep.params import read_grid
    from harness.sweep.render import render_sweep
    from harness.sweep.run import overridden_pins, run_sweep, save_sweep
    from harness.sweep.summary import summarise

    grid = read_grid(args.param, args.reference)
    metrics = [str(spec) for spec in _metric_specs(args.metrics)]
    plan, settings = _plan(args)
    repeats = _repeats(args, plan)
    with signals_unwind():
        runs = run_sweep(plan, args.side, args.ref, grid.points, repeats=repeats, fresh=args.fresh)
    _phase(plan, "analysis", "every value against the reference")
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
    _close(plan)
    saved = save_sweep(plan.results_dir, sweep, comparisons, redact=plan.redact)
    print(render_sweep(sweep, args.format), end="")
    print(f"harness: results saved in {saved}", file=sys.stderr)
    return valid_status(sweep.valid)


def cmd_matrix(args: argparse.Namespace) -> int:
    from harness.matrix.render import render_matrix
    from harness.matrix.run import plans, run_matrix, save_matrix
    from harness.matrix.spec import read_matrix, unknown_slices
    from harness.matrix.summary import summarise
    from harness.signals import signals_unwind

    matrix = read_matrix(args.matrix)
    chosen = matrix.metrics or tuple(str(spec) for spec in _metric_specs(args.metrics))
    metrics = list(dict.fromkeys([*chosen, *(c.metric for c in matrix.constraints)]))
    plan, settings = _plan(args)
    unknown_slices(matrix, plan.gold)
    for each in plans(plan, args.side, matrix):  # every configuration is checked before any runs
        _check_cutoffs(each.config, metrics, from_cli=False)
    with signals_unwind():
        runs = run_matrix(
            plan, args.side, args.ref, matrix, repeats=_repeats(args, plan), fresh=args.fresh
        )
    result, comparisons = summarise(plan.gold, matrix, runs, metrics, settings, side=args.side)
    saved = save_matrix(plan.results_dir, result, comparisons, redact=plan.redact)
    print(render_matrix(result, args.format), end="")
    print(f"harness: results saved in {saved}", file=sys.stderr)
    return matrix_status(result.valid, bool(result.failed))


def cmd_gate(args: argparse.Namespace) -> int:
    from harness.gate.baseline_file import read_baseline, read_baseline_or_none, write_baseline
    from harness.gate.floors import check_floors
    from harness.gate.measure import measure
    from harness.gate.render import render_gate
    from harness.gate.rule import Outcome, Statistics, conclude, gated_metrics, with_floors

    path: Path = args.baseline_file
    # A missing file is only fine when we are about to write it.
    recorded = read_baseline_or_none(path) if args.update_baseline else read_baseline(path)
    chosen = [str(spec) for spec in _metric_specs(args.metrics)] if args.metrics else None
    plan, _ = _plan(args)
    floors = _floors(plan)
    run = _run_ref(plan, args)
    _close(plan)
    measured = measure(
        plan.gold, run, gated_metrics(chosen, recorded), max_errors=plan.config.compare.max_errors
    )
    compare = plan.config.compare
    result = conclude(
        recorded,
        measured,
        update_baseline=args.update_baseline,
        strict=args.strict,
        metrics=chosen,
        # compare's test, alpha and seed: a change compare cannot tell from noise passes
        statistics=Statistics(
            compare.alpha, compare.seed, {q.id: q.slice for q in plan.gold.queries}, args.max_drop
        ),
    )
    max_errors = plan.config.compare.max_errors
    result = with_floors(result, check_floors(floors, plan.gold, run, max_errors=max_errors))
    if result.outcome is Outcome.UPDATED and measured.baseline is not None:
        written = write_baseline(path, measured.baseline)
        what = "rewritten" if written else "unchanged (the same bytes)"
        print(f"harness: baseline {path} {what}", file=sys.stderr)
    print(render_gate(result, args.format, baseline_file=str(path)), end="")
    print(f"harness: run record: {run.record_path}", file=sys.stderr)
    return gate_status(result.outcome)


def cmd_threshold(args: argparse.Namespace) -> int:
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


def cmd_export(args: argparse.Namespace) -> int:
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
        specs = _metric_specs(args.metrics) if gold is not None else ()
        data = to_table(per_query_frame(run, gold, specs), args.format)
    if args.output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return EXIT_OK
    _write_output(args.output, data, force=args.force)
    print(f"harness: wrote {args.format} to {args.output}", file=sys.stderr)
    return EXIT_OK


def _write_output(path: Path, data: bytes, *, force: bool) -> None:
    import os
    import secrets

    from harness.errors import HarnessError
    from harness.results.files import write_bytes_new

    if path.exists() and not force:
        raise HarnessError(f"{path}: already exists", ["pass --force to overwrite it"])
    # Whole or not at all: written beside it, then renamed over it.
    tmp = write_bytes_new(path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp"), data)
    os.replace(tmp, path)


def cmd_schema(args: argparse.Namespace) -> int:
    from harness.schemas import schema_text

    print(schema_text(args.name), end="")
    return EXIT_OK


def cmd_history(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from harness.config import load_config
    from harness.errors import ConfigError, HarnessError, RefError
    from harness.gold import load_gold
    from harness.history.collect import commit_graph, points_from_comparisons, points_from_records
    from harness.history.render import render_history
    from harness.history.table import aggregate
    from harness.results.files import write_text_new

    specs = _metric_specs(args.metrics)
    if args.format == "html" and args.output is None and sys.stdout.isatty():
        raise HarnessError(
            "--format html writes a page of several MB: not to a terminal",
            ["pass --output history.html (or redirect: > history.html)"],
        )
    config = None
    if args.gold is None or args.repo is None:
        try:
            config = load_config(args.config, repo=args.repo)
        except ConfigError:
            if args.config is not None or (Path.cwd() / "harness.toml").is_file():
                raise
    repo = args.repo or (config.repo if config else Path.cwd())
    if args.gold is not None:
        gold = load_gold(args.gold)
    elif config is not None:
        gold = load_gold(config.gold, corpus=config.corpus)
    if args.gold is not None or config is not None:
        points, notes = points_from_records(args.results, gold, specs)
        source = f"the run records in {args.results} scored on {gold.source}"
    else:
        points, notes = points_from_comparisons(args.results)
        source = f"the saved comparisons in {args.results} (no gold set: no interval per metric)"
    try:
        graph: dict[str, tuple[str, ...]] | None = commit_graph(repo, args.ref)
        order: list[str] | None = list(graph or ())
        ordered_by = f"git's commit order ({args.ref or 'every ref'})"
    except RefError:
        if args.ref:
            raise
        graph, order = None, None
        ordered_by = "the order they were measured (no git repository here)"
    if order is not None and not args.ref and not {p.sha for p in points} & set(order):
        graph, order = None, None
        ordered_by = f"the order they were measured (git at {repo} has none of them)"
    if args.ref:
        known = set(order or ())
        points = [p for p in points if p.sha in known]
        if not points:
            raise HarnessError(
                f"--ref {args.ref}: none of the measured commits is in it",
                ["give a branch or range that holds them (git log --oneline REV)"],
            )
    history = aggregate(
        points,
        [str(s) for s in specs],
        order,
        ordered_by=ordered_by,
        source=source,
        parents=graph,
    )
    history = replace(history, notes=(*notes, *history.notes))
    src = None
    if args.format == "html" and args.output is not None:  # plotly.js beside the page, once
        from harness.results.bundle import plotly_beside

        src = plotly_beside(args.output.parent)
    text = render_history(history, args.format, plotly_src=src)
    if args.output is not None:
        write_text_new(args.output, text)
        print(f"harness: wrote {args.output}", file=sys.stderr)
    else:
        print(text, end="")
    return EXIT_OK


def cmd_twobytwo(args: argparse.Namespace) -> int:
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
    grades = read_grades(args.answers, known=gold.by_id.keys())
    table = two_by_two(
        gold, run, grades.correct, k, rel_level=args.rel_level, answers=str(args.answers)
    )
    print(render_twobytwo(table, args.format, run=f"{run.ref} ({run.sha[:8]})"), end="")
    return EXIT_OK


def _answer_grades(args: argparse.Namespace, gold: GoldSet) -> tuple[Grades, Grades] | None:
    """Both sides' answer grades (compare --baseline-answers/--candidate-answers), read before
    anything is built; one alone is a usage error: there is nothing to move between."""
    from harness.errors import HarnessError
    from harness.gold.grades import read_grades

    files = (getattr(args, "baseline_answers", None), getattr(args, "candidate_answers", None))
    if files[0] is None and files[1] is None:
        return None
    if files[0] is None or files[1] is None:
        raise HarnessError(
            "--baseline-answers and --candidate-answers go together: give both, one file per "
            "side (the same file twice when the answers were graded once)"
        )
    if args.answers_k is not None and args.answers_k < 1:
        raise HarnessError(f"--answers-k must be 1 or more, not {args.answers_k}")
    known = gold.by_id.keys()
    return read_grades(files[0], known=known), read_grades(files[1], known=known)


def _with_twobytwo(
    args: argparse.Namespace,
    gold: GoldSet,
    comparison: Comparison,
    runs: Sequence[RefRun],
    grades: tuple[Grades, Grades] | None,
) -> Comparison:
    """The comparison with both sides' 2x2 and the movement matrix, when grades were given."""
    from dataclasses import replace

    from harness.verdict.twobytwo import movement, two_by_two

    if grades is None:
        return comparison
    k = args.answers_k or comparison.settings.k[0]
    tables = [
        two_by_two(
            gold,
            run,
            side.correct,
            k,
            rel_level=comparison.settings.rel_level,
            answers=Path(side.source).name,
        )
        for side, run in zip(grades, runs, strict=True)
    ]
    return replace(comparison, twobytwo=movement(*tables))


def cmd_clean(args: argparse.Namespace) -> int:
    from harness.checkout.cache import cache_entries, clean, render_clean
    from harness.leftovers import cache_dir

    cache = cache_dir()
    if args.dry_run:
        entries = cache_entries(cache, builds=args.builds, older_than_days=args.older_than)
        removable = [e for e in entries if e.why_kept is None]
        kept = [e for e in entries if e.why_kept is not None]
        text = render_clean(cache, removable, kept).replace("  removed ", "  would remove ")
        print(text.replace("\nremoved ", "\nwould remove "), end="")
        return EXIT_OK
    removed, kept = clean(cache, builds=args.builds, older_than_days=args.older_than)
    print(render_clean(cache, removed, kept), end="")
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
    import tempfile

    from harness.demo import materialise
    from harness.leftovers import temp_dir
    from harness.results.files import check_writable

    results = check_writable(Path(args.results).resolve())
    with temp_dir(Path(tempfile.gettempdir()), "harness-demo-") as tmp:  # recorded before made
        repo = materialise(tmp / "demo")
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
    from harness.replay.runner import run_ref
    from harness.signals import signals_unwind

    with signals_unwind():
        return run_ref(plan, args.side, args.ref, repeats=_repeats(args, plan))


def _in_repo(path: str, repo: Path) -> str:
    """`path` relative to the repository when it is inside it, else as it is."""
    try:
        return str(Path(path).resolve().relative_to(repo.resolve()))
    except ValueError:
        return path


def _phase(plan: RunPlan, name: str, detail: str) -> None:
    if plan.observer is not None:
        plan.observer.phase(name, detail)


def _close(plan: RunPlan) -> None:
    """End the live progress display, if any, before a report goes to the terminal."""
    close = getattr(plan.observer, "close", None)
    if close is not None:
        close()


def _floors(plan: RunPlan) -> tuple[Floor, ...]:
    """The [gate.floors] of the config; ConfigError, before anything runs, for a slice the gold
    set does not have."""
    from harness.errors import ConfigError
    from harness.gate.floors import floors_from, unknown_slices

    gate = plan.config.gate
    floors = floors_from(gate.floors, gate.slice_floors)
    unknown = unknown_slices(floors, plan.gold)
    if unknown:
        raise ConfigError(
            f"{plan.config.path}: gate.floors.slice.{unknown[0]}: the gold set has no slice "
            f"{unknown[0]!r}",
            hint=f"known slices: {', '.join(plan.gold.slices)}",
        )
    return floors


def _with_floors(
    comparison: Comparison, floors: Sequence[Floor], plan: RunPlan, candidate: RefRun
) -> Comparison:
    """The comparison carrying [gate.floors] checked on the candidate, when any is set."""
    from dataclasses import replace

    from harness.gate.floors import check_floors

    if not floors:
        return comparison
    max_errors = plan.config.compare.max_errors
    return replace(
        comparison, floors=check_floors(floors, plan.gold, candidate, max_errors=max_errors)
    )


def _sequential_order(
    args: argparse.Namespace, plan: RunPlan, settings: CompareSettings
) -> tuple[str, ...] | None:
    """The order the queries are asked in under compare.sequential (--sequential), or None: the
    fixed design (not sequential, or a run it cannot be: said on stderr)."""
    if not plan.config.compare.sequential:
        return None
    why = (
        "--concurrency N > 1 sends the queries as a burst"
        if plan.concurrency > 1
        else "--ray runs each round on a worker"
        if plan.ray is not None
        else "--reuse-runs reuses a stored run of the whole gold set"
        if getattr(args, "reuse_runs", False)
        else None
    )
    if why is not None:
        print(
            f"harness: warning: not sequential: {why}; the whole gold set is asked "
            "(--no-sequential says so quietly)",
            file=sys.stderr,
        )
        return None
    from harness.verdict.quality_sequential import query_order

    return query_order([q.id for q in plan.gold.queries], settings.seed)


def _repeats(args: argparse.Namespace, plan: RunPlan) -> int:
    return int(args.repeats or plan.config.compare.repeats)


def _latency_budget(plan: RunPlan) -> LatencyBudget:
    """compare.latency_budget (--latency-budget overrides it in `_plan`), checked by both."""
    from harness.verdict.latency_rule import parse_budget

    return parse_budget(plan.config.compare.latency_budget)


def _metric_specs(text: str) -> tuple[MetricSpec, ...]:
    from harness.errors import HarnessError
    from harness.score.metrics import parse_metrics

    try:
        return parse_metrics(text)
    except ValueError as exc:
        raise HarnessError(f"--metrics: {exc}") from None


def _plan(args: argparse.Namespace) -> tuple[RunPlan, CompareSettings]:
    """Load config and gold (failing fast, before anything is built) into a RunPlan."""
    from dataclasses import replace

    from harness.cli.progress import Progress
    from harness.config import load_config
    from harness.gold import check_files
    from harness.replay.runner import RunPlan
    from harness.results.files import check_writable
    from harness.verdict.comparison import CompareSettings

    deployed = bool(getattr(args, "baseline_url", None))
    if deployed:
        from harness.boot.deployed import check_url

        args.baseline_url = check_url(args.baseline_url, "--baseline-url")
        args.candidate_url = check_url(args.candidate_url, "--candidate-url")
    ray = getattr(args, "ray", None)
    remote_rounds = _check_ray(ray, deployed) if ray is not None else None
    config = load_config(args.config, repo=args.repo, deployed=deployed)
    overrides: dict[str, object] = {
        name: getattr(args, name)
        for name in (
            "alpha", "min_effect", "latency_tolerance", "latency_budget", "max_errors", "seed",
            "sequential",
        )
        if getattr(args, name, None) is not None
    }
    if getattr(args, "k", None):
        overrides["k"] = tuple(args.k)
    config = replace(config, compare=replace(config.compare, **overrides))  # type: ignore[arg-type]
    gates = getattr(args, "gate_on", None) or ()
    _check_cutoffs(config, gates, from_cli=bool(getattr(args, "k", None)))
    # The same checks as `harness gold check`, before anything is built or booted.
    gold, report = check_files(config.gold, config.corpus, alpha=config.compare.alpha)
    report.raise_if_errors()
    # A run that cannot save what it measured must not measure; checked (and the directory
    # made) only once every input is valid, so a refused run leaves no empty results behind.
    results_dir = check_writable(Path(args.results).resolve())
    progress = None if args.quiet else Progress(deployed=deployed)
    plan = RunPlan(
        config=config,
        gold=gold,
        corpus_hash=gold.corpus.sha256 if gold.corpus else None,
        results_dir=results_dir,
        concurrency=args.concurrency,
        keep=args.keep,
        redact=bool(getattr(args, "redact", False)),
        progress=progress,
        observer=progress,
        ray=ray,
        remote_rounds=remote_rounds,
        order_seed=getattr(args, "seed", None),  # else each compare draws its pairs' order
    )
    sides = (args.side,) if getattr(args, "side", None) else ("baseline", "candidate")
    settings = CompareSettings.from_config(
        config.compare,
        gate_on=gates,
        query_differences=config.differences(),
        context=_context_metrics(config, gold, sides, gates),
    )
    return plan, settings


def _check_ray(address: str, deployed: bool) -> RemoteRounds:
    """--ray: Ray importable and an address given, before anything is read or built; what plays
    the rounds on it."""
    from harness.errors import HarnessError
    from harness.replay.remote import require_ray, run_rounds

    if deployed:
        raise HarnessError(
            "--ray measures refs; deployments (--baseline-url) are measured from this machine",
            ["leave out --ray, or compare refs with --baseline and --candidate"],
        )
    if not address.strip():
        raise HarnessError("--ray: give auto or a cluster address, e.g. --ray auto")
    require_ray()
    return run_rounds


def _context_metrics(
    config: HarnessConfig, gold: GoldSet, sides: Sequence[str], gate_on: Sequence[str]
) -> bool:
    """Whether the context metrics are measured: the gold set has answer spans and every side
    measured sets query.texts.  Gating on one without query.texts is a configuration error."""
    from harness.errors import ConfigError
    from harness.score.metrics import parse_metric

    without = [s for s in sides if config.side(s).query.texts is None]
    for name in gate_on:
        try:
            needs = parse_metric(name).needs_texts
        except ValueError:
            continue  # CompareSettings reports unknown names
        if needs and without:
            raise ConfigError(
                f"{name} reads the returned context text, but the {without[0]} sets no query.texts",
                hint="set query.texts to the JMESPath of each result's text, e.g. "
                'texts = "results[].text"',
            )
    return not without and any(q.spans for q in gold.queries)


def _ref_differences(
    config: HarnessConfig, settings: CompareSettings, baseline: str, candidate: str
) -> CompareSettings:
    """`settings` naming the keys that differ between the sides as they run these two refs."""
    from dataclasses import replace

    from harness.checkout.worktree import resolve_ref
    from harness.config import effective_side

    sides = [
        effective_side(config, name, ref, resolve_ref(config.repo, ref).sha)
        for name, ref in (("baseline", baseline), ("candidate", candidate))
    ]
    return replace(settings, query_differences=tuple(config.differences(*sides)))


def _check_cutoffs(config: HarnessConfig, gate_on: Sequence[str], *, from_cli: bool) -> None:
    """A cutoff above what a side asks for (query.limit) would score a shorter list as if it
    were whole: a configuration error, before anything starts."""
    from harness.errors import ConfigError
    from harness.score.metrics import parse_metric

    cutoffs = [*config.compare.k]
    for name in gate_on:
        try:
            k = parse_metric(name).k
        except ValueError:
            continue  # CompareSettings reports unknown names
        if k is not None:  # an uncut metric reads whatever was returned
            cutoffs.append(k)
    where = "--k" if from_cli else f"{config.path}: compare.k"
    for side in ("baseline", "candidate"):
        limit = config.side(side).query.limit
        too_deep = sorted({k for k in cutoffs if k > limit})
        if too_deep:
            raise ConfigError(
                f"{where}: cutoff {too_deep[-1]} is above query.limit = {limit} of the {side}: "
                f"its hit@{too_deep[-1]} would be computed from {limit} results",
                hint=f"raise query.limit to {too_deep[-1]} or more, or lower the cutoff",
            )


# --------------------------------------------------------------------------- the command table

# The commands that never import numpy (tests/test_cli_startup.py checks the list).
WITHOUT_NUMPY = frozenset({"gold convert", "schema", "clean", "demo"})

COMMANDS: Mapping[str, Callable[[argparse.Namespace], int]] = {
    "compare": cmd_compare,
    "run": cmd_run,
    "report": cmd_report,
    "metrics": cmd_metrics,
    "compare-runs": cmd_compare_runs,
    "gold check": cmd_gold_check,
    "gold build": cmd_gold_build,
    "gold convert": cmd_gold_convert,
    "gold stats": cmd_gold_stats,
    "sweep": cmd_sweep,
    "gate": cmd_gate,
    "matrix": cmd_matrix,
    "bisect": cmd_bisect,
    "threshold": cmd_threshold,
    "history": cmd_history,
    "twobytwo": cmd_twobytwo,
    "demo": cmd_demo,
    "clean": cmd_clean,
    "export": cmd_export,
    "schema": cmd_schema,
}

if __name__ == "__main__":
    sys.exit(main())

"""`harness watch`: measure a branch's unmeasured commits, find where its metrics or latency
stepped or drifted, confirm each by a fresh paired compare, and bisect inside a confirmed step
(harness.watch)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.cli.options import add_compare_step_options

EXAMPLES = {
    "watch": "harness watch --ref main"
    "\n  harness watch --ref main --budget 20 --spread --format markdown",
}


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of 1 or more")
    return value


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 0.5:
        raise argparse.ArgumentTypeError(f"{text!r}: give a rate between 0 and 0.5, e.g. 0.01")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ref", default="HEAD", help="the branch watched (default HEAD)")
    p.add_argument(
        "--budget",
        type=_positive,
        default=10,
        help="most commits measured this run (default 10); the rest wait for the next run",
    )
    p.add_argument(
        "--depth",
        type=_positive,
        default=50,
        help="how many first-parent commits back the history reaches (default 50)",
    )
    p.add_argument(
        "--spread",
        action="store_true",
        help="spend the budget spread evenly over the unmeasured commits, newest first, "
        "instead of on the newest (a coarse history at once, filled in by later runs)",
    )
    p.add_argument(
        "--metrics",
        help="the quality series (default hit@k at each compare.k, and ndcg@ the largest)",
    )
    p.add_argument(
        "--false-alarm",
        type=_rate,
        default=0.01,
        help="each series' chance of a flag when nothing changed (default 0.01)",
    )
    p.add_argument(
        "--min-step",
        type=float,
        help="the least quality step looked for (default compare.min_effect)",
    )
    p.add_argument(
        "--latency-step",
        type=float,
        help="the least latency step looked for, a ratio - 1 (default compare.latency_tolerance)",
    )
    add_compare_step_options(
        p,
        "each confirming compare",
        " (report.md, .json and the history page history.html are saved)",
    )


def run(args: argparse.Namespace) -> int:
    from harness.bisect.run import Commit, StepResult
    from harness.cli.exits import EXIT_OK, EXIT_REGRESSED
    from harness.cli.output import say_read_back
    from harness.cli.plan import close, load_plan, metric_specs, repeats
    from harness.compare.analysis import analyse
    from harness.compare.measure import measure
    from harness.driver.runner import run_ref
    from harness.errors import BuildError, HarnessError, ServiceError
    from harness.history.points import from_run
    from harness.history.table import LATENCY
    from harness.process.signals import signals_unwind
    from harness.report.saved import save_comparison
    from harness.watch.changepoint import Detection
    from harness.watch.commits import branch_path, choose, measured_points
    from harness.watch.render import render_watch
    from harness.watch.run import watch
    from harness.watch.saved import save_watch
    from harness.watch.series import build

    plan, gold, settings = load_plan(args)
    compare = plan.config.compare
    names = args.metrics or ",".join([*(f"hit@{k}" for k in compare.k), f"ndcg@{max(compare.k)}"])
    specs = metric_specs(names, "--metrics")
    rows = {str(s) for s in settings.specs}
    extra = [str(s) for s in specs if str(s) not in rows]
    if extra:  # a series is confirmed on its own row: compared as a gate_on metric
        args.gate_on = extra
        plan, gold, settings = load_plan(args)
    metrics = [str(s) for s in specs]
    repo = plan.config.repo
    path = branch_path(repo, args.ref, args.depth)
    points = measured_points(plan.results_dir, gold, specs, {c.sha for c in path})
    todo = choose(path, {p.sha for p in points}, args.budget, spread=args.spread)

    def note(text: str) -> None:
        if plan.observer is not None:
            plan.observer.note(text)
        elif not args.quiet:
            print(f"harness: {text}", file=sys.stderr)

    measured_now, failed = [], []
    for i, commit in enumerate(todo, start=1):
        note(f"watch: measuring {commit.short} ({i} of {len(todo)}) {commit.subject[:50]}")
        try:
            with signals_unwind():
                ran = run_ref(plan, "candidate", commit.sha, repeats=repeats(args, plan))
        except (BuildError, ServiceError) as exc:
            note(f"watch: {commit.short} could not be measured: {exc}")
            failed.append(commit)
            continue
        point = from_run(gold, ran, specs, when=Path(ran.record_path or "").name)
        if point is None:
            failed.append(commit)
        else:
            points.append(point)
            measured_now.append(commit)

    series = build(points, [c.sha for c in path], metrics)
    if not series:
        close(plan)
        raise HarnessError(
            f"--ref {args.ref}: fewer than two commits measured on this gold set: no history "
            "to watch yet",
            ["run it again (each run measures --budget more commits), or raise --budget"],
        )
    band = args.min_step if args.min_step is not None else compare.min_effect
    latency_band = args.latency_step if args.latency_step is not None else compare.latency_tolerance
    detections = {
        s.name: Detection(
            false_alarm=args.false_alarm,
            band=latency_band if s.name == LATENCY else band,
            seed=compare.seed if compare.seed is not None else 0,
        )
        for s in series
    }

    def compare_pair(before: Commit, after: Commit) -> StepResult:
        note(f"watch: comparing {before.short} -> {after.short}")
        with signals_unwind():
            runs = measure(plan, gold, settings, before.sha, after.sha, repeats=repeats(args, plan))
        comparison, cached = analyse(plan, gold, settings, (), runs, redact=False)
        say_read_back(cached)
        return StepResult(comparison, runs, save_comparison(plan.results_dir, comparison, runs))

    result = watch(path, series, detections, compare_pair, latency_name=LATENCY)
    close(plan)
    saved = save_watch(plan.results_dir, result, points, metrics, measured_now, failed)
    print(render_watch(result, args.format, measured_now, failed), end="")
    print(f"harness: watch report saved in {saved}", file=sys.stderr)
    return EXIT_REGRESSED if result.regressions else EXIT_OK

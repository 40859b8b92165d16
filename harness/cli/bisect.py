"""`harness bisect`: the commit that made a branch regress, found by comparing along its
first-parent history (harness.bisect), each step `harness compare`'s measurement and analysis."""

from __future__ import annotations

import argparse
import sys

from harness.cli.options import add_compare_step_options

EXAMPLES = {
    "bisect": "harness bisect --good v1.2 --bad main --metric hit@5"
    "\n  harness bisect --good HEAD~20 --bad HEAD --latency",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--good", required=True, help="a commit without the regression (e.g. v1.2)")
    p.add_argument("--bad", required=True, help="a later commit with it (e.g. main)")
    decide = p.add_mutually_exclusive_group()
    decide.add_argument(
        "--metric",
        metavar="METRIC",
        help="decide each step on this metric's verdict (e.g. hit@5, ndcg@10); default: the "
        "quality verdict",
    )
    decide.add_argument(
        "--latency", action="store_true", help="decide each step on the latency verdict"
    )
    add_compare_step_options(p, "each step", " (report.md, .json, .html are saved)")


def run(args: argparse.Namespace) -> int:
    from harness.bisect.judge import Criterion
    from harness.bisect.path import first_parent_path
    from harness.bisect.render import render_bisection
    from harness.bisect.run import Commit, Step, StepResult, bisect
    from harness.bisect.saved import save_bisection, step_line
    from harness.cli.exits import bisect_status
    from harness.cli.output import say_read_back
    from harness.cli.plan import close, load_plan, metric_specs, repeats
    from harness.compare.analysis import analyse
    from harness.compare.measure import measure
    from harness.process.signals import signals_unwind
    from harness.report.saved import save_comparison

    metric = str(metric_specs(args.metric, "--metric")[0]) if args.metric else None
    args.gate_on = [metric] if metric else None  # a row of every step's comparison
    criterion = Criterion(metric=metric, latency=args.latency)
    plan, gold, settings = load_plan(args)
    good, bad, path = first_parent_path(plan.config.repo, args.good, args.bad)

    def compare_step(commit: Commit) -> StepResult:
        with signals_unwind():
            runs = measure(plan, gold, settings, good.sha, commit.sha, repeats=repeats(args, plan))
        comparison, cached = analyse(plan, gold, settings, (), runs, redact=False)
        say_read_back(cached)
        return StepResult(comparison, runs, save_comparison(plan.results_dir, comparison, runs))

    def said(step: Step, left: int) -> None:
        if plan.observer is not None:
            plan.observer.note(step_line(step, left))

    bisection = bisect(good, bad, path, criterion, compare_step, on_step=said)
    close(plan)
    saved = save_bisection(plan.results_dir, bisection)
    print(render_bisection(bisection, args.format), end="")
    print(f"harness: bisect report saved in {saved}", file=sys.stderr)
    return bisect_status(bisection.outcome)

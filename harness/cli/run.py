"""`harness run`: one ref run in isolation, every answer recorded (results/runs/)."""

from __future__ import annotations

import argparse
import sys

from harness.cli.options import add_run_options, add_side

EXAMPLES = {"run": "harness run --ref main\n  harness run --ref WORKTREE --repeats 1 --format json"}

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ref", required=True, help="branch, tag, SHA, HEAD or WORKTREE")
    add_side(p)
    add_run_options(p)
    p.add_argument(
        "--format",
        choices=("text", "json", "table"),
        default="text",
        help="text (the terminal report; 'table' is the old name, still accepted) or json",
    )


def run(args: argparse.Namespace) -> int:
    from harness.cli.exits import valid_status
    from harness.cli.plan import close, load_plan, phase, run_ref

    plan, gold, settings = load_plan(args)
    # the stages once config and gold are read and checked: a refused config imports none
    from harness.report.runs import render_failures, render_run
    from harness.verdict.decide import summarise_run

    run = run_ref(plan, args)
    phase(plan, "analysis", "scoring")
    summary = summarise_run(gold, run, settings)
    close(plan)
    print(render_run(summary, args.format, redact=plan.redact), end="")
    # The table has room for one line per failure; the log tail that says why goes to stderr.
    print(render_failures(run), end="", file=sys.stderr)
    print(f"harness: run record: {run.record_path}", file=sys.stderr)
    return valid_status(summary.complete)

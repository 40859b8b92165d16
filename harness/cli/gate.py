"""`harness gate`: CI fails when a ref falls below a committed baseline by more than the noise
(harness.gate)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.cli.options import add_format, add_non_inferior, add_run_options, add_side

EXAMPLES = {
    "gate": "harness gate --ref main --baseline-file ci/baseline.json --update-baseline"
    "\n  harness gate --ref HEAD --baseline-file ci/baseline.json",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
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
        "--max-drop",
        type=float,
        metavar="X",
        help="also fail a row that drops by more than X (e.g. 0.02), whatever the test says; "
        "by default only a drop compare's paired test calls a regression fails",
    )
    add_non_inferior(p, "gated metric (overall rows)")
    add_side(p)
    add_run_options(p)
    p.add_argument("--max-errors", type=int, help="errored queries tolerated (default 0)")
    add_format(p)


def run(args: argparse.Namespace) -> int:
    from harness.cli.exits import gate_status
    from harness.cli.plan import close, load_plan, metric_specs, run_ref
    from harness.gate.baseline_file import read_baseline, read_baseline_or_none, write_baseline

    path: Path = args.baseline_file
    # A missing file is only fine when we are about to write it.
    recorded = read_baseline_or_none(path) if args.update_baseline else read_baseline(path)
    chosen = [str(spec) for spec in metric_specs(args.metrics)] if args.metrics else None
    plan, gold, _ = load_plan(args)
    # the stages once config and gold are read and checked: a refused config imports none
    from harness.gate.floors import check_floors, config_floors
    from harness.gate.measure import measure
    from harness.gate.paired import gate_margins
    from harness.gate.render import render_gate
    from harness.gate.rule import Outcome, Statistics, conclude, gated_metrics, with_floors

    floors = config_floors(plan.config, gold)
    run = run_ref(plan, args)
    close(plan)
    measured = measure(
        gold, run, gated_metrics(chosen, recorded), max_errors=plan.config.compare.max_errors
    )
    compare = plan.config.compare
    chosen_margins = args.non_inferior
    if chosen_margins is None and not args.update_baseline:
        chosen_margins = plan.config.gate.non_inferior
    gated = chosen or (recorded.metrics if recorded is not None else ())
    margins, ignored = gate_margins(chosen_margins, gated)
    for name in ignored:
        print(
            f"harness: note: non_inferior names {name}, which is not gated here: add it to "
            "--metrics (and the baseline file) to hold it to its margin",
            file=sys.stderr,
        )
    result = conclude(
        recorded,
        measured,
        update_baseline=args.update_baseline,
        strict=args.strict,
        metrics=chosen,
        # compare's test, alpha and seed: a change compare cannot tell from noise passes
        statistics=Statistics(
            compare.alpha,
            compare.seed,
            {q.id: q.slice for q in gold.queries},
            args.max_drop,
            margins,
        ),
    )
    max_errors = plan.config.compare.max_errors
    result = with_floors(result, check_floors(floors, gold, run, max_errors=max_errors))
    if result.outcome is Outcome.UPDATED and measured.baseline is not None:
        written = write_baseline(path, measured.baseline)
        what = "rewritten" if written else "unchanged (the same bytes)"
        print(f"harness: baseline {path} {what}", file=sys.stderr)
    print(render_gate(result, args.format, baseline_file=str(path)), end="")
    print(f"harness: run record: {run.record_path}", file=sys.stderr)
    return gate_status(result.outcome)

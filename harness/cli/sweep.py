"""`harness sweep`: a knob set from measurement, one isolated run per value (harness.sweep)."""

from __future__ import annotations

import argparse
import sys

from harness.cli.options import FORMAT, add_runs_against_a_reference

EXAMPLES = {"sweep": "harness sweep --ref main --param RRF_K=20,60,100"}


def add_arguments(p: argparse.ArgumentParser) -> None:
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
    add_runs_against_a_reference(p, f"{FORMAT}; markdown; json: sweep.json")


def run(args: argparse.Namespace) -> int:
    from harness.cli.exits import valid_status
    from harness.cli.plan import close, load_plan, metric_specs, phase, repeats
    from harness.sweep.params import read_grid

    grid = read_grid(args.param, args.reference)
    metrics = [str(spec) for spec in metric_specs(args.metrics)]
    plan, gold, settings = load_plan(args)
    # the stages once config and gold are read and checked: a refused config imports none
    from harness.process.signals import signals_unwind
    from harness.sweep.render import render_sweep
    from harness.sweep.run import overridden_pins, run_sweep, save_sweep
    from harness.sweep.summary import summarise

    times = repeats(args, plan)
    with signals_unwind():
        runs = run_sweep(plan, args.side, args.ref, grid.points, repeats=times, fresh=args.fresh)
    phase(plan, "analysis", "every value against the reference")
    sweep, comparisons = summarise(
        gold,
        grid.points,
        runs,
        grid.reference,
        metrics,
        settings,
        side=args.side,
        overridden=overridden_pins(plan.config, args.side, grid.params),
    )
    close(plan)
    saved = save_sweep(plan.results_dir, sweep, comparisons, redact=plan.redact)
    print(render_sweep(sweep, args.format), end="")
    print(f"harness: results saved in {saved}", file=sys.stderr)
    return valid_status(sweep.valid)

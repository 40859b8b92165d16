"""`harness matrix`: an ablation matrix, named configurations of one ref against a reference,
with constraints that fail the run (harness.matrix)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.cli.options import FORMAT, add_runs_against_a_reference

EXAMPLES = {"matrix": "harness matrix --ref main --matrix ablation.toml"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ref", required=True, help="branch, tag, SHA, HEAD or WORKTREE")
    p.add_argument("--matrix", required=True, type=Path, help="the matrix file (TOML)")
    p.add_argument(
        "--metrics",
        default="ndcg@10,mrr@10,recall@10,hit@5",
        help="columns, unless the file lists metrics (default: ndcg@10,mrr@10,recall@10,hit@5)",
    )
    add_runs_against_a_reference(p, f"{FORMAT}; markdown; json")


def run(args: argparse.Namespace) -> int:
    from harness.cli.exits import matrix_status
    from harness.cli.plan import load_plan, metric_specs, repeats
    from harness.matrix.spec import read_matrix, unknown_slices

    matrix = read_matrix(args.matrix)
    chosen = matrix.metrics or tuple(str(spec) for spec in metric_specs(args.metrics))
    metrics = list(dict.fromkeys([*chosen, *(c.metric for c in matrix.constraints)]))
    plan, gold, settings = load_plan(args)
    # the stages once config and gold are read and checked: a refused config imports none
    from harness.compare.settings import check_cutoffs
    from harness.matrix.render import render_matrix
    from harness.matrix.run import plans, run_matrix, save_matrix
    from harness.matrix.summary import summarise
    from harness.process.signals import signals_unwind

    unknown_slices(matrix, gold)
    for each in plans(plan, args.side, matrix):  # every configuration is checked before any runs
        check_cutoffs(each.config, metrics, from_cli=False)
    with signals_unwind():
        runs = run_matrix(
            plan, args.side, args.ref, matrix, repeats=repeats(args, plan), fresh=args.fresh
        )
    result, comparisons = summarise(gold, matrix, runs, metrics, settings, side=args.side)
    saved = save_matrix(plan.results_dir, result, comparisons, redact=plan.redact)
    print(render_matrix(result, args.format), end="")
    print(f"harness: results saved in {saved}", file=sys.stderr)
    return matrix_status(result.valid, bool(result.failed))

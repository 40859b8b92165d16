"""`harness history`: metrics and latency per commit over the saved results, in git's commit
order (asv's graph; harness.history)."""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from pathlib import Path

EXAMPLES = {
    "history": "harness history --ref main --format markdown"
    "\n  harness history --format html --output history.html",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--results", type=Path, default=Path("results"), help="default ./results")
    p.add_argument(
        "--metrics",
        default="hit@5,mrr@10,ndcg@10,recall@10",
        help="columns (default hit@5,mrr@10,ndcg@10,recall@10)",
    )
    p.add_argument(
        "--gold",
        type=Path,
        help="the gold set to score the run records on (default: the config's; with neither, "
        "the saved comparisons' numbers are used)",
    )
    p.add_argument("--config", type=Path, help="harness.toml (default: discovered in the cwd)")
    p.add_argument("--repo", type=Path, help="the git repository giving the commit order")
    p.add_argument(
        "--ref",
        metavar="REV",
        help="only the commits of REV (a branch, or a range A..B), in its order "
        "(default: every commit measured, in git's order)",
    )
    p.add_argument(
        "--format", choices=("text", "markdown", "csv", "html"), default="text",
        help="default text; html: a page with the plots (on stdout self-contained; with "
        "--output, plotly.js is copied beside FILE and loaded from there)",
    )
    p.add_argument(
        "--output", type=Path, help="write to FILE (never overwritten) instead of stdout"
    )


def _one_line(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """The promised exit-2 form (docs/reference.md): one line naming what is wrong and the fix.
    history's errors come from the config, the results and git (whose own stderr lines are its
    detail): each is folded onto the one line, the fix last."""

    @functools.wraps(run)
    def folded(args: argparse.Namespace) -> int:
        from harness.errors import HarnessError

        try:
            return run(args)
        except HarnessError as exc:
            if exc.details:
                lines = "; ".join(line.strip() for line in exc.details if line.strip())
                exc.message, exc.details = f"{exc.message}: {lines}", ()
            raise

    return folded


@_one_line
def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from harness.cli.exits import EXIT_OK
    from harness.cli.plan import metric_specs
    from harness.config import load_config
    from harness.errors import ConfigError, HarnessError
    from harness.gold import load_gold
    from harness.history.collect import (
        commit_ordering,
        points_from_comparisons,
        points_from_records,
    )
    from harness.results.files import write_text_new

    specs = metric_specs(args.metrics)
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
    points, graph, ordered_by = commit_ordering(points, repo, args.ref)
    # pandas and the page's code are imported once there is something to show (3-4 s of imports
    # on a loaded machine before an error the results folder gives at once).
    from harness.history.render import render_history
    from harness.history.table import aggregate

    history = aggregate(
        points,
        [str(s) for s in specs],
        list(graph) if graph is not None else None,
        ordered_by=ordered_by,
        source=source,
        parents=graph,
    )
    history = replace(history, notes=(*notes, *history.notes))
    src = None
    if args.format == "html" and args.output is not None:  # plotly.js beside the page, once
        from harness.report.bundle import plotly_beside

        src = plotly_beside(args.output.parent)
    text = render_history(history, args.format, plotly_src=src)
    if args.output is not None:
        if args.output.exists():  # never overwritten: said of the option, not of results
            raise HarnessError(
                f"--output {args.output}: already exists", ["remove it, or name another file"]
            )
        write_text_new(args.output, text)
        print(f"harness: wrote {args.output}", file=sys.stderr)
    else:
        print(text, end="")
    return EXIT_OK

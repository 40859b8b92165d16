"""What `harness history` reads: the results directory, and git for the commit order.

    points_from_records(results, gold, specs) -> (points, notes)   results/runs/*.json, scored
    points_from_comparisons(results) -> (points, notes)            results/*/comparison.json
    commit_graph(repo, rev) -> {sha: parents}, oldest first        git rev-list --topo-order
    points, graph, ordered_by = commit_ordering(points, repo, rev)  # the points git orders

Every record is read (an unreadable one is a ResultsError naming it: exit 2); a record measured
on another gold set, or with no usable repeat, is left out and counted in the notes.  The copies
of the records inside comparison directories are not read again (they are in runs/).
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from harness.errors import HarnessError, RefError, ResultsError
from harness.history.points import Point, from_comparison, from_run
from harness.results.comparisons import COMPARISON_FILE, load_comparison
from harness.results.records import load_run
from harness.score.metrics import MetricSpec
from harness.values.types import GoldSet

GIT_TIMEOUT_S = 60.0


def _require(results: Path) -> None:
    if not results.is_dir():
        raise ResultsError(
            f"{results}: no such results directory",
            ["run `harness compare` or `harness run` first, or pass --results DIR"],
        )


def points_from_records(
    results: Path, gold: GoldSet, specs: Sequence[MetricSpec]
) -> tuple[list[Point], list[str]]:
    """Every run record under results/runs/ scored against `gold` (history.points.from_run)."""
    _require(results)
    paths = sorted((results / "runs").glob("*.json"))
    if not paths:
        raise ResultsError(
            f"{results}: no run records in {results / 'runs'}",
            ["run `harness compare` or `harness run` first, or pass --results DIR"],
        )
    points, other_gold, unusable = [], 0, 0
    for path in paths:
        run = load_run(path)
        if run.gold_hash != gold.hash:
            other_gold += 1
            continue
        point = from_run(gold, run, specs, when=path.name)
        if point is None:
            unusable += 1
        else:
            points.append(point)
    notes = []
    if other_gold:
        notes.append(
            f"{other_gold} of {len(paths)} records were measured on another gold set than "
            f"{gold.source} ({gold.hash[:12]}) and are left out"
        )
    if unusable:
        notes.append(f"{unusable} records with no usable repeat (a failed build or boot) left out")
    if not points:
        raise ResultsError(
            f"{results}: none of the {len(paths)} run records can be scored on {gold.source}",
            [*notes, "pass the gold set they were measured on with --gold"],
        )
    return points, notes


def points_from_comparisons(results: Path) -> tuple[list[Point], list[str]]:
    """Both sides of every saved comparison (results/<stamp>_<sha8>_<sha8>/comparison.json)."""
    _require(results)
    paths = sorted(results.glob(f"*/{COMPARISON_FILE}"))
    points, invalid = [], 0
    for path in paths:
        found = from_comparison(load_comparison(path), when=path.parent.name, source=str(path))
        invalid += not found
        points += found
    if not points:
        raise ResultsError(
            f"{results}: no valid saved comparison to draw a history from",
            [
                "pass the gold set (--gold, or run where harness.toml is) to score the run "
                "records in runs/, or run `harness compare` first"
            ],
        )
    notes = [f"{invalid} invalid comparisons left out"] if invalid else []
    return points, notes


def commit_graph(repo: Path, rev: str | None) -> dict[str, tuple[str, ...]]:
    """The commits `git rev-list --topo-order --reverse` lists for `rev` (default: every ref),
    oldest first (the dict's keys), each with its parents, the first parent first (`--parents`);
    RefError when git cannot (not a repository, an unknown rev)."""
    spec = [rev] if rev else ["--all"]
    command = ["git", "-C", str(repo), "rev-list", "--topo-order", "--reverse", "--parents"]
    try:
        done = subprocess.run(
            [*command, *spec, "--"],
            capture_output=True,
            text=True,
            check=False,
            timeout=GIT_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RefError(f"{repo}: git rev-list did not run: {exc}") from None
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()[-3:]
        raise RefError(
            f"{repo}: `git rev-list {' '.join(spec)}` exited with status {done.returncode}",
            [*(f"  {line}" for line in lines), "give --ref a branch, tag or range (A..B)"],
        )
    graph = {}
    for line in done.stdout.splitlines():
        sha, *parents = line.split()
        graph[sha] = tuple(parents)
    return graph


def commit_ordering(
    points: list[Point], repo: Path, rev: str | None
) -> tuple[list[Point], dict[str, tuple[str, ...]] | None, str]:
    """(the points of `rev`, every point without one; the commit graph that orders them, or
    None for the order they were measured in; the words saying which order it is).  Without
    `rev`, no git repository at `repo`, or one holding none of the points, is the measured
    order; with `rev`, a RefError, or HarnessError when none of the points is in it."""
    try:
        graph = commit_graph(repo, rev)
    except RefError:
        if rev:
            raise
        return points, None, "the order they were measured (no git repository here)"
    if not rev:
        if not {p.sha for p in points} & set(graph):
            return points, None, f"the order they were measured (git at {repo} has none of them)"
        return points, graph, "git's commit order (every ref)"
    points = [p for p in points if p.sha in graph]
    if not points:
        raise HarnessError(
            f"--ref {rev}: none of the measured commits is in it",
            ["give a branch or range that holds them (git log --oneline REV)"],
        )
    return points, graph, f"git's commit order ({rev})"

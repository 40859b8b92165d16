"""What `harness watch` reads before it scans: the branch's first-parent commits, the ones
already measured (run records under results/runs/), and the ones to measure this run.

    path = branch_path(repo, "main", depth=50)              # oldest first
    points = measured_points(results, gold, specs, shas)    # usable records of those commits
    todo = choose(path, measured, budget=10, spread=False)  # newest unmeasured first
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from harness.bisect.path import git_text
from harness.bisect.run import Commit
from harness.checkout.worktree import WORKTREE, resolve_option
from harness.errors import RefError
from harness.history.points import Point, from_run
from harness.results.records import load_run
from harness.score.metrics import MetricSpec
from harness.values.types import GoldSet


def branch_path(repo: Path, ref: str, depth: int) -> tuple[Commit, ...]:
    """The newest `depth` commits of `git log --first-parent REF`, oldest first (a merge of a
    feature branch is one commit of main's history, as bisect walks it)."""
    if ref == WORKTREE:
        raise RefError(f"--ref {WORKTREE}: a history is of commits; commit the changes first")
    sha = resolve_option(repo, ref, "--ref").sha
    text = git_text(repo, "log", "--first-parent", f"-n{depth}", "--format=%H%x09%s", sha)
    commits = []
    for line in text.splitlines():
        head, _, subject = line.partition("\t")
        commits.append(Commit(head, subject))
    return tuple(reversed(commits))


def measured_points(
    results: Path, gold: GoldSet, specs: Sequence[MetricSpec], shas: Collection[str]
) -> list[Point]:
    """Every usable run record of a commit in `shas` measured on `gold`, as history Points (a
    record of another gold set, or with no usable repeat, is not a measurement of it)."""
    points = []
    for path in sorted((results / "runs").glob("*.json")):
        run = load_run(path)
        if run.sha not in shas or run.gold_hash != gold.hash:
            continue
        point = from_run(gold, run, specs, when=path.name)
        if point is not None:
            points.append(point)
    return points


def choose(
    path: Sequence[Commit], measured: Collection[str], budget: int, *, spread: bool = False
) -> list[Commit]:
    """The commits to measure this run, newest first: the newest `budget` unmeasured ones, or
    with `spread` `budget` of them evenly spaced from the newest to the oldest."""
    waiting = [c for c in reversed(path) if c.sha not in measured]
    if not spread or len(waiting) <= budget:
        return waiting[:budget]
    if budget == 1:
        return waiting[:1]
    step = (len(waiting) - 1) / (budget - 1)
    return [waiting[round(i * step)] for i in range(budget)]

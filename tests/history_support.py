"""A results directory with history to draw, for tests/history/test_history.py and
tests/report/test_browser.py: a real throwaway git repository with three commits, the synthetic
gold set of tests/compare_support.py written to a file, and one run record per commit (two for
the last), saved newest commit first so that the records' time order is not git's.

Commit i (0, 1, 2) buries 4 * i of the 80 answerable queries (hit@5 = (80 - 4i) / 80) and answers
in base_ms * (1 + i / 10) + rep / 10 ms (each boot a little slower than the last).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from compare_support import base_ms, buried, make_gold, make_run, ranks

from harness.gold import load_gold, write_native
from harness.results.records import save_run
from harness.values.types import GoldQuery, GoldSet

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


@dataclass(frozen=True)
class Measured:
    repo: Path
    results: Path
    gold_path: Path
    gold: GoldSet
    shas: tuple[str, ...]  # oldest first


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **GIT_ENV},
        timeout=60,
    )
    return done.stdout.strip()


def buried_of(i: int) -> dict[str, int | None]:
    return buried(*range(1, 4 * i + 1))


def measured(root: Path) -> Measured:
    repo = root / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    shas = []
    for i in range(3):
        _git(repo, "commit", "-q", "--allow-empty", "-m", f"commit {i}")
        shas.append(_git(repo, "rev-parse", "HEAD"))
    gold_path = root / "gold.jsonl"
    write_native(make_gold().queries, gold_path)
    gold = load_gold(gold_path)
    results = root / "results"
    for i in (2, 2, 1, 0):

        def ms(rep: int, q: GoldQuery, i: int = i) -> float:
            return base_ms(rep, q) * (1 + i / 10) + rep / 10

        run = make_run(gold, ranks(buried_of(i)), ref=f"c{i}", sha=shas[i], ms=ms)
        save_run(results, run)
    return Measured(repo, results, gold_path, gold, tuple(shas))


def forked(root: Path) -> Measured:
    """Three measured commits where the last two are siblings: c0 on main, c1 on main after it,
    and c2 on the branch `side` forked from c0 (git lists them c0, then c1 and c2 in some order).
    `shas` are (c0, c1, c2)."""
    repo = root / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "commit 0")
    c0 = _git(repo, "rev-parse", "HEAD")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "commit 1")
    c1 = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "-b", "side", c0)
    _git(repo, "commit", "-q", "--allow-empty", "-m", "commit 2 (side)")
    c2 = _git(repo, "rev-parse", "HEAD")
    gold_path = root / "gold.jsonl"
    write_native(make_gold().queries, gold_path)
    gold = load_gold(gold_path)
    results = root / "results"
    for i, sha in enumerate((c0, c1, c2)):
        save_run(results, make_run(gold, ranks(buried_of(i)), ref=f"c{i}", sha=sha))
    return Measured(repo, results, gold_path, gold, (c0, c1, c2))

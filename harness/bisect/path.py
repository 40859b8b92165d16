"""The commits a bisection walks: git's first-parent history from the good end to the bad end.

    good, bad, path = first_parent_path(repo, "v1.2", "main")

`path` is every commit `git log --first-parent GOOD..BAD` lists, oldest first, the bad end last:
the merges of a branch into main are single steps (a merged feature is one commit of main's
history, as `git bisect --first-parent` sees it).  The good end must be on that line: RefError
(exit 2) otherwise, saying how to find one that is.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from harness.bisect.run import Commit
from harness.checkout.worktree import WORKTREE, resolve_option
from harness.errors import RefError

GIT_TIMEOUT_S = 60.0


def first_parent_path(repo: Path, good: str, bad: str) -> tuple[Commit, Commit, tuple[Commit, ...]]:
    """(good end, bad end, the path after the good end, oldest first); RefError for a ref git
    cannot resolve, WORKTREE, or a good end that is not on the bad end's first-parent line."""
    for option, ref in (("--good", good), ("--bad", bad)):
        if ref == WORKTREE:
            raise RefError(
                f"{option} {WORKTREE}: a bisection walks commits; commit the changes first"
            )
    good_sha = resolve_option(repo, good, "--good").sha
    bad_sha = resolve_option(repo, bad, "--bad").sha
    if good_sha == bad_sha:
        raise RefError(
            f"--good {good} and --bad {bad} are the same commit ({good_sha[:8]}): nothing lies "
            "between them",
            ["give as --good a commit before the regression (git log --first-parent --oneline)"],
        )
    lines = git_text(
        repo, "log", "--first-parent", "--format=%H %P%x09%s", f"{good_sha}..{bad_sha}"
    )
    path: list[Commit] = []
    first_parent = ""
    for line in reversed(lines.splitlines()):
        shas, _, subject = line.partition("\t")
        sha, *parents = shas.split()
        path.append(Commit(sha, subject))
        if len(path) == 1:
            first_parent = parents[0] if parents else ""
    if not path or first_parent != good_sha:
        why = (
            f"--bad {bad} ({bad_sha[:8]}) is an ancestor of --good {good}"
            if not path
            else f"--good {good} ({good_sha[:8]}) is not on the first-parent history of "
            f"--bad {bad} ({bad_sha[:8]})"
        )
        raise RefError(
            why,
            [
                "give as --good a commit that `git log --first-parent --oneline BAD` lists "
                "(e.g. the merge base: git merge-base GOOD BAD)"
            ],
        )
    subject = git_text(repo, "log", "-1", "--format=%s", good_sha).strip()
    return Commit(good_sha, subject), path[-1], tuple(path)


def git_text(repo: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=GIT_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RefError(f"{repo}: git {args[0]} did not run: {exc}") from None
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-3:]
        raise RefError(
            f"{repo}: `git {' '.join(args)}` exited with status {done.returncode}",
            [f"  {line}" for line in tail],
        )
    return done.stdout

"""A fixture repository whose main is a straight line of commits, one of which regresses.

    sandbox, shas = bisect_sandbox(root, commits=16, regress_at=11, broken_at=8)

On top of `e2e_support.build_sandbox`: the good end (shas[0]) is main as the sandbox made it,
plus a build step (`test ! -e BROKEN`, logged in `builds_log`); then `commits` commits,
numbered 1..commits (shas[i]).
Commit `regress_at` buries BURIED queries (hit@5 falls from 1.0 by BURIED/80); every later
commit keeps it.  Commit `broken_at` adds BROKEN, so its build fails; the next commit removes it.
Every other commit only touches notes.txt.
"""

from __future__ import annotations

import json
from pathlib import Path

from e2e_support import (
    BASE_BEHAVIOUR,
    Sandbox,
    build_sandbox,
    commit_all,
    config_text,
    query_ids,
)

BURIED = 24  # 24 of 80 answers out of the top 10: McNemar b=24 c=0, far below any alpha
BUILD = "test ! -e BROKEN && echo built >> {log}"  # a build cached is a build not logged


def builds_log(sandbox: Sandbox) -> Path:
    """One line per build that ran (not one taken from the cache)."""
    return sandbox.root / "builds.log"


def bisect_sandbox(
    root: Path, *, commits: int, regress_at: int | None, broken_at: int | None = None
) -> tuple[Sandbox, list[str]]:
    sandbox = build_sandbox(root, {}, repeats=1)
    repo = sandbox.repo

    def commit(message: str) -> str:
        return commit_all(sandbox, message)

    (repo / "harness.toml").write_text(
        config_text(
            boot_counter=sandbox.boot_counter,
            build=BUILD.format(log=builds_log(sandbox)),
            repeats=1,
        )
    )
    shas = [commit("config: a build step")]
    for n in range(1, commits + 1):
        (repo / "notes.txt").write_text(f"commit {n}\n")
        if n == regress_at:
            behaviour = {**BASE_BEHAVIOUR, "bury": query_ids(1, BURIED)}
            (repo / "behaviour.json").write_text(json.dumps(behaviour, sort_keys=True) + "\n")
        if n == broken_at:
            (repo / "BROKEN").write_text("this commit does not build\n")
        elif broken_at is not None and n == broken_at + 1:
            (repo / "BROKEN").unlink()
        shas.append(commit(f"commit {n}" + (" (regresses)" if n == regress_at else "")))
    return sandbox, shas

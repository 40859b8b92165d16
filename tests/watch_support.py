"""A fixture repository whose main is a long line of commits with known changes in it.

    sandbox, shas = watch_sandbox(root, commits=40, quality_at=12, latency_at=25, drift=(30, 37))

On top of `e2e_support.build_sandbox` (the fixture service; every commit sleeps `slow_ms` per
search): shas[0] is main as the sandbox made it, then `commits` commits numbered 1..commits.
Commit `quality_at` buries BURIED answers out of the top 10 (hit@5 and hit@10 fall from 1.0 by
BURIED/80) and every later commit keeps them buried; commit `latency_at` sleeps LATENCY_STEP
times longer (+30%); each commit of `drift` (first, last) sleeps DRIFT_STEP times longer than
the one before (many small slowdowns, each far inside the 10% band: no single culprit).  Every
other commit only touches notes.txt.  A compare that confirms a flag may take up to
`latency_budget` latency rounds (sequential: a clear change is still decided after 2).
"""

from __future__ import annotations

import json
from pathlib import Path

from e2e_support import (
    BASE_BEHAVIOUR,
    Sandbox,
    build_sandbox,
    commit_all,
    query_ids,
)

BURIED = 16  # of 80: McNemar b=16 c=0
BASE_MS = 10.0  # twice the other e2e tests' sleep: a load burst's scheduling delay is added to
# every commit's latency alike, so the drift's 4% steps stand further above it (a CI run at
# load 4+ once saw no drift at 5 ms)
LATENCY_STEP = 1.30
DRIFT_STEP = 1.04


def watch_sandbox(
    root: Path,
    *,
    commits: int = 40,
    quality_at: int | None = 12,
    latency_at: int | None = 25,
    drift: tuple[int, int] | None = (30, 37),
    repeats: int = 2,
    latency_budget: int = 4,
) -> tuple[Sandbox, list[str]]:
    sandbox = build_sandbox(
        root, {}, repeats=repeats, main={"slow_ms": BASE_MS}, latency_budget=latency_budget
    )
    repo = sandbox.repo

    def commit(message: str) -> str:
        return commit_all(sandbox, message)

    (repo / "notes.txt").write_text("commit 0\n")
    shas = [commit("commit 0")]
    behaviour: dict[str, object] = {**BASE_BEHAVIOUR, "slow_ms": BASE_MS}
    for n in range(1, commits + 1):
        (repo / "notes.txt").write_text(f"commit {n}\n")
        said = ""
        if n == quality_at:
            behaviour["bury"] = query_ids(1, BURIED)
            said = " (buries answers)"
        if n == latency_at:
            behaviour["slow_ms"] = round(float(behaviour["slow_ms"]) * LATENCY_STEP, 3)  # type: ignore[arg-type]
            said = " (30% slower)"
        if drift is not None and drift[0] <= n <= drift[1]:
            behaviour["slow_ms"] = round(float(behaviour["slow_ms"]) * DRIFT_STEP, 3)  # type: ignore[arg-type]
            said = " (a little slower)"
        (repo / "behaviour.json").write_text(json.dumps(behaviour, sort_keys=True) + "\n")
        shas.append(commit(f"commit {n}{said}"))
    return sandbox, shas

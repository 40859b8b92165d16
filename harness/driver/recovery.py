"""Cleaning up after a harness run that died holding something (`harness.process.leftovers`' state
files), and checking what this process still holds at the end of a run.

    remaining()                           # what this process still holds that exists
    recover()                             # at the start of every invocation: one line if it did

`recover()` looks at every state file whose process is gone: it SIGKILLs any process still
carrying one of its run ids (plain isolation's orphans; a sandbox's died with the harness),
removes its worktrees (`git worktree remove --force --force`, then `git worktree prune`) and
directories, and deletes the file. A file is claimed by renaming it first, so two invocations
never clean the same one. Here, above both, because it ends processes (`harness.boot.processes`)
and removes worktrees (`harness.checkout.worktree`), which themselves record what they make in
`harness.process.leftovers`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

from harness.boot.processes import find_marked
from harness.checkout.worktree import listed_worktrees, remove_worktree
from harness.process import leftovers


def _worktree_listed(repo: Path, path: Path) -> bool:
    """Whether git in `repo` still lists `path` as one of its worktrees."""
    return path.resolve() in listed_worktrees(repo)


def remaining() -> list[str]:
    """What this process still holds that still exists, one phrase each ("worktree PATH",
    "temp dir PATH", "processes PID, PID"); what it held but is gone is forgotten. Checked
    against the disk, git's worktree list and the process table, not against what the teardown
    meant to do: it is what a "torn down" line must be true of."""
    items = leftovers.held()
    left: list[str] = []
    gone: list[tuple[str, str]] = []
    for value, repo in items["worktree"].items():
        path = Path(value)
        listed = repo is not None and Path(repo).is_dir() and _worktree_listed(Path(repo), path)
        if os.path.lexists(path) or listed:
            left.append(f"worktree {path}" + (" (still registered with git)" if listed else ""))
        else:
            gone.append(("worktree", value))
    for value in items["dir"]:
        if os.path.lexists(value):
            left.append(f"temp dir {value}")
        else:
            gone.append(("dir", value))
    for value in items["run_id"]:
        procs = [p.pid for p in find_marked(value)]
        if procs:
            left.append(f"process{'es' * (len(procs) > 1)} {', '.join(map(str, procs))}")
        else:
            gone.append(("run_id", value))
    leftovers.settle(gone)
    return left


def _dead_runs() -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every state file of a run that died, with its document (unreadable ones skipped)."""
    try:
        files = sorted(leftovers.live_dir().glob("*.json"))
    except OSError:
        return
    for path in files:
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(document, dict) and leftovers.dead(document):
            yield path, document


def recover(*, quiet: bool = False) -> list[str]:
    """Clean up after every earlier run that died holding something; one line per run said on
    stderr (unless `quiet`), and returned."""
    said = []
    for path, document in _dead_runs():
        claimed = path.with_name(f"{path.stem}.claimed-{os.getpid()}")
        try:
            os.rename(path, claimed)  # the one invocation that wins cleans it
        except OSError:
            continue
        line = _clean(document)
        claimed.unlink(missing_ok=True)
        if line:
            said.append(line)
            if not quiet:
                print(line, file=sys.stderr)
    return said


def left_by_dead_runs() -> list[str]:
    """What `recover` would clean up, one line per dead run, touching nothing (`harness clean
    --dry-run`): its worktrees and temp dirs still there and its processes still running."""
    said = []
    for _, document in _dead_runs():
        held = document.get("held", {})
        counts = (
            (sum(Path(i["value"]).exists() for i in held.get("worktree", [])), "worktree"),
            (sum(Path(i["value"]).exists() for i in held.get("dir", [])), "temp dir"),
            (sum(len(find_marked(str(i["value"]))) for i in held.get("run_id", [])), "process"),
        )
        parts = [
            f"{n} {w}{'es' if w == 'process' and n != 1 else 's' * (n != 1)}"
            for n, w in counts
            if n
        ]
        if parts:
            said.append(
                f"would clean up after an earlier run (pid {document.get('pid')}) that was "
                f"killed before it could: {', '.join(parts)}"
            )
    return said


def _clean(document: dict[str, Any]) -> str:
    held = document.get("held", {})
    killed = 0
    for item in held.get("run_id", []):
        for proc in find_marked(str(item["value"])):
            with contextlib.suppress(psutil.Error):
                proc.kill()
                killed += 1
    worktrees = 0
    for item in held.get("worktree", []):
        path = Path(item["value"])
        if item.get("repo") and Path(item["repo"]).is_dir():
            repo = Path(item["repo"])
            worktrees += path.exists() or _worktree_listed(repo, path)
            remove_worktree(repo, path)  # prunes git's record even if it is gone
        else:
            worktrees += path.exists()
            shutil.rmtree(path, ignore_errors=True)
    dirs = 0
    for item in held.get("dir", []):
        path = Path(item["value"])
        if path.exists():
            leftovers.remove_tree(path)
            dirs += 1
    if not (killed or worktrees or dirs):
        return ""
    parts = [
        f"{n} {word}{'s' * (n != 1)}"
        for n, word in ((worktrees, "worktree"), (dirs, "temp dir"), (killed, "process"))
        if n
    ]
    parts = [p.replace("processs", "processes") for p in parts]
    return (
        f"harness: cleaned up after an earlier run (pid {document.get('pid')}) that was killed "
        f"before it could: removed {', '.join(parts)}"
    )

"""What a live run holds, on disk, so that a run killed with SIGKILL can be cleaned up after.

    track("worktree", path, repo=root)    # when a worktree, snapshot or boot root is made
    untrack("worktree", path)             # when it is removed again
    track_all([("run_id", rid), ("dir", root)]); untrack_all(...)   # several, one rewrite
    recover()                             # at the start of every invocation: one line if it did

Each harness process that makes something to remove keeps one small state file,
`<cache>/live/<pid>.json`: its pid and start time (so a reused pid is not mistaken for it), and
what it holds: worktrees (with their repository), snapshots, boot roots and build temp dirs,
and the run ids of live boots (HARNESS_RUN_ID). It is rewritten atomically on each change (once
for a `track_all`/`untrack_all` of several items) and removed when the process holds nothing.
A caller tracks a thing before anything that only recovery could clean up exists outside it (a
boot's run id and root before its service is spawned) and untracks it only once it is gone.

`recover()` looks at every state file whose process is gone: it SIGKILLs any process still
carrying one of its run ids (plain isolation's orphans; a sandbox's died with the harness),
removes its worktrees (`git worktree remove --force --force`, then `git worktree prune`) and
directories, and deletes the file. A file is claimed by renaming it first, so two invocations
never clean the same one.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import psutil

KINDS = ("worktree", "dir", "run_id")
"""worktree: a git worktree of `repo`; dir: a directory to delete; run_id: a boot's marker."""

_lock = threading.Lock()
_held: dict[str, dict[str, str | None]] = {kind: {} for kind in KINDS}


def _live_dir() -> Path:
    from harness.checkout.worktree import cache_dir

    return cache_dir() / "live"


def _started(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


_own: dict[int, float | None] = {}  # this process's start time, by pid (a fork has its own)


def _own_started() -> float | None:
    """`_started(os.getpid())`, read from /proc once per process, not at every `_write`."""
    pid = os.getpid()
    if pid not in _own:
        _own[pid] = _started(pid)
    return _own[pid]


def _write() -> None:
    path = _live_dir() / f"{os.getpid()}.json"
    if not any(_held.values()):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return
    document = {
        "pid": os.getpid(),
        "started": _own_started(),
        "held": {
            kind: [{"value": v, "repo": r} for v, r in items.items()]
            for kind, items in _held.items()
        },
    }
    text = json.dumps(document, sort_keys=True) + "\n"
    tmp = path.with_suffix(".tmp")
    try:
        try:
            tmp.write_text(text, encoding="utf-8")
        except FileNotFoundError:  # the first write, or the cache was removed meanwhile
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # best effort: a cache we cannot write loses only the cleanup after a SIGKILL


def track(kind: str, value: str | Path, *, repo: Path | None = None) -> None:
    """Record that this process holds `value` (of one of KINDS) until `untrack`."""
    with _lock:
        _held[kind][str(value)] = None if repo is None else str(repo)
        _write()


def untrack(kind: str, value: str | Path) -> None:
    with _lock:
        if _held[kind].pop(str(value), "absent") != "absent":
            _write()


def track_all(items: Iterable[tuple[str, str | Path]]) -> None:
    """`track(kind, value)` of each (kind, value), with one rewrite of the state file."""
    with _lock:
        for kind, value in items:
            _held[kind][str(value)] = None
        _write()


def untrack_all(items: Iterable[tuple[str, str | Path]]) -> None:
    """`untrack(kind, value)` of each (kind, value), with one rewrite of the state file."""
    with _lock:
        dropped = [_held[kind].pop(str(value), "absent") != "absent" for kind, value in items]
        if any(dropped):
            _write()


@contextlib.contextmanager
def tracked(kind: str, value: str | Path, *, repo: Path | None = None) -> Iterator[None]:
    track(kind, value, repo=repo)
    try:
        yield
    finally:
        untrack(kind, value)


def _dead(document: dict[str, Any]) -> bool:
    pid = int(document.get("pid", 0))
    if pid == os.getpid():
        return False
    started = _started(pid)
    return started is None or started != document.get("started")


def recover(*, quiet: bool = False) -> list[str]:
    """Clean up after every earlier run that died holding something; one line per run said on
    stderr (unless `quiet`), and returned."""
    directory = _live_dir()
    try:
        files = sorted(directory.glob("*.json"))
    except OSError:
        return []
    said = []
    for path in files:
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(document, dict) or not _dead(document):
            continue
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


def _clean(document: dict[str, Any]) -> str:
    from harness.boot.isolation import remove_tree
    from harness.boot.processes import find_marked
    from harness.checkout.worktree import remove_worktree

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
        worktrees += path.exists()
        if item.get("repo") and Path(item["repo"]).is_dir():
            remove_worktree(Path(item["repo"]), path)  # prunes git's record even if it is gone
        else:
            shutil.rmtree(path, ignore_errors=True)
    dirs = 0
    for item in held.get("dir", []):
        path = Path(item["value"])
        if path.exists():
            remove_tree(path)
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

"""What a live run holds, on disk, so that a run killed with SIGKILL can be cleaned up after.

    path = make_dir("worktree", parent, "abc-", repo=root)   # tracked, THEN created
    with temp_dir(parent, "build-") as path: ...                # the same, removed at the end
    untrack("worktree", path)             # when it is removed again
    track_all([("run_id", rid), ("dir", root)]); untrack_all(...)   # several, one rewrite
    remaining()                           # what this process still holds that exists
    recover()                             # at the start of every invocation: one line if it did

Each harness process that makes something to remove keeps one small state file,
`<cache>/live/<pid>.json`: its pid and start time (so a reused pid is not mistaken for it), and
what it holds: worktrees (with their repository), snapshots, boot roots and build temp dirs,
and the run ids of live boots (HARNESS_RUN_ID). It is rewritten atomically on each change (once
for a `track_all`/`untrack_all` of several items) and removed when the process holds nothing.
A caller tracks a thing before anything that only recovery could clean up exists outside it (a
boot's run id before its service is spawned) and untracks it only once it is gone. Every temp
dir and worktree directory the harness makes is made by `make_dir`, which records the path
first and only then creates it: a signal or a SIGKILL at any instant leaves either nothing on
disk or a directory the state file names (a mkdtemp, then a track, left a window between the
two that a SIGTERM hit).

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
import secrets
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


@contextlib.contextmanager
def _changing() -> Iterator[None]:
    """The lock, and no Ctrl-C between changing `_held` and rewriting the file: one landing
    there left a state file naming what was gone while `_held` no longer did (so nothing
    rewrote it again), the file outliving a run that had torn everything down."""
    from harness.boot.processes import signals_deferred

    with signals_deferred(), _lock:
        yield


def track(kind: str, value: str | Path, *, repo: Path | None = None) -> None:
    """Record that this process holds `value` (of one of KINDS) until `untrack`."""
    with _changing():
        _held[kind][str(value)] = None if repo is None else str(repo)
        _write()


def untrack(kind: str, value: str | Path) -> None:
    with _changing():
        if _held[kind].pop(str(value), "absent") != "absent":
            _write()


def track_all(items: Iterable[tuple[str, str | Path]]) -> None:
    """`track(kind, value)` of each (kind, value), with one rewrite of the state file."""
    with _changing():
        for kind, value in items:
            _held[kind][str(value)] = None
        _write()


def untrack_all(items: Iterable[tuple[str, str | Path]]) -> None:
    """`untrack(kind, value)` of each (kind, value), with one rewrite of the state file."""
    with _changing():
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


def make_dir(
    kind: str,
    parent: Path,
    prefix: str,
    *,
    repo: Path | None = None,
    also: Iterable[tuple[str, str]] = (),
) -> Path:
    """A new directory `parent/<prefix><random>` (mode 0700, as mkdtemp makes), held as `kind`
    ("dir" or "worktree") from BEFORE it exists: the state file names it first, then it is made.
    `also` (kind, value) pairs are tracked in the same rewrite (a boot's run id with its root).
    Whatever interrupts the making (a Ctrl-C, an OSError) leaves neither the directory nor its
    record; a SIGKILL leaves at most the record of a directory, which `recover()` removes if it
    was made and forgets if not."""
    from harness.boot.processes import signals_deferred

    extra = list(also)
    for _ in range(100):
        path = parent / f"{prefix}{secrets.token_hex(4)}"
        with _changing():  # one rewrite for the directory and `also`
            _held[kind][str(path)] = None if repo is None else str(repo)
            for other, value in extra:
                _held[other][value] = None
            _write()
        made = False
        try:
            os.mkdir(path, 0o700)
            made = True
            return path
        except FileExistsError:
            untrack(kind, path)  # another's: try the next name
        except BaseException:
            with signals_deferred():  # a second Ctrl-C must not leave it made and unrecorded
                if made or os.path.isdir(path):
                    shutil.rmtree(path, ignore_errors=True)
                untrack_all(
                    [*extra, *([(kind, str(path))] if not os.path.lexists(path) else [])]
                )
            raise
    untrack_all(extra)
    raise FileExistsError(f"{parent}: no free name for a new {prefix}* directory")


@contextlib.contextmanager
def temp_dir(parent: Path, prefix: str) -> Iterator[Path]:
    """`make_dir("dir", parent, prefix)` for the block, then removed (no second Ctrl-C cuts
    that short) and forgotten once it is gone; what cannot be removed stays recorded."""
    from harness.boot.isolation import remove_tree
    from harness.boot.processes import signals_deferred

    path = make_dir("dir", parent, prefix)
    try:
        yield path
    finally:
        with signals_deferred():
            remove_tree(path)
            if not os.path.lexists(path):
                untrack("dir", path)


def _worktree_listed(repo: Path, path: Path) -> bool:
    """Whether git in `repo` still lists `path` as one of its worktrees."""
    from harness.checkout.worktree import listed_worktrees

    return path.resolve() in listed_worktrees(repo)


def remaining() -> list[str]:
    """What this process still holds that still exists, one phrase each ("worktree PATH",
    "temp dir PATH", "processes PID, PID"); what it held but is gone is forgotten. Checked
    against the disk, git's worktree list and the process table, not against what the teardown
    meant to do: it is what a "torn down" line must be true of."""
    from harness.boot.processes import find_marked

    with _lock:
        items = {kind: dict(values) for kind, values in _held.items()}
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
    with _changing():
        for kind, value in gone:
            _held[kind].pop(value, None)
        _write()  # whatever an earlier rewrite missed: the file says exactly `left` now
    return left


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

"""What a live run holds, on disk, so that a run killed with SIGKILL can be cleaned up after.

    path = make_dir("worktree", parent, "abc-", repo=root)   # tracked, THEN created
    with temp_dir(parent, "build-") as path: ...                # the same, removed at the end
    untrack("worktree", path)             # when it is removed again
    track_all([("run_id", rid), ("dir", root)]); untrack_all(...)   # several, one rewrite
    held(); settle(gone)                  # what is held; forget what is gone, rewrite
    cache_dir(); remove_tree(path)        # where it all lives; removing a tree best effort

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

Reading the state files of runs that died, and cleaning up after them, is
`harness.driver.recovery`'s (it ends processes and removes worktrees: the stages above this
module). This module imports nothing of the harness but `harness.process.signals`: every stage
that makes something on disk records it here.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from harness.process.signals import signals_deferred

KINDS = ("worktree", "dir", "run_id")
"""worktree: a git worktree of `repo`; dir: a directory to delete; run_id: a boot's marker."""

_lock = threading.Lock()
_held: dict[str, dict[str, str | None]] = {kind: {} for kind in KINDS}


def cache_dir() -> Path:
    """`$HARNESS_CACHE_DIR`, else `$XDG_CACHE_HOME/harness`, else `~/.cache/harness`: where
    everything a run makes on disk lives (worktrees, builds, boot roots, these state files).

    It is not created here. `checkout` refuses a cache inside the repository it checks out.
    """
    explicit = os.environ.get("HARNESS_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg).expanduser() / "harness"
    return Path.home() / ".cache" / "harness"


def live_dir() -> Path:
    """Where the state files are: `<cache>/live`."""
    return cache_dir() / "live"


def anything_left() -> bool:
    """Whether any run left a state file here: only then need `harness.driver.recovery` (and
    all it imports: psutil, git, the process table) be loaded to look at it."""
    try:
        return any(live_dir().glob("*.json"))
    except OSError:
        return True  # let the recovery look, and say what it finds


def started(pid: int) -> float | None:
    """Process `pid`'s start time (what tells it from a later process given the same pid)."""
    import psutil  # here: a harness command that runs nothing never needs it

    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


_own: dict[int, float | None] = {}  # this process's start time, by pid (a fork has its own)


def _own_started() -> float | None:
    """`_started(os.getpid())`, read from /proc once per process, not at every `_write`."""
    pid = os.getpid()
    if pid not in _own:
        _own[pid] = started(pid)
    return _own[pid]


def _write() -> None:
    path = live_dir() / f"{os.getpid()}.json"
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
    shared: bool = False,
) -> Path:
    """A new directory `parent/<prefix><random>` (mode 0700, as mkdtemp makes; `shared`: what
    mkdir makes, 0777 less the umask, for what becomes an output others read), held as `kind`
    ("dir" or "worktree") from BEFORE it exists: the state file names it first, then it is made.
    `also` (kind, value) pairs are tracked in the same rewrite (a boot's run id with its root).
    Whatever interrupts the making (a Ctrl-C, an OSError) leaves neither the directory nor its
    record; a SIGKILL leaves at most the record of a directory, which `recover()` removes if it
    was made and forgets if not."""
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
            os.mkdir(path, 0o777 if shared else 0o700)
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
    path = make_dir("dir", parent, prefix)
    try:
        yield path
    finally:
        with signals_deferred():
            remove_tree(path)
            if not os.path.lexists(path):
                untrack("dir", path)


def dead(document: dict[str, Any]) -> bool:
    """Whether the process of a state file (`<cache>/live/<pid>.json`, read) is gone: its pid
    not running, or running with another start time (a later process given the same pid)."""
    pid = int(document.get("pid", 0))
    if pid == os.getpid():
        return False
    now = started(pid)
    return now is None or now != document.get("started")


def held() -> dict[str, dict[str, str | None]]:
    """A copy of what this process holds: kind -> value -> its repository (worktrees) or None."""
    with _lock:
        return {kind: dict(values) for kind, values in _held.items()}


def settle(gone: Iterable[tuple[str, str]]) -> None:
    """Forget each (kind, value) that is gone and rewrite the state file even if none was held:
    whatever an earlier rewrite missed, the file then says exactly what is still held."""
    with _changing():
        for kind, value in gone:
            _held[kind].pop(value, None)
        _write()


def remove_tree(path: Path) -> None:
    """Remove `path`, making read-only parts writable; best effort (it lives under a temp dir)."""

    def chmod_and_retry(func: Callable[[str], object], failed: str, _exc: object) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(failed), 0o700)
            os.chmod(failed, 0o700)
            func(failed)

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=chmod_and_retry)
    else:
        shutil.rmtree(path, onerror=chmod_and_retry)

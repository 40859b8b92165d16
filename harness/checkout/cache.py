"""The cache, listed and cleaned: `harness clean [--builds] [--older-than DAYS]`.

    entries = cache_entries(cache_dir())          # CacheEntry: kind, path, bytes, age
    removed, kept = clean(cache_dir(), builds=True, older_than_days=30)

Kinds, under `harness.process.leftovers.cache_dir()`: worktrees/ and snapshots/ (checkouts:
normally removed at the end of a run; what is left was kept with --keep, or belongs to a run
still going), tmp/ (a build's throwaway HOME), builds/ (per-commit venvs and build markers).

Never removed: anything a live harness process holds (its state file in live/, see
`harness.process.leftovers`), and a build whose lock another process holds. Builds only with
`builds`.
With `older_than_days`, only what was last used (modified) that many days ago or more.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

KINDS = ("worktrees", "snapshots", "tmp", "builds")
_DAY_S = 86400.0


@dataclass(frozen=True)
class CacheEntry:
    kind: str  # one of KINDS
    path: Path
    bytes: int
    age_days: float  # since it was last modified (a build: last built or reused)
    why_kept: str | None = None  # None: removable (or removed)


def _size(path: Path) -> int:
    total = 0
    for folder, dirs, files in os.walk(path):
        for name in (*files, *dirs):
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
    return total


def _mtime(entry: Path, kind: str) -> float:
    marker = entry / "built.json"
    probe = marker if kind == "builds" and marker.exists() else entry
    try:
        return probe.stat().st_mtime
    except OSError:
        return 0.0


def _held_by_live_runs(cache: Path) -> set[str]:
    from harness.process.leftovers import dead  # the same test of "still running"

    held: set[str] = set()
    for path in (cache / "live").glob("*.json"):
        with contextlib.suppress(OSError, ValueError):
            document = json.loads(path.read_text(encoding="utf-8"))
            if not dead(document):
                for items in document.get("held", {}).values():
                    held.update(str(Path(i["value"]).resolve()) for i in items)
    return held


def _build_in_use(cache: Path, entry: Path) -> bool:
    lock = cache / "builds" / f"{entry.name}.lock"
    if not lock.exists():
        return False
    with open(lock, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
    return False


def cache_entries(
    cache: Path, *, builds: bool = True, older_than_days: float | None = None
) -> list[CacheEntry]:
    """Every entry of the cache, biggest first, each saying why it would be kept (or None)."""
    held = _held_by_live_runs(cache)
    now = time.time()
    found = []
    for kind in KINDS:
        folder = cache / kind
        if not folder.is_dir():
            continue
        for entry in sorted(folder.iterdir()):
            if not entry.is_dir() or entry.is_symlink():
                continue
            age = max(0.0, (now - _mtime(entry, kind)) / _DAY_S)
            why = None
            if str(entry.resolve()) in held:
                why = "in use by a running harness"
            elif kind == "builds" and not builds:
                why = "a build: pass --builds"
            elif kind == "builds" and _build_in_use(cache, entry):
                why = "being built"
            elif older_than_days is not None and age < older_than_days:
                why = f"used within {older_than_days:g} days"
            found.append(CacheEntry(kind, entry, _size(entry), age, why))
    return sorted(found, key=lambda e: (-e.bytes, str(e.path)))


def _git_repo_of(worktree: Path) -> Path | None:
    """The repository a linked worktree belongs to (its .git file names .git/worktrees/NAME)."""
    try:
        text = (worktree / ".git").read_text(encoding="utf-8")
    except OSError:
        return None
    gitdir = Path(text.removeprefix("gitdir:").strip())
    # <repo>/.git/worktrees/<name> -> <repo>
    return gitdir.parent.parent.parent if gitdir.parent.name == "worktrees" else None


def remove_entry(entry: CacheEntry) -> None:
    """Remove one cache entry (a worktree through git, so the repository forgets it too)."""
    from harness.checkout.worktree import remove_worktree
    from harness.process.leftovers import remove_tree

    if entry.kind == "worktrees" and (repo := _git_repo_of(entry.path)) and repo.is_dir():
        remove_worktree(repo, entry.path)
    if entry.path.exists():
        remove_tree(entry.path)
    if entry.kind == "builds":
        with contextlib.suppress(OSError):
            (entry.path.parent / f"{entry.path.name}.lock").unlink()


def clean(
    cache: Path, *, builds: bool, older_than_days: float | None
) -> tuple[list[CacheEntry], list[CacheEntry]]:
    """(removed, kept): every removable entry removed."""
    entries = cache_entries(cache, builds=builds, older_than_days=older_than_days)
    removed = [e for e in entries if e.why_kept is None]
    for entry in removed:
        remove_entry(entry)
    return removed, [e for e in entries if e.why_kept is not None]


def human(n: int) -> str:
    """1536 -> '1.5 KB' (powers of 1024, as du -h)."""
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def render_clean(cache: Path, removed: list[CacheEntry], kept: list[CacheEntry]) -> str:
    lines = [f"cache: {cache}"]
    for entry in removed:
        lines.append(
            f"  removed {human(entry.bytes):>9}  {entry.kind}/{entry.path.name}"
            f"  ({entry.age_days:.0f} days old)"
        )
    for entry in kept:
        lines.append(
            f"  kept    {human(entry.bytes):>9}  {entry.kind}/{entry.path.name}  ({entry.why_kept})"
        )
    freed = sum(e.bytes for e in removed)
    left = sum(e.bytes for e in kept)
    lines.append(
        f"removed {len(removed)} entr{'y' if len(removed) == 1 else 'ies'} ({human(freed)}); "
        f"kept {len(kept)} ({human(left)})"
    )
    return "\n".join(lines) + "\n"

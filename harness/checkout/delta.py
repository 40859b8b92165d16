"""What a build wrote into its checkout, stored with the cached build and put back into a fresh one.

    before = tree_state(worktree)                   # before the build command runs
    ... build ...
    delta = capture(worktree, before, store, outputs=service.build_outputs)   # after it
    problem = verify(store)                         # None, or why the stored copy cannot be used
    restore(store, fresh_worktree)                  # the fresh checkout as the build left it

A build that writes an index, compiled extensions or generated files next to the code leaves
them in *that* worktree only; the next run of the same commit gets a new worktree and a cached
build, so without this the service would boot without them. The delta is, by default, the whole
tree's change: every file, symlink and directory that is new or changed (by kind, size, mtime,
mode or link target), untracked and git-ignored ones included, and every path the build deleted.
With `service.build_outputs = ["index/", "build/meta.json"]` only those paths (a folder: all
under it) are kept, and each must exist after the build.

Layout of `store` (a folder inside `builds/<key>/`):

    store/tree/<path>     a copy of each captured file (mode kept) and symlink (target kept)
    store/delta.json      the manifest: {"entries": [{path, kind, mode, size, sha256, target}],
                          "deleted": [path, ...]}, written last

`.git` (a linked worktree's pointer file) and `__pycache__` folders are never captured.
`verify` checks the manifest and every stored file's size and sha256, so a cache entry cut short
(disk full, a killed copy, a file removed by hand) is found before anything is restored; the
build stage then rebuilds and says so.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

MANIFEST = "delta.json"
MANIFEST_SCHEMA_VERSION = 1
_SKIPPED = frozenset({".git", "__pycache__"})

# (kind, mode bits, size, mtime_ns, symlink target): what tells that a path changed.
_State = tuple[str, int, int, int, str]


@dataclass(frozen=True)
class Delta:
    """What was captured: counts for messages and the marker."""

    files: int
    links: int
    dirs: int
    deleted: int
    bytes: int


def tree_state(top: Path) -> dict[str, _State]:
    """Every file, symlink and directory under `top` (but .git and __pycache__), by posix path."""
    found: dict[str, _State] = {}
    for rel, path in _walk(top):
        with contextlib.suppress(OSError):
            info = path.lstat()
            found[rel] = _state(path, info)
    return found


def _walk(top: Path) -> Iterator[tuple[str, Path]]:
    for folder, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED)
        base = Path(folder)
        for name in [*dirs, *sorted(f for f in files if f not in _SKIPPED)]:
            path = base / name
            yield path.relative_to(top).as_posix(), path
        # os.walk lists a symlink to a folder among dirs but does not enter it: nothing to skip.


def _state(path: Path, info: os.stat_result) -> _State:
    mode = stat.S_IMODE(info.st_mode)
    if stat.S_ISLNK(info.st_mode):
        return ("l", 0, 0, 0, os.readlink(path))
    if stat.S_ISDIR(info.st_mode):
        return ("d", mode, 0, 0, "")
    return ("f", mode, info.st_size, info.st_mtime_ns, "")


def _selected(rel: str, outputs: Sequence[str] | None) -> bool:
    if outputs is None:
        return True
    for out in outputs:
        out = out.strip("/")
        if rel == out or rel.startswith(out + "/") or out.startswith(rel + "/"):
            return True
    return False


class MissingOutputs(Exception):
    """Declared build outputs that the build did not write."""

    def __init__(self, missing: list[str]) -> None:
        super().__init__(", ".join(missing))
        self.missing = missing


def capture(
    top: Path, before: dict[str, _State], store: Path, *, outputs: Sequence[str] | None = None
) -> Delta:
    """Copy what changed under `top` since `before` into `store` and write its manifest.

    With `outputs`, only those paths (and their parent folders) count, and a declared output
    that is absent after the build raises MissingOutputs."""
    if outputs is not None:
        missing = [o for o in outputs if not os.path.lexists(top / o.strip("/"))]
        if missing:
            raise MissingOutputs(missing)
    after = tree_state(top)
    tree = store / "tree"
    tree.mkdir(parents=True, exist_ok=True)
    entries: list[dict[str, object]] = []
    files = links = dirs = size = 0
    for rel, now in after.items():
        if before.get(rel) == now or not _selected(rel, outputs):
            continue
        kind, mode, _, _, target = now
        entry: dict[str, object] = {"path": rel, "kind": kind, "mode": mode}
        source, copy = top / rel, tree / rel
        copy.parent.mkdir(parents=True, exist_ok=True)
        if kind == "l":
            os.symlink(target, copy)
            entry["target"] = target
            links += 1
        elif kind == "d":
            copy.mkdir(exist_ok=True)
            dirs += 1
        else:
            shutil.copyfile(source, copy, follow_symlinks=False)
            entry["size"], entry["sha256"] = copy.stat().st_size, _sha256(copy)
            size += int(str(entry["size"]))
            files += 1
        entries.append(entry)
    deleted = sorted(rel for rel in before.keys() - after.keys() if _selected(rel, outputs))
    manifest = {
        "schema_version": MANIFEST_SCHEMA_VERSION,
        "outputs": None if outputs is None else list(outputs),
        "entries": entries,
        "deleted": deleted,
    }
    partial = store / f"{MANIFEST}.partial"
    partial.write_text(json.dumps(manifest, sort_keys=True, indent=1) + "\n")
    partial.replace(store / MANIFEST)
    return Delta(files=files, links=links, dirs=dirs, deleted=len(deleted), bytes=size)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _manifest(store: Path) -> dict[str, object]:
    document = json.loads((store / MANIFEST).read_text(encoding="utf-8"))
    if not isinstance(document, dict) or document.get("schema_version") != MANIFEST_SCHEMA_VERSION:
        raise ValueError(f"{MANIFEST} is not schema_version {MANIFEST_SCHEMA_VERSION}")
    return document


def verify(store: Path) -> str | None:
    """None when `store` holds a complete delta; otherwise what is wrong with it, in words."""
    try:
        manifest = _manifest(store)
        entries = manifest["entries"]
        assert isinstance(entries, list)
    except (OSError, ValueError, KeyError, AssertionError) as error:
        return f"its manifest {store / MANIFEST} is unreadable ({error})"
    for entry in entries:
        rel = str(entry["path"])
        copy = store / "tree" / rel
        kind = entry["kind"]
        if kind == "l":
            if not copy.is_symlink():
                return f"the stored symlink {rel} is missing"
        elif kind == "d":
            if not copy.is_dir() or copy.is_symlink():
                return f"the stored folder {rel} is missing"
        else:
            try:
                if copy.is_symlink() or copy.stat().st_size != entry["size"]:
                    return f"the stored copy of {rel} has the wrong size"
            except OSError:
                return f"the stored copy of {rel} is missing"
            if _sha256(copy) != entry["sha256"]:
                return f"the stored copy of {rel} does not match its checksum"
    return None


def restore(store: Path, top: Path) -> Delta:
    """Put the delta stored in `store` into the checkout `top`: deleted paths removed, every
    captured folder, file (with its mode) and symlink written over whatever the checkout has."""
    manifest = _manifest(store)
    deleted = [str(rel) for rel in manifest["deleted"]]  # type: ignore[attr-defined]
    for rel in sorted(deleted, reverse=True):  # children before their folder
        path = top / rel
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    files = links = dirs = size = 0
    modes: list[tuple[Path, int]] = []  # folders' modes, set last: a read-only one stays writable
    entries: list[dict[str, object]] = list(manifest["entries"])  # type: ignore[call-overload]
    for entry in sorted(entries, key=lambda e: str(e["path"])):  # folders before their files
        rel, kind, mode = str(entry["path"]), entry["kind"], int(str(entry["mode"]))
        target, copy = top / rel, store / "tree" / rel
        if (os.path.lexists(target) and kind != "d") or (target.is_symlink() and kind == "d"):
            _remove(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        if kind == "l":
            os.symlink(str(entry["target"]), target)
            links += 1
        elif kind == "d":
            if os.path.lexists(target) and not target.is_dir():
                _remove(target)
            target.mkdir(exist_ok=True)
            modes.append((target, mode))
            dirs += 1
        else:
            shutil.copyfile(copy, target, follow_symlinks=False)
            target.chmod(mode)
            size += target.stat().st_size
            files += 1
    for folder, mode in reversed(modes):
        folder.chmod(mode)
    return Delta(files=files, links=links, dirs=dirs, deleted=len(deleted), bytes=size)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()

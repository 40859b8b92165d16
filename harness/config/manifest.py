"""The identity of data kept outside the checkout, without reading a 20 GB index: a manifest.

    manifest(path) -> Manifest      digest, files, bytes, bytes hashed
    walk(path, folders=False)       (relative path, path) of every file (and folder) under path

A commit's SHA names every file of its checkout, but `service.data` outside the repository (or
under {config_dir}) changes without a commit, so a stored run measured on yesterday's index must
not be reused on today's. Reading the whole index per run to tell would cost minutes, so each
file is named by what its metadata says: its path relative to the data root, its size, its
modification time (ns), where it points if it is a symlink and, only for a file of at most
`SMALL_FILE` bytes, the sha256 of its contents (a segment list, a settings file: an edit that
keeps the size and a restored mtime is still seen there). A 20 GB index of a few hundred files
costs a few hundred `stat` calls and no read of its large files.

What it cannot see: a large file rewritten with exactly its size and its mtime set back. When
your tools do that, or to pin the data's identity by hand (a copy on another disk, restored
mtimes), set `service.data_version`: that string replaces the manifest and nothing is walked
(`harness.config.inputs`).

Symlinked folders are followed, each real folder once (a link cycle ends there). An unreadable
file is keyed by its error.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SMALL_FILE = 1 << 20  # bytes: files up to this size are keyed by content too


@dataclass(frozen=True)
class Manifest:
    """One manifest: its sha256 and what it covered."""

    digest: str
    files: int
    bytes: int  # the files' sizes, summed
    hashed_bytes: int  # of which read and hashed (the small files)


def walk(root: Path, *, folders: bool = False) -> Iterator[tuple[str, Path]]:
    """(path relative to `root`, path) of every file under `root`, in a fixed order (a file
    `root` itself: its name); with `folders`, each folder too, `root` first as ".". Symlinked
    folders are followed, each real folder once."""
    if not root.is_dir():
        yield root.name, root
        return
    try:
        top = root.stat()
    except OSError:
        return
    seen = {(top.st_dev, top.st_ino)}
    for folder, dirs, files in os.walk(root, followlinks=True):
        here = Path(folder)
        if folders:
            yield (os.path.relpath(here, root), here)
        kept = []
        for name in sorted(dirs):
            try:
                info = (here / name).stat()
            except OSError:
                continue
            if (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                kept.append(name)
        dirs[:] = kept
        for name in sorted(files):
            yield os.path.relpath(here / name, root), here / name


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def manifest(path: Path) -> Manifest:
    """The manifest of the file or folder `path` (module docstring); of a missing path, one
    that says so."""
    digest = hashlib.sha256()
    if not path.exists():
        digest.update(b"missing\n")
        return Manifest(digest.hexdigest(), 0, 0, 0)
    files = size = hashed = 0
    for name, file in walk(path):
        try:
            info = file.stat()
            link = os.readlink(file) if file.is_symlink() else ""
            small = stat.S_ISREG(info.st_mode) and info.st_size <= SMALL_FILE  # never a FIFO
            content = _sha256(file) if small else "-"
        except OSError as error:
            digest.update(f"{name}\0unreadable: {error.strerror}\n".encode())
            continue
        files += 1
        size += info.st_size
        hashed += info.st_size if content != "-" else 0
        line = f"{name}\0{info.st_size}\0{info.st_mtime_ns}\0{content}\0{link}\n"
        digest.update(line.encode("utf-8", "surrogateescape"))
    return Manifest(digest.hexdigest(), files, size, hashed)

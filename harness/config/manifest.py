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

Bounded, so that no data folder can keep it walking (issue 37): a symlinked folder is followed
only when it leads to a folder inside the data, each real folder once (a link cycle ends there);
a symlink leading out is an entry of its own, keyed by where it points and its target's size and
mtime, never entered nor read. A folder on a kernel filesystem mounted under the data (proc,
sysfs, devtmpfs: `harness.process.inputs.PSEUDO_FILESYSTEMS`) is skipped; only a regular file is
read.
Past MAX_FILES entries the walk stops with a ConfigError: set service.data_version instead.
`system_folder` is why the root, /proc, /sys and /dev are never service.data at all. An
unreadable file is keyed by its error.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ConfigError
from harness.process.inputs import pseudo_filesystem

SMALL_FILE = 1 << 20  # bytes: files up to this size are keyed by content too
MAX_FILES = 1_000_000
"""Entries (files and folders) a walk of service.data goes through: a million stats and hashes
of 100-byte files take about 26 s (100,000: 2.6 s, measured); a real index has thousands."""
SYSTEM_FOLDERS = (Path("/proc"), Path("/sys"), Path("/dev"))
"""Never service.data, nor anything inside: the kernel's views (a walk of /proc follows links
into every process's root and hashes files that never end), not data a service reads."""


def system_folder(path: Path) -> str | None:
    """Why `path` (absolute) is no data folder: the root, or in /proc, /sys or /dev, as
    written or resolved ("/proc/self" is /proc/<pid>); None otherwise."""
    for candidate in dict.fromkeys((Path(os.path.normpath(path)), path.resolve())):
        shown = "" if candidate == path else f" (it resolves to {candidate})"
        if candidate == Path("/"):
            return f"{path} is the root folder{shown}"
        for system in SYSTEM_FOLDERS:
            if candidate.is_relative_to(system):
                where = "is" if candidate == system else "is inside"
                return f"{path} {where} {system}{shown}, the kernel's own folder, not data"
    return None


@dataclass(frozen=True)
class Manifest:
    """One manifest: its sha256 and what it covered."""

    digest: str
    files: int
    bytes: int  # the files' sizes, summed
    hashed_bytes: int  # of which read and hashed (the small files)


def walk(root: Path, *, folders: bool = False) -> Iterator[tuple[str, Path]]:
    """(path relative to `root`, path) of every file under `root`, in a fixed order (a file
    `root` itself: its name); with `folders`, each folder too, `root` first as ".". A symlinked
    folder leading inside `root` is followed, each real folder once; one leading out is given
    as a file, never entered; a kernel filesystem's folder is skipped (module docstring).
    ConfigError past MAX_FILES entries."""
    if not root.is_dir():
        yield root.name, root
        return
    try:
        top = root.stat()
        real = root.resolve()
    except OSError:
        return
    if pseudo_filesystem(top.st_dev) is not None:
        return  # /proc given anyway (the config refuses it): nothing there is data
    seen = {(top.st_dev, top.st_ino)}
    count = 0
    for folder, dirs, files in os.walk(root, followlinks=True):
        here = Path(folder)
        kept, out = [], []
        for name in sorted(dirs):
            try:
                info = (here / name).stat()
                leads_out = (here / name).is_symlink() and not (
                    (here / name).resolve().is_relative_to(real))
            except OSError:
                continue
            if leads_out:
                out.append(name)
            elif pseudo_filesystem(info.st_dev) is None and (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                kept.append(name)
        dirs[:] = kept
        entries = ([here] if folders else []) + [here / name for name in sorted([*files, *out])]
        count += len(entries)
        if count > MAX_FILES:
            raise ConfigError(
                f"service.data {root}: more than {MAX_FILES:,} files and folders, past what "
                "harness walks to key a run by its data",
                hint="set service.data_version to a name for this version of the data (nothing "
                "is walked then), or point service.data at the folder the service reads",
            )
        for path in entries:
            yield os.path.relpath(path, root), path


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
    root = path.resolve()
    for name, file in walk(path):
        try:
            info = file.stat()
            link = os.readlink(file) if file.is_symlink() else ""
            inside = not link or file.resolve().is_relative_to(root)  # a link out: not read
            small = (stat.S_ISREG(info.st_mode) and info.st_size <= SMALL_FILE and inside
                     and pseudo_filesystem(info.st_dev) is None)  # never a FIFO nor /proc's
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

"""The files a side's configuration names by path outside the checkout, and a hash of their
contents: part of the key under which a stored run may be reused.

    referenced_paths(side, repo) -> tuple[Path, ...]
    inputs_hash(side, config) -> str

A commit's SHA covers every file inside its checkout, but a service can read more: a loader
script given as `/opt/tools/load.py`, a config file `--config ~/svc/settings.toml`, a data folder
`data = "../shared-corpus"`.  Editing one of those changes what is measured without changing the
SHA or the configuration's text, so a run measured before the edit must not be reused after it.

What counts as a path: every word of `start`, `build` and `prepare` (shell words; the part after
`=` in `--flag=value` too), every `env` value (and each part of it split on `:`), and `data`;
taken relative to the repository root (where the commands run), `~` expanded, and kept when it
exists and lies outside the repository.  Words holding a `{placeholder}` are skipped: they point
into the throwaway boot root or the worktree.  A file is hashed by its bytes (over 64 MiB: by
size and mtime, so a model file is not read on every compare); a folder by every file under it,
with its relative path, up to 10,000 files.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path

from harness.config.values import HarnessConfig, SideConfig

_BIG = 64 * 1024 * 1024  # bytes: larger files are keyed by size and mtime, not read
_MAX_FILES = 10_000  # files hashed under one named folder


def _words(text: str) -> list[str]:
    try:
        words = shlex.split(text)
    except ValueError:  # an unbalanced quote: the service stage reports it
        words = text.split()
    found = []
    for word in words:
        found.append(word)
        if "=" in word:
            found.append(word.partition("=")[2])
    return found


def _candidates(side: SideConfig) -> Iterator[str]:
    service = side.service
    for command in (service.start, service.build or "", *service.prepare):
        yield from _words(command)
    for value in service.env.values():
        yield value
        yield from value.split(":")
    if service.data:
        yield service.data
    if service.python:  # the interpreter itself: an upgrade in place is another measurement
        found = shutil.which(service.python) if "/" not in service.python else None
        yield found or service.python


def referenced_paths(side: SideConfig, repo: Path) -> tuple[Path, ...]:
    """Existing paths outside `repo` that the side's configuration names, sorted, once each."""
    root = repo.resolve()
    found: set[Path] = set()
    for word in _candidates(side):
        if not word or "{" in word or "://" in word:
            continue
        if not (word.startswith(("/", "~", ".")) or os.sep in word):
            continue  # a bare name: a program on PATH or an argument, not a path
        path = (root / Path(word).expanduser()).resolve()
        if path.exists() and not path.is_relative_to(root):
            found.add(path)
    return tuple(sorted(found))


def _file_digest(path: Path) -> str:
    stat = path.stat()
    if stat.st_size > _BIG:
        return f"size={stat.st_size} mtime_ns={stat.st_mtime_ns}"
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _entries(path: Path) -> Iterator[tuple[str, str]]:
    if path.is_file():
        yield str(path), _file_digest(path)
        return
    count = 0
    for folder, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            file = Path(folder) / name
            if count >= _MAX_FILES:
                yield str(path), f"more than {_MAX_FILES} files"
                return
            count += 1
            try:
                yield str(file.relative_to(path.parent)), _file_digest(file)
            except OSError as error:  # unreadable: keyed by the error, so it is never a match
                yield str(file), f"unreadable: {error.strerror}"


def inputs_hash(side: SideConfig, config: HarnessConfig) -> str:
    """sha256 over every referenced path and the digest of its contents (see the docstring)."""
    digest = hashlib.sha256()
    for path in referenced_paths(side, config.repo):
        for name, content in _entries(path):
            digest.update(f"{name}\0{content}\n".encode())
    return digest.hexdigest()

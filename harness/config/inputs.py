"""The files a side's configuration names by path outside the checkout, and a hash of their
contents: part of the key under which a stored run may be reused.

    referenced_paths(side, repo, config_dir=None) -> tuple[Path, ...]
    data_path(side, repo, config_dir) -> Path | None   service.data outside the checkout
    inputs_hash(side, config) -> str
    build_inputs(service, sha_key, config) -> (service, sha_key)   what the build stage is given

A commit's SHA covers every file inside its checkout, but a service can read more: a loader
script given as `/opt/tools/load.py`, a config file `--config ~/svc/settings.toml`, a data folder
`data = "../shared-corpus"`.  Editing one of those changes what is measured without changing the
SHA or the configuration's text, so a run measured before the edit must not be reused after it.

What counts as a path: every word of `start`, `build` and `prepare` (shell words; the part after
`=` in `--flag=value` too) and every `env` value (and each part of it split on `:`);
taken relative to the repository root (where the commands run), `~` expanded, and kept when it
exists and lies outside the repository.  Words holding a `{placeholder}` are skipped: they point
into the throwaway boot root or the worktree, except {config_dir}: a word under it
(`{config_dir}/load.py`, `data = "{config_dir}/corpus"`) is the configuration's folder, the
user's tree rather than the ref's checkout, so it is hashed even when inside the repository (a
bare `{config_dir}`, the whole folder, is not).  A `query.rewrite` hook's source file is hashed
too (`harness.config.hook`).  A file is hashed by its bytes (over 64 MiB: by
size and mtime, so a model file is not read on every compare); a folder by every file under it,
with its relative path, up to 10,000 files.

`service.data` kept outside the checkout (an absolute path, or under {config_dir}) is keyed apart,
whatever size: by its manifest (`harness.config.manifest`: relative paths, sizes, mtimes, and the
contents of files up to 1 MiB), or by `service.data_version` alone when that is set, so a 20 GB
index costs no hashing per run. A word of a command that lies inside that data is left to it.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from harness.config.loader import expand_user
from harness.config.manifest import manifest, system_folder
from harness.config.values import (
    CONFIG_DIR,
    HarnessConfig,
    QueryConfig,
    ServiceConfig,
    SideConfig,
    outside_data,
)
from harness.process.inputs import not_regular, pseudo_filesystem

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
    if service.python:  # the interpreter itself: an upgrade in place is another measurement
        found = shutil.which(service.python) if "/" not in service.python else None
        yield found or service.python


def referenced_paths(
    side: SideConfig, repo: Path, config_dir: Path | None = None
) -> tuple[Path, ...]:
    """Existing paths outside `repo`, or under `config_dir` through {config_dir}, that the
    side's configuration names, sorted, once each."""
    root = repo.resolve()
    data = data_path(side, repo, config_dir)
    found: set[Path] = set()
    for word in _candidates(side):
        if config_dir is not None and word.startswith(CONFIG_DIR):
            rest = word.removeprefix(CONFIG_DIR).lstrip("/")
            if rest and "{" not in rest:
                path = (config_dir / rest).resolve()
                if path.exists():
                    found.add(path)
            continue
        if not word or "{" in word or "://" in word:
            continue
        if not (word.startswith(("/", "~", ".")) or os.sep in word):
            continue  # a bare name: a program on PATH or an argument, not a path
        path = (root / expand_user(word)).resolve()
        if path.exists() and not path.is_relative_to(root) and not system_folder(path):
            found.add(path)  # `cd / && ...` names no input: the disk is not hashed
    # What lies inside service.data is keyed by the data's manifest (or data_version).
    return tuple(sorted(p for p in found if data is None or not p.is_relative_to(data)))


def data_path(side: SideConfig, repo: Path, config_dir: Path | None) -> Path | None:
    """`service.data` resolved when it lies outside the ref's checkout, the part of what a
    run measured that the SHA does not name: an absolute path (or ~/...), or a path under
    {config_dir} (not the bare folder, as for words); None otherwise."""
    data = side.service.data
    if not data:
        return None
    if data.startswith(CONFIG_DIR):
        rest = data.removeprefix(CONFIG_DIR).lstrip("/")
        return (config_dir / rest).resolve() if config_dir is not None and rest else None
    if outside_data(data):
        return (repo / expand_user(data)).resolve()
    return None


def _file_digest(path: Path) -> str:
    stat = path.stat()
    kind = not_regular(stat.st_mode) or pseudo_filesystem(stat.st_dev)
    if kind:  # a FIFO would block the read, /dev/zero or a /proc file never end it
        return f"{kind} mtime_ns={stat.st_mtime_ns}"
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
        dirs[:] = sorted(d for d in dirs if not _kernel_folder(Path(folder) / d))
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


def _kernel_folder(path: Path) -> bool:
    """Whether `path` is a mount of a kernel filesystem (/proc, /sys), never walked."""
    try:
        return pseudo_filesystem(path.stat().st_dev) is not None
    except OSError:
        return False


def inputs_hash(side: SideConfig, config: HarnessConfig) -> str:
    """sha256 over every referenced path and the digest of its contents (see the docstring)."""
    from harness.config.hook import hook_file, is_hook

    digest = hashlib.sha256()
    for path in referenced_paths(side, config.repo, config.config_dir):
        for name, content in _entries(path):
            digest.update(f"{name}\0{content}\n".encode())
    data = data_path(side, config.repo, config.config_dir)
    if data is not None:  # only then: the key of a run without such data is what it was
        version = side.service.data_version
        identity = f"version\0{version}" if version else f"manifest\0{manifest(data).digest}"
        digest.update(f"service.data\0{identity}\n".encode())
    rewrite = side.query.rewrite
    if rewrite and is_hook(rewrite):
        hook = hook_file(rewrite, config.config_dir)
        # Only when a hook is set, so the records saved before hooks existed keep their key.
        content = _file_digest(hook) if hook is not None else "missing"
        digest.update(f"query.rewrite\0{rewrite}\0{content}\n".encode())
        for name, sibling in _hook_imports(rewrite, config.config_dir):
            digest.update(f"query.rewrite imports\0{name}\0{sibling}\n".encode())
    return digest.hexdigest()


def _hook_imports(rewrite: str, folder: Path) -> list[tuple[str, str]]:
    """(path relative to `folder`, sha256) of the modules the hook's import pulled in from under
    `folder` (none for a self-contained hook: its key is what it was before this was hashed)."""
    from harness.config.hook import load_hook
    from harness.errors import ConfigError

    try:
        hook = load_hook(rewrite, folder)  # loaded once per process: cached
    except ConfigError as error:  # unreadable now: keyed by the error, so it is never a match
        return [("error", error.message)]
    return [(str(p.relative_to(folder.resolve())), d) for p, d in hook.imports]


def build_inputs(
    service: ServiceConfig, sha_key: str, config: HarnessConfig
) -> tuple[ServiceConfig, str]:
    """The service and key the build stage is given: {config_dir} in `service.build` filled in
    (shell-quoted) and at the start of `service.python`, and the contents of the files it names
    there joined to the key (`<sha>+config.<hash12>`), so editing a build script of the user's
    tree rebuilds."""
    folder = config.config_dir.resolve()
    if service.python and service.python.startswith(CONFIG_DIR):  # an interpreter in your tree
        service = replace(service, python=str(folder) + service.python[len(CONFIG_DIR) :])
    if not service.build or CONFIG_DIR not in service.build:
        return service, sha_key
    command = service.build.replace(CONFIG_DIR, shlex.quote(str(folder)))
    digest = hashlib.sha256()
    named = SideConfig(ServiceConfig(start="", ready="/", build=service.build), _NO_QUERY)
    for path in referenced_paths(named, config.repo, folder):
        for name, content in _entries(path):
            digest.update(f"{name}\0{content}\n".encode())
    return replace(service, build=command), f"{sha_key}+config.{digest.hexdigest()[:12]}"


_NO_QUERY = QueryConfig(path="/", ids="[]")

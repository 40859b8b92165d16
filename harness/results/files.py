"""Files in a results directory, written the one safe way: atomically (temp file, fsync, link),
never over an existing file, and directories claimed by mkdir so two runs never share one."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.errors import ResultsError


def utc_stamp(now: datetime | None = None) -> str:
    """A sortable, filename-safe UTC timestamp: 20261129T184501Z."""
    return (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")


def write_text_new(path: Path, text: str) -> Path:
    """Write `text` to `path` atomically, refusing to overwrite an existing file.

    The bytes go to a temp file in the same directory, are fsynced, then hard-linked into place
    (link fails if the target exists, unlike rename), so a reader never sees half a file and a
    crash never leaves one.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise ResultsError(
                f"{path}: already exists; results are never overwritten",
                ["remove it, or write to another results directory"],
            ) from None
    finally:
        os.unlink(tmp)
    return path


def write_json_new(path: Path, document: Mapping[str, Any]) -> Path:
    """`write_text_new` of `document` as JSON with sorted keys."""
    text = json.dumps(document, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    return write_text_new(path, text)


def read_json(path: Path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such file") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise ResultsError(f"{path}: cannot be read as JSON ({exc})") from None
    if not isinstance(document, dict):
        raise ResultsError(f"{path}: expected a JSON object at the top level")
    return document


def new_directory(parent: Path, stem: str) -> Path:
    """Create and return parent/stem, or the first of parent/stem-2, stem-3, ... not yet taken.

    mkdir itself decides (it fails on an existing directory), so two runs started in the same
    second never share a directory, and nothing already saved is ever written into.
    """
    directory, n = parent / stem, 1
    while True:
        try:
            directory.mkdir(parents=True)
            return directory
        except FileExistsError:
            n += 1
            directory = parent / f"{stem}-{n}"

"""Shared fixtures. Real collections live in ../shared/data; tests that need them skip without."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


def shared_collection(name: str) -> Path:
    """Path of a public collection in ../shared/data, or skip the test saying why."""
    path = SHARED_DATA / name
    if not (path / "corpus.jsonl").is_file():
        pytest.skip(
            f"public collection {name!r} not found at {path} (a fresh clone has no ../shared)"
        )
    return path

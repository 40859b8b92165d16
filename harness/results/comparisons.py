"""Saved comparisons: a directory per comparison holding comparison.json, the pages rendered for
it (report.md; report.html when plotly is installed, loading ../plotly-<version>.min.js, written
once in the results directory by `harness.report.bundle`) and a copy of each side's run record.

Stores, never renders: `harness.report.saved.save_comparison` renders the pages and hands them
to `store_comparison`, which writes them with the rest."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from harness.results.document import comparison_from_dict, comparison_to_dict
from harness.results.files import (
    json_text,
    new_directory_atomic,
    read_json,
    utc_stamp,
    write_bytes_new,
    write_text_new,
)
from harness.results.records import write_record
from harness.values.types import RefRun
from harness.verdict.comparison import Comparison

COMPARISON_FILE = "comparison.json"
REPORT_FILE = "report.md"
HTML_FILE = "report.html"

# The comparison.json bytes of the one Comparison last encoded or read back (the comparison
# cache's entry is those bytes): saving that same object writes them as they are, without a
# second encoding. Held by identity, so a comparison changed since (`dataclasses.replace`) is
# encoded afresh; weakly, so the memo never keeps a comparison alive.
_encoded: tuple[weakref.ref[Comparison], bytes] | None = None


def comparison_bytes(comparison: Comparison) -> bytes:
    """The comparison.json of `comparison` (unredacted), encoded once per object."""
    global _encoded
    if _encoded is not None and _encoded[0]() is comparison:
        return _encoded[1]
    data = json_text(comparison_to_dict(comparison)).encode("utf-8")
    remember_bytes(comparison, data)
    return data


def remember_bytes(comparison: Comparison, data: bytes) -> None:
    """Say that `data` is `comparison`'s comparison.json (read back from a cache entry)."""
    global _encoded
    _encoded = (weakref.ref(comparison), data)


def store_comparison(
    results_dir: Path,
    comparison: Comparison,
    runs: Sequence[RefRun],
    pages: Callable[[], Iterable[tuple[str, str]]],
    *,
    redact: bool = False,
) -> Path:
    """Write results_dir/<UTC stamp>_<base sha8>_<cand sha8>/ (a new directory: an existing one
    gets a -2, -3, ... suffix) holding comparison.json, a copy of each run record (baseline.json
    and .npz, candidate.json and .npz) and each page `pages()` renders ((file name, text), each
    written before the next is rendered: see `harness.report.saved`); return the directory.
    With `redact`, the copies lose the error details, which may quote response bodies (the
    pages are the renderer's).

    Everything is written into a hidden temporary directory renamed into place at the end, so a
    failure (a full disk) leaves no empty or partial comparison: ResultsError, nothing saved."""
    h = comparison.header
    saving = new_directory_atomic(
        results_dir, f"{utc_stamp()}_{h.baseline.sha[:8]}_{h.candidate.sha[:8]}"
    )
    with saving as directory:
        for side, run in zip(("baseline", "candidate"), runs, strict=False):
            # Answers read from a record and unchanged are copied, not encoded again.
            write_record(directory / f"{side}.json", run, redact=redact)
        if redact:
            write_text_new(directory / COMPARISON_FILE,
                           json_text(comparison_to_dict(comparison, redact=True)))
        else:
            write_bytes_new(directory / COMPARISON_FILE, comparison_bytes(comparison))
        for name, text in pages():
            write_text_new(directory / name, text)
    assert saving.path is not None  # the block ended without an exception
    return saving.path


def load_comparison(directory: Path) -> Comparison:
    """The comparison saved in `directory` (or a comparison.json given directly)."""
    # A path that is no folder is read as the file it is (a FIFO or a device is then said so).
    given = directory.suffix == ".json" or (directory.exists() and not directory.is_dir())
    path = directory if given else directory / COMPARISON_FILE
    return comparison_from_dict(read_json(path), str(path))

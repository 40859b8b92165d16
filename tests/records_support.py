"""Run records built in memory, shared by the tests that save one: a record that matches the
reuse lookup of results/test_reuse.py field for field (`clean_run`, also the runs of
driver/test_interleave.py and results/test_records.py), and the export's two-query record
(`record`: results/test_export.py, project/test_extras.py), and what a saved comparison's folder
holds (`SAVED_FILES`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from harness import __version__
from harness.values.types import QueryResult, RefRun, Repeat

SHA = "a" * 40
CONFIG = "c" * 64
GOLD = "g" * 64
CORPUS = "d" * 64
REPEATS = 2
# What a saved comparison's folder holds: both run records (each a JSON header and its answers'
# columns, .npz), the comparison and its two pages.
SAVED_FILES = [
    "baseline.json",
    "baseline.npz",
    "candidate.json",
    "candidate.npz",
    "comparison.json",
    "report.html",
    "report.md",
]


def clean_repeat(index: int, **changes: Any) -> Repeat:
    results = (
        QueryResult("q1", ids=("d1", "d2"), scores=(2.0, 1.0), status=200, latency_ns=1_000),
        QueryResult("q2", ids=("d2",), scores=(1.0,), status=200, latency_ns=2_000),
    )
    return replace(Repeat(index=index, results=results, teardown_confirmed=True), **changes)


def clean_run(**changes: Any) -> RefRun:
    """A record that matches the lookup in results/test_reuse.py's `lookup()` field for field,
    then `changes` applied."""
    run = RefRun(
        ref="main",
        sha=SHA,
        config_hash=CONFIG,
        gold_hash=GOLD,
        corpus_hash=CORPUS,
        tool_version=__version__,
        host={"hostname": "h"},
        repeats=tuple(clean_repeat(i) for i in range(REPEATS)),
    )
    return replace(run, **changes)


def record(*results: QueryResult, repeats: int = 2) -> RefRun:
    """A run of `results` in each of `repeats` repeats, on a gold set whose hash is `GOLD`."""
    return RefRun(
        ref="feat/x y",
        sha="0123456789abcdef" * 2 + "01234567",
        config_hash="c" * 64,
        gold_hash=GOLD,
        corpus_hash=None,
        tool_version="0.test",
        host={},
        repeats=tuple(Repeat(index=i, results=results) for i in range(repeats)),
    )

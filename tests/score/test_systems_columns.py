"""compare-runs' answers built from the run's columns (`as_ref_run`, `answers.ranked_columns`)
are the answers a QueryResult per query gave: every column equal, for each run reader."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from harness.score.arrowrun import read_trec_arrow
from harness.score.columns import read_trec_columns
from harness.score.runfile import load_run
from harness.values.answers import QueryResult, Strings, columns_of
from harness.values.types import GoldQuery, GoldSet
from harness.verdict.systems import SystemRun, as_ref_run

TREC = (
    "q1 Q0 d3 1 2.5 t\nq1 Q0 d1 2 2.5 t\nq1 Q0 d9 3 1.0 t\n"
    "q3 Q0 d1 1 7 t\nq3 Q0 d4 2 -1.5 t\n"
    "q9 Q0 d2 1 1 t\n"  # a query the gold set lacks
)
JSONL = (
    '{"id": "q1", "ranking": ["d3", "d1", "d3"], "scores": [3, 2, 1]}\n'
    '{"id": "q3", "ranking": [], "scores": []}\n'
)
GOLD = GoldSet(
    tuple(GoldQuery(q, "", relevant={"d1": 1}) for q in ("q1", "q2", "q3")), "g", "trec", "h"
)


def _old(system: SystemRun) -> list[QueryResult]:
    """What as_ref_run built before: a QueryResult per gold query."""
    scores = system.scores or {}
    return [
        QueryResult(q.id, ids=tuple(system.rankings.get(q.id, ())),
                    scores=tuple(scores[q.id]) if q.id in scores else None)
        for q in GOLD.queries
    ]


def _equal(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, Strings):
        return isinstance(b, Strings) and a.values == b.values
    return a == b


@pytest.mark.parametrize("reader", ["arrow", "columns", "jsonl", "jsonl without scores", "dict"])
def test_the_answers_are_those_a_query_result_each_gave(tmp_path: Path, reader: str) -> None:
    if reader == "arrow":
        found = read_trec_arrow(TREC.encode())
        assert found is not None
        rankings, scores = found
    elif reader == "columns":
        found_columns = read_trec_columns(TREC.encode())
        assert found_columns is not None
        rankings, scores = found_columns
    elif reader == "dict":
        rankings, scores = {"q1": ("d1", "d2")}, None  # type: ignore[assignment]
    else:
        text = JSONL if reader == "jsonl" else JSONL.replace(', "scores": [3, 2, 1]', "") \
            .replace(', "scores": []', "")
        (tmp_path / "run.jsonl").write_text(text)
        run = load_run(tmp_path / "run.jsonl")
        rankings, scores = run.rankings, run.scores  # type: ignore[assignment]
    system = SystemRun("s", "sha", rankings, scores)
    new = as_ref_run(system, GOLD).repeats[0].answers.columns
    old = columns_of(_old(system))
    for f in fields(new):
        assert _equal(getattr(new, f.name), getattr(old, f.name)), f.name
    assert list(as_ref_run(system, GOLD).repeats[0].results) == _old(system)

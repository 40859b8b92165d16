"""harness threshold: top scores over repeats, the best cutoff (hand-worked, and against a brute
force oracle with Hypothesis), the histogram, the plain sentence, and the real CLI on a
comparison of the knob service (tests/knob_support.py) with its FLAT branch, whose scores say
nothing."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import cli_server
import pytest
from e2e_support import Sandbox
from hypothesis import given
from hypothesis import strategies as st
from knob_support import assert_clean, knob_sandbox
from purity import impurities

from harness.errors import HarnessError, NotComparableError
from harness.values.types import ErrorKind, GoldQuery, GoldSet, QueryResult, RefRun, Repeat
from harness.verdict.threshold import (
    TopScore,
    analyse,
    best_cutoff,
    evaluate_cutoff,
    histogram,
    render_threshold,
    top_scores,
)

# --------------------------------------------------------------------------- pure


def _gold(answerable: int, unanswerable: int) -> GoldSet:
    queries = [GoldQuery(f"a{i}", "q", relevant={"d": 1}) for i in range(answerable)]
    queries += [GoldQuery(f"u{i}", "q", relevant={}) for i in range(unanswerable)]
    return GoldSet(tuple(queries), "gold.jsonl", "native", "g" * 64)


def _result(qid: str, scores: Sequence[float] | None) -> QueryResult:
    if scores is None:
        return QueryResult(qid, error=ErrorKind.TIMEOUT)
    ids = tuple(f"x{i}" for i in range(len(scores)))
    return QueryResult(qid, ids=ids, scores=tuple(scores), status=200, latency_ns=1)


def _run(*repeats: dict[str, Sequence[float] | None]) -> RefRun:
    """One repeat per dict: query id -> its scores, top first (ids x0, x1, ...); None: errored."""
    return RefRun(
        ref="main",
        sha="c" * 40,
        config_hash="x",
        gold_hash="g" * 64,
        corpus_hash=None,
        tool_version="0",
        host={},
        record_path="runs/r.json",
        repeats=tuple(
            Repeat(i, tuple(_result(q, s) for q, s in answers.items()))
            for i, answers in enumerate(repeats)
        ),
    )


def _scores(
    answerable: Sequence[float | None], unanswerable: Sequence[float | None]
) -> list[TopScore]:
    return [TopScore(f"a{i}", True, s) for i, s in enumerate(answerable)] + [
        TopScore(f"u{i}", False, s) for i, s in enumerate(unanswerable)
    ]


def test_the_top_score_is_rank_one_and_the_low_median_over_repeats() -> None:
    gold = _gold(2, 1)
    run = _run(
        {"a0": [0.9, 0.95], "a1": [0.5], "u0": []},
        {"a0": [0.7], "a1": None, "u0": [0.2]},
        {"a0": [0.8], "a1": [0.6], "u0": []},
    )
    found, excluded = top_scores(gold, run)
    # a0: 0.9, 0.7, 0.8 -> 0.8 (rank 1, not the largest score); a1: the errored repeat is left
    # out, low median of 0.5 and 0.6 is 0.5; u0: empty, 0.2, empty -> empty (None is lowest).
    assert found == (
        TopScore("a0", True, 0.8),
        TopScore("a1", True, 0.5),
        TopScore("u0", False, None),
    )
    assert excluded == ()


def test_a_query_with_no_usable_answer_is_excluded() -> None:
    found, excluded = top_scores(_gold(1, 1), _run({"a0": [0.9], "u0": None}))
    assert [s.query_id for s in found] == ["a0"] and excluded == ("u0",)


def test_answers_without_scores_are_an_error_saying_what_to_set() -> None:
    run = _run({"a0": [0.9]})
    unscored = replace(run, repeats=(Repeat(0, (QueryResult("a0", ids=("x",)),)),))
    with pytest.raises(HarnessError, match="carry no scores") as raised:
        top_scores(_gold(1, 0), unscored)
    assert "query.scores" in str(raised.value)


def test_separable_scores_give_the_midpoint_of_the_gap() -> None:
    scores = _scores([0.9, 0.8, 0.7], [0.3, 0.2])
    cut = best_cutoff(scores)
    assert cut is not None
    assert cut.value == (0.3 + 0.7) / 2
    assert (cut.abstained, cut.false_answers) == (0, 0)


def test_overlapping_scores_tie_break_to_fewer_false_answers() -> None:
    # Candidates: 0.1 (lowest), 0.25, 0.45, 0.7 (midpoints of 0.1 0.4 0.5 0.9).
    # abstention + false-answer rate: 0.1 -> 0/2 + 2/2 = 1; 0.25 -> 0/2 + 1/2 = 0.5;
    # 0.45 -> 1/2 + 1/2 = 1; 0.7 -> 1/2 + 0/2 = 0.5.  0.25 and 0.7 tie; 0.7 answers no
    # unanswerable query, so it wins.
    scores = _scores([0.9, 0.4], [0.5, 0.1])
    cut = best_cutoff(scores)
    assert cut is not None and cut.value == (0.5 + 0.9) / 2
    assert (cut.abstention_rate, cut.false_answer_rate) == (1 / 2, 0.0)


def test_answering_nothing_wins_when_most_answerable_queries_came_back_empty() -> None:
    # At 1.0: abstention 2/3 + false answers 1/1 = 5/3; above 1.0: 3/3 + 0/1 = 1.
    scores = _scores([None, None, 1.0], [1.0])
    cut = best_cutoff(scores)
    assert cut is not None and cut.value > 1.0
    assert (cut.abstained, cut.false_answers) == (3, 0)
    t = analyse(_gold(3, 1), _run({"a0": [], "a1": [], "a2": [1.0], "u0": [1.0]}))
    assert "cannot tell when it has nothing" in t.words
    assert "The best it can do is answering nothing (any cutoff above 1)" in t.words


def test_an_empty_answer_always_abstains() -> None:
    scores = _scores([0.9, None], [None, 0.2])
    cut = evaluate_cutoff(scores, 0.0)
    assert (cut.abstained, cut.false_answers) == (1, 1)
    assert evaluate_cutoff(scores, 0.5).false_answers == 0


def _error(scores: Sequence[TopScore], t: float) -> float:
    c = evaluate_cutoff(scores, t)
    return c.abstention_rate + c.false_answer_rate


score_lists = st.lists(
    st.one_of(
        st.none(),
        st.floats(-5, 5, allow_nan=False),  # subnormals included
        st.floats(allow_nan=False, allow_infinity=False),  # up to the largest finite floats
    ),
    max_size=12,
)


@given(score_lists.filter(any), score_lists)
def test_the_best_cutoff_is_no_worse_than_any_threshold(
    answerable: list[float | None], unanswerable: list[float | None]
) -> None:
    scores = _scores(answerable, unanswerable)
    cut = best_cutoff(scores)
    finite = [s for s in answerable + unanswerable if s is not None]
    if not finite:
        assert cut is None
        return
    assert cut is not None
    # Oracle: every threshold that changes a decision is a score itself, or above them all.
    for t in [*finite, max(finite) + 1]:
        assert _error(scores, cut.value) <= _error(scores, t) + 1e-12


@given(score_lists.filter(any), score_lists)
def test_the_best_cutoff_is_the_first_best_of_every_candidate_evaluated(
    answerable: list[float | None], unanswerable: list[float | None]
) -> None:
    # Oracle: best_cutoff as it was before it counted with sorted arrays (issue 28): every
    # candidate through evaluate_cutoff, then min; the same Cutoff, field for field.
    scores = _scores(answerable, unanswerable)
    distinct = sorted({s.score for s in scores if s.score is not None})
    if not distinct:
        assert best_cutoff(scores) is None
        return
    middles = [(a, b, a / 2 + b / 2) for a, b in itertools.pairwise(distinct)]
    candidates = [
        distinct[0],
        *(m if a < m <= b else b for a, b, m in middles),
        math.nextafter(distinct[-1], math.inf),
    ]
    evaluated = [evaluate_cutoff(scores, t) for t in candidates]
    expected = min(
        evaluated, key=lambda c: (c.abstention_rate + c.false_answer_rate, c.false_answers)
    )
    assert best_cutoff(scores) == expected


def test_the_best_cutoff_separates_adjacent_tiny_and_huge_scores() -> None:
    # Found by Hypothesis: the midpoint of two adjacent subnormal scores rounded onto one of
    # them, so no candidate cutoff separated 0.0 from 5e-324; (a + b) / 2 also overflowed.
    for answerable, unanswerable in (
        (5e-324, 0.0),
        (1e-323, 5e-324),
        (1.7e308, -1.7e308),
        (1.7976931348623157e308, 1.7976931348623155e308),
    ):
        scores = _scores([answerable], [unanswerable])
        cut = best_cutoff(scores)
        assert cut is not None and _error(scores, cut.value) == 0.0, (answerable, cut)


@given(score_lists, score_lists, st.integers(1, 12))
def test_the_histogram_counts_every_scored_query_once(
    answerable: list[float | None], unanswerable: list[float | None], bins: int
) -> None:
    h = histogram(_scores(answerable, unanswerable), bins)
    if h is None:
        assert all(s is None for s in answerable + unanswerable)
        return
    assert sum(h.answerable) == sum(s is not None for s in answerable)
    assert sum(h.unanswerable) == sum(s is not None for s in unanswerable)
    assert list(h.edges) == sorted(h.edges) and len(h.edges) == len(h.answerable) + 1
    assert all(math.isfinite(e) for e in h.edges)  # also over a range wider than any float


def test_the_histogram_bins_are_half_open_and_the_last_is_closed() -> None:
    h = histogram(_scores([0.0, 0.5, 1.0], [0.25]), bins=2)
    assert h is not None and h.edges == (0.0, 0.5, 1.0)
    assert (h.answerable, h.unanswerable) == ((1, 2), (1, 0))
    with pytest.raises(ValueError, match="bins must be >= 1"):
        histogram(_scores([0.1], []), 0)


def test_the_sentence_says_plainly_when_the_system_cannot_tell() -> None:
    gold = _gold(2, 2)
    apart = analyse(gold, _run({"a0": [0.9], "a1": [0.8], "u0": [0.3], "u1": []}))
    assert apart.separable and apart.gap == pytest.approx(0.8 - 0.3)
    assert apart.words.startswith("a gap of 0.5 separates them")
    mixed = analyse(gold, _run({"a0": [0.9], "a1": [0.4], "u0": [0.5], "u1": [0.1]}))
    assert not mixed.separable and mixed.gap is None
    assert "this system cannot tell when it has nothing" in mixed.words
    none = analyse(_gold(2, 0), _run({"a0": [0.9], "a1": [0.4]}))
    assert "no unanswerable query" in none.words
    silent = analyse(gold, _run({"a0": [0.9], "a1": [0.8], "u0": [], "u1": []}))
    assert silent.words.startswith("every unanswerable query already returned nothing")


def test_a_run_of_another_gold_set_is_not_comparable() -> None:
    run = _run({"a0": [0.9]})
    with pytest.raises(NotComparableError, match="measured against gold gggggggggggg"):
        analyse(GoldSet(_gold(1, 0).queries, "g", "native", "h" * 64), run)


def test_renderers() -> None:
    t = analyse(_gold(2, 2), _run({"a0": [0.9], "a1": [0.8], "u0": [0.3], "u1": []}))
    text = render_threshold(t, "text")
    assert "answerable (n=2)" in text and "unanswerable (n=2)" in text
    assert "<- cutoff" in text and "returned nothing: 0 answerable, 1 unanswerable" in text
    document = json.loads(render_threshold(t, "json"))
    assert document["schema"] == "harness-threshold" and document["separable"] is True
    assert document["cutoff"]["false_answer_rate"] == 0.0
    with pytest.raises(ValueError, match="unknown format"):
        render_threshold(t, "markdown")


def test_the_analysis_and_its_rendering_are_pure() -> None:
    assert impurities("harness.verdict.threshold") == {"harness.verdict.threshold": []}


# --------------------------------------------------------------------------- the real CLI


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sandbox, Path]]:
    box = knob_sandbox(tmp_path_factory.mktemp("threshold"), {"flat": {"FLAT": 1}})
    done = box.harness("compare", "--baseline", "main", "--candidate", "flat")
    assert done.returncode in (0, 1), done.stderr
    (directory,) = [p.parent for p in box.results.glob("*/comparison.json")]
    yield box, directory
    assert_clean(box)


def _threshold(box: Sandbox, *args: str) -> subprocess.CompletedProcess[str]:
    return cli_server.run(
        "-m harness.cli.main", ["threshold", *args], cwd=box.repo, env=box.env(), timeout=120
    )


@pytest.mark.slow
def test_threshold_cli_on_a_service_that_can_tell(compared: tuple[Sandbox, Path]) -> None:
    box, directory = compared
    done = _threshold(box, str(directory), "--side", "baseline")
    assert done.returncode == 0, done.stderr
    assert "a gap of" in done.stdout and "separates them" in done.stdout
    document = json.loads(
        _threshold(box, str(directory), "--side", "baseline", "--format", "json").stdout
    )
    assert document["separable"] is True and document["gap"] > 0
    assert (
        document["cutoff"]["abstention_rate"] == 0 and document["cutoff"]["false_answer_rate"] == 0
    )
    assert sum(document["histogram"]["unanswerable"]) == 4


@pytest.mark.slow
def test_threshold_cli_says_when_the_scores_cannot_tell(compared: tuple[Sandbox, Path]) -> None:
    box, directory = compared
    done = _threshold(box, str(directory))  # the candidate side: FLAT scores
    assert done.returncode == 0, done.stderr
    assert "this system cannot tell when it has nothing" in done.stdout
    document = json.loads(_threshold(box, str(directory), "--format", "json").stdout)
    assert document["separable"] is False and document["gap"] is None
    # The same run read from its record under results/runs/ gives the same answer.
    records = [p for p in (box.results / "runs").glob("*.json") if "_flat_" in p.name]
    assert len(records) == 1
    again = json.loads(_threshold(box, str(records[0]), "--format", "json").stdout)
    assert again == document

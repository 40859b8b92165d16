"""The fast paths give what the slow ones give: the column-wise TREC reader against the
line-by-line one, and `import harness.cli.main` loads none of the heavy libraries."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.score.arrowrun import read_trec_arrow
from harness.score.columns import read_trec_columns
from harness.score.runfile import Run, _parse_trec, load_run

_LINE = st.tuples(
    st.sampled_from(["q1", "q2", "001", "NA"]),
    st.sampled_from(["a", "b", "B", "é", "10", "9", "null"]),
    st.sampled_from(["1", "1.0", "2.5", "-3", "1e3", "0.30000000000000004", "nan", "x"]),
    st.sampled_from(["t", "run", ""]),  # "" drops the tag column: a 5-column line
)



def _line_reader_unless_declined(text: str, fast: object) -> Run | None:
    """The line reader's run of `text`; None where it names a problem in it, which the fast
    path (its answer `fast`) must have declined. A fast path may decline a good file too (a hash
    collision), never misread one."""
    try:
        return _parse_trec(text, "r")
    except Exception:
        assert fast is None
        return None


@settings(max_examples=examples(300))
@given(st.lists(_LINE, max_size=12), st.sampled_from([" ", "\t", "  "]))
def test_column_reader_agrees_with_the_line_reader(rows: list[tuple[str, ...]], sep: str) -> None:
    text = "".join(
        sep.join([q, "Q0", d, "1", s, *([t] if t else [])]) + "\n" for q, d, s, t in rows
    )
    fast = read_trec_columns(text.encode())
    slow = _line_reader_unless_declined(text, fast)
    if slow is not None and fast is not None:  # a good file may be declined, never misread
        assert list(fast[0]) == list(slow.rankings)
        assert dict(fast[0]) == dict(slow.rankings) and dict(fast[1]) == dict(slow.scores or {})
        assert all(type(s) is float for scores in fast[1].values() for s in scores)


_ARROW_ID = st.sampled_from(["q1", "q2", "001", "NA", "a", "b", "B", "é", "10", "9", "null", '"x'])


@settings(max_examples=examples(300))
@given(
    st.lists(
        st.tuples(
            _ARROW_ID,
            _ARROW_ID,
            st.sampled_from(
                [
                    "1",
                    "1.0",
                    "2.5",
                    "-3",
                    "1e3",
                    "-0",
                    "0",
                    "NaN",
                    "inf",
                    "1_0",
                    "x",
                    "+1",
                    ".5",
                    "5.",
                    "0001",
                    "1E5",
                    "1e-400",
                    "4.9e-324",
                    "0x10",
                    "1d5",
                ]
            )
            | st.floats(allow_nan=False, allow_infinity=False).map(repr),
            st.sampled_from(["t", "run", ""]),  # "" drops the tag column: a 5-column line
            st.sampled_from(["", "", "", " ", "\n", "  "]),  # a space too many, a blank line
            st.sampled_from(["", "", "", " ", "\n"]),  # before the line
        ),
        max_size=14,
    ),
    st.integers(1, 4),
)
def test_arrow_reader_agrees_with_the_line_reader(rows: list[tuple[str, ...]], k: int) -> None:
    text = "".join(
        before + " ".join([q, "Q0", d, "1", s, *([t] if t else [])]) + odd + "\n"
        for q, d, s, t, odd, before in rows
    )
    fast = read_trec_arrow(text.encode())
    slow = _line_reader_unless_declined(text, fast)
    if slow is not None and fast is not None:  # a good file may be declined, never misread
        rankings, scores = fast
        assert list(rankings) == list(slow.rankings)
        assert dict(rankings) == dict(slow.rankings) and dict(scores) == dict(slow.scores or {})
        assert all(type(s) is float for each in scores.values() for s in each)
        ids = [*slow.rankings, "absent"]
        flat, sizes = rankings.heads(ids, k)
        expected = [slow.rankings.get(q, ())[:k] for q in ids]
        assert sizes == [len(e) for e in expected]
        assert flat == [d for e in expected for d in e]


def test_arrow_reader_orders_a_shuffled_run_with_ties_as_trec_eval(tmp_path: Path) -> None:
    import random

    lines = [
        f"q{q} Q0 d{(q * 7 + r) % 50} {r} {float(r % 7)} t\n" for q in range(200) for r in range(40)
    ]
    random.Random(0).shuffle(lines)
    text = "".join(lines)
    found = read_trec_arrow(text.encode())
    assert found is not None
    slow = _parse_trec(text, "r")
    assert list(found[0]) == list(slow.rankings)
    assert dict(found[0]) == dict(slow.rankings) and dict(found[1]) == dict(slow.scores or {})
    path = tmp_path / "run.trec"
    path.write_text(text)
    assert type(load_run(path).rankings).__name__ == "ArrowRanked"


def test_separators_only_str_split_knows_go_the_slow_way(tmp_path: Path) -> None:
    for odd in ("\r\n", "\x0c", "\u00a0", "\u2003"):
        text = f"q Q0 a 1 1 t{odd}q Q0 b 2 2 t\n"
        assert read_trec_columns(text.encode()) is None
        assert read_trec_arrow(text.encode()) is None
        path = tmp_path / "run.trec"
        path.write_text(text, encoding="utf-8")
        try:
            expected = _parse_trec(text, str(path))
        except Exception as exc:
            expected = exc
        try:
            found = load_run(path)
        except Exception as exc:
            found = exc
        assert type(found) is type(expected)
        assert getattr(found, "message", None) == getattr(expected, "message", None)
        if not isinstance(found, Exception):
            assert found.rankings == expected.rankings


def test_a_large_file_is_read_column_wise_and_equal(tmp_path: Path) -> None:
    lines = [
        f"q{q} Q0 d{(q * 7 + r) % 50} {r} {float(r % 7)} t\n" for q in range(200) for r in range(40)
    ]
    text = "".join(lines)
    path = tmp_path / "run.trec"
    path.write_text(text)
    assert read_trec_columns(text.encode()) is not None
    run, slow = load_run(path), _parse_trec(text, str(path))
    assert run.rankings == slow.rankings and run.scores == slow.scores


def _loaded_after(imports: str, candidates: tuple[str, ...]) -> list[str]:
    """Which of `candidates` a fresh interpreter has in sys.modules after `import <imports>`."""
    code = (
        f"import json, sys, {imports}; "
        f"print(json.dumps(sorted(m for m in {candidates!r} if m in sys.modules)))"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded: list[str] = json.loads(found.stdout)
    return loaded


def test_importing_the_cli_loads_no_heavy_library() -> None:
    heavy = ("scipy", "pandas", "numpy", "git", "httpx", "psutil", "ssl")
    assert _loaded_after("harness.cli.main, harness.cli.parser", heavy) == []


def test_the_metrics_command_loads_no_scipy_git_or_http() -> None:
    imports = "harness.report.runs, harness.score.evaluation, harness.gold, harness.score.runfile"
    assert _loaded_after(imports, ("scipy", "git", "httpx", "psutil")) == []


def test_a_compare_boots_and_replays_without_httpx_or_gitpython() -> None:
    """The readiness probe and the replay client are harness's own sockets; git finds the
    working tree itself: httpx, httpcore and gitpython are imported only on their own paths."""
    imports = (
        "harness.boot.service, harness.driver.runner, harness.replay.client, "
        "harness.checkout.worktree"
    )
    assert _loaded_after(imports, ("httpx", "httpcore", "git")) == []


@settings(max_examples=examples(100), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["q1", "q2", "q3"]), st.sampled_from("abcdefgh"), st.integers(0, 3)
        ),
        max_size=30,
    ),
    st.dictionaries(
        st.sampled_from(["q1", "q2", "q4"]),
        st.dictionaries(st.sampled_from("abcdefgh"), st.integers(0, 3), min_size=1, max_size=4),
        min_size=1,
    ),
)
def test_evaluating_an_arrow_run_equals_evaluating_its_dict(
    rows: list[tuple[str, str, int]], judged: dict[str, dict[str, int]]
) -> None:
    """`evaluate` reads an ArrowRanked's heads and a plain dict's full rankings: same numbers."""
    from harness.score.evaluation import evaluate
    from harness.values.types import GoldQuery, GoldSet

    text = "".join(f"{q} Q0 {d} 1 {s} t\n" for q, d, s in dict.fromkeys(rows))
    seen = {(q, d) for q, d, _ in rows}
    if len(seen) != len(dict.fromkeys(rows)) or not text:
        return  # a docid twice for a query: the line reader's error, not this test's subject
    found = read_trec_arrow(text.encode())
    assert found is not None
    plain = dict(found[0])
    gold = GoldSet(tuple(GoldQuery(q, q, relevant=j) for q, j in judged.items()), "g", "trec", "h")
    specs = ["hit@2", "recall@3", "p@2", "mrr", "ndcg@3", "ndcg", "ap"]
    for rel_level in (1, 2):
        fast = evaluate(gold, found[0], specs, rel_level, scores=found[1], judged_as_zero=True)
        slow = evaluate(gold, plain, specs, rel_level, scores=dict(found[1]), judged_as_zero=True)
        assert fast.query_ids == slow.query_ids and fast.missing == slow.missing
        assert {m: c.tolist() for m, c in fast.columns.items()} == {
            m: c.tolist() for m, c in slow.columns.items()
        }
        assert fast.no_answer == slow.no_answer and fast.extra == slow.extra

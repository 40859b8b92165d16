"""The replay client's JMESPath fast path reads every answer as jmespath does."""

from __future__ import annotations

from typing import Any

import jmespath
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.replay.paths import FieldPath, compile_path

_NAMES = st.sampled_from(["results", "id", "score", "hits", "doc", "_x1"])

_JSON: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(allow_nan=False)
    | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_NAMES, inner, max_size=4),
    max_leaves=25,
)


@st.composite
def _expressions(draw: st.DrawFn) -> str:
    before = ".".join(draw(st.lists(_NAMES, min_size=1, max_size=3)))
    projection = draw(st.sampled_from(["", "[]", "[*]"]))
    after = "".join("." + name for name in draw(st.lists(_NAMES, max_size=2)))
    return before + projection + (after if projection else "")


@st.composite
def _answers(draw: st.DrawFn) -> Any:
    """Answers shaped like a search service's, with odd members and nested arrays mixed in."""
    item = st.dictionaries(_NAMES, _JSON, max_size=3) | _JSON
    return {
        draw(_NAMES): draw(st.lists(item | st.lists(item, max_size=2), max_size=5)),
        draw(_NAMES): draw(_JSON),
    }


@settings(max_examples=examples(600), deadline=None)
@given(_expressions(), _answers() | _JSON)
def test_the_fast_path_reads_as_jmespath(expression: str, answer: Any) -> None:
    compiled = compile_path(expression)
    assert isinstance(compiled, FieldPath)
    assert compiled.search(answer) == jmespath.compile(expression).search(answer)


def test_the_usual_paths_take_the_fast_path_and_the_rest_do_not() -> None:
    for fast in ("results[].id", "hits", "data.items[*].doc_id", "a.b[].c.d", "r[]"):
        assert isinstance(compile_path(fast), FieldPath), fast
    for slow in (
        "results[0].id",
        "results[?score > `1`].id",
        '"odd key"[].id',
        "a[].b[].c",
        "a | b",
        "results[].{id: id}",
        "length(results)",
        "results[*].id[*]",
        " a",
    ):
        assert not isinstance(compile_path(slow), FieldPath), slow
        assert compile_path(slow).search({"results": [{"id": 1}]}) == jmespath.search(
            slow, {"results": [{"id": 1}]}
        )

"""harness.report.figures writes plotly's figure JSON itself: each figure must be the one plotly's
graph objects build (tests/plotly_figures.py: make_subplots, add_trace, add_hline, ... with the
same arguments) and must pass plotly's validation, on comparisons that draw every plot, some of
them, or none."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
import plotly_figures
import pytest
from compare_support import candidate, make_gold, make_run, ranks, scored

from harness.report import figures, plotting
from harness.report.page import render
from harness.results.document import comparison_from_dict
from harness.verdict.comparison import CompareSettings, Comparison
from harness.verdict.decide import compare

SETTINGS = CompareSettings(resamples=500)


def _cases() -> dict[str, Comparison]:
    full = scored()[0]
    gold = make_gold()
    one_slice = replace(gold, queries=tuple(replace(q, slice="default") for q in gold.queries))
    old = json.loads(render(full, "json"))
    del old["repeats"], old["top_scores"], old["query_deltas"]
    for key in ("percentiles_baseline", "percentiles_candidate", "ratio_percentiles"):
        del old["latency"][key]
    return {
        "every plot": full,
        "one metric": replace(
            full, overall=replace(full.overall, rows=full.overall.rows[:1]), slices=()
        ),
        "one slice": compare(
            one_slice, make_run(one_slice, ranks()), candidate(one_slice, ranks()), SETTINGS
        ),
        "no scores": compare(gold, make_run(gold, ranks()), candidate(gold, ranks()), SETTINGS),
        "invalid": compare(
            gold, make_run(gold, ranks()), make_run(gold, ranks(), gold_hash="0" * 64), SETTINGS
        ),
        "saved before the plots": comparison_from_dict(old),
    }


CASES = _cases()


def _json(figure: Any) -> str:
    return pio.to_json(figure, validate=False)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("name", figures.FIGURES)
def test_each_figure_is_what_plotlys_graph_objects_build(case: str, name: str) -> None:
    c = CASES[case]
    written = figures.FIGURES[name](c)
    built = plotly_figures.FIGURES[name](c)
    assert (written is None) == (built is None)
    if written is None:
        return
    assert _json(written) == _json(built)  # byte for byte: the same keys in the same order
    go.Figure(written)  # every property one plotly knows, with a value it accepts


def test_the_cases_draw_every_plot_and_leave_some_out() -> None:
    drawn = {
        case: [n for n, make in figures.FIGURES.items() if make(c)] for case, c in CASES.items()
    }
    assert drawn["every plot"] == ["quality", "deltas", "latency", "scores", "repeats"]
    assert "scores" not in drawn["no scores"]
    assert drawn["saved before the plots"] == ["quality", "latency"]


def test_one_slice_holding_every_query_is_not_drawn_beside_all() -> None:
    # Issue 27: with one slice, every panel showed an "all" row and a "default" row, the same.
    one = figures.quality(CASES["one slice"])
    assert one is not None
    assert {tuple(trace["y"]) for trace in one["data"]} == {("all (n=80)",)}
    three = figures.quality(CASES["every plot"])
    assert three is not None
    labels = {y for trace in three["data"] for y in trace["y"]}
    assert labels == {"all (n=80)", "news (n=40)", "howto (n=30)", "rare (n=10)"}


def test_the_delta_plot_is_sorted_and_marks_every_flip() -> None:
    c = CASES["every plot"]
    d = c.query_deltas
    assert d is not None and d.metric == "ndcg@10" and d.flips_at == "hit@5"
    fig = figures.deltas(c)
    assert fig is not None
    bars, *marks = fig["data"]
    assert bars["y"] == sorted(bars["y"]) and len(bars["y"]) == c.overall.n
    # q41-q52 buried (rank 1 -> not returned): ndcg@10 1 -> 0; the 68 others unchanged.
    assert bars["y"] == [-1.0] * 12 + [0.0] * 68
    flipped = next(f for f in c.flips if f.metric == "hit@5")
    marked = {q for m in marks for q, _ in m["customdata"]}
    assert marked == {f.query_id for f in flipped.flips}
    # each marker sits on its query's bar
    at = dict(zip(bars["x"], bars["y"], strict=True))
    assert all(at[x] == y for m in marks for x, y in zip(m["x"], m["y"], strict=True))


def test_the_template_is_plotlys_own() -> None:
    assert plotting._template() == pio.templates[plotting.TEMPLATE].to_plotly_json()


@pytest.mark.parametrize("case", CASES)
def test_each_div_is_what_plotly_io_writes(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # plotly's "json" engine: its "auto" picks orjson where installed, which leaves non-ASCII
    # characters (the latency words' ±) unescaped; the same JSON text either way.
    monkeypatch.setattr(pio.json.config, "default_engine", "json")
    config = {"displaylogo": False, "responsive": True}
    for name, make in figures.FIGURES.items():
        figure = make(CASES[case])
        if figure is None:
            continue
        expected = pio.to_html(
            figure,
            validate=False,
            config=config,
            include_plotlyjs=False,
            full_html=False,
            div_id=f"plot-{name}",
            default_height=f"{figure['layout']['height']}px",
        )
        assert plotting.div(figure, f"plot-{name}", config) == expected


def test_json_in_a_div_is_strict_and_cannot_close_its_script() -> None:
    figure = {
        "data": [{"x": [float("nan"), float("inf"), 1.5], "name": "</script><b>NaN</b>"}],
        "layout": {"height": 100, "title": {"text": "a/b"}},
    }
    written = plotting.div(figure, "p", {})
    expected = pio.to_html(
        figure, validate=False, config={}, include_plotlyjs=False, full_html=False, div_id="p"
    )
    assert written == expected
    assert "</script><b>" not in written and "NaN," not in written and "null,null,1.5" in written


def test_plotly_js_is_the_file_plotly_ships() -> None:
    from plotly.offline import get_plotlyjs

    assert plotting.plotly_js() == get_plotlyjs()

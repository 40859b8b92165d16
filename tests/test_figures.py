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

from harness.report import figures
from harness.report.document import comparison_from_dict
from harness.report.page import render
from harness.verdict.compare import compare
from harness.verdict.comparison import CompareSettings, Comparison

SETTINGS = CompareSettings(resamples=500)


def _cases() -> dict[str, Comparison]:
    full = scored()[0]
    gold = make_gold()
    old = json.loads(render(full, "json"))
    del old["repeats"], old["top_scores"]
    for key in ("percentiles_baseline", "percentiles_candidate", "ratio_percentiles"):
        del old["latency"][key]
    return {
        "every plot": full,
        "one metric": replace(
            full, overall=replace(full.overall, rows=full.overall.rows[:1]), slices=()
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
    assert drawn["every plot"] == ["quality", "latency", "scores", "repeats"]
    assert "scores" not in drawn["no scores"]
    assert drawn["saved before the plots"] == ["quality", "latency"]


def test_the_template_is_plotlys_own() -> None:
    assert figures._template() == pio.templates[figures.TEMPLATE].to_plotly_json()


@pytest.mark.parametrize("case", CASES)
def test_each_div_is_what_plotly_io_writes(case: str) -> None:
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
        assert figures.div(figure, f"plot-{name}", config) == expected


def test_json_in_a_div_is_strict_and_cannot_close_its_script() -> None:
    figure = {
        "data": [{"x": [float("nan"), float("inf"), 1.5], "name": "</script><b>NaN</b>"}],
        "layout": {"height": 100, "title": {"text": "a/b"}},
    }
    written = figures.div(figure, "p", {})
    expected = pio.to_html(
        figure, validate=False, config={}, include_plotlyjs=False, full_html=False, div_id="p"
    )
    assert written == expected
    assert "</script><b>" not in written and "NaN," not in written and "null,null,1.5" in written


def test_plotly_js_is_the_file_plotly_ships() -> None:
    from plotly.offline import get_plotlyjs

    assert figures.plotly_js() == get_plotlyjs()

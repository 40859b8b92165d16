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

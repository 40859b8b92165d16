"""`harness history` rendered: a History in, text out.  Formats; computes nothing.

    render_history(history, fmt, *, plotly_src=None)   fmt in RENDERERS: text, markdown, csv, html

text and Markdown: one row per commit, each value with the half-width of its interval
("0.812 ±0.031"); csv: every number unrounded, intervals as `<name> low` / `<name> high`;
html: one page (plotly.js inlined once, or loaded from `plotly_src`, a path relative to the
page: `--output FILE` copies the bundle beside FILE), asv's graph: a panel per metric and one
for latency, a line over the commits in commit order, error bars where the interval is known,
then the table.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping

import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots
from tabulate import tabulate

from harness.history.table import LATENCY, History
from harness.report.figures import plotly_script

PLOT_CONFIG = {"displaylogo": False, "responsive": True}


def _cell(value: float, low: float, high: float, digits: int) -> str:
    if math.isnan(value):
        return "-"
    if math.isnan(low) or math.isnan(high):
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} ±{(high - low) / 2:.{digits}f}"


def _rows(h: History) -> tuple[list[str], list[list[str]]]:
    names = [*h.metrics, LATENCY]
    headers = ["commit", "refs", "records", "repeats", "queries", *names]
    rows = []
    for r in h.table.to_dict("records"):
        cells = [str(r["commit"]), str(r["refs"]), str(r["records"]), str(r["repeats"])]
        cells.append(str(r["queries"]) if r["queries"] else "-")
        for name in names:
            digits = 2 if name == LATENCY else 3
            cells.append(_cell(r[name], r[f"{name} low"], r[f"{name} high"], digits))
        rows.append(cells)
    return headers, rows


def _words(h: History) -> list[str]:
    n = len(h.table)
    return [
        f"harness history: {n} commit{'s' * (n != 1)}, from {h.source}; "
        f"in {h.ordered_by} (oldest first)",
        "± is the half-width of the 95% interval: over queries for a metric, over boots for "
        "latency; latencies of different commits were measured at different times, so they "
        "are levels, not a verdict (compare measures both sides together)",
        *(f"note: {n}" for n in h.notes),
    ]


def _text(h: History) -> str:
    headers, rows = _rows(h)
    align = ["left", "left", *["right"] * (len(headers) - 2)]
    table = tabulate(rows, headers, tablefmt="simple", disable_numparse=True, colalign=align)
    return "\n".join(_words(h)) + "\n\n" + table + "\n"


def _markdown(h: History) -> str:
    headers, rows = _rows(h)
    escaped = [[c.replace("|", "\\|") for c in row] for row in rows]
    align = ["left", "left", *["right"] * (len(headers) - 2)]
    table = tabulate(escaped, headers, tablefmt="github", disable_numparse=True, colalign=align)
    words = _words(h)
    return f"### {words[0]}\n\n" + "\n".join(f"- {w}" for w in words[1:]) + f"\n\n{table}\n"


def _csv(h: History) -> str:
    return str(h.table.to_csv(index=False, lineterminator="\n"))


def figure(h: History) -> go.Figure:
    """A panel per metric and one for latency p50, over the commits in order."""
    names = [*h.metrics, LATENCY]
    t = h.table
    labels = [f"{c} {r}" if r else c for c, r in zip(t["commit"], t["refs"], strict=True)]
    fig = make_subplots(
        rows=len(names),
        cols=1,
        shared_xaxes=True,
        subplot_titles=names,
        vertical_spacing=min(0.25 / len(names), 0.06),
    )
    for i, name in enumerate(names, start=1):
        values = t[name].to_list()
        low, high = t[f"{name} low"].to_list(), t[f"{name} high"].to_list()
        up = [0 if math.isnan(x) else x - v for v, x in zip(values, high, strict=True)]
        down = [0 if math.isnan(x) else v - x for v, x in zip(values, low, strict=True)]
        fig.add_trace(
            go.Scatter(
                x=labels,
                y=values,
                mode="lines+markers",
                name=name,
                line={"color": "#dd8452" if name == LATENCY else "#4c72b0"},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": up,
                    "arrayminus": down,
                    "thickness": 1.2,
                },
                hovertemplate=f"%{{x}}<br>{name}: %{{y:.3f}}<extra></extra>",
                showlegend=False,
            ),
            row=i,
            col=1,
        )
    fig.update_xaxes(type="category")
    fig.update_layout(
        template="plotly_white",
        height=120 + 220 * len(names),
        margin={"l": 60, "r": 20, "t": 60, "b": 120},
        font={"family": "system-ui, -apple-system, 'Segoe UI', sans-serif", "size": 12},
        title={"text": "Per commit, oldest first (error bars: 95% intervals where known)"},
    )
    return fig


def _html(h: History, plotly_src: str | None = None) -> str:
    headers, rows = _rows(h)
    e = html.escape
    words = _words(h)
    div = pio.to_html(
        figure(h),
        config=PLOT_CONFIG,
        include_plotlyjs=False,
        full_html=False,
        div_id="plot-history",
    )
    head = "".join(f"<th>{e(x)}</th>" for x in headers)
    body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>harness history</title><style>"
        "body { font-family: system-ui, sans-serif; max-width: 1280px; margin: 0 auto; "
        "padding: 1.5em; color: #212121; } table { border-collapse: collapse; font-size: 0.9em; }"
        " th, td { border-bottom: 1px solid #e0e0e0; padding: 0.25em 0.6em; text-align: left; }"
        " .note { color: #555; }</style>" + plotly_script(plotly_src) + "</head><body>\n"
        f"<h1>{e(words[0].partition(', from ')[0])}</h1>\n"
        + "".join(f'<p class="note">{e(w)}</p>' for w in words)
        + f'\n<div class="plot" data-plot="history">{div}</div>\n'
        + f'<table class="history"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>\n'
        "</body></html>\n"
    )


RENDERERS: Mapping[str, Callable[[History], str]] = {
    "text": _text,
    "markdown": _markdown,
    "csv": _csv,
    "html": _html,
}


def render_history(history: History, fmt: str, *, plotly_src: str | None = None) -> str:
    if fmt == "html":
        return _html(history, plotly_src)
    try:
        return RENDERERS[fmt](history)
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(RENDERERS)}") from None

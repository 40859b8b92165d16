"""`harness history` rendered: a History in, text out.  Formats; computes nothing.

    render_history(history, fmt, *, plotly_src=None)   fmt in RENDERERS: text, markdown, csv, html

text and Markdown: one row per commit, each value with the half-width of its interval
("0.812 ±0.031"); csv: every number unrounded, intervals as `<name> low` / `<name> high`;
html: one page (plotly.js inlined once, or loaded from `plotly_src`, a path relative to the
page: `--output FILE` copies the bundle beside FILE), asv's graph: a panel per metric and one
for latency, the commits in commit order, each joined to the measured commit it descends from
(two siblings are a fork, never one line; a commit graph on top when there is more than one
line of descent), error bars where the interval is known, `harness watch`'s changes as bands
over their spans (`History.changes`), then the table.
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
from harness.report.plotting import plotly_script

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
        *(
            [
                "a line joins each commit to the measured commit it descends from (git's parents): "
                "two branches from one commit are a fork, not a sequence"
            ]
            if h.links
            else []
        ),
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


LANE_COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3")
PANEL_PX, GAP_PX, TOP_PX, BOTTOM_PX = 180, 70, 70, 120  # rows of panels, and the gaps between


def _edges(h: History) -> list[tuple[int, int]]:
    """(from row, to row) for every line drawn: git's parent links when known (a fork for two
    siblings), else each commit joined to the one before (the order they were measured)."""
    if h.links:
        return [(p, i) for i, linked in enumerate(h.links) for p in linked]
    return [(i - 1, i) for i in range(1, len(h.table))]


def _lane(h: History, row: int) -> int:
    return h.lanes[row] if h.lanes else 0


def _colour(lane: int) -> str:
    return LANE_COLOURS[lane % len(LANE_COLOURS)]


def figure(h: History) -> go.Figure:
    """A panel per metric and one for latency p50, over the commits in order, each commit joined
    to the measured commits it descends from; with more than one lane, a commit graph on top."""
    names = [*h.metrics, LATENCY]
    t = h.table
    labels = [f"{c} {r}" if r else c for c, r in zip(t["commit"], t["refs"], strict=True)]
    lanes = [_lane(h, i) for i in range(len(t))]
    graph = max(lanes, default=0) > 0
    panels = [*(["commit graph (a row per line of descent)"] if graph else []), *names]
    area = len(panels) * PANEL_PX + (len(panels) - 1) * GAP_PX
    fig = make_subplots(
        rows=len(panels),
        cols=1,
        shared_xaxes=True,
        subplot_titles=panels,
        vertical_spacing=GAP_PX / area if len(panels) > 1 else 0.0,
    )
    edges = _edges(h)
    series: list[tuple[str, list[float], list[float], list[float]]] = []
    if graph:
        series.append(("lane", [float(x) for x in lanes], [0.0] * len(t), [0.0] * len(t)))
    for name in names:
        values = t[name].to_list()
        low, high = t[f"{name} low"].to_list(), t[f"{name} high"].to_list()
        up = [0 if math.isnan(x) else x - v for v, x in zip(values, high, strict=True)]
        down = [0 if math.isnan(x) else v - x for v, x in zip(values, low, strict=True)]
        series.append((name, values, up, down))
    for i, (name, values, up, down) in enumerate(series, start=1):
        for lane in sorted(set(lanes)):  # one line per lane: the edges into its commits
            xs: list[str | None] = []
            ys: list[float | None] = []
            for a, b in edges:
                if lanes[b] == lane:
                    xs += [labels[a], labels[b], None]
                    ys += [values[a], values[b], None]
            if xs:
                fig.add_trace(
                    go.Scatter(
                        x=xs,
                        y=ys,
                        mode="lines",
                        line={"color": _colour(lane)},
                        hoverinfo="skip",
                        showlegend=False,
                        connectgaps=False,
                    ),
                    row=i,
                    col=1,
                )
        fig.add_trace(
            go.Scatter(
                x=labels,
                y=values,
                mode="markers",
                name=name,
                marker={"color": [_colour(x) for x in lanes], "size": 9},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": up,
                    "arrayminus": down,
                    "thickness": 1.2,
                },
                hovertemplate=(
                    "%{x}<extra></extra>"
                    if name == "lane"
                    else f"%{{x}}<br>{name}: %{{y:.3f}}<extra></extra>"
                ),
                showlegend=False,
            ),
            row=i,
            col=1,
        )
    _draw_changes(h, fig, panels)
    if graph:
        fig.update_yaxes(
            showticklabels=False,
            showgrid=False,
            zeroline=False,
            range=[-0.5, max(lanes) + 0.5],
            row=1,
            col=1,
        )
    fig.update_xaxes(type="category")
    fig.update_layout(
        template="plotly_white",
        height=TOP_PX + BOTTOM_PX + area,
        margin={"l": 60, "r": 20, "t": TOP_PX, "b": BOTTOM_PX},
        font={"family": "system-ui, -apple-system, 'Segoe UI', sans-serif", "size": 12},
        title={
            # Short enough to end before plotly's toolbar; the page's notes say the rest.
            "text": "Per commit, oldest first (error bars: 95% intervals where known)",
            "x": 0,
            "xanchor": "left",
        },
    )
    return fig


def _draw_changes(h: History, fig: go.Figure, panels: list[str]) -> None:
    """Each of `harness watch`'s changes as a band over its span on its series' panel: red a
    confirmed regression, green a confirmed improvement, grey a flag no compare confirmed."""
    row_of = {sha: i for i, sha in enumerate(h.table["sha"])}
    for change in h.changes:
        if change.series not in panels or change.before not in row_of:
            continue
        colour = (
            "#c62828" if change.regression else "#2e7d32"
        ) if change.confirmed else "#9e9e9e"
        fig.add_vrect(
            x0=row_of[change.before],
            x1=row_of.get(change.after, row_of[change.before]),
            row=panels.index(change.series) + 1,
            col=1,
            fillcolor=colour,
            opacity=0.18,
            line_width=0,
            annotation_text=change.label,
            annotation_position="top left",
            annotation_font={"size": 11, "color": colour},
        )


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

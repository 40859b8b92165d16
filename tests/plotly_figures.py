"""The reference for harness.report.figures: the same plots built with plotly's graph objects
(make_subplots, add_trace, add_hline, ...), as harness drew them before it wrote the JSON itself.
tests/report/test_figures.py checks that both give the same figure.  They draw; they compute
nothing (every number is the Comparison's: `harness.verdict.decide` says how each is made).

    quality(c)    per scope (all queries, each slice), candidate - baseline of every metric, with
                  its interval (bootstrap; the verdict is the row's test), coloured by verdict
    latency(c)    each side's latency ECDF (from its percentiles), the per-round paired ratios
                  with their estimate, interval and tolerance band, and the ECDF of per-query ratios
    scores(c)     answerable vs unanswerable top-result scores per side, with the chosen cutoff
    repeats(c)    each repeat's mean of the headline metrics and its latency p50, per side

A figure is None when the Comparison holds nothing to draw for it (a run saved before the plots,
an invalid run, a service without scores).  Plotly escapes what it embeds (a slice named
"</script>" stays text); histograms are binned by plotly.js in the browser.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from harness.report.numbers import p_value, rate
from harness.values.types import Verdict
from harness.verdict.comparison import Comparison, MetricRow, Scope

SIDE_COLOURS = {"baseline": "#4c72b0", "candidate": "#dd8452"}
VERDICT_COLOURS = {
    Verdict.IMPROVED: "#2e7d32",
    Verdict.REGRESSED: "#c62828",
    Verdict.NO_DIFFERENCE: "#9e9e9e",
    Verdict.INCONCLUSIVE: "#f9a825",
    Verdict.INVALID: "#6a1b9a",
    Verdict.NOT_COMPARED: "#9e9e9e",
}
TEMPLATE = "plotly_white"
FONT = {"family": "system-ui, -apple-system, 'Segoe UI', sans-serif", "size": 12}


TITLE_TOP, LEGEND_TOP, PLOTS_TOP = 10, 40, 120  # px from the top: title, legend, panels


def _layout(fig: go.Figure, title: str, height: int, left: int = 60) -> go.Figure:
    fig.update_layout(
        title={
            "text": title,
            "x": 0,
            "xanchor": "left",
            "y": 1 - TITLE_TOP / height,
            "yanchor": "top",
            "yref": "container",
        },
        template=TEMPLATE,
        height=height,
        font=FONT,
        margin={"l": left, "r": 20, "t": PLOTS_TOP, "b": 50},
        legend={
            "orientation": "h",
            "yanchor": "top",
            "y": 1 - LEGEND_TOP / height,
            "x": 0,
            "xanchor": "left",
            "yref": "container",
        },
    )
    return fig


# --------------------------------------------------------------------------- quality by slice


def _grid(metrics: Sequence[str]) -> tuple[list[str], list[str]]:
    """Metric names (rows) and cutoffs (columns), in the order the rows give them."""
    names, cutoffs = [], []
    for metric in metrics:
        name, _, k = metric.partition("@")
        names += [name] if name not in names else []
        cutoffs += [k] if k not in cutoffs else []
    return names, cutoffs


def _interval(row: MetricRow) -> tuple[float, float] | None:
    if row.ci_low is not None and row.ci_high is not None:
        return row.ci_low, row.ci_high
    if row.hit is not None and row.hit.ci_low is not None and row.hit.ci_high is not None:
        return row.hit.ci_low, row.hit.ci_high
    return None


def _label(scope: Scope, overall: Scope) -> str:
    return f"all (n={scope.n})" if scope is overall else f"{scope.name} (n={scope.n})"


def quality(c: Comparison) -> go.Figure | None:
    """One panel per metric: a bar per scope, candidate - baseline, whisker = its interval."""
    if not c.overall.rows:
        return None
    one = len(c.slices) == 1 and c.slices[0].n == c.overall.n  # its rows are "all" again
    scopes = [c.overall, *([] if one else c.slices)]
    names, cutoffs = _grid([r.metric for r in c.overall.rows])
    area = len(names) * (20 + 24 * len(scopes)) + (len(names) - 1) * 64
    fig = make_subplots(
        rows=len(names),
        cols=len(cutoffs),
        subplot_titles=[f"{n}@{k}" for n in names for k in cutoffs],
        shared_yaxes=True,
        horizontal_spacing=0.04,
        vertical_spacing=64 / area if len(names) > 1 else 0.0,
    )
    labels = [_label(s, c.overall) for s in reversed(scopes)]
    for i, name in enumerate(names, start=1):
        for j, k in enumerate(cutoffs, start=1):
            metric = f"{name}@{k}"
            rows = [(lab, s.row(metric)) for lab, s in zip(labels, reversed(scopes), strict=True)]
            shown = [(lab, r) for lab, r in rows if r is not None]
            if not shown:
                continue
            intervals = [_interval(r) for _, r in shown]
            fig.add_trace(
                go.Bar(
                    x=[r.delta for _, r in shown],
                    y=[lab for lab, _ in shown],
                    orientation="h",
                    marker_color=[VERDICT_COLOURS[r.verdict] for _, r in shown],
                    error_x={
                        "type": "data",
                        "symmetric": False,
                        "array": [
                            0 if v is None else v[1] - r.delta
                            for v, (_, r) in zip(intervals, shown, strict=True)
                        ],
                        "arrayminus": [
                            0 if v is None else r.delta - v[0]
                            for v, (_, r) in zip(intervals, shown, strict=True)
                        ],
                        "color": "#333",
                        "thickness": 1.2,
                    },
                    hovertext=[
                        _hover(lab, r, v) for (lab, r), v in zip(shown, intervals, strict=True)
                    ],
                    hoverinfo="text",
                    showlegend=False,
                    name=metric,
                ),
                row=i,
                col=j,
            )
    # The zero line marks "no change" in every panel (one call: a shape per panel is slow).
    fig.update_xaxes(zeroline=True, zerolinecolor="#333", zerolinewidth=1)
    ci = f"{100 * (1 - c.settings.alpha):g}%"
    title = (
        f"Change per slice, {ci} interval "
        "(red regressed, green improved, grey no call, amber inconclusive)"
    )
    left = max(60, 16 + 7 * max(len(x) for x in labels))
    return _layout(fig, title, PLOTS_TOP + 50 + area, left)


def _hover(label: str, row: MetricRow, interval: tuple[float, float] | None) -> str:
    ci = "" if interval is None else f", interval [{interval[0]:+.3f}, {interval[1]:+.3f}]"
    p = p_value(row.p_adjusted if row.p_adjusted is not None else row.p)
    return (
        f"{label}<br>{row.metric}: {rate(row.baseline)} -> {rate(row.candidate)}"
        f"<br>delta {row.delta:+.3f}{ci}<br>p {p}: {row.verdict.value}"
    )


# --------------------------------------------------------------------------- latency


def _percent_axis() -> list[float]:
    return [i / 100 for i in range(101)]


def latency(c: Comparison) -> go.Figure | None:
    """ECDF of each side; when paired, the per-round ratios and the per-query ratio ECDF."""
    lat = c.latency
    sides = [
        (side, values)
        for side, values in (
            ("baseline", lat.percentiles_baseline),
            ("candidate", lat.percentiles_candidate),
        )
        if values
    ]
    test = lat.test
    if not sides and test is None:
        return None
    titles = ["Latency ECDF, ms (log scale)"] if sides else []
    titles += ["Candidate/baseline per round"] if test is not None else []
    titles += ["Per-query ratio ECDF (log scale)"] if test and lat.ratio_percentiles else []
    fig = make_subplots(rows=1, cols=len(titles), subplot_titles=titles, horizontal_spacing=0.08)
    for side, values in sides:
        fig.add_trace(
            go.Scatter(
                x=list(values),
                y=_percent_axis(),
                mode="lines",
                name=side,
                line={"color": SIDE_COLOURS[side], "shape": "hv"},
                hovertemplate=f"{side}: %{{x:.2f}} ms at p%{{customdata}}<extra></extra>",
                customdata=list(range(101)),
            ),
            row=1,
            col=1,
        )
    if sides:
        fig.update_xaxes(type="log", title_text="ms", row=1, col=1)
        fig.update_yaxes(title_text="fraction of answers", range=[0, 1.02], row=1, col=1)
    col = 1 + bool(sides)
    if test is not None:
        t = test
        rounds = list(range(1, len(t.rounds) + 1))
        band = c.settings.latency_tolerance
        fig.add_trace(
            go.Scatter(
                x=rounds,
                y=list(t.rounds),
                mode="markers",
                name="round ratio",
                marker={"color": "#333", "size": 9},
                hovertemplate="round %{x}: %{y:.3f}<extra></extra>",
            ),
            row=1,
            col=col,
        )
        # Shapes after the trace: plotly leaves them off a subplot that is still empty.
        fig.add_hrect(
            y0=1 / (1 + band),
            y1=1 + band,
            fillcolor="#9e9e9e",
            opacity=0.15,
            line_width=0,
            row=1,
            col=col,
        )
        fig.add_hrect(
            y0=t.ci_low,
            y1=t.ci_high,
            fillcolor=VERDICT_COLOURS[t.verdict],
            opacity=0.25,
            line_width=0,
            row=1,
            col=col,
        )
        fig.add_hline(
            y=t.ratio,
            line_color=VERDICT_COLOURS[t.verdict],
            row=1,
            col=col,
            annotation_text=f"{t.ratio:.2f} [{t.ci_low:.2f}, {t.ci_high:.2f}]",
            annotation_position="top left",
        )
        fig.add_hline(y=1, line_dash="dot", line_color="#333", row=1, col=col)
        fig.update_xaxes(title_text="round", dtick=1, row=1, col=col)
        fig.update_yaxes(title_text="ratio (> 1 slower)", row=1, col=col)
        if lat.ratio_percentiles:
            fig.add_trace(
                go.Scatter(
                    x=list(lat.ratio_percentiles),
                    y=_percent_axis(),
                    mode="lines",
                    name="per-query ratio",
                    line={"color": "#555", "shape": "hv"},
                    hovertemplate="ratio %{x:.3f} at p%{customdata}<extra></extra>",
                    customdata=list(range(101)),
                ),
                row=1,
                col=col + 1,
            )
            fig.add_vline(x=1, line_dash="dot", line_color="#333", row=1, col=col + 1)
            fig.update_xaxes(type="log", title_text="candidate/baseline", row=1, col=col + 1)
            fig.update_yaxes(range=[0, 1.02], row=1, col=col + 1)
    return _layout(fig, f"Latency: {lat.words.split('; ')[0]}", 420)


# --------------------------------------------------------------------------- top scores


def scores(c: Comparison) -> go.Figure | None:
    """Per side, overlaid histograms of answerable and unanswerable top scores (each as a
    percentage of its own group, on shared bins) and the chosen cutoff, dashed."""
    if not c.top_scores:
        return None
    titles = []
    for t in c.top_scores:
        cut = "no cutoff" if t.cutoff is None else f"cutoff {t.cutoff:.4g} (dashed)"
        titles.append(
            f"{t.side}: {cut}<br>returned nothing: {t.empty_answerable} answerable, "
            f"{t.empty_unanswerable} unanswerable"
        )
    fig = make_subplots(
        rows=1, cols=len(c.top_scores), subplot_titles=titles, horizontal_spacing=0.08
    )
    for j, t in enumerate(c.top_scores, start=1):
        for name, values, colour in (
            ("answerable", t.answerable, "#2e7d32"),
            ("unanswerable", t.unanswerable, "#c62828"),
        ):
            fig.add_trace(
                go.Histogram(
                    x=list(values),
                    name=f"{name} (scored)",
                    marker_color=colour,
                    opacity=0.6,
                    nbinsx=40,
                    histnorm="percent",
                    bingroup=f"scores-{j}",
                    legendgroup=name,
                    showlegend=j == 1,
                    hovertemplate=f"{name}: %{{y:.1f}}% of its queries at %{{x}}<extra></extra>",
                ),
                row=1,
                col=j,
            )
        if t.cutoff is not None:
            fig.add_vline(x=t.cutoff, line_dash="dash", line_color="#333", row=1, col=j)
        fig.update_xaxes(title_text="top-result score", row=1, col=j)
    fig.update_yaxes(title_text="% of its group", row=1, col=1)
    fig.update_layout(barmode="overlay")
    return _layout(
        fig, "Top-result scores: answerable vs unanswerable, and the no-answer cutoff", 420
    )


# --------------------------------------------------------------------------- drift per repeat


def repeats(c: Comparison) -> go.Figure | None:
    """One panel per headline metric (hit@k) and one for latency p50: a line per side."""
    if not c.repeats:
        return None
    metrics = [r.metric for r in c.overall.rows]
    headline = [r.metric for r in c.hit_rows] or metrics[:1]
    has_latency = any(r.latency_p50 is not None for r in c.repeats)
    titles = [*headline, *(["latency p50, ms"] if has_latency else [])]
    fig = make_subplots(rows=1, cols=len(titles), subplot_titles=titles, horizontal_spacing=0.07)
    for side in ("baseline", "candidate"):
        mine = [r for r in c.repeats if r.side == side]
        if not mine:
            continue
        x = [r.index + 1 for r in mine]
        panels: list[tuple[str, list[Any]]] = [
            (m, [r.means[metrics.index(m)] for r in mine]) for m in headline
        ]
        if has_latency:
            panels.append(("latency p50", [r.latency_p50 for r in mine]))
        for j, (what, y) in enumerate(panels, start=1):
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=y,
                    mode="lines+markers",
                    name=side,
                    legendgroup=side,
                    showlegend=j == 1,
                    line={"color": SIDE_COLOURS[side]},
                    hovertemplate=f"{side} repeat %{{x}}: {what} %{{y:.3f}}<extra></extra>",
                ),
                row=1,
                col=j,
            )
    fig.update_xaxes(title_text="repeat", dtick=1)
    return _layout(fig, "Drift per repeat: each boot's mean, per side", 360)


# --------------------------------------------------------------------------- per-query deltas


def deltas(c: Comparison) -> go.Figure | None:
    d = c.query_deltas
    if d is None or not d.deltas:
        return None
    fig = make_subplots(rows=1, cols=1)
    x = list(range(1, len(d.deltas) + 1))
    fig.add_trace(
        go.Bar(
            x=x,
            y=[q.delta for q in d.deltas],
            customdata=[[q.query_id, q.slice] for q in d.deltas],
            hovertemplate=f"%{{customdata[0]}} (%{{customdata[1]}}): {d.metric} "
            "%{y:+.3f}<extra></extra>",
            marker={"color": "#8c8c8c", "line": {"width": 0}},
            name=f"{d.metric}, candidate - baseline",
        ),
        row=1,
        col=1,
    )
    for direction, colour in (("newly missed", "#c62828"), ("newly hit", "#2e7d32")):
        marked = [(i, q) for i, q in zip(x, d.deltas, strict=True) if q.flip == direction]
        if marked:
            fig.add_trace(
                go.Scatter(
                    x=[i for i, _ in marked],
                    y=[q.delta for _, q in marked],
                    customdata=[[q.query_id, q.slice] for _, q in marked],
                    hovertemplate=f"%{{customdata[0]}} (%{{customdata[1]}}): {direction} at "
                    f"{d.flips_at}, {d.metric} %{{y:+.3f}}<extra></extra>",
                    marker={"color": colour, "size": 8, "symbol": "diamond"},
                    mode="markers",
                    name=f"{direction} at {d.flips_at} ({len(marked)})",
                ),
                row=1,
                col=1,
            )
    fig.update_xaxes(title_text=f"queries, by change ({len(d.deltas)})")
    fig.update_yaxes(
        title_text=f"{d.metric}: candidate - baseline",
        zeroline=True,
        zerolinecolor="#333",
        zerolinewidth=1,
    )
    fig.update_layout(bargap=0)
    title = f"Per-query change in {d.metric}, sorted (each query's mean over its repeats)"
    return _layout(fig, title, 380)


FIGURES = {
    "quality": quality,
    "deltas": deltas,
    "latency": latency,
    "scores": scores,
    "repeats": repeats,
}

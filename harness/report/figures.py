"""The plots of the HTML report: a Comparison in, plotly figures out, as the JSON plotly.js draws
(`{"data": [...], "layout": {...}}`).  They draw; they compute nothing (every number is the
Comparison's: `harness.verdict.decide` says how each is made).

    quality(c)    per scope (all queries, each slice), candidate - baseline of every metric, with
                  its interval (bootstrap; the verdict is the row's test), coloured by verdict
                  (one slice holding every query is not drawn again beside "all")
    deltas(c)     every query's candidate - baseline of one metric (`QueryDeltas`), sorted, the
                  queries that flipped at the headline hit@k marked
    latency(c)    each side's latency ECDF (from its percentiles), the per-round paired ratios
                  with their estimate, interval and tolerance band, and the ECDF of per-query ratios
    scores(c)     answerable vs unanswerable top-result scores per side, with the chosen cutoff
    repeats(c)    each repeat's mean of the headline metrics and its latency p50, per side

A figure is None when the Comparison holds nothing to draw for it (a run saved before the plots,
an invalid run, a service without scores).  Plotly escapes what it embeds (a slice named
"</script>" stays text); histograms are binned by plotly.js in the browser.

The figures are written as plain dicts, laid out as plotly's `make_subplots` and `add_hline`
/`add_hrect`/`add_vline` lay them out (`harness.report.plotting.Grid`): plotly's graph objects
validate and copy every property on every update, which made them most of the CPU a demo
compare spent rendering.  tests/report/test_figures.py checks each figure against plotly's own
objects (tests/plotly_figures.py, the graph-object version of this module) and against plotly's
validation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.report.numbers import p_value, rate
from harness.report.plotting import PLOTS_TOP, Figure, Grid
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


def quality(c: Comparison) -> Figure | None:
    """One panel per metric: a bar per scope, candidate - baseline, whisker = its interval."""
    if not c.overall.rows:
        return None
    scopes = [c.overall, *drawn_slices(c)]
    names, cutoffs = _grid([r.metric for r in c.overall.rows])
    height, spacing = quality_size(len(names), len(scopes))
    fig = Grid(
        len(names),
        len(cutoffs),
        [f"{n}@{k}" for n in names for k in cutoffs],
        shared_yaxes=True,
        horizontal_spacing=0.04,
        vertical_spacing=spacing,
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
            bar = {
                "error_x": {
                    "array": [
                        0 if v is None else v[1] - r.delta
                        for v, (_, r) in zip(intervals, shown, strict=True)
                    ],
                    "arrayminus": [
                        0 if v is None else r.delta - v[0]
                        for v, (_, r) in zip(intervals, shown, strict=True)
                    ],
                    "color": "#333",
                    "symmetric": False,
                    "thickness": 1.2,
                    "type": "data",
                },
                "hoverinfo": "text",
                "hovertext": [
                    _hover(lab, r, v) for (lab, r), v in zip(shown, intervals, strict=True)
                ],
                "marker": {"color": [VERDICT_COLOURS[r.verdict] for _, r in shown]},
                "name": metric,
                "orientation": "h",
                "showlegend": False,
                "x": [r.delta for _, r in shown],
                "y": [lab for lab, _ in shown],
                "type": "bar",
            }
            fig.add(bar, i, j)
    # The zero line marks "no change" in every panel.
    for axis in fig.xaxes():
        axis |= {"zeroline": True, "zerolinecolor": "#333", "zerolinewidth": 1}
    ci = f"{100 * (1 - c.settings.alpha):g}%"
    # Short enough to end before plotly's toolbar, top right, at the page's width.
    title = (
        f"Change per slice, {ci} interval "
        "(red regressed, green improved, grey no call, amber inconclusive)"
    )
    return fig.figure(title, height, left=label_margin(labels))


def drawn_slices(c: Comparison) -> tuple[Scope, ...]:
    """The slices the quality plot draws: none when one slice holds every query (its rows would
    be the "all" rows again, as the text report says)."""
    if len(c.slices) == 1 and c.slices[0].n == c.overall.n:
        return ()
    return c.slices


# Between two rows of panels: the x tick labels of the upper (about 20 px), the subplot title of
# the lower (about 22 px), and air.
ROW_GAP, BAR_PX = 64, 24


def quality_size(rows: int, scopes: int) -> tuple[int, float]:
    """(height in px, vertical spacing as a fraction of the plotting area) for `rows` rows of
    panels of `scopes` bars each: the gap between rows is ROW_GAP pixels whatever the size."""
    panel = 20 + BAR_PX * scopes
    area = rows * panel + (rows - 1) * ROW_GAP
    return PLOTS_TOP + 50 + area, ROW_GAP / area if rows > 1 else 0.0


def label_margin(labels: Sequence[str]) -> int:
    """A left margin wide enough for the longest y label (about 7 px a character at 12 px)."""
    return max(60, 16 + 7 * max((len(x) for x in labels), default=0))


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


def latency(c: Comparison) -> Figure | None:
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
    fig = Grid(1, len(titles), titles, horizontal_spacing=0.08)
    for side, values in sides:
        ecdf = {
            "customdata": list(range(101)),
            "hovertemplate": f"{side}: %{{x:.2f}} ms at p%{{customdata}}<extra></extra>",
            "line": {"color": SIDE_COLOURS[side], "shape": "hv"},
            "mode": "lines",
            "name": side,
            "x": list(values),
            "y": _percent_axis(),
            "type": "scatter",
        }
        fig.add(ecdf, 1, 1)
    if sides:
        fig.xaxis(1, 1).update(title={"text": "ms"}, type="log")
        fig.yaxis(1, 1).update(title={"text": "fraction of answers"}, range=[0, 1.02])
    col = 1 + bool(sides)
    if test is not None:
        t = test
        band = c.settings.latency_tolerance
        ratios = {
            "hovertemplate": "round %{x}: %{y:.3f}<extra></extra>",
            "marker": {"color": "#333", "size": 9},
            "mode": "markers",
            "name": "round ratio",
            "x": list(range(1, len(t.rounds) + 1)),
            "y": list(t.rounds),
            "type": "scatter",
        }
        fig.add(ratios, 1, col)
        fig.hrect(1, col, 1 / (1 + band), 1 + band, "#9e9e9e", 0.15)
        fig.hrect(1, col, t.ci_low, t.ci_high, VERDICT_COLOURS[t.verdict], 0.25)
        fig.hline(
            1,
            col,
            t.ratio,
            {"color": VERDICT_COLOURS[t.verdict]},
            annotation=f"{t.ratio:.2f} [{t.ci_low:.2f}, {t.ci_high:.2f}]",
        )
        fig.hline(1, col, 1, {"color": "#333", "dash": "dot"})
        fig.xaxis(1, col).update(title={"text": "round"}, dtick=1)
        fig.yaxis(1, col).update(title={"text": "ratio (> 1 slower)"})
        if lat.ratio_percentiles:
            ecdf = {
                "customdata": list(range(101)),
                "hovertemplate": "ratio %{x:.3f} at p%{customdata}<extra></extra>",
                "line": {"color": "#555", "shape": "hv"},
                "mode": "lines",
                "name": "per-query ratio",
                "x": list(lat.ratio_percentiles),
                "y": _percent_axis(),
                "type": "scatter",
            }
            fig.add(ecdf, 1, col + 1)
            fig.vline(1, col + 1, 1, {"color": "#333", "dash": "dot"})
            fig.xaxis(1, col + 1).update(title={"text": "candidate/baseline"}, type="log")
            fig.yaxis(1, col + 1).update(range=[0, 1.02])
    # One line over the plot: the verdict's first clause (the latency section says the rest:
    # the rounds, the band, the tail).
    words = lat.words.split("; ")[0]
    return fig.figure(f"Latency: {words}", 420)


# --------------------------------------------------------------------------- top scores


def scores(c: Comparison) -> Figure | None:
    """Per side, overlaid histograms of answerable and unanswerable top scores (each as a
    percentage of its own group, on shared bins) and the chosen cutoff, dashed."""
    if not c.top_scores:
        return None
    titles = []
    for t in c.top_scores:
        cut = "no cutoff" if t.cutoff is None else f"cutoff {t.cutoff:.4g} (dashed)"
        titles.append(  # two lines: side by side, one line each ran into the other
            f"{t.side}: {cut}<br>returned nothing: {t.empty_answerable} answerable, "
            f"{t.empty_unanswerable} unanswerable"
        )
    fig = Grid(1, len(c.top_scores), titles, horizontal_spacing=0.08)
    for j, t in enumerate(c.top_scores, start=1):
        for name, values, colour in (
            ("answerable", t.answerable, "#2e7d32"),
            ("unanswerable", t.unanswerable, "#c62828"),
        ):
            histogram = {
                "bingroup": f"scores-{j}",
                "histnorm": "percent",
                "hovertemplate": f"{name}: %{{y:.1f}}% of its queries at %{{x}}<extra></extra>",
                "legendgroup": name,
                "marker": {"color": colour},
                "name": f"{name} (scored)",
                "nbinsx": 40,
                "opacity": 0.6,
                "showlegend": j == 1,
                "x": list(values),
                "type": "histogram",
            }
            fig.add(histogram, 1, j)
        if t.cutoff is not None:
            fig.vline(1, j, t.cutoff, {"color": "#333", "dash": "dash"})
        fig.xaxis(1, j).update(title={"text": "top-result score"})
    fig.yaxis(1, 1).update(title={"text": "% of its group"})
    return fig.figure(
        "Top-result scores: answerable vs unanswerable, and the no-answer cutoff",
        420,
        barmode="overlay",
    )


# --------------------------------------------------------------------------- drift per repeat


def repeats(c: Comparison) -> Figure | None:
    """One panel per headline metric (hit@k) and one for latency p50: a line per side."""
    if not c.repeats:
        return None
    metrics = [r.metric for r in c.overall.rows]
    headline = [r.metric for r in c.hit_rows] or metrics[:1]
    has_latency = any(r.latency_p50 is not None for r in c.repeats)
    titles = [*headline, *(["latency p50, ms"] if has_latency else [])]
    fig = Grid(1, len(titles), titles, horizontal_spacing=0.07)
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
            line = {
                "hovertemplate": f"{side} repeat %{{x}}: {what} %{{y:.3f}}<extra></extra>",
                "legendgroup": side,
                "line": {"color": SIDE_COLOURS[side]},
                "mode": "lines+markers",
                "name": side,
                "showlegend": j == 1,
                "x": x,
                "y": y,
                "type": "scatter",
            }
            fig.add(line, 1, j)
    for axis in fig.xaxes():
        axis |= {"title": {"text": "repeat"}, "dtick": 1}
    return fig.figure("Drift per repeat: each boot's mean, per side", 360)


# --------------------------------------------------------------------------- per-query deltas

FLIP_COLOURS = {"newly missed": VERDICT_COLOURS[Verdict.REGRESSED], "newly hit": "#2e7d32"}


def deltas(c: Comparison) -> Figure | None:
    """Every analysed query's candidate - baseline of one metric, sorted (a bar each: the worst
    on the left), and a marker on each bar whose query flipped at the headline hit@k."""
    d = c.query_deltas
    if d is None or not d.deltas:
        return None
    fig = Grid(1, 1, [], horizontal_spacing=0.0)
    x = list(range(1, len(d.deltas) + 1))
    bars = {
        "customdata": [[q.query_id, q.slice] for q in d.deltas],
        "hovertemplate": f"%{{customdata[0]}} (%{{customdata[1]}}): {d.metric} "
        "%{y:+.3f}<extra></extra>",
        "marker": {"color": "#8c8c8c", "line": {"width": 0}},
        "name": f"{d.metric}, candidate - baseline",
        "x": x,
        "y": [q.delta for q in d.deltas],
        "type": "bar",
    }
    fig.add(bars, 1, 1)
    for direction, colour in FLIP_COLOURS.items():
        marked = [(i, q) for i, q in zip(x, d.deltas, strict=True) if q.flip == direction]
        if not marked:
            continue
        flips = {
            "customdata": [[q.query_id, q.slice] for _, q in marked],
            "hovertemplate": f"%{{customdata[0]}} (%{{customdata[1]}}): {direction} at "
            f"{d.flips_at}, {d.metric} %{{y:+.3f}}<extra></extra>",
            "marker": {"color": colour, "size": 8, "symbol": "diamond"},
            "mode": "markers",
            "name": f"{direction} at {d.flips_at} ({len(marked)})",
            "x": [i for i, _ in marked],
            "y": [q.delta for _, q in marked],
            "type": "scatter",
        }
        fig.add(flips, 1, 1)
    fig.xaxis(1, 1).update(title={"text": f"queries, by change ({len(d.deltas)})"})
    fig.yaxis(1, 1).update(
        title={"text": f"{d.metric}: candidate - baseline"},
        zeroline=True,
        zerolinecolor="#333",
        zerolinewidth=1,
    )
    return fig.figure(
        f"Per-query change in {d.metric}, sorted (each query's mean over its repeats)",
        380,
        bargap=0,
    )


FIGURES = {
    "quality": quality,
    "deltas": deltas,
    "latency": latency,
    "scores": scores,
    "repeats": repeats,
}

"""The plots of the HTML report: a Comparison in, plotly figures out, as the JSON plotly.js draws
(`{"data": [...], "layout": {...}}`).  They draw; they compute nothing (every number is the
Comparison's: `harness.verdict.compare` says how each is made).

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
/`add_hrect`/`add_vline` lay them out (`_Grid`, `_hline`, ...): plotly's graph objects validate
and copy every property on every update, which made them most of the CPU a demo compare spent
rendering.  tests/test_figures.py checks each figure against plotly's own objects
(tests/plotly_figures.py, the graph-object version of this module) and against plotly's
validation.
"""

from __future__ import annotations

import functools
import html
import json
import re
from collections.abc import Sequence
from importlib import resources
from typing import Any

from harness.report.numbers import p_value, rate
from harness.types import Verdict
from harness.verdict.comparison import Comparison, MetricRow, Scope

Figure = dict[str, Any]
"""A plotly figure as JSON: {"data": [trace, ...], "layout": {...}}."""

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


@functools.cache
def _template() -> dict[str, Any]:
    """plotly's `TEMPLATE` as `layout.template = TEMPLATE` embeds it: the file the package ships,
    its keys in the order plotly writes them (alphabetical; the trace types of `data` by their
    plural, "barpolars" before "bars"), read without building plotly's Template object."""
    shipped = resources.files("plotly") / "package_data" / "templates" / f"{TEMPLATE}.json"
    template: dict[str, Any] = _plotly_order(json.loads(shipped.read_text(encoding="utf-8")))
    template["data"] = dict(sorted(template["data"].items(), key=lambda item: item[0] + "s"))
    return template


def plotly_js() -> str:
    """plotly.js as the plotly package ships it (what `plotly.offline.get_plotlyjs()` returns)."""
    shipped = resources.files("plotly") / "package_data" / "plotly.min.js"
    return shipped.read_bytes().decode("utf-8")


@functools.cache
def plotly_file() -> str:
    """The name plotly.js is written under beside the pages: `plotly-<version>.min.js`, the
    version read from the bundle's own banner (`* plotly.js v4.1.1`), so that pages written by
    two plotly versions into one folder never load each other's bundle."""
    shipped = resources.files("plotly") / "package_data" / "plotly.min.js"
    with shipped.open("rb") as f:
        head = f.read(512).decode("utf-8", "replace")
    found = re.search(r"plotly\.js v([0-9][0-9A-Za-z.+-]*)", head)
    return f"plotly-{found.group(1) if found else 'unknown'}.min.js"


# Shown at the top of a page whose plotly.js is not where its <script src> says (the page was
# copied out of its folder on its own): what is missing and how to get a page that needs nothing.
_MISSING_BUNDLE = """
window.addEventListener("DOMContentLoaded", function () {
  if (window.Plotly) { return; }
  var note = document.createElement("p");
  note.className = "alert missing-plotly";
  note.textContent = "The plots need plotly.js at " + %s + ", which is " +
    "missing (was this page copied on its own?). Copy that file along, or write a " +
    "self-contained page: harness report DIR --format html > page.html";
  document.body.insertBefore(note, document.body.firstChild);
});
"""


def plotly_script(src: str | None) -> str:
    """The <head>'s plotly.js: inlined (`src` None: a page that needs nothing beside it, 4.8 MB)
    or loaded from `src`, a path relative to the page (the bundle written once per folder), with
    a note on the page when that file is missing."""
    if src is None:
        return f'<script type="text/javascript">{plotly_js()}</script>'
    shown = json.dumps(src).replace("<", "\\u003c")
    return (
        f'<script type="text/javascript" src="{html.escape(src)}" charset="utf-8"></script>'
        f"<script>{_MISSING_BUNDLE % shown}</script>"
    )


def div(figure: Figure, div_id: str, config: dict[str, Any]) -> str:
    """The <div> that draws `figure`, as `plotly.io.to_html(figure, config=config,
    include_plotlyjs=False, full_html=False, div_id=div_id, validate=False)` writes it (its
    height the layout's), without importing plotly.io (and, through it, plotly's graph objects)."""
    height = figure["layout"]["height"]
    config = {**config}
    config.setdefault("responsive", True)
    if not config.get("showSendToCloud", False):
        config.pop("plotlyServerURL", None)
    script = """\
                if (document.getElementById("{id}")) {{\
                    Plotly.newPlot(\
                        "{id}",\
                        {data},\
                        {layout},\
                        {config}\
                    ){then}\
                }}""".format(
        id=div_id,
        data=_plotly_json(figure["data"]),
        layout=_plotly_json(figure["layout"]),
        config=json.dumps(config),
        then="",
    )
    return """\
<div style="height:{height}; width:{width};">\
        {mathjax}\
        {plotlyjs}\
            <div id="{id}" class="plotly-graph-div" \
style="height:100%; width:100%;"></div>\
            <script>\
                window.PLOTLYENV=window.PLOTLYENV || {{}};\
                {script};\
            </script>\
        </div>""".format(
        height=f"{height}px", width="100%", mathjax="", plotlyjs="", id=div_id, script=script
    ).strip()


def _plotly_json(value: Any) -> str:
    """JSON as plotly.io writes it: compact, NaN and infinities as null, and "<", ">" and "/"
    escaped so that no string can close the <script> it sits in."""
    text = json.dumps(value, separators=(",", ":"), default=_plain)
    if "NaN" in text or "Infinity" in text:  # maybe only inside a string: then unchanged
        text = json.dumps(json.loads(text, parse_constant=lambda _: None), separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("/", "\\u002f")


def _plain(value: Any) -> Any:
    """A numpy scalar or array as Python numbers (plotly's encoder does the same)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _plotly_order(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plotly_order(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_plotly_order(item) for item in value]
    return value


class _Grid:
    """A `rows` x `cols` grid of x/y subplots as plotly's make_subplots lays it out (the first
    row on top; equal widths and heights; `titles` row by row above each cell; with
    `shared_yaxes`, every y axis of a row matches its first and hides its tick labels)."""

    def __init__(
        self,
        rows: int,
        cols: int,
        titles: Sequence[str],
        *,
        horizontal_spacing: float,
        vertical_spacing: float | None = None,
        shared_yaxes: bool = False,
    ) -> None:
        hs = horizontal_spacing
        vs = 0.3 / rows if vertical_spacing is None else vertical_spacing
        widths = [(1.0 - hs * (cols - 1)) / cols] * cols
        heights = [(1.0 - vs * (rows - 1)) / rows] * rows
        self.cols = cols
        self.layout: dict[str, Any] = {}
        domains = []
        for r in range(rows):
            below = rows - 1 - r  # rows under this one
            y0 = sum(heights[:below]) + below * vs
            for c in range(cols):
                x0 = sum(widths[:c]) + c * hs
                x_domain, y_domain = [x0, x0 + widths[c]], [y0, y0 + heights[-1 - r]]
                n = self._suffix(r + 1, c + 1)
                self.layout[f"xaxis{n}"] = {"anchor": f"y{n}", "domain": x_domain}
                self.layout[f"yaxis{n}"] = {"anchor": f"x{n}", "domain": y_domain}
                if shared_yaxes and c > 0:
                    self.layout[f"yaxis{n}"] |= {
                        "matches": f"y{self._suffix(r + 1, 1)}",
                        "showticklabels": False,
                    }
                domains.append((x_domain, y_domain))
        self.layout["annotations"] = [
            {
                "font": {"size": 16},
                "showarrow": False,
                "text": title,
                "x": sum(x) / 2.0,
                "xanchor": "center",
                "xref": "paper",
                "y": y[1],
                "yanchor": "bottom",
                "yref": "paper",
            }
            for title, (x, y) in zip(titles, domains, strict=False)
            if title
        ]
        self.layout["shapes"] = []
        self.data: list[dict[str, Any]] = []

    def _suffix(self, row: int, col: int) -> str:
        n = (row - 1) * self.cols + col
        return "" if n == 1 else str(n)

    def add(self, trace: dict[str, Any], row: int, col: int) -> None:
        n = self._suffix(row, col)
        self.data.append({**trace, "xaxis": f"x{n}", "yaxis": f"y{n}"})

    def xaxis(self, row: int, col: int) -> dict[str, Any]:
        axis: dict[str, Any] = self.layout[f"xaxis{self._suffix(row, col)}"]
        return axis

    def yaxis(self, row: int, col: int) -> dict[str, Any]:
        axis: dict[str, Any] = self.layout[f"yaxis{self._suffix(row, col)}"]
        return axis

    def xaxes(self) -> list[dict[str, Any]]:
        return [axis for key, axis in self.layout.items() if key.startswith("xaxis")]

    def hrect(
        self, row: int, col: int, y0: float, y1: float, fillcolor: str, opacity: float
    ) -> None:
        """add_hrect(y0, y1, fillcolor, opacity, line_width=0, row, col)."""
        n = self._suffix(row, col)
        self.layout["shapes"].append(
            {
                "fillcolor": fillcolor,
                "line": {"width": 0},
                "opacity": opacity,
                "type": "rect",
                "x0": 0,
                "x1": 1,
                "xref": f"x{n} domain",
                "y0": y0,
                "y1": y1,
                "yref": f"y{n}",
            }
        )

    def hline(
        self, row: int, col: int, y: float, line: dict[str, Any], annotation: str | None = None
    ) -> None:
        """add_hline(y, line_*, row, col[, annotation_text, annotation_position="top left"])."""
        n = self._suffix(row, col)
        self.layout["shapes"].append(
            {
                "line": line,
                "type": "line",
                "x0": 0,
                "x1": 1,
                "xref": f"x{n} domain",
                "y0": y,
                "y1": y,
                "yref": f"y{n}",
            }
        )
        if annotation is not None:
            self.layout["annotations"].append(
                {
                    "showarrow": False,
                    "text": annotation,
                    "x": 0,
                    "xanchor": "left",
                    "xref": f"x{n} domain",
                    "y": y,
                    "yanchor": "bottom",
                    "yref": f"y{n}",
                }
            )

    def vline(self, row: int, col: int, x: float, line: dict[str, Any]) -> None:
        """add_vline(x, line_*, row, col)."""
        n = self._suffix(row, col)
        self.layout["shapes"].append(
            {
                "line": line,
                "type": "line",
                "x0": x,
                "x1": x,
                "xref": f"x{n}",
                "y0": 0,
                "y1": 1,
                "yref": f"y{n} domain",
            }
        )

    def figure(self, title: str, height: int, *, left: int = 60, **layout: Any) -> Figure:
        """The figure, with the title, template, font, margins and legend every plot shares."""
        for key in ("shapes", "annotations"):  # make_subplots writes neither when empty
            if not self.layout[key]:
                del self.layout[key]
        return {
            "data": self.data,
            "layout": {  # in plotly's order, so that the page is byte for byte what it was
                "template": _template(),
                **self.layout,
                **layout,
                **frame(title, height, left),
            },
        }


# Pixels from the figure's top: the title's line, then the legend's row under it on the left,
# then the subplot titles (two lines at most) above the panels.  The legend used to sit at the
# top right, where plotly's toolbar (the modebar) covers it on hover.
TITLE_TOP, LEGEND_TOP, PLOTS_TOP = 10, 40, 120


def frame(title: str, height: int, left: int = 60) -> dict[str, Any]:
    """The layout keys every plot shares: title, font, margins, legend and height."""
    return {
        "title": {
            "text": title,
            "x": 0,
            "xanchor": "left",
            "y": 1 - TITLE_TOP / height,
            "yanchor": "top",
            "yref": "container",
        },
        "font": FONT,
        "margin": {"l": left, "r": 20, "t": PLOTS_TOP, "b": 50},
        "legend": {
            "orientation": "h",
            "yanchor": "top",
            "y": 1 - LEGEND_TOP / height,
            "x": 0,
            "xanchor": "left",
            "yref": "container",
        },
        "height": height,
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
    fig = _Grid(
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
    fig = _Grid(1, len(titles), titles, horizontal_spacing=0.08)
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
    return fig.figure(f"Latency: {lat.words}", 420)


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
    fig = _Grid(1, len(c.top_scores), titles, horizontal_spacing=0.08)
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
    fig = _Grid(1, len(titles), titles, horizontal_spacing=0.07)
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
    fig = _Grid(1, 1, [], horizontal_spacing=0.0)
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

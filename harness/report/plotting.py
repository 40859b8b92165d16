"""What every plot of the HTML pages is drawn with, without importing plotly: the figure as
plotly's JSON, laid out by hand as plotly lays it out, the <div> that draws it, and plotly.js.

    grid = Grid(1, 2, ["a", "b"], horizontal_spacing=0.08)   # make_subplots' layout
    grid.add(trace, 1, 2); grid.hline(1, 1, 0.0, line)       # add_trace, add_hline, ...
    figure = grid.figure("Title", 400)                        # template, font, margins, legend
    div(figure, "plot-quality", config)                       # plotly.io.to_html's <div>
    plotly_script(src)   # the <head>'s plotly.js: inlined (None) or loaded from `src`
    plotly_file()        # its name beside the pages: plotly-<version>.min.js

Every function is checked against plotly's own (tests/report/test_figures.py): the same figure, the
same <div>, the same template, byte for byte.
"""

from __future__ import annotations

import functools
import html
import json
import re
from collections.abc import Sequence
from importlib import resources
from typing import Any

Figure = dict[str, Any]
"""A plotly figure as JSON: {"data": [trace, ...], "layout": {...}}."""

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


class Grid:
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

"""The comparison as one self-contained HTML page: a Comparison in, the page's text out.

    render_html(comparison, redact, *, plotly_src=None) -> str
        `harness.report.page.render(c, "html")` calls it (plotly.js inlined); a page saved to a
        folder passes `plotly_src`, the bundle's path relative to the page

Top to bottom: the title, why the run is invalid (if it is), the two verdicts in words with any
finding, the floors and the errored answers with a sample (`harness.report.html_sections`), then
the plots (`harness.report.figures`: per-slice changes with their intervals, per-query deltas,
latency distributions and the paired ratio, top-score distributions with the no-answer cutoff,
drift per repeat), the flips as sortable tables (every one: click a column's head), the 2x2
and the prepare steps, and last every other number of the text report
(`harness.report.layout.html` of the same blocks).

Self-contained: plotly.js is inlined once, in the head (`plotting.plotly_js()`: the file the
plotly package ships), and nothing else is referenced, so the page opens without a network.
With `plotly_src` the head loads that file instead (`plotting.plotly_script`): a saved
report.html is then some hundred kB, and the bundle is written once per results folder
(`harness.report.bundle`); the page still opens offline from its folder.
Each plot is the <div> plotly.io.to_html writes, written by `plotting.div` without loading plotly.
The output is deterministic (fixed plot ids).  With `redact`, no query text and no path: flips
lose their text (as in every format), run record paths are dropped and the gold set is named
by its file name only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from harness.report import figures, layout, plotting
from harness.report.blocks import margin_verdicts, page_blocks
from harness.report.html_sections import NUMBERS_SHOWN_APART, sections
from harness.report.layout import Block, escape_html
from harness.report.numbers import queries, rank
from harness.results.document import redacted
from harness.values.types import Verdict
from harness.verdict.comparison import Comparison, Flips

PLOT_CONFIG = {"displaylogo": False, "responsive": True}

STYLE = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 0 auto;
       max-width: 1280px; padding: 1.5em; color: #212121; background: #fff; }
h1 { font-size: 1.4em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1em; margin-top: 1.4em; }
.verdicts { display: flex; gap: 1em; flex-wrap: wrap; }
.verdict { flex: 1 1 320px; border-left: 8px solid #9e9e9e; background: #f6f6f6;
           padding: 0.8em 1em; }
.verdict .label { font-size: 0.85em; text-transform: uppercase; color: #555; }
.verdict .value { font-size: 1.5em; font-weight: 600; margin: 0.1em 0; }
.alert { border-left: 8px solid #6a1b9a; background: #f3e5f5; padding: 0.8em 1em; }
.findings { color: #8d6e00; }
table { border-collapse: collapse; font-size: 0.9em; margin: 0.5em 0; }
th, td { border-bottom: 1px solid #e0e0e0; padding: 0.25em 0.6em; text-align: left; }
td.right { text-align: right; font-variant-numeric: tabular-nums; }
table.sortable th { cursor: pointer; user-select: none; background: #fafafa; }
table.sortable th::after { content: " \\2195"; color: #aaa; }
details > summary { cursor: pointer; margin: 0.6em 0; font-weight: 600; }
.plot { margin: 1em 0; }
tr.failed td, tr.error td:first-child { color: #c62828; }
td code { white-space: pre-wrap; word-break: break-word; font-size: 0.95em; }
.note { color: #555; font-size: 0.9em; }
"""

# Sorts a table.sortable by the clicked column: numbers (data-sort) as numbers, else as text.
SORT_SCRIPT = """
document.querySelectorAll("table.sortable th").forEach(function (th) {
  th.addEventListener("click", function () {
    var body = th.closest("table").tBodies[0], i = th.cellIndex;
    var up = th.dataset.dir !== "asc"; th.dataset.dir = up ? "asc" : "desc";
    var key = function (row) {
      var cell = row.cells[i];
      var v = cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent;
      var n = parseFloat(v); return isNaN(n) ? v : n;
    };
    Array.from(body.rows).sort(function (a, b) {
      var x = key(a), y = key(b);
      var numbers = typeof x === "number" && typeof y === "number";
      var r = numbers ? x - y : String(x).localeCompare(String(y));
      return up ? r : -r;
    }).forEach(function (row) { body.appendChild(row); });
  });
});
"""

_NOT_RETURNED = 10**9  # sorts "not returned" below every rank


def _without_paths(c: Comparison) -> Comparison:
    h = c.header
    header = replace(
        h,
        baseline=replace(h.baseline, record_path=None),
        candidate=replace(h.candidate, record_path=None),
        gold=replace(h.gold, source=h.gold.source.replace("\\", "/").rsplit("/", 1)[-1]),
    )
    return replace(redacted(c), header=header)


def _verdict_card(label: str, verdict: Verdict, reason: str) -> str:
    colour = figures.VERDICT_COLOURS[verdict]
    return (
        f'<div class="verdict" style="border-left-color: {colour}">'
        f'<div class="label">{escape_html(label)}</div>'
        f'<div class="value" style="color: {colour}">{escape_html(verdict.value)}</div>'
        f"<div>{escape_html(reason)}</div></div>"
    )


_CLAIM_COLOURS = {  # a margin's claim in the verdicts' colours
    "not worse": Verdict.NO_DIFFERENCE,
    "worse than the margin": Verdict.REGRESSED,
    "could not show not worse": Verdict.INCONCLUSIVE,
}


def _margin_card(label: str, said: str) -> str:
    """compare --non-inferior's card: "non-inferiority", its claim and sentence."""
    name, _, claim = label.partition(": ")
    colour = figures.VERDICT_COLOURS[_CLAIM_COLOURS.get(claim, Verdict.INCONCLUSIVE)]
    return (
        f'<div class="verdict" style="border-left-color: {colour}">'
        f'<div class="label">{escape_html(name)}</div>'
        f'<div class="value" style="color: {colour}">{escape_html(claim)}</div>'
        f"<div>{escape_html(said)}</div></div>"
    )


def _flip_table(flips: Flips, redact: bool) -> str:
    e = escape_html
    heads = ["query", "slice", "rank before", "rank after", "change", "impact"]
    heads += [] if redact else ["query text"]
    rows = []
    for f in flips.flips:
        cells = [
            f"<td>{e(f.query_id)}</td>",
            f"<td>{e(f.slice)}</td>",
            *(
                f'<td class="right" data-sort="{_NOT_RETURNED if r is None else r}">{rank(r)}</td>'
                for r in (f.rank_before, f.rank_after)
            ),
            f"<td>{e(f.direction.value)}</td>",
            f'<td class="right" data-sort="{f.impact:.6f}">{f.impact:.3f}</td>',
        ]
        if not redact:
            cells.append(f"<td>{e(' '.join((f.text or '').split()))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    head = "".join(f"<th>{e(h)}</th>" for h in heads)
    return (
        f"<h3>Flips at {e(flips.metric)}: {queries(len(flips.flips))}</h3>"
        f'<table class="sortable flips" data-metric="{e(flips.metric)}">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _numbers(blocks: Sequence[Block]) -> list[Block]:
    """The text report's blocks below the verdicts, without the (capped) flip tables and
    without what the page's own sections show (`html_sections.NUMBERS_SHOWN_APART`)."""
    out = []
    apart = False  # under a heading the page shows in a section of its own
    for b in blocks:
        if b.kind == "heading" or b.kind in ("fold", "end") or b.fold:
            apart = b.kind == "heading" and b.lines[0].startswith(NUMBERS_SHOWN_APART)
        if apart or b.kind in ("title", "alert", "verdicts"):
            continue
        if b.kind == "table" and (b.fold or "").startswith("Flips at"):
            continue
        if b.kind == "lines" and b.lines and b.lines[0].startswith(("finding: ", "... and ")):
            continue
        out.append(b)
    return out


def render_html(comparison: Comparison, redact: bool, *, plotly_src: str | None = None) -> str:
    c = _without_paths(comparison) if redact else comparison
    blocks = page_blocks(c, redact)
    h = c.header
    title = (
        f"harness: {h.baseline.ref} ({h.baseline.short_sha}) -> "
        f"{h.candidate.ref} ({h.candidate.short_sha})"
    )
    body = [f"<h1>{escape_html(title)}</h1>"]
    body += [layout.html([b]) for b in blocks if b.kind == "alert"]
    body.append(
        '<div class="verdicts">'
        + _verdict_card("quality", c.verdict_quality, c.quality_reason)
        + _verdict_card("latency", c.verdict_latency, c.latency_reason)
        + "".join(_margin_card(label, said) for label, said in margin_verdicts(c))
        + "</div>"
    )
    if c.sequential is not None:
        body.append(f'<p class="note">sequential: {escape_html(c.sequential.said)}</p>')
    if c.findings:
        body.append(
            '<ul class="findings">'
            + "".join(f"<li>finding: {escape_html(f)}</li>" for f in c.findings)
            + "</ul>"
        )
    if not c.valid:
        body.append('<p class="note">Invalid run: the plots are for diagnosis only.</p>')
    shown = sections(c, redact)
    body += [shown[name] for name in ("floors", "errors") if name in shown]
    body.append("<h2>Plots</h2>")
    drawn = 0
    for name, make in figures.FIGURES.items():
        fig = make(c)
        if fig is None:
            continue
        drawn += 1
        div = plotting.div(fig, f"plot-{name}", PLOT_CONFIG)  # as plotly.io.to_html writes it
        body.append(f'<div class="plot" data-plot="{name}">{div}</div>')
        if name == "scores":
            body += [
                f'<p class="note">{escape_html(t.side)}: {escape_html(t.words)}</p>'
                for t in c.top_scores
            ]
    if not drawn:
        body.append('<p class="note">Nothing to plot: this comparison holds no numbers.</p>')
    flips = [f for f in c.flips if f.flips]
    if flips:
        body.append("<h2>Flips</h2>")
        body += [_flip_table(f, redact) for f in flips]
    body += [shown[name] for name in ("twobytwo", "prepare") if name in shown]
    body.append("<h2>The numbers</h2>")
    body.append(layout.html(_numbers(blocks)))
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape_html(title)}</title>"
        f"<style>{STYLE}</style>"
        + plotting.plotly_script(plotly_src)
        + "</head><body>\n"
        + "\n".join(body)
        + f"\n<script>{SORT_SCRIPT}</script>\n</body></html>\n"
    )

"""The `harness compare-runs` report: a Systems value in, text out.  It formats, computes nothing.

    render_systems(systems, fmt, *, redact=False) -> str     text, markdown, json
    html_pages(systems, *, redact=False) -> {file name: page}  index.html and one page per
                                                               candidate (`harness.report.page`'s)

The page opens with every candidate at once (its quality verdict and reason; each system's mean
of every metric, the baseline first, as ranx's table shows them; each headline test with its p
and its p Holm-adjusted across systems x cutoffs), then each candidate's full comparison page as
`harness compare` renders it, flips included.  JSON is every Comparison as
`harness.results.document` writes it, under one schema-versioned object.
"""

from __future__ import annotations

import html
import json
import re

from harness.report import layout
from harness.report.layout import Block
from harness.report.numbers import p_value, queries, rate, signed
from harness.report.page import render
from harness.results.document import comparison_to_dict
from harness.verdict.comparison import Comparison
from harness.verdict.systems import NO_LATENCY, Systems

SCHEMA_VERSION = 1


def _headline_metrics(systems: Systems) -> list[str]:
    s = systems.settings
    chosen = [f"hit@{k}" for k in s.k] + list(s.gate_on)
    return list(dict.fromkeys(chosen))


def _summary(systems: Systems) -> list[Block]:
    comps = systems.comparisons
    first = comps[0]
    gold = first.header.gold
    base = first.header.baseline
    title = (
        f"harness compare-runs: {len(comps)} candidate{'s' * (len(comps) != 1)} against "
        f"{base.ref} ({base.short_sha})"
    )
    headline = ", ".join(_headline_metrics(systems))
    judged = sum(c.valid for c in comps)
    lines = (
        f"gold set: {gold.source} (sha256 {gold.hash[:12]}), {queries(gold.n)}: "
        f"{gold.n_answerable} answerable",
        f"{NO_LATENCY}: quality only, one answer per query per system",
        f"headline tests: {headline} of each candidate, Holm-adjusted together "
        f"({systems.family} tests over {judged} valid comparison{'s' * (judged != 1)}); "
        f"alpha {systems.settings.alpha:g}",
    )
    out = [Block("title", (title,)), Block("lines", lines)]
    # An invalid comparison's reasons are in its own page, further down: the first said here.
    verdicts = tuple(
        (
            f"{c.header.candidate.ref}: {c.verdict_quality.value}",
            c.quality_reason if c.valid else f"{c.invalid_reasons[0]} (its page below says all)",
        )
        for c in comps
    )
    out.append(Block("verdicts", rows=verdicts))
    out.append(_means_table(comps))
    out.append(_tests_table(systems))
    return out


def _means_table(comps: tuple[Comparison, ...]) -> Block:
    """Each system's mean of every compared metric over the analysed answerable queries."""
    metrics = [r.metric for r in comps[0].overall.rows]
    base = comps[0].header.baseline.ref
    rows = [(f"{base} (baseline)", *(rate(r.baseline) for r in comps[0].overall.rows))]
    for c in comps:
        by_metric = {r.metric: r for r in c.overall.rows}
        rows.append(
            (
                c.header.candidate.ref,
                *(rate(by_metric[m].candidate) if m in by_metric else "-" for m in metrics),
            )
        )
    n = comps[0].overall.n
    return Block(
        "table",
        headers=("system", *metrics),
        rows=tuple(rows),
        align=("left", *["right"] * len(metrics)),
        fold=f"Means over {queries(n)}",
    )


def _tests_table(systems: Systems) -> Block:
    headline = _headline_metrics(systems)
    rows = []
    for c in systems.comparisons:
        for metric in headline:
            row = c.overall.row(metric)
            if row is None:
                continue
            test = row.hit.test.exact if row.hit is not None else "randomization"
            rows.append(
                (
                    c.header.candidate.ref,
                    metric,
                    signed(row.delta),
                    test,
                    p_value(row.p) if c.valid else "-",
                    p_value(row.p_adjusted) if c.valid else "-",
                    row.verdict.value if c.valid else "invalid: not tested",
                )
            )
    return Block(
        "table",
        headers=("candidate", "metric", "delta", "test", "p", "Holm p", "verdict"),
        rows=tuple(rows),
        align=("left", "left", "right", "left", "right", "right", "left"),
        fold="Headline tests, Holm across systems and cutoffs",
    )


def _render_pages(systems: Systems, fmt: str, redact: bool) -> str:
    blocks = _summary(systems)
    if fmt == "markdown":
        head = layout.markdown(blocks)
    else:
        head = layout.text(blocks, underline_title=True)
    pages = [render(c, fmt, redact=redact) for c in systems.comparisons]
    return "\n".join([head, *pages])


def _render_json(systems: Systems, redact: bool) -> str:
    document = {
        "schema_version": SCHEMA_VERSION,
        "kind": "compare-runs",
        "baseline": systems.baseline,
        "candidates": list(systems.candidates),
        "family": systems.family,
        "latency": NO_LATENCY,
        "comparisons": [comparison_to_dict(c, redact=redact) for c in systems.comparisons],
    }
    return (
        json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    )


def render_systems(systems: Systems, fmt: str, *, redact: bool = False) -> str:
    """The compare-runs report as `fmt`: "text", "markdown" or "json" (`html_pages` for html)."""
    if fmt == "json":
        return _render_json(systems, redact)
    if fmt in ("text", "markdown"):
        return _render_pages(systems, fmt, redact)
    raise ValueError(f"unknown format {fmt!r}; known: text, markdown, json (html: html_pages)")


def page_name(index: int, candidate: str) -> str:
    """The file name of candidate `index`'s HTML page: its position and its file's stem."""
    stem = candidate.rstrip("/").rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return f"{index + 1:02d}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', stem) or 'run'}.html"


def html_pages(systems: Systems, *, redact: bool = False) -> dict[str, str]:
    """index.html (the summary, linking every page) and one comparison page per candidate."""
    from harness.report.html_page import STYLE  # plotly is loaded only for HTML

    pages = {
        page_name(i, c.header.candidate.ref): render(c, "html", redact=redact)
        for i, c in enumerate(systems.comparisons)
    }
    links = "".join(
        f'<li><a href="{html.escape(name)}">{html.escape(c.header.candidate.ref)}</a>: '
        f"{html.escape(c.verdict_quality.value)}</li>"
        for name, c in zip(pages, systems.comparisons, strict=True)
    )
    blocks = _summary(systems)
    title = blocks[0].lines[0]
    index = (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>\n"
        f"<h1>{html.escape(title)}</h1>\n{layout.html(blocks[1:])}\n"
        f"<h2>Each candidate</h2><ul>{links}</ul>\n</body></html>\n"
    )
    return {"index.html": index, **pages}

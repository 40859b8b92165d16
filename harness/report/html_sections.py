"""The HTML report's sections beside the plots: what the text report says in lines, as tables.

    sections(comparison, redact) -> {name: html}   "floors", "errors", "twobytwo", "prepare",
                                                   each present only when the Comparison holds it
    NUMBERS_SHOWN_APART                            the headings of the text report's blocks these
                                                   sections replace (`html_page` leaves them out
                                                   of "The numbers", so nothing is said twice)

Each section is an <h2> and its table(s), inside <section data-section="NAME"> for the tests and
for a reader's bookmarks:

    floors     [gate.floors] on the candidate: scope, metric, value, n, bound, met or not (red)
    errors     errored answers by side and kind: count of answers asked, HTTP statuses, one
               sample of what the service said (its query, the body cut at SAMPLE_CHARS; left
               out under redact) and what to check
    twobytwo   retrieval vs generation: each side's 2x2 and how queries moved (`harness.report.
               twobytwo`'s blocks, as HTML)
    prepare    the steps run before the queries, per side: median seconds and over how many boots

Pure: strings in, strings out; every string escaped.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.report import layout
from harness.report.twobytwo import movement_blocks
from harness.verdict.comparison import Comparison, ErrorKindSummary, PrepareStep

SAMPLE_CHARS = 300  # of an errored answer's body: enough to see the error, not the whole page

NUMBERS_SHOWN_APART = (
    "Floors of [gate.floors]",
    "Errored answers, by kind",
    "Retrieval vs generation",
    "Before the queries",
)


_e = layout.escape_html  # control characters escaped visibly, then the markup


def _table(kind: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A table of already-escaped cells; a row is (class, *cells)."""
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join(
        f'<tr class="{row[0]}">' + "".join(f"<td>{cell}</td>" for cell in row[1:]) + "</tr>"
        for row in rows
    )
    return f'<table class="{kind}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _section(name: str, heading: str, inner: str) -> str:
    return f'<section data-section="{name}"><h2>{_e(heading)}</h2>{inner}</section>'


def _floors(c: Comparison) -> str | None:
    if not c.floors:
        return None
    failed = sum(not f.passed for f in c.floors)
    words = f"{failed} of {len(c.floors)} not met" if failed else "all met"
    rows = [
        (
            "met" if f.passed else "failed",
            _e(f.scope),
            _e(f.metric),
            "not measured" if f.value is None else f"{f.value:.3f}",
            str(f.n),
            _e(f"{f.bound} {f.limit:g}"),
            "met" if f.passed else "<strong>NOT MET</strong>",
        )
        for f in sorted(c.floors, key=lambda f: f.passed)
    ]
    table = _table("floors", ("scope", "metric", "candidate", "n", "floor", ""), rows)
    return _section("floors", f"Floors of [gate.floors] on the candidate: {words}", table)


def _sample(e: ErrorKindSummary, redact: bool) -> str:
    if redact:
        return '<span class="note">left out (--redact)</span>'
    if e.sample is None:
        return ""
    said = " ".join(e.sample.split())
    cut = said[:SAMPLE_CHARS] + (" ..." if len(said) > SAMPLE_CHARS else "")
    query = f"{_e(e.sample_query)}: " if e.sample_query else ""
    return f"{query}<code>{_e(cut)}</code>"


def _errors(c: Comparison, redact: bool) -> str | None:
    if not c.errors:
        return None
    rows = [
        (
            "error",
            _e(e.side),
            _e(e.kind),
            f"{e.count} of {e.asked}",
            _e(", ".join(f"HTTP {s}: {n}" for s, n in e.statuses)),
            _sample(e, redact),
            _e(e.advice),
        )
        for e in c.errors
    ]
    headers = ("side", "kind", "answers", "statuses", "sample", "what to check")
    return _section("errors", "Errored answers, by kind", _table("errors", headers, rows))


def _prepare(steps: Sequence[PrepareStep]) -> str | None:
    if not steps:
        return None
    rows = [("step", _e(s.side), _e(s.step), f"{s.median_s:.3f}", str(s.repeats)) for s in steps]
    table = _table("prepare", ("side", "step", "median, s", "boots"), rows)
    note = '<p class="note">Run after readiness, before the first query: not part of latency.</p>'
    return _section("prepare", "Before the queries: prepare steps and loading", note + table)


def _twobytwo(c: Comparison) -> str | None:
    if c.twobytwo is None:
        return None
    inner = layout.html(movement_blocks(c.twobytwo))
    return _section("twobytwo", "Retrieval vs generation (the 2x2)", inner)


def sections(c: Comparison, redact: bool) -> dict[str, str]:
    """The sections this Comparison has something for, by name, in page order."""
    made = {
        "floors": _floors(c),
        "errors": _errors(c, redact),
        "twobytwo": _twobytwo(c),
        "prepare": _prepare(c.prepare),
    }
    return {name: text for name, text in made.items() if text is not None}

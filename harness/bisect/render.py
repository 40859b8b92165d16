"""A Bisection rendered: text (the terminal), Markdown, JSON, and an HTML page with the metric
along the path.  Renders and computes nothing beyond formatting.

    render_bisection(bisection, "text" | "markdown" | "json" | "html") -> str
    bisection_document(bisection) -> dict     what report.json holds (schema_version 1)
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Mapping
from typing import Any

from harness.bisect.run import Bisection, Outcome, Step
from harness.bisect.walk import Mark

SCHEMA_VERSION = 1
PLOT_CONFIG = {"displaylogo": False, "responsive": True}


def _value(x: float | None, latency: bool) -> str:
    if x is None:
        return "-"
    return f"{x:.1f} ms" if latency else f"{x:.3f}"


def _headline(b: Bisection) -> str:
    if b.outcome is Outcome.FOUND:
        step = b.first_bad
        assert step is not None
        commit = step.commit
        return (
            f"first bad commit: {commit.sha} {commit.subject}\n"
            f"  {step.judgement.verdict} on {b.criterion} against the good end {b.good.short}: "
            f"{step.judgement.reason}"
        )
    if b.outcome is Outcome.AMBIGUOUS:
        listed = "\n".join(f"  {c.sha} {c.subject}" for c in b.culprits)
        return f"the first bad commit could be any of:\n{listed}\n  ({b.reason})"
    return f"{b.outcome}: {b.reason}"


def _step_row(b: Bisection, s: Step) -> list[str]:
    latency = b.criterion.latency
    return [
        str(s.number),
        f"{s.position}/{len(b.path)}" + (" (bad end)" if s.confirm else ""),
        s.commit.short,
        s.commit.subject[:40],
        _value(s.judgement.good_value, latency),
        _value(s.judgement.value, latency),
        str(s.judgement.verdict),
        str(s.judgement.mark),
    ]


_HEADERS = ["step", "position", "commit", "subject", "good end", "commit's", "verdict", "mark"]


def _summary_line(b: Bisection) -> str:
    return (
        f"bisect {b.good.short}..{b.bad.short}: {len(b.path)} commits on the first-parent path, "
        f"decided by {b.criterion}; {len(b.steps)} compares ({b.skips} skipped)"
    )


def _text(b: Bisection) -> str:
    from tabulate import tabulate

    rows = [_step_row(b, s) for s in b.steps]
    table = tabulate(rows, headers=_HEADERS, tablefmt="simple", disable_numparse=True)
    lines = [_summary_line(b), "", table, "", _headline(b)]
    skipped = [s for s in b.steps if s.judgement.mark is Mark.SKIP]
    if skipped:
        lines += ["", "skipped (as git bisect skip: a neighbour was compared instead):"]
        lines += [f"  {s.commit.short}: {s.judgement.reason}" for s in skipped]
    saved = [f"  step {s.number}: {s.saved}" for s in b.steps if s.saved]
    if saved:
        lines += ["", "each step's comparison (harness report DIR):", *saved]
    return "\n".join(lines) + "\n"


def _markdown(b: Bisection) -> str:
    from tabulate import tabulate

    rows = [_step_row(b, s) for s in b.steps]
    table = tabulate(rows, headers=_HEADERS, tablefmt="github", disable_numparse=True)
    head = _headline(b).replace("\n", "\n\n")
    return f"# harness bisect\n\n{_summary_line(b)}\n\n**{b.outcome}**\n\n{head}\n\n{table}\n"


def _commit(c: Any) -> dict[str, str]:
    return {"sha": c.sha, "subject": c.subject}


def bisection_document(b: Bisection) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "good": _commit(b.good),
        "bad": _commit(b.bad),
        "path": [_commit(c) for c in b.path],
        "criterion": str(b.criterion),
        "outcome": str(b.outcome),
        "culprits": [_commit(c) for c in b.culprits],
        "reason": b.reason,
        "steps": [
            {
                "number": s.number,
                "commit": _commit(s.commit),
                "position": s.position,
                "confirm": s.confirm,
                "mark": str(s.judgement.mark),
                "verdict": str(s.judgement.verdict),
                "reason": s.judgement.reason,
                "good_value": s.judgement.good_value,
                "value": s.judgement.value,
                "saved": s.saved,
            }
            for s in b.steps
        ],
    }


def _json(b: Bisection) -> str:
    return json.dumps(bisection_document(b), indent=1, sort_keys=True) + "\n"


_COLOURS = {"good": "#55a868", "bad": "#c44e52", "skip": "#8c8c8c"}


def figure(b: Bisection) -> Any:
    """The metric (or p50 latency) of each compared commit at its place on the path, coloured by
    its mark, over the good end's value measured beside it."""
    import plotly.graph_objects as go

    by_position = sorted(b.steps, key=lambda s: s.position)
    labels = [f"{s.position}: {s.commit.short}" for s in by_position]
    what = "p50 latency (ms)" if b.criterion.latency else str(b.criterion)
    if b.criterion.metric is None and not b.criterion.latency:
        what = "hit at the first cutoff"
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=labels,
            y=[s.judgement.good_value for s in by_position],
            mode="lines+markers",
            name="good end (measured in the same step)",
            line={"color": "#4c72b0", "dash": "dot"},
        )
    )
    fig.add_trace(
        go.Scatter(
            x=labels,
            y=[s.judgement.value for s in by_position],
            mode="lines+markers",
            name="commit",
            line={"color": "#333333"},
            marker={
                "size": 12,
                "color": [_COLOURS[str(s.judgement.mark)] for s in by_position],
            },
            text=[f"{s.judgement.mark}: {s.judgement.verdict}" for s in by_position],
            hovertemplate="%{x}<br>%{y:.3f}<br>%{text}<extra></extra>",
        )
    )
    fig.update_xaxes(type="category", title={"text": "position on the first-parent path"})
    fig.update_yaxes(title={"text": what})
    fig.update_layout(
        template="plotly_white",
        height=420,
        margin={"l": 70, "r": 20, "t": 60, "b": 80},
        legend={"orientation": "h", "y": -0.3},
        title={"text": f"{what} along the path (green good, red bad, grey skip)"},
    )
    return fig


def _html(b: Bisection, plotly_src: str | None = None) -> str:
    """The page; `plotly_src`: plotly.js loaded from there (the results directory's bundle, as
    compare's saved pages load it), else inlined (a page that needs nothing beside it)."""
    import plotly.io as pio

    from harness.report.plotting import plotly_script

    e = html.escape
    div = pio.to_html(
        figure(b), config=PLOT_CONFIG, include_plotlyjs=False, full_html=False, div_id="plot-path"
    )
    head = "".join(f"<th>{e(x)}</th>" for x in _HEADERS)
    body = "".join(
        f'<tr class="{e(str(s.judgement.mark))}">'
        + "".join(f"<td>{e(c)}</td>" for c in _step_row(b, s))
        + "</tr>"
        for s in b.steps
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>harness bisect</title><style>"
        "body { font-family: system-ui, sans-serif; max-width: 1280px; margin: 0 auto; "
        "padding: 1.5em; color: #212121; } table { border-collapse: collapse; font-size: 0.9em; }"
        " th, td { border-bottom: 1px solid #e0e0e0; padding: 0.25em 0.6em; text-align: left; }"
        " tr.bad td { color: #a00; } tr.skip td { color: #777; } pre { white-space: pre-wrap; }"
        f"</style>{plotly_script(plotly_src)}</head><body>\n"
        f"<h1>harness bisect: {e(str(b.outcome))}</h1>\n"
        f"<p>{e(_summary_line(b))}</p>\n<pre>{e(_headline(b))}</pre>\n"
        f'<div class="plot" data-plot="path">{div}</div>\n'
        f'<table class="steps"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>\n'
        "</body></html>\n"
    )


RENDERERS: Mapping[str, Callable[[Bisection], str]] = {
    "text": _text,
    "markdown": _markdown,
    "json": _json,
    "html": _html,
}


def render_bisection(bisection: Bisection, fmt: str, *, plotly_src: str | None = None) -> str:
    """The bisection in `fmt`; an HTML page loads plotly.js from `plotly_src` when given."""
    if fmt == "html":
        return _html(bisection, plotly_src)
    try:
        return RENDERERS[fmt](bisection)
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(RENDERERS)}") from None

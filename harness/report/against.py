"""`harness report DIR --against OTHER`: two saved comparisons side by side.  Renders only.

    render_against(a, "results/A", b, "results/B", "text" | "markdown" | "json" | "html")

Both comparisons have the same evaluation definition (the CLI refuses otherwise, naming what
differs: `harness.verdict.same_definition.same_definition`), so each metric's row means the same on
both sides: one line per metric of the overall scope (either comparison's), then the quality
and latency verdicts, each comparison's baseline -> candidate, change, p and verdict, and
whether the two verdicts agree.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Mapping
from typing import Any

from harness.verdict.comparison import Comparison, MetricRow
from harness.verdict.stats import format_p

_HEADERS = ("metric", "A", "B", "verdicts")


def _row_cell(row: MetricRow | None) -> str:
    if row is None:
        return "- (not measured)"
    return (
        f"{row.baseline:.3f} -> {row.candidate:.3f} ({row.delta:+.3f}, p = {format_p(row.p)}): "
        f"{row.verdict}"
    )


def _agree(a: object, b: object) -> str:
    if a is None or b is None:
        return "-"
    return "same" if a == b else "DIFFER"


def _names(a: Comparison, b: Comparison) -> list[str]:
    return list(
        dict.fromkeys([r.metric for r in a.overall.rows] + [r.metric for r in b.overall.rows])
    )


def _latency_cell(c: Comparison) -> str:
    return f"{c.latency.words.split(';')[0]}: {c.verdict_latency}"


def _rows(a: Comparison, b: Comparison) -> list[tuple[str, str, str, str]]:
    out = []
    for name in _names(a, b):
        ra, rb = a.overall.row(name), b.overall.row(name)
        out.append(
            (
                name,
                _row_cell(ra),
                _row_cell(rb),
                _agree(None if ra is None else ra.verdict, None if rb is None else rb.verdict),
            )
        )
    out.append(
        (
            "quality verdict",
            str(a.verdict_quality),
            str(b.verdict_quality),
            _agree(a.verdict_quality, b.verdict_quality),
        )
    )
    out.append(
        (
            "latency",
            _latency_cell(a),
            _latency_cell(b),
            _agree(a.verdict_latency, b.verdict_latency),
        )
    )
    return out


def _about(c: Comparison, name: str, path: str) -> str:
    h = c.header
    return (
        f"{name}: {path}: {h.baseline.ref} ({h.baseline.short_sha}) -> {h.candidate.ref} "
        f"({h.candidate.short_sha}), {h.gold.n_answerable} answerable queries, "
        f"{h.candidate.usable_repeats} usable repeats"
    )


def _lines(a: Comparison, a_path: str, b: Comparison, b_path: str) -> list[str]:
    definition = a.header.definition
    lines = [_about(a, "A", a_path), _about(b, "B", b_path)]
    if definition is not None:
        lines.append(f"evaluation definition: sha256 {definition.sha256} (the same for both)")
    return lines


def _text(a: Comparison, a_path: str, b: Comparison, b_path: str) -> str:
    from tabulate import tabulate

    table = tabulate(_rows(a, b), headers=_HEADERS, tablefmt="simple", disable_numparse=True)
    return "\n".join([*_lines(a, a_path, b, b_path), "", table]) + "\n"


def _markdown(a: Comparison, a_path: str, b: Comparison, b_path: str) -> str:
    from tabulate import tabulate

    cells = [tuple(c.replace("|", "\\|") for c in row) for row in _rows(a, b)]
    table = tabulate(cells, headers=_HEADERS, tablefmt="github", disable_numparse=True)
    lines = "\n".join(f"- {line}" for line in _lines(a, a_path, b, b_path))
    return f"# Two comparisons side by side\n\n{lines}\n\n{table}\n"


def _json(a: Comparison, a_path: str, b: Comparison, b_path: str) -> str:
    def side(c: Comparison, path: str) -> dict[str, Any]:
        return {
            "path": path,
            "baseline": {"ref": c.header.baseline.ref, "sha": c.header.baseline.sha},
            "candidate": {"ref": c.header.candidate.ref, "sha": c.header.candidate.sha},
            "verdict_quality": str(c.verdict_quality),
            "verdict_latency": str(c.verdict_latency),
            "rows": {
                r.metric: {
                    "baseline": r.baseline,
                    "candidate": r.candidate,
                    "delta": r.delta,
                    "p": r.p,
                    "verdict": str(r.verdict),
                }
                for r in c.overall.rows
            },
        }

    definition = a.header.definition
    document = {
        "schema": "harness-against",
        "schema_version": 1,
        "definition": None if definition is None else definition.sha256,
        "a": side(a, a_path),
        "b": side(b, b_path),
        "agree": {row[0]: row[3] == "same" for row in _rows(a, b) if row[3] != "-"},
    }
    return json.dumps(document, indent=1, sort_keys=True) + "\n"


def _html(a: Comparison, a_path: str, b: Comparison, b_path: str) -> str:
    e = html.escape
    head = "".join(f"<th>{e(h)}</th>" for h in _HEADERS)
    body = "".join(
        "<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in _rows(a, b)
    )
    about = "".join(f"<p>{e(line)}</p>" for line in _lines(a, a_path, b, b_path))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>harness report --against</title><style>body { font-family: system-ui, "
        "sans-serif; margin: 1.5em; } table { border-collapse: collapse; } th, td { "
        "border-bottom: 1px solid #e0e0e0; padding: 0.25em 0.6em; text-align: left; }</style>"
        f"</head><body>\n<h1>Two comparisons side by side</h1>\n{about}\n"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>\n</body></html>\n"
    )


RENDERERS: Mapping[str, Callable[[Comparison, str, Comparison, str], str]] = {
    "text": _text,
    "markdown": _markdown,
    "json": _json,
    "html": _html,
}


def render_against(a: Comparison, a_path: str, b: Comparison, b_path: str, fmt: str) -> str:
    try:
        return RENDERERS[fmt](a, a_path, b, b_path)
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(RENDERERS)}") from None

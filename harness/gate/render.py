"""The gate's result as text, Markdown (one `harness.report.layout` page) or JSON. Pure.

The page: the outcome and its reason as the title; the baseline and the run compared, the rule,
and any detail (invalid reasons, warnings, what differs); the failing rows, then every row
(before, after, change, tolerance, status; a failing status in capitals).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harness.gate.rows import GateRow
from harness.gate.rule import GateResult
from harness.report import layout
from harness.report.layout import Block
from harness.report.numbers import floor_lines
from harness.verdict.stats import format_p

_HEADERS = ("scope", "metric", "baseline", "now", "change", "tolerance", "status")


def _num(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "-"
    return f"{x:+.4f}" if signed else f"{x:.4f}"


def _table_rows(found: Sequence[GateRow]) -> tuple[tuple[str, ...], ...]:
    return tuple(
        (
            r.scope,
            r.metric,
            _num(r.before),
            _num(r.after),
            _num(r.change, signed=True),
            _num(r.tolerance),
            (r.status.upper() if r.failed else r.status) + _said(r),
        )
        for r in found
    )


def _said(r: GateRow) -> str:
    """What decided a tested row: its p, or its margin and interval (--non-inferior)."""
    if r.margin is not None:
        if r.low is None or r.high is None:
            return f" (margin -{r.margin:g}: {r.test})"
        return f" (margin -{r.margin:g}; {r.test})"
    return "" if r.p is None else f" (p = {format_p(r.p)})"


def _blocks(result: GateResult, baseline_file: str) -> list[Block]:
    then = f"measured on {result.baseline_sha[:8]}" if result.baseline_sha else "new"
    now = f"{result.ref} ({result.sha[:8]})" if result.sha else result.ref
    about = (
        f"baseline: {baseline_file or 'the baseline file'} ({then}); now: {now}",
        *((result.rule,) if result.rule else ()),
        *result.details,
        *((f"evaluation definition: sha256 {result.definition}",) if result.definition else ()),
    )
    out = [
        Block("title", (f"gate: {result.outcome.value.upper()}: {result.reason}",)),
        Block("lines", about),
    ]
    if result.failing:
        out += [
            Block("heading", ("Failing rows",)),
            Block("table", headers=_HEADERS, rows=_table_rows(result.failing)),
        ]
    if result.floors:
        out += [
            Block("heading", ("Floors ([gate.floors])",)),
            Block("lines", floor_lines(result.floors)),
        ]
    if result.rows:
        out += [
            Block("heading", ("Before -> after, every row",)),
            Block("table", headers=_HEADERS, rows=_table_rows(result.rows)),
        ]
    return out


def _render_text(result: GateResult, baseline_file: str) -> str:
    return layout.text(_blocks(result, baseline_file))


def _render_markdown(result: GateResult, baseline_file: str) -> str:
    return layout.markdown(_blocks(result, baseline_file))


def _render_json(result: GateResult, baseline_file: str) -> str:
    return json.dumps(gate_to_dict(result, baseline_file), sort_keys=True, indent=2) + "\n"


RENDERERS: Mapping[str, Callable[[GateResult, str], str]] = {
    "text": _render_text,
    "markdown": _render_markdown,
    "json": _render_json,
}


def render_gate(result: GateResult, fmt: str, *, baseline_file: str = "") -> str:
    """The result as `fmt`, a key of RENDERERS; `baseline_file` names the file in the page."""
    try:
        renderer = RENDERERS[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(RENDERERS)}") from None
    return renderer(result, baseline_file)


def gate_to_dict(result: GateResult, baseline_file: str = "") -> dict[str, Any]:
    return {
        "schema": "harness-gate",
        "schema_version": 1,
        "outcome": result.outcome.value,
        "reason": result.reason,
        "strict": result.strict,
        "baseline_file": baseline_file,
        "baseline_sha": result.baseline_sha,
        "ref": result.ref,
        "sha": result.sha,
        "definition": result.definition,
        "details": list(result.details),
        "rule": result.rule,
        "floors": [
            {
                "scope": f.scope,
                "metric": f.metric,
                "bound": f.bound,
                "limit": f.limit,
                "value": f.value,
                "n": f.n,
                "passed": f.passed,
            }
            for f in result.floors
        ],
        "rows": [
            {
                "scope": r.scope,
                "metric": r.metric,
                "before": r.before,
                "after": r.after,
                "change": r.change,
                "tolerance": r.tolerance,
                "status": r.status,
                "failed": r.failed,
                **({} if r.p is None else {"p": r.p, "test": r.test}),
                **(
                    {}
                    if r.margin is None
                    else {"margin": r.margin, "low": r.low, "high": r.high, "test": r.test}
                ),
            }
            for r in result.rows
        ],
    }

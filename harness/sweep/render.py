"""The sweep as text, Markdown (one `harness.report.layout` page) or its JSON document. Pure.

    render_sweep(sweep, fmt) -> str      fmt in RENDERERS: text, markdown, json
    sweep_to_dict(sweep) -> dict         the JSON document (schema "harness-sweep", version 1)

The page: what was swept and on what, why any value is invalid, the verdicts of each value
against the reference, then one table per metric (values down, scopes across; the marks are
explained in the legend under them, see `harness.sweep`), and per metric the best value overall
and whether it is distinguishable from the reference.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from harness.report import layout
from harness.report.layout import Block
from harness.sweep.summary import Cell, Sweep, SweepRow
from harness.values.types import Verdict

SCHEMA = "harness-sweep"
SCHEMA_VERSION = 1

_MARKS = {Verdict.IMPROVED: " +", Verdict.REGRESSED: " -"}
LEGEND = (
    "* best in its column; + / - improved / regressed against the reference (the paired tests "
    "of compare, Holm-corrected across every value's headline tests overall, across slices "
    "in a slice); ! slice collapse (fell to zero, or regressed while the overall row did not)"
)


def _cell_text(row: SweepRow, cell: Cell) -> str:
    if not row.valid:
        return "invalid"
    if cell.value is None:
        return "-"
    text = f"{cell.value:.3f}"
    text += _MARKS.get(cell.verdict, "") if cell.verdict else ""
    text += " *" if cell.best else ""
    text += " !" if cell.collapse else ""
    return text


def _row_name(row: SweepRow) -> str:
    return f"{row.label} (reference)" if row.reference else row.label


def _best_lines(s: Sweep) -> list[str]:
    """Per metric, overall: the best value and whether it is distinguishable from the reference."""
    if s.identical_rankings:
        names = ", ".join(p.name for p in s.params)
        return [
            f"every value gave identical rankings (the same ids in the same order for every "
            f"query, in every repeat): the service may not read {names}; nothing here says "
            f"which value to keep (read it in the service, or put {{{s.params[0].name}}} in "
            "service.start)"
        ]
    lines = []
    by_label = {r.label: r for r in s.rows}
    for m in s.metrics:
        best = s.best("overall", m)
        if not best:
            lines.append(f"{m}: no valid value")
            continue
        if s.reference in best:
            lines.append(f"{m}: the reference {s.reference} is (one of) the best; keep it")
            continue
        parts = []
        for name in best:
            cell = by_label[name].cells["overall"][m]
            verdict = cell.verdict.value if cell.verdict else "-"
            delta = f"{cell.delta:+.3f}" if cell.delta is not None else "-"
            parts.append(f"{name} ({delta} against the reference: {verdict})")
        lines.append(f"{m}: best {'; '.join(parts)}")
    return lines


def _layout(s: Sweep) -> list[Block]:
    """The report, shared by text and Markdown: what was swept, verdicts, one table per metric."""
    values = ", ".join(f"{p.name} = {', '.join(p.values)}" for p in s.params)
    title = f"harness sweep: {s.ref} ({s.sha[:8]}), {values}; reference {s.reference}"
    about = [
        f"gold set: {s.gold_source} (sha256 {s.gold_hash[:12]}), {s.n_answerable} answerable "
        f"queries; {s.repeats} repeat{'s' * (s.repeats != 1)} per value; alpha {s.alpha:g}; "
        f"seed {s.seed}",
        f"each value is set as an environment pin on the {s.side} side's service",
    ]
    about += [
        f"warning: the sweep overrides the config's pin service.env.{n}" for n in s.overridden
    ]
    about += [f"{row.label} is invalid: {why}" for row in s.rows for why in row.reasons]
    verdicts = tuple(
        (_row_name(r), r.quality, r.latency, ", ".join(r.collapses) or "-") for r in s.rows
    )
    out = [
        Block("title", (title,)),
        Block("lines", tuple(about)),
        Block("heading", ("Against the reference",)),
        Block("table", headers=("value", "quality", "latency", "slice collapses"), rows=verdicts),
        Block("lines", tuple(f"{r.label}: {r.quality_reason}" for r in s.rows if r.quality_reason)),
    ]
    for m in s.metrics:
        rows = tuple(
            (_row_name(r), *(_cell_text(r, r.cells[scope][m]) for scope in s.scopes))
            for r in s.rows
        )
        out.append(Block("heading", (f"{m} by slice",)))
        out.append(Block("table", headers=("value", *s.scopes), rows=rows))
    out.append(Block("lines", (LEGEND, *_best_lines(s))))
    return out


def _render_text(s: Sweep) -> str:
    return layout.text(_layout(s), underline_title=True)


def _render_markdown(s: Sweep) -> str:
    return layout.markdown(_layout(s))


def sweep_to_dict(s: Sweep) -> dict[str, Any]:
    """The JSON document: schema, version, then every field; cells by scope then metric."""

    def cell(c: Cell) -> dict[str, Any]:
        return {
            "value": c.value,
            "delta": c.delta,
            "p": c.p,
            "verdict": None if c.verdict is None else c.verdict.value,
            "best": c.best,
            "collapse": c.collapse,
        }

    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "valid": s.valid,
        "ref": s.ref,
        "sha": s.sha,
        "side": s.side,
        "params": {p.name: list(p.values) for p in s.params},
        "reference": s.reference,
        "metrics": list(s.metrics),
        "scopes": list(s.scopes),
        "repeats": s.repeats,
        "gold": {"source": s.gold_source, "hash": s.gold_hash, "n_answerable": s.n_answerable},
        "alpha": s.alpha,
        "seed": s.seed,
        "overridden_env": list(s.overridden),
        "identical_rankings": s.identical_rankings,
        "best": {scope: {m: list(s.best(scope, m)) for m in s.metrics} for scope in s.scopes},
        "rows": [
            {
                "label": r.label,
                "params": dict(r.point),
                "reference": r.reference,
                "valid": r.valid,
                "invalid_reasons": list(r.reasons),
                "quality": r.quality,
                "quality_reason": r.quality_reason,
                "latency": r.latency,
                "collapses": list(r.collapses),
                "record_path": r.record_path,
                "cells": {
                    scope: {m: cell(c) for m, c in by_metric.items()}
                    for scope, by_metric in r.cells.items()
                },
            }
            for r in s.rows
        ],
    }


def _render_json(s: Sweep) -> str:
    return json.dumps(sweep_to_dict(s), sort_keys=True, indent=2, allow_nan=False) + "\n"


RENDERERS: Mapping[str, Callable[[Sweep], str]] = {
    "text": _render_text,
    "markdown": _render_markdown,
    "json": _render_json,
}


def render_sweep(sweep: Sweep, fmt: str) -> str:
    """The sweep as `fmt`, a key of RENDERERS."""
    try:
        return RENDERERS[fmt](sweep)
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(RENDERERS)}") from None

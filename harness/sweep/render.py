"""The sweep as text, Markdown (one `harness.report.layout` page) or its JSON document. Pure.

    render_sweep(sweep, fmt) -> str      fmt in RENDERERS: text, markdown, json
    sweep_to_dict(sweep) -> dict         the JSON document (schema "harness-sweep", version 1)

The page: what was swept and on what, why any value is invalid, the verdicts of each value
against the reference, then one table per metric (values down, scopes across; the marks are
explained in the legend under them, see `harness.sweep`), and per metric the best value overall
and whether it is distinguishable from the reference. What the matrix's page shares is in
`harness.variants.render`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from harness.report.layout import Block
from harness.sweep.summary import Sweep
from harness.variants.render import (
    cell_text,
    gold_line,
    invalid_lines,
    mark,
    render,
    renderers,
    row_name,
    row_to_dict,
    table_to_dict,
)
from harness.variants.summary import Cell, Row

SCHEMA = "harness-sweep"
SCHEMA_VERSION = 1

LEGEND = (
    "* best in its column; + / - improved / regressed against the reference (the paired tests "
    "of compare, Holm-corrected across every value's headline tests overall, across slices "
    "in a slice); ! slice collapse (fell to zero, or regressed while the overall row did not)"
)


def _marks(_row: Row, cell: Cell) -> str:
    return mark(cell) + (" *" if cell.best else "") + (" !" if cell.collapse else "")


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
    t = s.table
    lines = []
    by_label = {r.name: r for r in t.rows}
    for m in t.metrics:
        best = s.best("overall", m)
        if not best:
            lines.append(f"{m}: no valid value")
            continue
        if t.reference in best:
            lines.append(f"{m}: the reference {t.reference} is (one of) the best; keep it")
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
    t = s.table
    values = ", ".join(f"{p.name} = {', '.join(p.values)}" for p in s.params)
    title = f"harness sweep: {t.ref} ({t.sha[:8]}), {values}; reference {t.reference}"
    about = [
        gold_line(t, "value"),
        f"each value is set as an environment pin on the {t.side} side's service",
        *(f"warning: the sweep overrides the config's pin service.env.{n}" for n in s.overridden),
        *invalid_lines(t),
    ]
    verdicts = tuple(
        (row_name(r), r.quality, r.latency, ", ".join(r.collapses) or "-") for r in t.rows
    )
    out = [
        Block("title", (title,)),
        Block("lines", tuple(about)),
        Block("heading", ("Against the reference",)),
        Block("table", headers=("value", "quality", "latency", "slice collapses"), rows=verdicts),
        Block("lines", tuple(f"{r.name}: {r.quality_reason}" for r in t.rows if r.quality_reason)),
    ]
    for m in t.metrics:
        rows = tuple(
            (row_name(r), *(cell_text(r, r.cells[scope][m], _marks) for scope in t.scopes))
            for r in t.rows
        )
        out.append(Block("heading", (f"{m} by slice",)))
        out.append(Block("table", headers=("value", *t.scopes), rows=rows))
    out.append(Block("lines", (LEGEND, *_best_lines(s))))
    return out


def _cell_dict(c: Cell) -> dict[str, Any]:
    return {
        "value": c.value,
        "delta": c.delta,
        "p": c.p_adjusted if c.p_adjusted is not None else c.p,  # Holm-adjusted where compare is
        "verdict": None if c.verdict is None else c.verdict.value,
        "best": c.best,
        "collapse": c.collapse,
    }


def sweep_to_dict(s: Sweep) -> dict[str, Any]:
    """The JSON document: schema, version, then every field; cells by scope then metric."""
    t = s.table
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        **table_to_dict(t),
        "params": {p.name: list(p.values) for p in s.params},
        "overridden_env": list(s.overridden),
        "identical_rankings": s.identical_rankings,
        "best": {scope: {m: list(s.best(scope, m)) for m in t.metrics} for scope in t.scopes},
        "rows": [
            {
                **row_to_dict(r, _cell_dict),
                "label": r.name,
                "params": dict(point),
                "quality_reason": r.quality_reason,
                "collapses": list(r.collapses),
            }
            for r, point in zip(t.rows, s.points, strict=True)
        ],
    }


RENDERERS: Mapping[str, Callable[[Sweep], str]] = renderers(_layout, sweep_to_dict)


def render_sweep(sweep: Sweep, fmt: str) -> str:
    """The sweep as `fmt`, a key of RENDERERS."""
    return render(RENDERERS, sweep, fmt)

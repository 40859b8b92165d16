"""The matrix as text, Markdown (one `harness.report.layout` page) or its JSON document. Pure.

    render_matrix(result, fmt) -> str     fmt in RENDERERS: text, markdown, json
    matrix_to_dict(result) -> dict        the JSON document (schema "harness-matrix", version 1)

The page: what ran on what; the constraints (failing first) with what was found; the table, one
row per configuration and one column per metric (overall: the mean, then against the reference
the difference, its 95% interval and the mark); the paired tests of each row against the
reference, one line per metric, with the Holm-adjusted p across the rows; each row's verdicts.
What the sweep's page shares is in `harness.variants.render`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from harness.matrix.summary import MatrixResult
from harness.matrix.values import Entry
from harness.report.layout import Block
from harness.values.types import OVERALL
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
from harness.verdict.stats import format_p

SCHEMA = "harness-matrix"
SCHEMA_VERSION = 1

LEGEND = (
    "each cell: the mean over the analysed queries; against the reference, the difference and "
    "its 95% paired-bootstrap interval (none for hit@k, tested by McNemar's exact test), then + / "
    "- when the paired test, Holm-corrected across the configurations, calls it improved / "
    "regressed"
)


def _marks(row: Row, cell: Cell) -> str:
    """Against the reference: the difference, its interval, the verdict's mark."""
    if row.reference or cell.delta is None:
        return ""
    text = f" {cell.delta:+.3f}"
    if cell.ci_low is not None and cell.ci_high is not None:
        text += f" [{cell.ci_low:+.3f}, {cell.ci_high:+.3f}]"
    return text + mark(cell)


def _what(entry: Entry) -> str:
    parts = [f"{k}={v}" for k, v in entry.env.items()] + list(entry.overrides())
    return ", ".join(parts) + (f" ({entry.description})" if entry.description else "")


def _tests(r: MatrixResult) -> tuple[tuple[str, ...], ...]:
    out = []
    for row in r.table.rows:
        if row.reference or not row.valid:
            continue
        for m in r.table.metrics:
            c = row.cells[OVERALL][m]
            if c.p is None:
                continue
            ci = "" if c.ci_low is None else f"[{c.ci_low:+.3f}, {c.ci_high or 0:+.3f}]"
            verdict = (c.verdict.value if c.verdict else "-") + (f" ({c.note})" if c.note else "")
            out.append(
                (
                    row.name,
                    m,
                    f"{c.delta or 0:+.3f}",
                    ci,
                    format_p(c.p),
                    format_p(c.p_holm) if c.p_holm is not None else "-",
                    verdict,
                )
            )
    return tuple(out)


def _layout(r: MatrixResult) -> list[Block]:
    t = r.table
    title = (
        f"harness matrix: {t.ref} ({t.sha[:8]}), {len(t.rows)} configurations; "
        f"reference {t.reference}"
    )
    about = [
        f"matrix: {r.matrix.source}; {gold_line(t, 'configuration')}",
        *(f"{entry.name}: {_what(entry)}" for entry in r.matrix.entries),
        *invalid_lines(t),
    ]
    out = [Block("title", (title,)), Block("lines", tuple(about))]
    if r.constraints:
        failed = len(r.failed)
        head = (
            f"Constraints: {failed} of {len(r.constraints)} failed"
            if failed
            else (f"Constraints: all {len(r.constraints)} hold")
        )
        ordered = sorted(r.constraints, key=lambda c: c.passed)
        rows = tuple(
            ("ok" if c.passed else "FAILED", c.constraint.words(), c.words) for c in ordered
        )
        out += [
            Block("heading", (head,)),
            Block("table", headers=("", "constraint", "found"), rows=rows),
        ]
    table = tuple(
        (row_name(row), *(cell_text(row, row.cells[OVERALL][m], _marks) for m in t.metrics))
        for row in t.rows
    )
    out += [
        Block("heading", (f"Every metric, overall (against {t.reference})",)),
        Block("table", headers=("configuration", *t.metrics), rows=table),
        Block("lines", (LEGEND,)),
    ]
    tests = _tests(r)
    if tests:
        out += [
            Block("heading", (f"Paired tests against {t.reference} (Holm across the rows)",)),
            Block(
                "table",
                headers=("configuration", "metric", "delta", "95% CI", "p", "Holm p", "verdict"),
                rows=tests,
            ),
        ]
    verdicts = tuple(
        (row_name(row), row.quality, row.latency) for row in t.rows if not row.reference
    )
    out += [
        Block("heading", ("Each configuration's verdicts",)),
        Block("table", headers=("configuration", "quality", "latency"), rows=verdicts),
    ]
    return out


def _cell_dict(c: Cell) -> dict[str, Any]:
    return {
        "value": c.value,
        "n": c.n,
        "delta": c.delta,
        "ci_low": c.ci_low,
        "ci_high": c.ci_high,
        "p": c.p,
        "p_holm": c.p_holm,
        "verdict": None if c.verdict is None else c.verdict.value,
        "note": c.note,
    }


def matrix_to_dict(r: MatrixResult) -> dict[str, Any]:
    """The JSON document: schema, version, then every field; cells by scope then metric."""
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        **table_to_dict(r.table),
        "passed": r.valid and not r.failed,
        "matrix": r.matrix.source,
        "constraints": [
            {
                "config": c.constraint.config,
                "metric": c.constraint.metric,
                "slice": c.constraint.scope,
                "bound": c.constraint.bound,
                "limit": c.constraint.value,
                "value": c.value,
                "reference_value": c.reference_value,
                "passed": c.passed,
                "words": c.words,
            }
            for c in r.constraints
        ],
        "rows": [
            {
                **row_to_dict(row, _cell_dict),
                "name": row.name,
                "env": dict(entry.env),
                "overrides": list(entry.overrides()),
                "description": entry.description,
            }
            for row, entry in zip(r.table.rows, r.matrix.entries, strict=True)
        ],
    }


RENDERERS: Mapping[str, Callable[[MatrixResult], str]] = renderers(_layout, matrix_to_dict)


def render_matrix(result: MatrixResult, fmt: str) -> str:
    """The matrix as `fmt`, a key of RENDERERS."""
    return render(RENDERERS, result, fmt)

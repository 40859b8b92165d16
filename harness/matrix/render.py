"""The matrix as text, Markdown (one `harness.report.layout` page) or its JSON document. Pure.

    render_matrix(result, fmt) -> str     fmt in RENDERERS: text, markdown, json
    matrix_to_dict(result) -> dict        the JSON document (schema "harness-matrix", version 1)

The page: what ran on what; the constraints (failing first) with what was found; the table, one
row per configuration and one column per metric (overall: the mean, then against the reference
the difference, its 95% interval and the mark); the paired tests of each row against the
reference, one line per metric, with the Holm-adjusted p across the rows; each row's verdicts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from harness.matrix.summary import Cell, MatrixResult, Row
from harness.report import layout
from harness.report.layout import Block
from harness.values.types import OVERALL, Verdict
from harness.verdict.stats import format_p

SCHEMA = "harness-matrix"
SCHEMA_VERSION = 1

_MARKS = {Verdict.IMPROVED: " +", Verdict.REGRESSED: " -"}
LEGEND = (
    "each cell: the mean over the analysed queries; against the reference, the difference and "
    "its 95% paired-bootstrap interval (none for hit@k, tested by McNemar's exact test), then + / "
    "- when the paired test, Holm-corrected across the configurations, calls it improved / "
    "regressed"
)


def _cell_text(row: Row, cell: Cell) -> str:
    if not row.valid:
        return "invalid"
    if cell.value is None:
        return "-"
    text = f"{cell.value:.3f}"
    if row.reference or cell.delta is None:
        return text
    text += f" {cell.delta:+.3f}"
    if cell.ci_low is not None and cell.ci_high is not None:
        text += f" [{cell.ci_low:+.3f}, {cell.ci_high:+.3f}]"
    return text + (_MARKS.get(cell.verdict, "") if cell.verdict else "")


def _name(row: Row) -> str:
    return f"{row.name} (reference)" if row.reference else row.name


def _what(row: Row) -> str:
    parts = [f"{k}={v}" for k, v in row.env.items()] + list(row.overrides)
    return ", ".join(parts) + (f" ({row.description})" if row.description else "")


def _tests(r: MatrixResult) -> tuple[tuple[str, ...], ...]:
    out = []
    for row in r.rows:
        if row.reference or not row.valid:
            continue
        for m in r.metrics:
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
    title = (
        f"harness matrix: {r.ref} ({r.sha[:8]}), {len(r.rows)} configurations; "
        f"reference {r.reference}"
    )
    about = [
        f"matrix: {r.source}; gold set: {r.gold_source} (sha256 {r.gold_hash[:12]}), "
        f"{r.n_answerable} answerable queries; {r.repeats} repeat{'s' * (r.repeats != 1)} per "
        f"configuration; alpha {r.alpha:g}; seed {r.seed}",
        *(f"{row.name}: {_what(row)}" for row in r.rows),
        *(f"{row.name} is invalid: {why}" for row in r.rows for why in row.reasons),
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
        (_name(row), *(_cell_text(row, row.cells[OVERALL][m]) for m in r.metrics)) for row in r.rows
    )
    out += [
        Block("heading", (f"Every metric, overall (against {r.reference})",)),
        Block("table", headers=("configuration", *r.metrics), rows=table),
        Block("lines", (LEGEND,)),
    ]
    tests = _tests(r)
    if tests:
        out += [
            Block("heading", (f"Paired tests against {r.reference} (Holm across the rows)",)),
            Block(
                "table",
                headers=("configuration", "metric", "delta", "95% CI", "p", "Holm p", "verdict"),
                rows=tests,
            ),
        ]
    verdicts = tuple((_name(row), row.quality, row.latency) for row in r.rows if not row.reference)
    out += [
        Block("heading", ("Each configuration's verdicts",)),
        Block("table", headers=("configuration", "quality", "latency"), rows=verdicts),
    ]
    return out


def matrix_to_dict(r: MatrixResult) -> dict[str, Any]:
    def cell(c: Cell) -> dict[str, Any]:
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

    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "valid": r.valid,
        "passed": r.valid and not r.failed,
        "ref": r.ref,
        "sha": r.sha,
        "side": r.side,
        "matrix": r.source,
        "reference": r.reference,
        "metrics": list(r.metrics),
        "scopes": list(r.scopes),
        "repeats": r.repeats,
        "gold": {"source": r.gold_source, "hash": r.gold_hash, "n_answerable": r.n_answerable},
        "alpha": r.alpha,
        "seed": r.seed,
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
                "name": row.name,
                "reference": row.reference,
                "valid": row.valid,
                "invalid_reasons": list(row.reasons),
                "env": dict(row.env),
                "overrides": list(row.overrides),
                "description": row.description,
                "quality": row.quality,
                "latency": row.latency,
                "record_path": row.record_path,
                "cells": {
                    scope: {m: cell(c) for m, c in by_metric.items()}
                    for scope, by_metric in row.cells.items()
                },
            }
            for row in r.rows
        ],
    }


RENDERERS: Mapping[str, Callable[[MatrixResult], str]] = {
    "text": lambda r: layout.text(_layout(r), underline_title=True),
    "markdown": lambda r: layout.markdown(_layout(r)),
    "json": lambda r: (
        json.dumps(matrix_to_dict(r), sort_keys=True, indent=2, allow_nan=False) + "\n"
    ),
}


def render_matrix(result: MatrixResult, fmt: str) -> str:
    """The matrix as `fmt`, a key of RENDERERS."""
    try:
        return RENDERERS[fmt](result)
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(RENDERERS)}") from None

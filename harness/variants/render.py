"""What the sweep's and the matrix's pages and JSON documents share. Pure.

    renderers(layout_of, to_dict) -> {"text": ..., "markdown": ..., "json": ...}
    render(renderers, value, fmt) -> str

A front end lays its page out once as `harness.report.layout` blocks (`layout_of`) and builds
its JSON document (`to_dict`); `renderers` turns the two into the three formats: text with the
title underlined, Markdown, and JSON with sorted keys, indented, one newline at the end. The
pieces of a page both lay out: a row's name ("NAME (reference)"), the gold set line, the
invalid rows' reasons, a cell's text and a verdict's mark; of a document: its header
(`table_to_dict`) and each row's common fields (`row_to_dict`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from harness.report import layout
from harness.report.layout import Block
from harness.values.types import Verdict
from harness.variants.summary import Cell, Row, Table

T = TypeVar("T")

MARKS = {Verdict.IMPROVED: " +", Verdict.REGRESSED: " -"}
"""The mark after a cell whose paired test calls it improved or regressed."""


def mark(cell: Cell) -> str:
    return MARKS.get(cell.verdict, "") if cell.verdict else ""


def cell_text(row: Row, cell: Cell, marks: Callable[[Row, Cell], str]) -> str:
    """A table cell: "invalid" on an invalid row, "-" where the scope has no analysed query,
    else the value to 3 decimals and what `marks` adds after it."""
    if not row.valid:
        return "invalid"
    if cell.value is None:
        return "-"
    return f"{cell.value:.3f}" + marks(row, cell)


def row_name(row: Row) -> str:
    return f"{row.name} (reference)" if row.reference else row.name


def gold_line(table: Table, per: str) -> str:
    """The gold set, its answerable queries, the repeats per variant (`per`: "value"), alpha
    and the seed."""
    t = table
    return (
        f"gold set: {t.gold_source} (sha256 {t.gold_hash[:12]}), {t.n_answerable} answerable "
        f"queries; {t.repeats} repeat{'s' * (t.repeats != 1)} per {per}; alpha {t.alpha:g}; "
        f"seed {t.seed}"
    )


def invalid_lines(table: Table) -> tuple[str, ...]:
    return tuple(f"{row.name} is invalid: {why}" for row in table.rows for why in row.reasons)


def table_to_dict(t: Table) -> dict[str, Any]:
    """The document's fields every front end writes, from the Table."""
    return {
        "valid": t.valid,
        "ref": t.ref,
        "sha": t.sha,
        "side": t.side,
        "reference": t.reference,
        "metrics": list(t.metrics),
        "scopes": list(t.scopes),
        "repeats": t.repeats,
        "gold": {"source": t.gold_source, "hash": t.gold_hash, "n_answerable": t.n_answerable},
        "alpha": t.alpha,
        "seed": t.seed,
    }


def row_to_dict(row: Row, cell: Callable[[Cell], dict[str, Any]]) -> dict[str, Any]:
    """A row's fields every front end writes, its cells by scope then metric as `cell` says."""
    return {
        "reference": row.reference,
        "valid": row.valid,
        "invalid_reasons": list(row.reasons),
        "quality": row.quality,
        "latency": row.latency,
        "record_path": row.record_path,
        "cells": {
            scope: {m: cell(c) for m, c in by_metric.items()}
            for scope, by_metric in row.cells.items()
        },
    }


def renderers(
    layout_of: Callable[[T], Sequence[Block]], to_dict: Callable[[T], Mapping[str, Any]]
) -> Mapping[str, Callable[[T], str]]:
    """The three formats of one page and one document."""
    return {
        "text": lambda value: layout.text(layout_of(value), underline_title=True),
        "markdown": lambda value: layout.markdown(layout_of(value)),
        "json": lambda value: (
            json.dumps(to_dict(value), sort_keys=True, indent=2, allow_nan=False) + "\n"
        ),
    }


def render(formats: Mapping[str, Callable[[T], str]], value: T, fmt: str) -> str:
    """`value` as `fmt`, a key of `formats`; ValueError names the known ones."""
    try:
        chosen = formats[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(formats)}") from None
    return chosen(value)

"""The retrieval/generation 2x2 as a page: `harness twobytwo`, and its section of a compare.

    render_twobytwo(table, fmt) -> str        fmt: text, markdown, json
    twobytwo_blocks(table, title) -> [Block]  one table's cells, counts and query ids
    movement_blocks(comparison) -> [Block]    both sides' tables and the 4x4 movement matrix

Renders and computes nothing (`harness.verdict.twobytwo` fills the values).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from harness.report import layout
from harness.report.layout import Block
from harness.results.document import jsonable
from harness.verdict.twobytwo import Cell, TwoByTwo, TwoByTwoComparison

_SHOWN = 10  # query ids listed per cell in text and Markdown (JSON lists all)
_WHAT = {
    Cell.RETRIEVED_CORRECT: "both stages worked",
    Cell.RETRIEVAL_FAILURE: "retrieval failure",
    Cell.GENERATION_FAILURE: "generation failure",
    Cell.OWN_KNOWLEDGE: "model's own knowledge",
}


def _ids(ids: Sequence[str]) -> str:
    shown = " ".join(ids[:_SHOWN])
    return shown + (f" ... and {len(ids) - _SHOWN} more" if len(ids) > _SHOWN else "")


def _share(n: int, total: int) -> str:
    return f"{n / total:.0%}" if total else "-"


def twobytwo_blocks(table: TwoByTwo, title: str) -> list[Block]:
    grid = (
        ("retrieved", str(table.cell(Cell.RETRIEVED_CORRECT).n),
         str(table.cell(Cell.GENERATION_FAILURE).n)),
        ("not retrieved", str(table.cell(Cell.OWN_KNOWLEDGE).n),
         str(table.cell(Cell.RETRIEVAL_FAILURE).n)),
    )
    cells = tuple(
        (c.cell.value, _WHAT[c.cell], str(c.n), _share(c.n, table.n), _ids(c.query_ids))
        for c in table.cells
    )
    out = [
        Block("heading", (title,)),
        Block("lines", (f"{table.n} queries graded and analysed; retrieved = a relevant "
                        f"document in the top {table.k}; answers: {table.answers}",)),
        Block("table", headers=(f"top {table.k}", "correct", "wrong"), rows=grid,
              align=("left", "right", "right")),
        Block("table", headers=("cell", "what it means", "queries", "share", "query ids"),
              rows=cells, align=("left", "left", "right", "right", "left")),
    ]
    aside = []
    if table.not_graded:
        aside.append(f"not graded (no line in the answers file): {len(table.not_graded)}: "
                     f"{_ids(table.not_graded)}")
    if table.not_analysed:
        aside.append(f"graded but not analysed (unanswerable, or errored in the run): "
                     f"{len(table.not_analysed)}: {_ids(table.not_analysed)}")
    if aside:
        out.append(Block("lines", tuple(aside)))
    return out


def movement_blocks(c: TwoByTwoComparison) -> list[Block]:
    out = twobytwo_blocks(c.baseline, "Retrieval vs generation: baseline")
    out += twobytwo_blocks(c.candidate, "Retrieval vs generation: candidate")
    rows = tuple(
        (f"from {b.value}", *(str(len(c.move(b, a).query_ids)) for a in Cell)) for b in Cell
    )
    moved = [
        f"{m.before.value} -> {m.after.value}: {_ids(m.query_ids)}"
        for m in c.moves
        if m.before is not m.after and m.query_ids
    ]
    out += [
        Block("heading", ("Retrieval vs generation: how queries moved (baseline -> candidate)",)),
        Block("table", headers=("baseline \\ candidate", *(a.value for a in Cell)), rows=rows,
              align=("left", "right", "right", "right", "right")),
        Block("lines", tuple(moved) or ("no query changed cell",)),
    ]
    return out


def render_twobytwo(table: TwoByTwo, fmt: str, *, run: str = "") -> str:
    """`harness twobytwo` output: text, markdown, or json (every field, every query id)."""
    if fmt == "json":
        document = {"schema": "harness-twobytwo", "schema_version": 1, "run": run,
                    **dict(jsonable(table))}  # type: ignore[call-overload]
        return json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    blocks = [Block("title", (f"harness twobytwo: {run}",)),
              *twobytwo_blocks(table, "Retrieval vs generation")]
    if fmt == "markdown":
        return layout.markdown(blocks)
    if fmt == "text":
        return layout.text(blocks)
    raise ValueError(f"unknown format {fmt!r}; known: text, markdown, json")

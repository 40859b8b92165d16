"""Retrieval vs generation, the 2x2: which stage to work on, from one run and a team's grades.

Pure: no I/O.  For every query two facts:

- **retrieved**: a gold relevant document (grade >= rel_level) is in the top k of the
  deduplicated ranking (hit@k), as the modal outcome over the run's usable repeats
  (`stats.modal`: a tie counts as not retrieved);
- **correct**: the final answer was graded correct in the team's answers file
  (`harness.gold.grades`).

Four cells (`Cell`): retrieved and correct; not retrieved and wrong (a retrieval failure);
retrieved and wrong (a generation failure); not retrieved and correct (answered from the model's
own knowledge).  Which queries: the answerable gold queries (an unanswerable one has no gold chunk
to retrieve) answered without error in every usable repeat.  Set aside, and listed: `not_graded`,
those the answers file does not grade; `not_analysed`, graded queries that are unanswerable or
errored/missing in the run.  In a compare, `movement` counts how the queries in both tables moved
between cells (16 entries, baseline cell x candidate cell).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from harness.score.judged import dedupe
from harness.values.types import GoldSet, RefRun
from harness.verdict import stats
from harness.verdict.repeats import by_query, usable


class Cell(enum.StrEnum):
    """The four cells, in the order every table shows them."""

    RETRIEVED_CORRECT = "retrieved, correct"
    RETRIEVAL_FAILURE = "not retrieved, wrong"
    GENERATION_FAILURE = "retrieved, wrong"
    OWN_KNOWLEDGE = "not retrieved, correct"


def cell_of(retrieved: bool, correct: bool) -> Cell:
    if retrieved:
        return Cell.RETRIEVED_CORRECT if correct else Cell.GENERATION_FAILURE
    return Cell.OWN_KNOWLEDGE if correct else Cell.RETRIEVAL_FAILURE


@dataclass(frozen=True)
class CellQueries:
    cell: Cell
    query_ids: tuple[str, ...]  # gold order

    @property
    def n(self) -> int:
        return len(self.query_ids)


@dataclass(frozen=True)
class TwoByTwo:
    """One run's table: every cell (in Cell order) with its query ids, and what was set aside."""

    k: int
    cells: tuple[CellQueries, ...]
    not_graded: tuple[str, ...] = ()
    not_analysed: tuple[str, ...] = ()
    answers: str = ""  # the answers file the grades came from

    @property
    def n(self) -> int:
        return sum(c.n for c in self.cells)

    def cell(self, cell: Cell) -> CellQueries:
        return next(c for c in self.cells if c.cell is cell)

    def where(self) -> dict[str, Cell]:
        """Query id -> its cell."""
        return {qid: c.cell for c in self.cells for qid in c.query_ids}


@dataclass(frozen=True)
class Move:
    before: Cell  # the baseline's cell
    after: Cell  # the candidate's cell
    query_ids: tuple[str, ...]


@dataclass(frozen=True)
class TwoByTwoComparison:
    """Both sides' tables and the 4x4 movement matrix of the queries in both (Cell x Cell)."""

    baseline: TwoByTwo
    candidate: TwoByTwo
    moves: tuple[Move, ...]

    def move(self, before: Cell, after: Cell) -> Move:
        return next(m for m in self.moves if m.before is before and m.after is after)


def retrieved_at(gold: GoldSet, run: RefRun, k: int, rel_level: int = 1) -> dict[str, bool]:
    """Per answerable query answered in every usable repeat: was a relevant document in the
    top k (modal over repeats, a tie is False)."""
    answers = [by_query(rep) for rep in usable(run)]
    found: dict[str, bool] = {}
    for query in gold.queries:
        if not query.answerable or not answers:
            continue
        if not all(query.id in a and a[query.id].ok for a in answers):
            continue
        outcomes = [
            [any(query.relevant.get(d, 0) >= rel_level for d in dedupe(a[query.id].ids)[:k])]
            for a in answers
        ]
        found[query.id] = bool(stats.modal(outcomes)[0])
    return found


def two_by_two(
    gold: GoldSet,
    run: RefRun,
    correct: Mapping[str, bool],
    k: int,
    *,
    rel_level: int = 1,
    answers: str = "",
) -> TwoByTwo:
    """The 2x2 of one run (module docstring); `correct` maps query id to its grade."""
    if k < 1:
        raise ValueError(f"k must be >= 1, not {k}")
    retrieved = retrieved_at(gold, run, k, rel_level)
    members: dict[Cell, list[str]] = {cell: [] for cell in Cell}
    not_graded, not_analysed = [], []
    for query in gold.queries:
        if query.id in retrieved and query.id in correct:
            members[cell_of(retrieved[query.id], correct[query.id])].append(query.id)
        elif query.id in retrieved:
            not_graded.append(query.id)
        elif query.id in correct:
            not_analysed.append(query.id)
    return TwoByTwo(
        k=k,
        cells=tuple(CellQueries(cell, tuple(ids)) for cell, ids in members.items()),
        not_graded=tuple(not_graded),
        not_analysed=tuple(not_analysed),
        answers=answers,
    )


def movement(baseline: TwoByTwo, candidate: TwoByTwo) -> TwoByTwoComparison:
    """How the queries in both tables moved between cells (all 16 entries, empty ones too)."""
    before, after = baseline.where(), candidate.where()
    order = [qid for c in baseline.cells for qid in c.query_ids]
    moves = tuple(
        Move(b, a, tuple(q for q in order if before[q] is b and after.get(q) is a))
        for b in Cell
        for a in Cell
    )
    return TwoByTwoComparison(baseline, candidate, moves)

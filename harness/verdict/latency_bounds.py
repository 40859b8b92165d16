"""The last look's boundary of every latency plan the advice reads, precomputed.

    lookup(first, budget, level, gamma) -> float | None   `plan(first, budget)`'s last t-scale
                                                          boundary at `level`; None: not held

Why: `latency_rule.budget_for` (the "a budget of about N rounds would likely decide" of an
inconclusive latency verdict) bisects over budgets and reads, of each budget it tries, only the
last look's boundary; computed, that is the whole recursive integration over every look before
it (`latency_rule._boundaries`), seconds of CPU per inconclusive compare, spent while the machine
could be measuring.  Those boundaries depend on nothing measured: (first, budget), the level
and the spending shape.  So they are computed once, by scripts/latency_bounds.py, with the code
`latency_rule.plan` runs, and shipped as three generated modules, one per level the harness
uses (the mean's ALPHA, each tail row's TAIL_ALPHA, and 2 * EQUIVALENCE for the equivalence
tests), each holding float64 values for first 2..100 and budget first..100 (4,950 a level), in
that order, base85-encoded.  A module is decoded the first time its level is asked for.  Any
other level, shape or range is not held (None), and `latency_rule.last_boundary` computes it.

tests/verdict/test_latency_advice.py checks that the table gives `plan`'s own numbers and that
the script regenerates these modules byte for byte.

Pure: constants and arithmetic, no I/O.
"""

from __future__ import annotations

import base64
from functools import cache

import numpy as np
import numpy.typing as npt

FIRST_MIN = 2  # latency_rule.MIN_LOOK
BUDGET_MAX = 100  # latency_rule.MOST_ROUNDS
GAMMA = -4.0  # latency_rule.GAMMA
# The levels held, each by the name of its module (harness.verdict.latency_bounds_<name>).
LEVELS = {0.035: "mean", 0.005: "tail", 0.1: "equivalence"}
SIZE = (BUDGET_MAX - FIRST_MIN + 1) * (BUDGET_MAX - FIRST_MIN + 2) // 2


def index(first: int, budget: int) -> int:
    """The position of (first, budget) in a level's values: by first, then by budget."""
    before = first - FIRST_MIN  # the firsts before this one, each with budgets first..BUDGET_MAX
    rows = before * (BUDGET_MAX - FIRST_MIN + 1) - before * (before - 1) // 2
    return rows + budget - first


def lookup(first: int, budget: int, level: float, gamma: float) -> float | None:
    """The last look's t boundary of `plan(first, budget)` at two-sided `level` (first already
    clamped to the looks: FIRST_MIN <= first <= budget), or None when the table does not hold it."""
    name = LEVELS.get(level)
    if name is None or gamma != GAMMA:
        return None
    if not FIRST_MIN <= first <= budget <= BUDGET_MAX:
        return None
    return float(_values(name)[index(first, budget)])


@cache
def _values(name: str) -> npt.NDArray[np.float64]:
    # Imported here, not above: a compare that gives no advice never decodes a table.
    if name == "mean":
        from harness.verdict.latency_bounds_mean import DATA
    elif name == "tail":
        from harness.verdict.latency_bounds_tail import DATA
    else:
        from harness.verdict.latency_bounds_equivalence import DATA
    values = np.frombuffer(base64.b85decode(DATA), dtype="<f8").astype(np.float64)
    if values.size != SIZE:  # a table cut short would give another plan's numbers
        raise ValueError(f"latency_bounds_{name} holds {values.size} values, not {SIZE}")
    return values

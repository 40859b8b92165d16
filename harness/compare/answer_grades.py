"""The retrieval/generation 2x2 of each side of a compare, and how queries moved between them
(compare --baseline-answers/--candidate-answers).

    grades = answer_grades(baseline_file, candidate_file, answers_k, gold)   # None: not asked
    comparison = with_twobytwo(comparison, gold, (baseline, candidate), grades, answers_k)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from harness.errors import HarnessError
from harness.gold.grades import Grades, read_grades
from harness.values.types import GoldSet, RefRun
from harness.verdict.comparison import Comparison


def answer_grades(
    baseline: Path | None, candidate: Path | None, k: int | None, gold: GoldSet
) -> tuple[Grades, Grades] | None:
    """Both sides' answer grades, read before anything is built (None: neither file given);
    one alone is a usage error: there is nothing to move between."""
    if baseline is None and candidate is None:
        if k is not None:  # the 2x2's cutoff, with no 2x2 to make: said, not ignored
            raise HarnessError(
                "--answers-k sets the 2x2's cutoff, which needs --baseline-answers and "
                "--candidate-answers: give both files, or drop --answers-k"
            )
        return None
    if baseline is None or candidate is None:
        raise HarnessError(
            "--baseline-answers and --candidate-answers go together: give both, one file per "
            "side (the same file twice when the answers were graded once)"
        )
    if k is not None and k < 1:
        raise HarnessError(f"--answers-k must be 1 or more, not {k}")
    known = gold.by_id.keys()
    return (read_grades(baseline, known=known, named="--baseline-answers"),
            read_grades(candidate, known=known, named="--candidate-answers"))


def with_twobytwo(
    comparison: Comparison,
    gold: GoldSet,
    runs: Sequence[RefRun],
    grades: tuple[Grades, Grades] | None,
    k: int | None,
) -> Comparison:
    """The comparison with both sides' 2x2 at cutoff `k` (default: the comparison's first) and
    the movement matrix, when grades were given."""
    from harness.verdict.twobytwo import movement, two_by_two

    if grades is None:
        return comparison
    cutoff = k or comparison.settings.k[0]
    tables = [
        two_by_two(
            gold,
            run,
            side.correct,
            cutoff,
            rel_level=comparison.settings.rel_level,
            answers=Path(side.source).name,
        )
        for side, run in zip(grades, runs, strict=True)
    ]
    return replace(comparison, twobytwo=movement(*tables))

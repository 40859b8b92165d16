"""One bisection step's comparison read as good, bad or skip: pure, no I/O.

    criterion = Criterion(metric="hit@5")      # or Criterion(latency=True), or Criterion()
    judgement = judge(comparison, (good_run, commit_run), criterion)

The step compared a commit (candidate) against the good end (baseline) under the statistics of
`harness compare`.  Its mark is read from one verdict: the row of `--metric` in the overall
scope, the latency verdict with `--latency`, else the quality verdict.  REGRESSED is bad;
IMPROVED and "no measurable difference" are good; INCONCLUSIVE, NOT_COMPARED and an invalid
comparison are skip (`git bisect skip`: never a guess).  With `improvement` the change sought is
a step up (`harness watch` on a confirmed improvement): IMPROVED is the "bad" mark (the commit
has the change), "no measurable difference" good, anything else skip.  A good end that could not
be measured is said apart (`good_end_failed`): no later step can do better, and the bisection
ends invalid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.bisect.walk import Mark
from harness.values.types import RefRun, Verdict
from harness.verdict.comparison import Comparison
from harness.verdict.validity import run_failures

_MARKS = {
    Verdict.REGRESSED: Mark.BAD,
    Verdict.IMPROVED: Mark.GOOD,
    Verdict.NO_DIFFERENCE: Mark.GOOD,
}
# Seeking the commit that improved (`harness watch` on a confirmed step up): "improved" is the
# change looked for; a step that regressed is neither side of it, so skipped.
_IMPROVEMENT_MARKS = {
    Verdict.IMPROVED: Mark.BAD,
    Verdict.NO_DIFFERENCE: Mark.GOOD,
}


@dataclass(frozen=True)
class Criterion:
    """What decides a step: a metric's row, the latency verdict, or else the quality verdict."""

    metric: str | None = None
    latency: bool = False
    improvement: bool = False  # look for the commit that improved it (its mark is "bad")

    def __post_init__(self) -> None:
        if self.latency and self.metric is not None:
            raise ValueError("a bisection decides on one metric or on latency, not both")

    def __str__(self) -> str:
        what = "latency" if self.latency else self.metric or "the quality verdict"
        return f"{what} (improvement)" if self.improvement else what


@dataclass(frozen=True)
class Judgement:
    """A step's mark, the verdict it was read from, why, and the values along the path: the
    metric (or p50 latency in ms) at the good end and at the commit, when measured."""

    mark: Mark
    verdict: Verdict
    reason: str
    good_value: float | None = None
    value: float | None = None
    good_end_failed: bool = False


def judge(comparison: Comparison, runs: Sequence[RefRun], criterion: Criterion) -> Judgement:
    """The mark of one step (see the module)."""
    good_run, commit_run = runs
    if not comparison.valid:
        failed = bool(good_run.build_failure) or (
            bool(run_failures("good end", good_run)) and not run_failures("commit", commit_run)
        )
        reason = comparison.invalid_reasons[0]
        return Judgement(Mark.SKIP, Verdict.INVALID, reason, good_end_failed=failed)
    if criterion.latency:
        latency = comparison.latency
        verdict, reason = comparison.verdict_latency, comparison.latency_reason or latency.words
        good = latency.baseline.p50 if latency.baseline is not None else None
        value = latency.candidate.p50 if latency.candidate is not None else None
    else:
        name = criterion.metric or _headline_metric(comparison)
        row = comparison.overall.row(name)
        if row is None:  # the CLI adds --metric to the compared metrics: not reached
            known = ", ".join(r.metric for r in comparison.overall.rows)
            raise ValueError(f"the comparison has no row {name!r}; it has {known}")
        good, value = row.baseline, row.candidate
        if criterion.metric is None:
            verdict, reason = comparison.verdict_quality, comparison.quality_reason
        else:
            verdict = row.verdict
            reason = f"{row.metric}: {row.baseline:.3f} -> {row.candidate:.3f} ({row.reason})"
    marks = _IMPROVEMENT_MARKS if criterion.improvement else _MARKS
    return Judgement(marks.get(verdict, Mark.SKIP), verdict, reason, good, value)


def _headline_metric(comparison: Comparison) -> str:
    """The quality verdict's first decisive row (hit@ the first cutoff): its value is drawn."""
    return f"hit@{comparison.settings.k[0]}"

"""The bisection loop: compare the commit `walk` picks against the good end until one is left.

    bisection = bisect(good, bad, path, criterion, compare_step, on_step=print_line)

`compare_step(commit)` is the caller's (`harness compare`'s orchestration, passed up from the
CLI): it measures the good end and `commit` together, as compare does, and returns the
Comparison, both RefRuns and where it was saved.  Each result is judged (`harness.bisect.judge`)
and marked; when the walk ends on the bad end without having compared it, the bad end is compared
too (the "confirm" step), so the first bad commit always comes with a verdict of its own and a
bad end that shows no regression ends "not found", never a made-up answer.

Outcomes: FOUND (one commit), AMBIGUOUS (skips left several: all listed), NOT_FOUND (the bad end
shows no regression against the good end, or could not tell), INVALID (the good end could not be
measured, or no step could).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.bisect.judge import Criterion, Judgement, judge
from harness.bisect.walk import Mark, candidates, next_index
from harness.values.types import RefRun
from harness.verdict.comparison import Comparison


class Outcome(enum.StrEnum):
    FOUND = "found"
    AMBIGUOUS = "ambiguous"
    NOT_FOUND = "not found"
    INVALID = "invalid"


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str

    @property
    def short(self) -> str:
        return self.sha[:8]


@dataclass(frozen=True)
class StepResult:
    """What one compare of the good end and a commit gave (the caller's `compare_step`)."""

    comparison: Comparison
    runs: tuple[RefRun, RefRun]
    saved: Path | None = None


@dataclass(frozen=True)
class Step:
    """One compare of the bisection: the commit, its place on the path (1 = just after the good
    end), and its judgement; `confirm` when it was the bad end, compared last."""

    number: int
    commit: Commit
    position: int
    judgement: Judgement
    saved: str | None = None
    confirm: bool = False


@dataclass(frozen=True)
class Bisection:
    good: Commit
    bad: Commit
    path: tuple[Commit, ...]  # after the good end up to the bad end, oldest first
    criterion: Criterion
    steps: tuple[Step, ...]
    outcome: Outcome
    culprits: tuple[Commit, ...]  # FOUND: the first bad commit; AMBIGUOUS: every one it may be
    reason: str

    @property
    def first_bad(self) -> Step | None:
        """The step that compared the first bad commit, when one was found."""
        if self.outcome is not Outcome.FOUND:
            return None
        sha = self.culprits[0].sha
        return next(s for s in reversed(self.steps) if s.commit.sha == sha)

    @property
    def skips(self) -> int:
        return sum(1 for s in self.steps if s.judgement.mark is Mark.SKIP)


CompareStep = Callable[[Commit], StepResult]


def bisect(
    good: Commit,
    bad: Commit,
    path: Sequence[Commit],
    criterion: Criterion,
    compare_step: CompareStep,
    *,
    on_step: Callable[[Step, int], None] | None = None,
) -> Bisection:
    """Walk `path` (see the module); `on_step(step, left)` as each step is judged, `left` the
    commits the first bad one can still be."""
    commits = tuple(path)
    n = len(commits)
    marks: dict[int, Mark] = {}
    steps: list[Step] = []

    def run(index: int, confirm: bool = False) -> Step:
        result = compare_step(commits[index])
        judgement = judge(result.comparison, result.runs, criterion)
        step = Step(
            len(steps) + 1,
            commits[index],
            index + 1,
            judgement,
            None if result.saved is None else str(result.saved),
            confirm,
        )
        steps.append(step)
        marks[index] = judgement.mark
        if on_step is not None:
            on_step(step, len(candidates(n, marks)))
        return step

    def done(outcome: Outcome, culprits: Sequence[int], reason: str) -> Bisection:
        return Bisection(
            good,
            bad,
            commits,
            criterion,
            tuple(steps),
            outcome,
            tuple(commits[i] for i in culprits),
            reason,
        )

    while (index := next_index(n, marks)) is not None:
        step = run(index)
        if step.judgement.good_end_failed:
            return done(
                Outcome.INVALID,
                (),
                f"the good end {good.short} could not be measured: {step.judgement.reason}",
            )
    left = candidates(n, marks)
    if left[-1] == n - 1 and n - 1 not in marks:  # the bad end, on the user's word only
        step = run(n - 1, confirm=True)
        if step.judgement.good_end_failed:
            return done(
                Outcome.INVALID,
                (),
                f"the good end {good.short} could not be measured: {step.judgement.reason}",
            )
        if step.judgement.mark is Mark.GOOD:
            return done(
                Outcome.NOT_FOUND,
                (),
                f"the bad end {bad.short} shows no regression of {criterion} against the good "
                f"end ({step.judgement.verdict}): there is no first bad commit to find",
            )
        if step.judgement.mark is Mark.SKIP:
            if all(marks[i] is Mark.SKIP for i in marks):
                return done(
                    Outcome.INVALID, (), f"no step could be measured: {step.judgement.reason}"
                )
            return done(
                Outcome.NOT_FOUND,
                (),
                f"the bad end {bad.short} could not be judged ({step.judgement.verdict}): "
                f"{step.judgement.reason}",
            )
    if len(left) == 1:
        found = next(s for s in reversed(steps) if s.position == left[0] + 1)
        return done(
            Outcome.FOUND,
            left,
            f"{found.commit.short} is the first bad commit: {found.judgement.reason}",
        )
    return done(
        Outcome.AMBIGUOUS,
        left,
        f"only skipped commits are left: the first bad commit is one of {len(left)} "
        f"({', '.join(commits[i].short for i in left)})",
    )

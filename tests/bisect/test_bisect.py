"""harness bisect, fast: git bisect's rule (`harness.bisect.walk`) against an oracle over every
path length and culprit, the loop's outcomes with each step's judgement stubbed (found, ambiguous,
not found, invalid and their exit statuses), and bad input on a real throwaway repository (exit
2 before anything is built).  The end-to-end bisection is tests/bisect/test_bisect_e2e.py."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from bisect_support import bisect_sandbox
from hypothesis import given
from hypothesis import strategies as st

from harness.bisect import run as bisect_run
from harness.bisect.judge import Criterion, Judgement
from harness.bisect.render import bisection_document, render_bisection
from harness.bisect.run import Bisection, Commit, Outcome, StepResult, bisect
from harness.bisect.walk import Mark, candidates, next_index
from harness.cli.exits import bisect_status
from harness.values.types import Verdict


def walk(n: int, first_bad: int) -> tuple[int, list[int]]:
    """Run the rule against an oracle: index >= first_bad is bad."""
    marks: dict[int, Mark] = {}
    while (i := next_index(n, marks)) is not None:
        marks[i] = Mark.BAD if i >= first_bad else Mark.GOOD
    return len(marks), list(candidates(n, marks))


@pytest.mark.parametrize("n", range(1, 41))
def test_every_culprit_is_found_in_ceil_log2_n_compares(n: int) -> None:
    for first_bad in range(n):
        steps, left = walk(n, first_bad)
        assert left == [first_bad]
        # The bad end is bad on the user's word: n candidates, ceil(log2 n) compares at most.
        assert steps <= math.ceil(math.log2(n)), (n, first_bad, steps)


@given(st.integers(2, 64), st.data())
def test_skips_cost_one_compare_each_and_never_a_guess(n: int, data: Any) -> None:
    first_bad = data.draw(st.integers(0, n - 1))
    skipped = frozenset(data.draw(st.sets(st.integers(0, n - 2), max_size=4)))
    marks: dict[int, Mark] = {}
    while (i := next_index(n, marks)) is not None:
        marks[i] = Mark.SKIP if i in skipped else Mark.BAD if i >= first_bad else Mark.GOOD
    left = candidates(n, marks)
    assert first_bad in left  # never a wrong answer
    # Several answers only when every other candidate was skipped: exactly those and the last.
    assert all(i in skipped for i in left[:-1])
    skips = sum(m is Mark.SKIP for m in marks.values())
    # Each skip is one compare more, and can unbalance one split (one more, once at most).
    assert len(marks) <= math.ceil(math.log2(n)) + skips + (1 if skips else 0)


# --------------------------------------------------------------------------- the loop


COMMITS = [Commit(f"{n:040x}", f"commit {n}") for n in range(1, 9)]
GOOD = Commit("0" * 40, "the good end")


def bisection(
    monkeypatch: pytest.MonkeyPatch, judgements: Mapping[int, Judgement], default: Judgement
) -> Bisection:
    """bisect over COMMITS (the good end before them), each step's judgement the one of its
    commit's position (1-based) in `judgements`, else `default`."""
    positions = {c.sha: i for i, c in enumerate(COMMITS, start=1)}

    def judged(comparison: Any, runs: Any, criterion: Any) -> Judgement:
        return judgements.get(positions[comparison], default)

    monkeypatch.setattr(bisect_run, "judge", judged)
    asked: list[str] = []

    def step(commit: Commit) -> StepResult:
        asked.append(commit.sha)
        return StepResult(commit.sha, (None, None))  # type: ignore[arg-type]

    result = bisect(GOOD, COMMITS[-1], COMMITS, Criterion("hit@5"), step)
    assert len(asked) == len(result.steps) == len(set(asked))  # no commit compared twice
    return result


BAD = Judgement(Mark.BAD, Verdict.REGRESSED, "hit@5: 1.000 -> 0.700", 1.0, 0.7)
FINE = Judgement(Mark.GOOD, Verdict.NO_DIFFERENCE, "hit@5: 1.000 -> 1.000", 1.0, 1.0)
UNSURE = Judgement(Mark.SKIP, Verdict.INCONCLUSIVE, "too few queries")
BROKEN = Judgement(Mark.SKIP, Verdict.INVALID, "candidate: build failed")


def test_found_comes_with_the_culprits_own_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    result = bisection(monkeypatch, {p: BAD for p in range(5, 9)}, FINE)
    assert result.outcome is Outcome.FOUND and result.culprits == (COMMITS[4],)
    assert result.first_bad is not None and result.first_bad.judgement is BAD
    assert bisect_status(result.outcome) == 0
    assert "first bad commit: " + COMMITS[4].sha in render_bisection(result, "text")


def test_a_culprit_at_the_bad_end_is_compared_there(monkeypatch: pytest.MonkeyPatch) -> None:
    result = bisection(monkeypatch, {8: BAD}, FINE)
    assert result.outcome is Outcome.FOUND and result.culprits == (COMMITS[7],)
    assert result.steps[-1].confirm and result.steps[-1].judgement is BAD


def test_a_bad_end_without_regression_is_not_found(monkeypatch: pytest.MonkeyPatch) -> None:
    result = bisection(monkeypatch, {}, FINE)
    assert result.outcome is Outcome.NOT_FOUND and result.culprits == ()
    assert "no regression" in result.reason
    assert bisect_status(result.outcome) == 1


def test_skips_around_the_culprit_leave_it_ambiguous(monkeypatch: pytest.MonkeyPatch) -> None:
    # Commits 4 and 5 cannot be judged, 6 on are bad: the first bad is one of 4, 5, 6.
    judgements = {4: UNSURE, 5: BROKEN, **{p: BAD for p in range(6, 9)}}
    result = bisection(monkeypatch, judgements, FINE)
    assert result.outcome is Outcome.AMBIGUOUS
    assert result.culprits == (COMMITS[3], COMMITS[4], COMMITS[5])
    text = render_bisection(result, "text")
    assert "could be any of" in text and all(c.sha in text for c in result.culprits)
    assert bisect_status(result.outcome) == 1
    document = bisection_document(result)
    assert [s["mark"] for s in document["steps"]].count("skip") == 2


def test_a_good_end_that_cannot_be_measured_ends_invalid(monkeypatch: pytest.MonkeyPatch) -> None:
    failed = Judgement(Mark.SKIP, Verdict.INVALID, "baseline: build failed", good_end_failed=True)
    result = bisection(monkeypatch, {}, failed)
    assert result.outcome is Outcome.INVALID and len(result.steps) == 1
    assert bisect_status(result.outcome) == 3


def test_no_step_measured_ends_invalid(monkeypatch: pytest.MonkeyPatch) -> None:
    result = bisection(monkeypatch, {}, BROKEN)
    assert result.outcome is Outcome.INVALID
    assert bisect_status(result.outcome) == 3


# --------------------------------------------------------------------------- bad input


@pytest.fixture(scope="module")
def small_repo(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return bisect_sandbox(tmp_path_factory.mktemp("bisect") / "s", commits=3, regress_at=None)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--good", "main", "--bad", "main"], "are the same commit"),
        (["--good", "main", "--bad", "GOOD"], "is an ancestor of --good"),
        (["--good", "nosuchref", "--bad", "main"], "unknown ref 'nosuchref'"),
        (["--good", "GOOD", "--bad", "main", "--metric", "hit@five"], "--metric: "),
        (["--good", "GOOD", "--bad", "main", "--metric", "hit@5", "--latency"], "not allowed"),
    ],
)
def test_bad_input_is_exit_2_before_anything_boots(
    small_repo: Any, argv: list[str], says: str
) -> None:
    sandbox, shas = small_repo
    argv = [shas[0] if a == "GOOD" else a for a in argv]
    done = sandbox.harness("bisect", *argv, "-q")
    assert done.returncode == 2, done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr
    if "nosuchref" in argv:
        assert "harness: error: --good nosuchref: " in done.stderr  # the option that named it
    assert sandbox.boots() == 0


def test_a_good_end_off_the_first_parent_line_is_refused(tmp_path: Path) -> None:
    from e2e_support import git

    sandbox, shas = bisect_sandbox(tmp_path / "s", commits=2, regress_at=None)
    repo, home = sandbox.repo, sandbox.home
    git(repo, "checkout", "--quiet", "-b", "side", shas[0], home=home)
    (repo / "side.txt").write_text("side\n")
    git(repo, "add", "side.txt", home=home)
    git(repo, "commit", "--quiet", "-m", "on the side", home=home)
    git(repo, "checkout", "--quiet", "main", home=home)
    git(repo, "merge", "--quiet", "--no-ff", "-m", "merge side", "side", home=home)
    done = sandbox.harness("bisect", "--good", "side", "--bad", "main", "-q")
    assert done.returncode == 2, done.stderr
    assert "is not on the first-parent history" in done.stderr


# --------------------------------------------------------------------------- judging a step


def _judged(criterion: Criterion, **candidate_kw: Any) -> Judgement:
    from compare_support import FAST, candidate, make_gold, make_run, ranks

    from harness.bisect.judge import judge
    from harness.verdict.decide import compare

    gold = make_gold()
    rank = candidate_kw.pop("rank", ranks())
    base_kw = candidate_kw.pop("base", {})
    base = make_run(gold, ranks(), **base_kw)
    cand = candidate(gold, rank, **candidate_kw)
    return judge(compare(gold, base, cand, FAST), (base, cand), criterion)


def test_a_step_is_read_from_the_verdict_it_is_asked_for() -> None:
    from compare_support import buried, ranks

    from harness.values.types import RunFailure

    worse = ranks(buried(*range(1, 21)))
    assert _judged(Criterion("hit@5"), rank=worse).mark is Mark.BAD
    assert _judged(Criterion("hit@5")).mark is Mark.GOOD
    assert _judged(Criterion()).verdict is Verdict.NO_DIFFERENCE  # the quality verdict
    slow = _judged(Criterion(latency=True), ms=lambda _r, _q: 40.0)
    assert slow.mark is Mark.BAD and slow.value is not None and slow.value > 30
    # Not measured together: no latency verdict, a skip, never a guess.
    apart = _judged(Criterion(latency=True), pair_id=None, reused=True)
    assert apart.mark is Mark.SKIP and apart.verdict is Verdict.NOT_COMPARED
    broken = _judged(Criterion("hit@5"), build_failure=RunFailure("build", "exit 1"))
    assert broken.mark is Mark.SKIP and broken.verdict is Verdict.INVALID
    assert not broken.good_end_failed
    good_end = _judged(Criterion("hit@5"), base={"build_failure": RunFailure("build", "exit 1")})
    assert good_end.mark is Mark.SKIP and good_end.good_end_failed

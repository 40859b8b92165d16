"""Which repeats of a run are used, and every reason a comparison of two runs is invalid.

Part of `harness.verdict.compare` (its docstring states every rule); pure.  `harness gate` and
`harness threshold` use the same usable repeats, and the gate the same failures and errored
answers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from harness.types import GoldSet, QueryResult, RefRun, Repeat
from harness.verdict.comparison import CompareSettings

_SIDES = ("baseline", "candidate")
# A failed teardown still collected every answer: a warning, not a reason to throw them away.
_WARNING_STAGES = frozenset({"teardown"})
_SHOWN_IDS = 5


def usable(run: RefRun) -> tuple[Repeat, ...]:
    """The repeats whose answers are used: none after a build failure, else every repeat that
    did not fail, or failed only at teardown."""
    if run.build_failure is not None:
        return ()
    return tuple(
        rep for rep in run.repeats if rep.failure is None or rep.failure.stage in _WARNING_STAGES
    )


def _label(side: str, run: RefRun) -> str:
    return f"{side} {run.ref} ({run.sha[:8]})"


def run_failures(label: str, run: RefRun) -> list[str]:
    """Why `run` cannot be used, each line starting with `label`: a failed build, no repeats,
    and every repeat that failed at any stage but teardown (with its log, when there is one)."""
    reasons = []
    if run.build_failure is not None:
        reasons.append(f"{label}: build failed: {run.build_failure.message}")
    elif not run.repeats:
        reasons.append(f"{label}: no repeats were run; run it with --repeats 1 or more")
    for rep in run.repeats:
        if rep.failure is not None and rep.failure.stage not in _WARNING_STAGES:
            log = f"; see {rep.log_path}" if rep.log_path else ""
            reasons.append(
                f"{label}: repeat {rep.index + 1} failed at {rep.failure.stage}: "
                f"{rep.failure.message}{log}"
            )
    return reasons


def errored_problems(
    gold: GoldSet, run: RefRun, label: str, max_errors: int, *, examples: bool = True
) -> tuple[list[str], list[str]]:
    """The errored answers of `run` as (invalid, warnings): one line starting with `label`,
    invalid beyond `max_errors`, else a warning.  Counted over the usable repeats, by kind (an
    ErrorKind value, or "missing" for a gold query with no recorded answer); with `examples`,
    the first query ids concerned are named too."""
    kinds: Counter[str] = Counter()
    ids: dict[str, None] = {}
    for answers in map(by_query, usable(run)):
        for q in gold.queries:
            result = answers.get(q.id)
            kind = "missing" if result is None else result.error and result.error.value
            if kind:
                kinds[kind] += 1
                ids[q.id] = None
    errored = sum(kinds.values())
    if not errored:
        return [], []
    counts = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items()))
    if examples:
        some = list(ids)[:_SHOWN_IDS]
        counts += f"; e.g. {', '.join(some)}" + (", ..." if len(ids) > _SHOWN_IDS else "")
    what = f"{label}: {errored} errored answer{'s' * (errored != 1)} ({counts})"
    if errored > max_errors:
        hint = "see the service log, or raise compare.max_errors"
        return [f"{what} exceed max_errors = {max_errors}; {hint}"], []
    return [], [f"{what}, within max_errors; those queries are left out"]


def check(
    gold: GoldSet, runs: Sequence[RefRun], settings: CompareSettings
) -> tuple[list[str], list[str]]:
    """(why the comparison of `runs` (baseline, candidate) is invalid, warnings): failed builds
    and repeats, errored answers over max_errors, gold hashes that differ."""
    invalid: list[str] = []
    warnings: list[str] = []
    for side, run in zip(_SIDES, runs, strict=True):
        label = _label(side, run)
        invalid += run_failures(label, run)
        for rep in run.repeats:
            if not rep.teardown_confirmed or (rep.failure and rep.failure.stage == "teardown"):
                warnings.append(
                    f"{label}: repeat {rep.index + 1}: teardown was not confirmed; "
                    "a process may be left over"
                )
        too_many, within = errored_problems(gold, run, label, settings.max_errors)
        invalid += too_many
        warnings += within
        if run.gold_hash != gold.hash:
            invalid.append(
                f"{label} was measured against gold {run.gold_hash[:12]}, not the gold set given "
                f"({gold.hash[:12]}); re-run it with --fresh"
            )
    if runs[0].gold_hash != runs[1].gold_hash:
        invalid.append(
            f"baseline and candidate were measured against different gold sets "
            f"({runs[0].gold_hash[:12]} vs {runs[1].gold_hash[:12]}); re-run both with --fresh"
        )
    return invalid, warnings


def by_query(rep: Repeat) -> dict[str, QueryResult]:
    """A repeat's answers by query id."""
    return {r.query_id: r for r in rep.results}


# --------------------------------------------------------------------------- per-side data

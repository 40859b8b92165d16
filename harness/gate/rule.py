"""The gate's rule: every scope and gated metric of the baseline against a fresh measurement,
and the outcome (`harness.gate` states the rule); `update` for --update-baseline. Pure.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from harness.gate.measure import Baseline, Measured, ScopeValues, rounded
from harness.gate.paired import tested_rows
from harness.gate.rows import GateRow
from harness.score.definition import differing
from harness.values.types import FloorRow

DEFAULT_METRICS = ("mrr@10", "recall@10")
NOISE_RULE_TEXT = (
    "rule: a row fails when it drops by more than its tolerance, max(noise recorded, noise now) "
    "(0 with --strict), falls to zero, or its slice vanishes"
)


class Outcome(enum.StrEnum):
    """What the gate concluded; the CLI maps each to its exit status."""

    PASS = "pass"
    FAIL = "fail"
    NOT_COMPARABLE = "not comparable"
    INVALID = "invalid"
    UPDATED = "updated"  # --update-baseline: the rows are the before -> after table
    NOT_SHOWN = "not shown"  # --non-inferior: a margin not shown, nothing worse: never a pass


@dataclass(frozen=True)
class GateResult:
    outcome: Outcome
    reason: str
    rows: tuple[GateRow, ...]
    strict: bool
    details: tuple[str, ...] = ()  # invalid reasons, warnings, what differs
    baseline_sha: str | None = None
    ref: str = ""
    sha: str | None = None
    floors: tuple[FloorRow, ...] = ()  # [gate.floors], checked on the run (harness.gate.floors)
    definition: str | None = None  # the evaluation-definition sha256 of the run gated
    # The rule that decided, in words (render shows it); "" when none did (not comparable,
    # invalid, --update-baseline): no rule is named that was not applied.
    rule: str = ""

    @property
    def failing(self) -> tuple[GateRow, ...]:
        return tuple(r for r in self.rows if r.failed)


def with_floors(result: GateResult, floors: Sequence[FloorRow]) -> GateResult:
    """`result` carrying the floors; a pass becomes a fail when a floor is not met (a fail,
    not comparable or invalid stays what it is; --update-baseline only reports them)."""
    failed = sum(not f.passed for f in floors)
    result = replace(result, floors=tuple(floors))
    if not failed:
        return result
    words = f"{failed} floor{'s' * (failed != 1)} of [gate.floors] not met"
    if result.outcome in (Outcome.PASS, Outcome.NOT_SHOWN):
        return replace(result, outcome=Outcome.FAIL, reason=words)
    if result.outcome is Outcome.FAIL:
        return replace(result, reason=f"{result.reason}; {words}")
    return result


def _row(
    scope: str, metric: str, before: ScopeValues, after: ScopeValues | None, strict: bool
) -> GateRow:
    b = rounded(before.values[metric])
    if after is None or after.n == 0:
        return GateRow(scope, metric, b, None, None, "vanished")
    a = rounded(after.values[metric])
    tolerance = 0.0 if strict else rounded(max(before.noise[metric], after.noise[metric]))
    change = rounded(a - b)
    if b > 0 and a == 0:
        status = "fell to zero"
    elif -change > tolerance:
        status = "dropped"
    elif change > tolerance:
        status = "improved"
    else:
        status = "ok"
    return GateRow(scope, metric, b, a, tolerance, status)


def rows(
    before: Baseline | None, after: Baseline, metrics: Sequence[str], strict: bool
) -> list[GateRow]:
    """Every gate row, the baseline's scopes first (overall, then slices by name), then scopes
    only `after` has ("new", never a failure); with no baseline at all, every row is new."""
    out = []
    if before is not None:
        out += [
            _row(scope, m, values, after.scope(scope), strict)
            for scope in before.scopes
            if (values := before.scope(scope)) is not None
            for m in metrics
        ]
    known = set(before.scopes) if before is not None else set()
    for scope in after.scopes:
        values = after.scope(scope)
        if scope not in known and values is not None:
            out += [
                GateRow(scope, m, None, rounded(values.values[m]), None, "new") for m in metrics
            ]
    return out


@dataclass(frozen=True)
class Statistics:
    """What compare decides with, for the gate to decide the same way (`harness.gate.paired`):
    alpha and seed (compare.alpha, compare.seed), each query's slice, and --max-drop."""

    alpha: float = 0.05
    seed: int = 0
    slice_of: Mapping[str, str] = field(default_factory=dict)
    max_drop: float | None = None
    margins: Mapping[str, float] = field(default_factory=dict)  # --non-inferior, per metric


TESTED_RULE = (
    "rule: a row fails when compare's paired test calls it regressed (McNemar exact or "
    "sign-flip for hit@k, randomization test and bootstrap CI otherwise, Holm-adjusted as compare "
    "does), falls to zero, or its slice vanishes{drop}; a change the test cannot tell from noise "
    "passes"
)
NOISE_RULE = NOISE_RULE_TEXT
MARGIN_RULE = (
    "; a row with a margin (--non-inferior, overall rows) passes only when its one-sided "
    "interval shows it not worse than the baseline by more than the margin"
)
_NO_MARGINS = (
    "--non-inferior needs compare's paired rows: per-query values in the baseline file "
    "(record it again with --update-baseline) and no --strict; nothing was shown, and this is "
    "not a pass"
)
_NO_PER_QUERY = (
    "the baseline file holds no per-query values (written by an older harness): the noise rule "
    "applies; record it again with --update-baseline to decide with compare's paired test"
)


def check(
    recorded: Baseline,
    now: Measured,
    *,
    strict: bool = False,
    metrics: Sequence[str] | None = None,
    statistics: Statistics | None = None,
) -> GateResult:
    """Apply the rule `harness.gate` states; `metrics` default to the baseline's.  With
    `statistics` and per-query values on both sides (not --strict), each row is decided by
    compare's paired test (`harness.gate.paired`); else by the noise rule."""
    gated = tuple(metrics) if metrics else recorded.metrics
    current = now.baseline

    def result(
        outcome: Outcome, reason: str, found: Sequence[GateRow] = (), details: Sequence[str] = ()
    ) -> GateResult:
        return GateResult(
            outcome=outcome,
            reason=reason,
            rows=tuple(found),
            strict=strict,
            details=tuple(details),
            baseline_sha=recorded.sha,
            ref=now.ref,
            sha=None if current is None else current.sha,
        )

    if current is None:
        reason = "the run is invalid, so nothing can be gated (this is not a pass)"
        return result(Outcome.INVALID, reason, details=now.invalid)
    if current.gold_hash != recorded.gold_hash:
        reason = (
            f"the gold set changed since the baseline was recorded (sha256 "
            f"{recorded.gold_hash[:12]} then, {current.gold_hash[:12]} now): the numbers are not "
            "comparable, and this is not a pass"
        )
        hint = "measure the base branch again with --update-baseline on the new gold set"
        return result(Outcome.NOT_COMPARABLE, reason, details=(hint,))
    if recorded.definition is not None and current.definition is not None:
        differ = differing(recorded.definition, current.definition)
        if differ:
            reason = (
                f"the evaluation definition changed since the baseline was recorded "
                f"({'; '.join(differ)}: sha256 {recorded.definition.sha256[:12]} then, "
                f"{current.definition.sha256[:12]} now): not comparable, and this is not a pass"
            )
            hint = "measure the base branch again with --update-baseline under the new definition"
            return result(Outcome.NOT_COMPARABLE, reason, details=(hint,))
    missing = [m for m in gated if m not in recorded.metrics or m not in current.metrics]
    if missing:
        reason = (
            f"the baseline holds {', '.join(recorded.metrics)}, not {', '.join(missing)}: "
            "not comparable, and this is not a pass"
        )
        hint = f"record them: --update-baseline --metrics {','.join(gated)}"
        return result(Outcome.NOT_COMPARABLE, reason, details=(hint,))
    tested = (
        statistics is not None and not strict and bool(recorded.per_query and current.per_query)
    )
    notes = list(now.warnings)
    if tested:
        assert statistics is not None
        found = tested_rows(
            recorded,
            current,
            gated,
            statistics.slice_of,
            alpha=statistics.alpha,
            seed=statistics.seed,
            max_drop=statistics.max_drop,
            margins=statistics.margins,
        )
        found += [r for r in rows(recorded, current, gated, strict) if r.status == "new"]
        drop = "" if statistics.max_drop is None else f" (--max-drop {statistics.max_drop:g})"
        rule = f"compare's paired test at alpha = {statistics.alpha:g}{drop}"
        text = TESTED_RULE.format(
            drop=""
            if statistics.max_drop is None
            else f", or it drops by more than --max-drop {statistics.max_drop:g}"
        ) + (MARGIN_RULE if statistics.margins else "")
        if statistics.margins:
            rule += ", margins " + ", ".join(f"{m} -{v:g}" for m, v in statistics.margins.items())
    else:
        found = rows(recorded, current, gated, strict)
        rule = "zero tolerance (--strict)" if strict else "beyond the noise"
        text = NOISE_RULE
        if statistics is not None and not strict and not recorded.per_query:
            notes.append(_NO_PER_QUERY)
    if statistics is not None and statistics.margins and not tested:
        return replace(result(Outcome.NOT_SHOWN, _NO_MARGINS, found, notes), rule=text)
    failing = [r for r in found if r.failed]
    if failing and all(r.unshown for r in failing):
        n = len(failing)
        reason = (
            f"{n} row{'s' * (n != 1)} not shown within {'their margins' if n > 1 else 'its margin'}"
            f" ({rule}): nothing fell, but not worse was not shown, and this is not a pass"
        )
        return replace(result(Outcome.NOT_SHOWN, reason, found, notes), rule=text)
    if failing:
        n = len(failing)
        reason = f"{n} row{'s' * (n != 1)} fell below the baseline ({rule})"
        return replace(result(Outcome.FAIL, reason, found, notes), rule=text)
    reason = f"no row fell below the baseline ({rule})"
    if statistics is not None and statistics.margins:
        reason = f"every margin shown not worse, and no row fell ({rule})"
    if any(r.status == "improved" for r in found):
        reason += "; some improved: --update-baseline records them"
    return replace(result(Outcome.PASS, reason, found, notes), rule=text)


def update(recorded: Baseline | None, now: Measured) -> GateResult:
    """What --update-baseline shows: the new values against the old file's, rule applied for
    information only (outcome UPDATED), or INVALID when the run cannot become a baseline."""
    current = now.baseline
    if current is None:
        reason = "the run is invalid: the baseline file was left as it was"
        return GateResult(Outcome.INVALID, reason, (), False, now.invalid, None, now.ref)
    comparable = recorded is not None and recorded.gold_hash == current.gold_hash
    before = recorded if comparable else None
    common = [m for m in current.metrics if before is not None and m in before.metrics]
    found = rows(before, current, common, strict=False) if common else []
    found += rows(None, current, [m for m in current.metrics if m not in common], strict=False)
    details = list(now.warnings)
    if recorded is not None and not comparable:
        details.append(
            f"the gold set changed (sha256 {recorded.gold_hash[:12]} -> {current.gold_hash[:12]}): "
            "the old numbers are not comparable and are not shown"
        )
    moved = sum(r.status != "ok" for r in found)
    reason = f"the baseline now records {current.sha[:8]}: " + (
        f"{moved} of {len(found)} rows moved beyond the noise or are new"
        if recorded is not None
        else f"a new baseline of {len(found)} rows"
    )
    return GateResult(
        Outcome.UPDATED,
        reason,
        tuple(found),
        False,
        tuple(details),
        None if recorded is None else recorded.sha,
        now.ref,
        current.sha,
    )


def gated_metrics(chosen: Sequence[str] | None, recorded: Baseline | None) -> tuple[str, ...]:
    """The metrics to measure: those chosen (--metrics), else the baseline file's, else
    DEFAULT_METRICS for a baseline about to be written for the first time."""
    if chosen:
        return tuple(chosen)
    return recorded.metrics if recorded is not None else DEFAULT_METRICS


def conclude(
    recorded: Baseline | None,
    now: Measured,
    *,
    update_baseline: bool = False,
    strict: bool = False,
    metrics: Sequence[str] | None = None,
    statistics: Statistics | None = None,
) -> GateResult:
    """`update` when asked to (--update-baseline) or when there is no baseline yet, else
    `check` against the recorded baseline."""
    if update_baseline or recorded is None:
        result = update(recorded, now)
    else:
        result = check(recorded, now, strict=strict, metrics=metrics, statistics=statistics)
    if now.baseline is not None and now.baseline.definition is not None:
        result = replace(result, definition=now.baseline.definition.sha256)
    return result

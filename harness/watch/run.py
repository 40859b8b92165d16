"""From a branch's history to confirmed changes: scan each series, confirm each flag by a fresh
paired compare, bisect inside a confirmed step's range.

    result = watch(path, series, detections, compare_pair)

`path` is the branch's first-parent commits looked at, oldest first; `series` one per metric and
one for latency (`harness.watch.series`), over the commits measured; `detections` the scan's
settings per series (its band); `compare_pair(before, after)` is the caller's: it measures both
commits together, exactly as `harness compare --baseline BEFORE --candidate AFTER` does, and
returns a `harness.bisect.run.StepResult` (cached by the pair: a range flagged by several series
is compared once, and the bisection of a range reuses the compare that confirmed it).

A flag (`harness.watch.changepoint`) is only a place to look: the levels it reads were measured
at different times.  It is reported as a change only when the confirming compare of the
measured commits on either side (a step) or at the ends of the range (a drift) calls the
series' own verdict in the flag's direction ("regressed" for a drop in quality or a rise in
latency, "improved" for the others).  A confirmed step whose range holds more than one commit is
bisected inside that range only (`harness.bisect.run.bisect`, good end the commit before, bad
end the commit after; seeking the improvement for a step up); one commit is its own culprit.  A
drift has no single culprit: its range is the finding.  Neighbouring steps of one series that
no compare called and that go one way are tried together as one drift over the range their
ramps reach (`_drifts`): a busy machine on one commit can cut a slow drift into steps.  Pure
but for what `compare_pair` does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from harness.bisect.judge import Criterion, Judgement, judge
from harness.bisect.run import Bisection, Commit, Outcome, StepResult, bisect
from harness.values.types import Verdict
from harness.watch.changepoint import Change, Detection, Kind, Series, changes

ComparePair = Callable[[Commit, Commit], StepResult]


@dataclass(frozen=True)
class Finding:
    """One flagged change, where it lies on the path, and what the fresh compare said.

    `before`/`after`: the measured commits either side of a step, or the ends of a drift;
    `commits`: how many first-parent commits the range (before, after] holds."""

    change: Change
    before: Commit
    after: Commit
    commits: int
    latency: bool
    judgement: Judgement
    saved: str | None = None
    bisection: Bisection | None = None

    @property
    def regression(self) -> bool:
        """Whether the flag points the bad way (a drop in quality, a rise in latency)."""
        return (self.change.delta > 0) if self.latency else (self.change.delta < 0)

    @property
    def confirmed(self) -> bool:
        wanted = Verdict.REGRESSED if self.regression else Verdict.IMPROVED
        return self.judgement.verdict is wanted

    @property
    def culprit(self) -> Commit | None:
        """The commit that made a confirmed step (None for a drift, or when the bisection
        could not single one out)."""
        if not self.confirmed or self.change.kind is Kind.DRIFT:
            return None
        if self.commits == 1:
            return self.after
        if self.bisection is not None and self.bisection.outcome is Outcome.FOUND:
            return self.bisection.culprits[0]
        return None


@dataclass(frozen=True)
class Watch:
    """Every finding, oldest first; `series` the names scanned; `measured` the commits of the
    path with a measurement, `path` every commit looked at."""

    path: tuple[Commit, ...]
    measured: tuple[str, ...]
    series: tuple[str, ...]
    detections: Mapping[str, Detection]
    findings: tuple[Finding, ...]

    @property
    def confirmed(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.confirmed)

    @property
    def regressions(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.confirmed if f.regression)


def _measured(template: Change, kind: Kind, j: Judgement, latency: bool) -> Change:
    """`template` as `kind` over the range a fresh compare measured, its levels the compare's
    (the metric, or p50 ms, at either end) when it gave them and they go the template's way."""
    if j.good_value is None or j.value is None or (latency and min(j.good_value, j.value) <= 0):
        return replace(template, kind=kind)
    delta = math.log(j.value / j.good_value) if latency else j.value - j.good_value
    if delta == 0 or (delta > 0) != (template.delta > 0):
        return replace(template, kind=kind)
    return replace(
        template, kind=kind, before=j.good_value, after=j.value, delta=delta, largest_jump=delta
    )


def _against(
    compared: Callable[[Commit, Commit], StepResult], good: Commit
) -> Callable[[Commit], StepResult]:
    def step(commit: Commit) -> StepResult:
        return compared(good, commit)

    return step


def criterion_for(name: str, latency: bool, improvement: bool) -> Criterion:
    if latency:
        return Criterion(latency=True, improvement=improvement)
    return Criterion(metric=name, improvement=improvement)


def watch(
    path: Sequence[Commit],
    series: Sequence[Series],
    detections: Mapping[str, Detection],
    compare_pair: ComparePair,
    *,
    latency_name: str,
) -> Watch:
    """Scan, confirm, bisect (see the module)."""
    position = {c.sha: i for i, c in enumerate(path)}
    cache: dict[tuple[str, str], StepResult] = {}

    def compared(before: Commit, after: Commit) -> StepResult:
        key = (before.sha, after.sha)
        if key not in cache:
            cache[key] = compare_pair(before, after)
        return cache[key]

    def judged(
        s: Series, before: Commit, after: Commit, criterion: Criterion
    ) -> tuple[Judgement, str | None]:
        result = compared(before, after)
        saved = None if result.saved is None else str(result.saved)
        return judge(result.comparison, result.runs, criterion), saved

    def inside(before: Commit, after: Commit) -> tuple[Commit, ...]:
        return tuple(path[position[before.sha] + 1 : position[after.sha] + 1])

    def confirm(s: Series, change: Change) -> Finding:
        before = path[position[s.shas[change.start]]]
        after = path[position[s.shas[change.end]]]
        latency = s.name == latency_name
        up = (change.delta > 0) != latency  # the good way
        criterion = criterion_for(s.name, latency, improvement=up)
        judgement, saved = judged(s, before, after, criterion)
        commits = position[after.sha] - position[before.sha]
        finding = Finding(change, before, after, commits, latency, judgement, saved)
        if finding.confirmed and change.kind is Kind.STEP and commits > 1:
            bisection = bisect(
                before, after, inside(before, after), criterion, _against(compared, before)
            )
            finding = replace(finding, bisection=bisection)
        return finding

    def settle(s: Series, f: Finding) -> list[Finding]:
        """A confirmed drift, bisected: when the first commit its compare calls is called
        against its own parent too, the drift held a step (a busy machine made the step look
        like a ramp in the levels); the step is reported with that culprit, and what is left on
        either side is tried as a drift of its own."""
        if not f.confirmed or f.change.kind is not Kind.DRIFT or f.commits < 2:
            return [f]
        criterion = criterion_for(s.name, f.latency, improvement=not f.regression)
        b = bisect(
            f.before, f.after, inside(f.before, f.after), criterion, _against(compared, f.before)
        )
        if b.outcome is not Outcome.FOUND:
            return [f]
        culprit = b.culprits[0]
        parent = path[position[culprit.sha] - 1]
        adjacent, saved = judged(s, parent, culprit, criterion)
        if adjacent.verdict is not f.judgement.verdict:
            return [f]  # no single commit did it: a drift
        found = [
            Finding(
                _measured(f.change, Kind.STEP, adjacent, f.latency),
                parent,
                culprit,
                1,
                f.latency,
                adjacent,
                saved,
                b,
            )
        ]
        for lo, hi in ((f.before, parent), (culprit, f.after)):
            if position[hi.sha] - position[lo.sha] >= 2:
                rest, saved = judged(s, lo, hi, criterion)
                if rest.verdict is f.judgement.verdict:
                    commits = position[hi.sha] - position[lo.sha]
                    change = _measured(f.change, Kind.DRIFT, rest, f.latency)
                    found.append(Finding(change, lo, hi, commits, f.latency, rest, saved))
        return found

    findings: list[Finding] = []
    for s in series:
        found = [confirm(s, change) for change in changes(s, detections[s.name])]
        findings += [g for f in _drifts(s, found, confirm) for g in settle(s, f)]
    findings.sort(key=lambda f: (position[f.before.sha], position[f.after.sha], f.change.series))
    return Watch(
        tuple(path),
        tuple(sorted({sha for s in series for sha in s.shas}, key=position.__getitem__)),
        tuple(s.name for s in series),
        dict(detections),
        tuple(findings),
    )


def _drifts(
    s: Series, found: list[Finding], confirm: Callable[[Series, Change], Finding]
) -> list[Finding]:
    """`found` with each run of neighbouring steps that no compare called, going one way, tried
    as one drift over the range their ramps reach (a load burst on one commit cuts a slow drift
    into steps whose two ends differ by far less than the drift): kept as that drift when the
    compare of its ends calls it, else as they were."""
    out: list[Finding] = []
    run: list[Finding] = []

    def flush() -> None:
        if run:
            first, last = run[0].change, run[-1].change
            start = min(f.change.reach[0] for f in run)
            end = max(f.change.reach[1] for f in run)
            if (start, end) != (first.start, last.end) or len(run) > 1:
                strongest = max(run, key=lambda f: abs(f.change.z)).change
                drift = replace(
                    strongest,
                    kind=Kind.DRIFT,
                    start=start,
                    end=end,
                    before=first.before,
                    after=last.after,
                    delta=sum(f.change.delta for f in run),
                    largest_jump=max((f.change.largest_jump for f in run), key=abs),
                    reach=(start, end),
                )
                tried = confirm(s, drift)
                if tried.confirmed:
                    out.append(tried)
                    run.clear()
                    return
            out.extend(run)
            run.clear()

    for f in found:
        alone = f.confirmed or f.change.kind is Kind.DRIFT
        if alone or (run and (run[-1].change.delta > 0) != (f.change.delta > 0)):
            flush()
        if alone:
            out.append(f)
        else:
            run.append(f)
    flush()
    return out

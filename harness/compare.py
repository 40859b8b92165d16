"""The compare stage: a gold set and two RefRuns in, a Comparison (numbers and verdicts) out.

Pure: no I/O, no clock; the only randomness is the seeded resampling inside `harness.stats`
(`CompareSettings.seed`, recorded in the Comparison).  Everything a report shows is computed here;
`harness.report` only formats it.

What is compared, and how:

- Usable repeats: a repeat whose failure is None, or whose only failure is an unconfirmed teardown
  (its answers were all collected).  Any other failed repeat (boot, ready, prepare, crashed, ...)
  or a build failure makes the comparison INVALID, as do zero repeats on a side, more errored
  answers than `max_errors` on a side (counted over every usable repeat; a gold query with no
  recorded answer counts as an error of kind "missing"), or gold hashes that differ between the
  two runs or from the gold set given.  INVALID is never "no change": both verdicts are INVALID
  and every statistic that can still be computed is shown (`Comparison.valid` is False).
- Analysed queries: the gold queries answered without error in every usable repeat of both sides
  (a query errored on one side cannot be paired).  Quality rows use the answerable ones, in gold
  order; unanswerable ones feed the no-answer rates; `outranks` pairs of analysed queries feed the
  outranks counts.  Excluded queries are listed in the header.
- hit@k (binary): per side the modal outcome over repeats (`stats.modal`: a tie is a miss); b =
  queries only the baseline hits, c = only the candidate; McNemar exact p; noise floor =
  `stats.noise_floor(alpha, drift_b, drift_c)` and the verdict from `stats.binary_verdict`.
  When the floor exceeds the number of queries the gold set is too small and says so.
- Continuous metrics (recall, p, mrr, ndcg at each k, and any other `gate_on` metric): per query
  the mean over repeats on each side, then `stats.continuous_test` (randomization p and paired
  bootstrap CI, both seeded).
- Slices: the same rows on the slice's queries; p-values Holm-corrected across the slices that
  have queries, per metric, and a slice row is only called when its adjusted p < alpha.  A slice
  row "collapses" when its metric falls to zero from non-zero, or when it is REGRESSED (outside
  its noise band, Holm-adjusted p < alpha) while the overall row of that metric is not.
- Latency: per side `stats.latency_summary` over every non-errored answer of every usable repeat;
  paired on the analysed queries (all of them, answerable or not, with a latency > 0 on both
  sides) through `stats.per_query_latency_ms` and `stats.paired_latency_ratio`.
- Flips at each hit@k: analysed queries whose modal outcome differs, with the rank of the first
  relevant document (grade >= rel_level, ranks over the deduplicated list, None = not returned)
  taken as the upper median over repeats, None counting as worst: so a tie resolves to the worse
  rank, as `stats.modal` resolves it to a miss.  Sorted by impact |1/after - 1/before| (None
  counts 0), largest first, then by query id.
- Headline: quality REGRESSED when hit@k at any configured cutoff, or any `gate_on` metric,
  regressed; IMPROVED when at least one of them improved and none regressed; else
  NO_DIFFERENCE.  Latency from the paired ratio test.  INVALID for both when the run is invalid.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from harness import stats
from harness.errors import ConfigError
from harness.evaluation import Evaluation, evaluate
from harness.metrics import Kind, MetricSpec, dedupe, parse_metric
from harness.stats import BinaryTest, LatencySummary, LatencyTest
from harness.types import GoldQuery, GoldSet, QueryResult, RefRun, Repeat, Verdict

if TYPE_CHECKING:  # only the type: the config loader reads files, this stage reads none
    from harness.config import CompareConfig

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

_DEFAULT_METRICS = ("hit", "recall", "p", "mrr", "ndcg")
_SIDES = ("baseline", "candidate")
# A failed teardown still collected every answer: a warning, not a reason to throw them away.
_WARNING_STAGES = frozenset({"teardown"})
_SHOWN_IDS = 5


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class CompareSettings:
    """How to compare: cutoffs, significance, tolerances, gates, and the seed of every resample.

    `gate_on` names extra metrics whose regression fails the quality verdict (e.g. "ndcg@10");
    `query_differences` are the config keys that differ between the sides
    (`HarnessConfig.differences()`), shown in the header.
    """

    k: tuple[int, ...] = (5, 10)
    alpha: float = 0.05
    latency_tolerance: float = 0.10
    max_errors: int = 0
    seed: int = 0
    rel_level: int = 1
    gate_on: tuple[str, ...] = ()
    query_differences: tuple[str, ...] = ()
    resamples: int = 10_000

    def __post_init__(self) -> None:
        if not self.k or any(k < 1 for k in self.k) or len(set(self.k)) != len(self.k):
            raise ValueError(f"k must list distinct cutoffs >= 1, not {self.k}")
        problems = []
        for name in self.gate_on:
            try:
                parse_metric(name)
            except ValueError as error:
                problems.append(f"  gate_on: {error}")
        if problems:
            raise ConfigError(
                "gate_on names a metric harness does not know",
                hint="\n".join([*problems, "use canonical names such as ndcg@10 or mrr@10"]),
            )

    @classmethod
    def from_config(
        cls,
        config: CompareConfig,
        *,
        gate_on: Sequence[str] = (),
        query_differences: Sequence[str] = (),
        rel_level: int = 1,
    ) -> CompareSettings:
        return cls(
            k=config.k,
            alpha=config.alpha,
            latency_tolerance=config.latency_tolerance,
            max_errors=config.max_errors,
            seed=config.seed,
            rel_level=rel_level,
            gate_on=tuple(gate_on),
            query_differences=tuple(query_differences),
        )

    @property
    def specs(self) -> tuple[MetricSpec, ...]:
        """Every metric compared: the defaults at each k, then the gates, grouped by name."""
        chosen = {MetricSpec(name, k) for name in _DEFAULT_METRICS for k in self.k}
        chosen |= {parse_metric(name) for name in self.gate_on}
        order = {name: i for i, name in enumerate(_DEFAULT_METRICS)}
        return tuple(sorted(chosen, key=lambda s: (order.get(s.name, len(order)), s.name, s.k)))


# --------------------------------------------------------------------------- the Comparison tree


@dataclass(frozen=True)
class RefInfo:
    side: str  # "baseline" | "candidate"
    ref: str
    sha: str
    short_sha: str
    repeats: int  # every repeat recorded
    usable_repeats: int  # the repeats whose answers are used
    reused: bool
    config_hash: str
    record_path: str | None = None


@dataclass(frozen=True)
class GoldInfo:
    source: str
    hash: str
    n: int
    n_answerable: int
    n_unanswerable: int


@dataclass(frozen=True)
class Header:
    baseline: RefInfo
    candidate: RefInfo
    gold: GoldInfo
    query_differences: tuple[str, ...]
    excluded: tuple[str, ...]  # gold queries left out: errored or missing on some repeat


@dataclass(frozen=True)
class HitDetail:
    """The McNemar side of a hit@k row: counts, drift, floor, and whether it could ever be called.

    `topk_drift_*` counts queries whose deduplicated top-k list is not identical in every repeat
    (a superset of the hit drift); `min_swing` is `stats.detectable_swing(n, alpha)`.
    """

    test: BinaryTest
    min_swing: int | None
    drift_baseline: int
    drift_candidate: int
    topk_drift_baseline: int
    topk_drift_candidate: int
    too_small: bool


@dataclass(frozen=True)
class MetricRow:
    """One metric in one scope: means, delta, test, verdict, and words for what decided it.

    `note` is shown after the verdict when it needs one (inside the noise band, gold set too
    small, CI includes 0, not significant after Holm); `reason` is the statistics' own account.
    """

    metric: str
    n: int
    baseline: float
    candidate: float
    delta: float
    p: float
    verdict: Verdict
    reason: str
    note: str | None = None
    ci_low: float | None = None  # continuous metrics only
    ci_high: float | None = None
    p_adjusted: float | None = None  # slices only: Holm across slices
    collapse: str | None = None  # slices only: why this row is a slice collapse
    hit: HitDetail | None = None  # hit@k only


@dataclass(frozen=True)
class Scope:
    """The overall rows, or one slice's (n = its analysed answerable queries)."""

    name: str
    n: int
    rows: tuple[MetricRow, ...]

    def row(self, metric: str) -> MetricRow | None:
        return next((r for r in self.rows if r.metric == metric), None)


@dataclass(frozen=True)
class SliceDetectability:
    """Within a slice of n queries, the smallest swing that could ever be called after Holm
    (noise_floor at alpha / number of slices, with the slice's drift) and whether n reaches it."""

    name: str
    n: int
    smallest_swing: int
    callable: bool


@dataclass(frozen=True)
class Detectability:
    metric: str  # hit@k at the first configured cutoff
    n: int
    floor: int  # no net swing smaller than this many queries can be called
    too_small: bool
    slices: tuple[SliceDetectability, ...]


@dataclass(frozen=True)
class NoAnswer:
    """Analysed unanswerable queries that returned anything (modal over repeats), per side."""

    n: int
    baseline: int
    candidate: int
    baseline_rate: float | None
    candidate_rate: float | None


@dataclass(frozen=True)
class Outranks:
    """`outranks` pairs of analysed queries that hold (modal over repeats), per side."""

    n: int
    baseline: int
    candidate: int


@dataclass(frozen=True)
class Latency:
    baseline: LatencySummary | None
    candidate: LatencySummary | None
    n_paired: int
    test: LatencyTest | None
    words: str  # "1.52x slower (95% CI 1.40-1.65)"


class Direction(enum.StrEnum):
    NEWLY_HIT = "newly hit"
    NEWLY_MISSED = "newly missed"


@dataclass(frozen=True)
class Flip:
    query_id: str
    slice: str
    text: str | None  # None once redacted
    rank_before: int | None
    rank_after: int | None
    direction: Direction
    impact: float  # |1/after - 1/before|, None ranks counting 0


@dataclass(frozen=True)
class Flips:
    metric: str
    k: int
    flips: tuple[Flip, ...]


@dataclass(frozen=True)
class Comparison:
    """Everything a report shows about one baseline/candidate pair, and nothing it must compute."""

    header: Header
    settings: CompareSettings
    invalid_reasons: tuple[str, ...]
    warnings: tuple[str, ...]
    verdict_quality: Verdict
    quality_reason: str
    verdict_latency: Verdict
    latency_reason: str
    overall: Scope
    slices: tuple[Scope, ...]
    detectability: Detectability | None
    no_answer: NoAnswer
    outranks: Outranks
    latency: Latency
    flips: tuple[Flips, ...]

    @property
    def valid(self) -> bool:
        return not self.invalid_reasons

    @property
    def hit_rows(self) -> tuple[MetricRow, ...]:
        return tuple(r for r in self.overall.rows if r.hit is not None)

    @property
    def collapses(self) -> tuple[tuple[Scope, MetricRow], ...]:
        return tuple((s, r) for s in self.slices for r in s.rows if r.collapse)


# --------------------------------------------------------------------------- validity


def _usable(run: RefRun) -> tuple[Repeat, ...]:
    if run.build_failure is not None:
        return ()
    return tuple(
        rep for rep in run.repeats if rep.failure is None or rep.failure.stage in _WARNING_STAGES
    )


def _label(side: str, run: RefRun) -> str:
    return f"{side} {run.ref} ({run.sha[:8]})"


def _validity(
    gold: GoldSet, runs: Sequence[RefRun], settings: CompareSettings
) -> tuple[list[str], list[str]]:
    invalid: list[str] = []
    warnings: list[str] = []
    for side, run in zip(_SIDES, runs, strict=True):
        label = _label(side, run)
        if run.build_failure is not None:
            invalid.append(f"{label}: build failed: {run.build_failure.message}")
        elif not run.repeats:
            invalid.append(f"{label}: no repeats were run; run it with --repeats 1 or more")
        for rep in run.repeats:
            where = f"{label}: repeat {rep.index + 1}"
            if rep.failure is not None and rep.failure.stage not in _WARNING_STAGES:
                log = f"; see {rep.log_path}" if rep.log_path else ""
                invalid.append(f"{where} failed at {rep.failure.stage}: {rep.failure.message}{log}")
            if not rep.teardown_confirmed or (rep.failure and rep.failure.stage == "teardown"):
                warnings.append(f"{where}: teardown was not confirmed; a process may be left over")
        kinds: Counter[str] = Counter()
        ids: dict[str, None] = {}
        for answers in map(_answers, _usable(run)):
            for q in gold.queries:
                result = answers.get(q.id)
                kind = "missing" if result is None else result.error and result.error.value
                if kind:
                    kinds[kind] += 1
                    ids[q.id] = None
        errored = sum(kinds.values())
        if errored:
            counts = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items()))
            some = ", ".join(list(ids)[:_SHOWN_IDS]) + (", ..." if len(ids) > _SHOWN_IDS else "")
            what = (
                f"{label}: {errored} errored answer{'s' * (errored != 1)} ({counts}; e.g. {some})"
            )
            if errored > settings.max_errors:
                invalid.append(
                    f"{what} exceed max_errors = {settings.max_errors}; "
                    "see the service log, or raise compare.max_errors"
                )
            else:
                warnings.append(f"{what}, within max_errors; those queries are left out")
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


def _answers(rep: Repeat) -> dict[str, QueryResult]:
    return {r.query_id: r for r in rep.results}


# --------------------------------------------------------------------------- per-side data


@dataclass(frozen=True)
class _Side:
    """One side's usable repeats, scored: rows follow `ids` (the analysed answerable queries)."""

    answers: tuple[dict[str, QueryResult], ...]
    evaluations: tuple[Evaluation, ...]
    rows: npt.NDArray[np.intp]  # positions of `ids` in each evaluation's query_ids

    def matrix(self, metric: str) -> FloatArray:
        """repeats x queries."""
        return np.stack([ev.columns[metric][self.rows] for ev in self.evaluations])

    def ranks(self, query: GoldQuery, rel_level: int) -> list[int | None]:
        return [_first_relevant(a[query.id].ids, query, rel_level) for a in self.answers]

    def topk_drift(self, ids: Sequence[str], k: int) -> BoolArray:
        return np.array(
            [len({dedupe(a[qid].ids)[:k] for a in self.answers}) > 1 for qid in ids], dtype=bool
        )


def _first_relevant(ids: Sequence[str], query: GoldQuery, rel_level: int) -> int | None:
    for rank, doc in enumerate(dedupe(ids), start=1):
        if query.relevant.get(doc, 0) >= rel_level:
            return rank
    return None


def _side(
    gold: GoldSet, repeats: Sequence[Repeat], ids: Sequence[str], settings: CompareSettings
) -> _Side:
    answers = tuple(map(_answers, repeats))
    evaluations = tuple(
        evaluate(
            gold,
            {qid: r.ids for qid, r in a.items() if r.ok},
            settings.specs,
            settings.rel_level,
        )
        for a in answers
    )
    position = {qid: i for i, qid in enumerate(evaluations[0].query_ids)} if evaluations else {}
    rows = np.array([position[qid] for qid in ids], dtype=np.intp) if position else np.zeros(0, int)
    return _Side(answers, evaluations, rows)


# --------------------------------------------------------------------------- rows


def _hit_row(
    metric: str,
    base: _Side,
    cand: _Side,
    sel: BoolArray,
    topk: tuple[BoolArray, BoolArray],
    settings: CompareSettings,
) -> MetricRow:
    outcomes = [side.matrix(metric)[:, sel] > 0.5 for side in (base, cand)]
    b_hit, c_hit = (stats.modal(list(o)) for o in outcomes)
    drifts = [stats.drift(list(o)) for o in outcomes]
    n = int(sel.sum())
    floor = stats.noise_floor(settings.alpha, drifts[0], drifts[1])
    test = stats.binary_verdict(
        int((b_hit & ~c_hit).sum()), int((c_hit & ~b_hit).sum()), alpha=settings.alpha, floor=floor
    )
    min_swing = stats.detectable_swing(n, settings.alpha)
    too_small = min_swing is None or floor > n
    note = None
    if too_small:
        note = (
            f"gold set too small to call a change in {metric} ({n} queries; "
            f"the smallest callable swing is {floor})"
        )
    elif abs(test.net) < floor:
        note = test.reason
    return MetricRow(
        metric=metric,
        n=n,
        baseline=float(b_hit.mean()),
        candidate=float(c_hit.mean()),
        delta=test.net / n,
        p=test.p,
        verdict=test.verdict,
        reason=test.reason,
        note=note,
        hit=HitDetail(
            test=test,
            min_swing=min_swing,
            drift_baseline=drifts[0],
            drift_candidate=drifts[1],
            topk_drift_baseline=int(topk[0][sel].sum()),
            topk_drift_candidate=int(topk[1][sel].sum()),
            too_small=too_small,
        ),
    )


def _continuous_row(
    metric: str, base: _Side, cand: _Side, sel: BoolArray, settings: CompareSettings
) -> MetricRow:
    b, c = (side.matrix(metric)[:, sel].mean(axis=0) for side in (base, cand))
    test = stats.continuous_test(
        b, c, alpha=settings.alpha, seed=settings.seed, resamples=settings.resamples
    )
    undecided = test.p < settings.alpha and test.verdict is Verdict.NO_DIFFERENCE
    level = f"{100 * (1 - settings.alpha):g}% CI"
    return MetricRow(
        metric=metric,
        n=int(sel.sum()),
        baseline=test.mean_baseline,
        candidate=test.mean_candidate,
        delta=test.delta,
        p=test.p,
        verdict=test.verdict,
        reason=test.reason,
        note=f"p < {settings.alpha:g} but the {level} includes 0" if undecided else None,
        ci_low=test.ci_low,
        ci_high=test.ci_high,
    )


def _scope(
    name: str,
    base: _Side,
    cand: _Side,
    sel: BoolArray,
    topk: Mapping[int, tuple[BoolArray, BoolArray]],
    settings: CompareSettings,
) -> Scope:
    rows = [
        _hit_row(str(s), base, cand, sel, topk[s.k], settings)
        if s.kind is Kind.BINARY
        else _continuous_row(str(s), base, cand, sel, settings)
        for s in settings.specs
    ]
    return Scope(name, int(sel.sum()), tuple(rows))


def _holm_slices(slices: list[Scope], overall: Scope, alpha: float) -> list[Scope]:
    """Adjust each metric's p across the slices, take back the calls Holm no longer supports,
    and flag collapses."""
    adjusted = {
        row.metric: stats.holm([s.rows[i].p for s in slices])
        for i, row in enumerate(slices[0].rows if slices else ())
    }
    out = []
    for j, scope in enumerate(slices):
        rows = []
        for row in scope.rows:
            adj = adjusted[row.metric][j]
            row = replace(row, p_adjusted=adj)
            if row.verdict in (Verdict.IMPROVED, Verdict.REGRESSED) and adj >= alpha:
                note = f"not significant after Holm across {len(slices)} slices"
                row = replace(row, verdict=Verdict.NO_DIFFERENCE, note=note)
            whole = overall.row(row.metric)
            if row.baseline > 0 and row.candidate == 0:
                row = replace(row, collapse="fell to zero")
            elif row.verdict is Verdict.REGRESSED and whole and whole.verdict != Verdict.REGRESSED:
                row = replace(row, collapse="regressed while the overall row did not")
            rows.append(row)
        out.append(replace(scope, rows=tuple(rows)))
    return out


# --------------------------------------------------------------------------- the rest


def _flips(
    metric: str,
    k: int,
    ids: Sequence[str],
    gold: GoldSet,
    base: _Side,
    cand: _Side,
    settings: CompareSettings,
) -> Flips:
    b_hit = stats.modal(list(base.matrix(metric) > 0.5))
    c_hit = stats.modal(list(cand.matrix(metric) > 0.5))
    found = []
    for i in map(int, np.flatnonzero(b_hit != c_hit)):
        query = gold.by_id[ids[i]]
        before, after = (_upper_median(s.ranks(query, settings.rel_level)) for s in (base, cand))
        found.append(
            Flip(
                query_id=query.id,
                slice=query.slice,
                text=query.text,
                rank_before=before,
                rank_after=after,
                direction=Direction.NEWLY_HIT if c_hit[i] else Direction.NEWLY_MISSED,
                impact=abs(_rr(after) - _rr(before)),
            )
        )
    # Rounded so that equal impacts reached by different arithmetic tie, and the id decides.
    found.sort(key=lambda f: (-round(f.impact, 12), f.query_id))
    return Flips(metric, k, tuple(found))


def _upper_median(ranks: Sequence[int | None]) -> int | None:
    ordered = sorted(ranks, key=lambda r: float("inf") if r is None else r)
    return ordered[len(ordered) // 2]


def _rr(rank: int | None) -> float:
    return 0.0 if rank is None else 1.0 / rank


def _modal_count(flags: Sequence[Sequence[bool]], width: int) -> int:
    return int(stats.modal(list(flags)).sum()) if flags and width else 0


def _no_answer(ids: set[str], sides: Sequence[_Side]) -> NoAnswer:
    counts = []
    n = 0
    for side in sides:
        per_rep = []
        for ev in side.evaluations:
            na = ev.no_answer
            per_rep.append(
                [a for q, a in zip(na.query_ids, na.returned_any, strict=True) if q in ids]
            )
        n = len(per_rep[0]) if per_rep else n
        counts.append(_modal_count(per_rep, n))
    rates = [c / n if n else None for c in counts]
    return NoAnswer(n, counts[0], counts[1], rates[0], rates[1])


def _outranks(ids: set[str], sides: Sequence[_Side]) -> Outranks:
    counts = []
    n = 0
    for side in sides:
        per_rep = []
        for ev in side.evaluations:
            o = ev.outranks
            per_rep.append([h for p, h in zip(o.pairs, o.held, strict=True) if p[0] in ids])
        n = len(per_rep[0]) if per_rep else n
        counts.append(_modal_count(per_rep, n))
    return Outranks(n, counts[0], counts[1])


def _latency(
    ids: Sequence[str], repeats: Sequence[Sequence[Repeat]], settings: CompareSettings
) -> Latency:
    summaries = []
    for reps in repeats:
        ns = [r.latency_ns for rep in reps for r in rep.results if r.ok and r.latency_ns > 0]
        summaries.append(stats.latency_summary(ns) if ns else None)
    answers = [[_answers(rep) for rep in reps] for reps in repeats]
    paired = [qid for qid in ids if all(a[qid].latency_ns > 0 for side in answers for a in side)]
    test = None
    words = "no latency was measured on both sides"
    if paired and all(answers):
        ms = [
            stats.per_query_latency_ms([[a[qid].latency_ns for qid in paired] for a in side])
            for side in answers
        ]
        test = stats.paired_latency_ratio(
            ms[0],
            ms[1],
            seed=settings.seed,
            tolerance=settings.latency_tolerance,
            resamples=settings.resamples,
        )
        words = f"{stats.ratio_words(test.ratio)} (95% CI {test.ci_low:.2f}-{test.ci_high:.2f})"
    return Latency(summaries[0], summaries[1], len(paired), test, words)


def _detectability(
    overall: Scope,
    slices: Sequence[Scope],
    metric: str,
    base: _Side,
    cand: _Side,
    selections: Mapping[str, BoolArray],
    alpha: float,
) -> Detectability | None:
    row = overall.row(metric)
    if row is None or row.hit is None:
        return None
    per_slice = []
    m = max(1, sum(1 for s in slices if s.n))
    for name, sel in selections.items():
        drifts = [stats.drift(list(s.matrix(metric)[:, sel] > 0.5)) for s in (base, cand)]
        swing = stats.noise_floor(alpha / m, drifts[0], drifts[1])
        n = int(sel.sum())
        per_slice.append(SliceDetectability(name, n, swing, swing <= n))
    return Detectability(metric, row.n, row.hit.test.floor, row.hit.too_small, tuple(per_slice))


def _headline(
    overall: Scope, settings: CompareSettings, collapses: Sequence[str]
) -> tuple[Verdict, str]:
    decisive = [f"hit@{k}" for k in settings.k]
    decisive += [g for g in map(str, map(parse_metric, settings.gate_on)) if g not in decisive]
    rows = [r for r in map(overall.row, decisive) if r is not None]
    regressed = [r.metric for r in rows if r.verdict is Verdict.REGRESSED]
    improved = [r.metric for r in rows if r.verdict is Verdict.IMPROVED]
    if regressed:
        verdict, reason = Verdict.REGRESSED, f"{', '.join(regressed)} regressed"
    elif improved:
        verdict, reason = Verdict.IMPROVED, f"{', '.join(improved)} improved, none regressed"
    else:
        verdict = Verdict.NO_DIFFERENCE
        small = next((r for r in rows if r.hit and r.hit.too_small), None)
        if small is not None and small.note:
            reason = small.note
        else:
            reason = f"no change in {', '.join(decisive)} outside the noise"
    if collapses:
        reason += f"; but slice collapse: {', '.join(collapses)}"
    return verdict, reason


def compare(
    gold: GoldSet, baseline: RefRun, candidate: RefRun, settings: CompareSettings
) -> Comparison:
    """Compare two refs' runs over one gold set (see the module docstring for every rule)."""
    runs = (baseline, candidate)
    invalid, warnings = _validity(gold, runs, settings)
    usable = [_usable(run) for run in runs]
    answers = [[_answers(rep) for rep in reps] for reps in usable]
    analysed = [
        q.id
        for q in gold.queries
        if all(q.id in a and a[q.id].ok for side in answers for a in side)
    ]
    excluded = tuple(q.id for q in gold.queries if q.id not in set(analysed))
    ids = [qid for qid in analysed if gold.by_id[qid].answerable]
    if ids and not all(usable):
        ids = []
    if not ids and not invalid:
        invalid.append("no answerable query was answered on both sides: nothing to compare")
    sides = [_side(gold, reps, ids, settings) for reps in usable]
    base, cand = sides
    in_analysis = set(analysed) if all(usable) else set()

    slices: list[Scope] = []
    selections: dict[str, BoolArray] = {}
    flips: list[Flips] = []
    detect = None
    overall = Scope("overall", 0, ())
    if ids:
        topk = {
            k: (base.topk_drift(ids, k), cand.topk_drift(ids, k))
            for k in {s.k for s in settings.specs if s.kind is Kind.BINARY}
        }
        everything = np.ones(len(ids), dtype=bool)
        overall = _scope("overall", base, cand, everything, topk, settings)
        slice_of = np.array([gold.by_id[qid].slice for qid in ids])
        selections = {name: slice_of == name for name in gold.slices}
        slices = _holm_slices(
            [
                _scope(name, base, cand, sel, topk, settings)
                for name, sel in selections.items()
                if sel.any()
            ],
            overall,
            settings.alpha,
        )
        flips = [
            _flips(str(s), s.k, ids, gold, base, cand, settings)
            for s in settings.specs
            if s.kind is Kind.BINARY
        ]
        detect = _detectability(
            overall, slices, f"hit@{settings.k[0]}", base, cand, selections, settings.alpha
        )

    collapses = []
    for scope in slices:
        fell = [r.metric for r in scope.rows if r.collapse]
        if fell:
            more = f" and {len(fell) - 1} more" if len(fell) > 1 else ""
            collapses.append(f"{scope.name} ({fell[0]}{more})")
    latency = _latency(analysed if in_analysis else [], usable, settings)
    if latency.test is None and not invalid:
        invalid.append("no query latency was recorded on both sides; the runner must record it")
    quality, quality_reason = _headline(overall, settings, collapses)
    speed = latency.test.verdict if latency.test else Verdict.INVALID
    speed_reason = latency.words
    if speed is Verdict.NO_DIFFERENCE:
        speed_reason += f", inside the tolerance band of ±{settings.latency_tolerance:.0%}"
    if invalid:
        quality = speed = Verdict.INVALID
        quality_reason = speed_reason = "the run is invalid (see the reasons above)"

    header = Header(
        baseline=_ref_info("baseline", baseline, len(usable[0])),
        candidate=_ref_info("candidate", candidate, len(usable[1])),
        gold=GoldInfo(
            source=gold.source,
            hash=gold.hash,
            n=len(gold),
            n_answerable=sum(q.answerable for q in gold.queries),
            n_unanswerable=sum(not q.answerable for q in gold.queries),
        ),
        query_differences=tuple(settings.query_differences),
        excluded=excluded,
    )
    return Comparison(
        header=header,
        settings=settings,
        invalid_reasons=tuple(invalid),
        warnings=tuple(warnings),
        verdict_quality=quality,
        quality_reason=quality_reason,
        verdict_latency=speed,
        latency_reason=speed_reason,
        overall=overall,
        slices=tuple(slices),
        detectability=detect,
        no_answer=_no_answer(in_analysis, sides),
        outranks=_outranks(in_analysis, sides),
        latency=latency,
        flips=tuple(flips),
    )


def _ref_info(side: str, run: RefRun, usable: int) -> RefInfo:
    return RefInfo(
        side=side,
        ref=run.ref,
        sha=run.sha,
        short_sha=run.sha[:8],
        repeats=len(run.repeats),
        usable_repeats=usable,
        reused=run.reused,
        config_hash=run.config_hash,
        record_path=run.record_path,
    )


# --------------------------------------------------------------------------- one ref on its own


@dataclass(frozen=True)
class RunSummary:
    """What `harness run` prints of one RefRun: errors, latency, and the metrics per slice.

    `scopes` holds ("all" or a slice name, n answerable, mean over usable repeats of each metric);
    `drift` the queries whose hit@k differs between usable repeats; `errors` the errored answers
    by kind over every repeat. A query that errored in any usable repeat is left out of the
    metrics (never scored as a miss), as `compare` leaves it out of the analysis.
    """

    run: RefRun
    usable: int
    errors: Mapping[str, int]
    latency: LatencySummary | None
    scopes: tuple[tuple[str, int, Mapping[str, float]], ...]
    drift: Mapping[str, int]


def summarise_run(gold: GoldSet, run: RefRun, settings: CompareSettings) -> RunSummary:
    usable = _usable(run)
    errors = Counter(
        r.error.value for rep in run.repeats for r in rep.results if r.error is not None
    )
    ok_ns = [r.latency_ns for rep in usable for r in rep.results if r.ok and r.latency_ns > 0]
    # Only queries answered in every usable repeat are scored: an errored answer is no ranking,
    # and scoring it 0 (as an absent query is in trec_eval -c) would call an outage a miss.
    answers = [_answers(rep) for rep in usable]
    scored = replace(
        gold,
        queries=tuple(q for q in gold.queries if all(q.id in a and a[q.id].ok for a in answers)),
    )
    evaluations = [
        evaluate(scored, {qid: r.ids for qid, r in a.items()}, settings.specs, settings.rel_level)
        for a in answers
    ]
    scopes: list[tuple[str, int, Mapping[str, float]]] = []
    drift: dict[str, int] = {}
    if evaluations:
        names = [str(s) for s in settings.specs]
        first = evaluations[0]

        def mean(values: Sequence[Mapping[str, float]]) -> dict[str, float]:
            return {m: float(np.mean([v[m] for v in values])) for m in names}

        scopes.append(("all", first.n, mean([ev.aggregate for ev in evaluations])))
        for name, score in first.slices.items():
            if score.n == 0:  # only unanswerable queries: the no-answer rate scores them
                continue
            scopes.append((name, score.n, mean([ev.slices[name].values for ev in evaluations])))
        for spec in settings.specs:
            if spec.kind is Kind.BINARY:
                outcomes = [[bool(x) for x in ev.columns[str(spec)] > 0] for ev in evaluations]
                drift[str(spec)] = stats.drift(outcomes)
    return RunSummary(
        run=run,
        usable=len(usable),
        errors=dict(sorted(errors.items())),
        latency=stats.latency_summary(ok_ns) if ok_ns else None,
        scopes=tuple(scopes),
        drift=drift,
    )

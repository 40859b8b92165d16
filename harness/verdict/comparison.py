"""The values of the compare stage: the settings a comparison is made under, the `Comparison`
tree it produces (everything a report shows, nothing it must compute), and the `RunSummary` of
one ref on its own.  Frozen dataclasses and a few lookups; the rules that fill them are in
`harness.verdict.decide`, the JSON form in `harness.results.document`.

    Comparison
    ├── header: Header (RefInfo baseline and candidate, GoldInfo, excluded query ids)
    ├── settings: CompareSettings
    ├── overall: Scope, slices: Scope...      MetricRows; a hit@k row carries its HitDetail
    ├── power: Power                          what the headline's tests could have seen
    ├── no_answer: NoAnswer, outranks: Outranks
    ├── latency: Latency                      latency.LatencySummary per side, latency.LatencyTest,
    │                                         Throughput per side under --concurrency, Machine,
    │                                         each side's percentiles and the paired ratios'
    ├── flips: Flips...                       a Flip per query whose hit@k changed
    ├── repeats: RepeatMeans...               each usable repeat's metric means (drift, as a plot)
    ├── top_scores: TopScores...              per side with scores: answerable vs unanswerable
    │                                         top-result scores and the chosen no-answer cutoff
    └── twobytwo: TwoByTwoComparison | None   the retrieval/generation 2x2 per side, movement

They live here, not in `harness.values.types`: they hold `harness.verdict.stats` results
(BinaryTest, Power, LatencySummary, LatencyTest) and CompareSettings checks metric names with
`harness.score.metrics.parse_metric`, while stats and metrics import `harness.values.types`; and
`harness.results.document` reads these annotations back at run time, so importing the types only for
the type checker would not do.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.errors import ConfigError
from harness.score.definition import Definition
from harness.score.metrics import MetricSpec, parse_metric
from harness.values.types import FloorRow, RefRun, Verdict
from harness.verdict.boots import BootComponent
from harness.verdict.equivalence import Equivalence
from harness.verdict.latency import LatencySummary, LatencyTest, Throughput
from harness.verdict.latency_tail import TailRow
from harness.verdict.load import Load
from harness.verdict.noninferiority import NonInferiority
from harness.verdict.order_effect import OrderEffect
from harness.verdict.power import Power
from harness.verdict.quality_sequential import Sequential
from harness.verdict.resources import Resources
from harness.verdict.stats import BinaryTest
from harness.verdict.twobytwo import TwoByTwoComparison

if TYPE_CHECKING:  # only the type: the config loader reads files, this stage reads none
    from harness.config import CompareConfig

_DEFAULT_METRICS = ("hit", "recall", "p", "mrr", "ndcg")
# Compared at each k too when `CompareSettings.context` (spans in the gold set, query.texts set).
_CONTEXT_METRICS = ("context_precision", "context_recall")


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class CompareSettings:
    """How to compare: cutoffs, significance, tolerances, gates, and the seed of every resample.

    `gate_on` names extra metrics whose regression fails the quality verdict (e.g. "ndcg@10");
    `min_effect` is the band (a hit rate, or the metric's units): "no measurable difference"
    means every headline delta's 1 - 2 x `equivalence_alpha` interval lies inside +/- it
    (`harness.verdict.equivalence`); short of it the verdict is inconclusive;
    `equivalence_alpha`: the level of that claim (None: `alpha`; a sequential compare's last
    test runs its calls at what the looks left of alpha, and its equivalence, never looked at
    before, at the whole of it);
    `query_differences` are the config keys that differ between the sides
    (`HarnessConfig.differences()`), shown in the header; `context` adds context_precision@k and
    context_recall@k at every k (the gold set has answer spans and every side measured sets
    query.texts); `non_inferior`: (metric, margin) of `harness.verdict.noninferiority`.
    """

    k: tuple[int, ...] = (5, 10)
    alpha: float = 0.05
    min_effect: float = 0.05
    latency_tolerance: float = 0.10
    max_errors: int = 0
    max_unknown_ids: int = 0
    seed: int = 0
    rel_level: int = 1
    gate_on: tuple[str, ...] = ()
    query_differences: tuple[str, ...] = ()
    resamples: int = 10_000
    context: bool = False
    equivalence_alpha: float | None = None
    non_inferior: tuple[tuple[str, float], ...] = ()

    @property
    def tost_alpha(self) -> float:
        """The level of "no measurable difference" (`equivalence_alpha`, else `alpha`)."""
        return self.alpha if self.equivalence_alpha is None else self.equivalence_alpha

    def decisive(self) -> list[str]:
        """The headline's rows: hit@k at every cutoff, then every gate_on metric (named as
        `specs` print them: a gate spelled another way, Success@5 for hit@5, is the same row)."""
        printed = {spec: str(spec) for spec in self.specs}
        chosen = [MetricSpec("hit", k) for k in self.k] + list(map(parse_metric, self.gate_on))
        return list(dict.fromkeys(printed.get(spec, str(spec)) for spec in chosen))

    def __post_init__(self) -> None:
        if not self.k or any(k < 1 for k in self.k) or len(set(self.k)) != len(self.k):
            raise ValueError(f"k must list distinct cutoffs >= 1, not {self.k}")
        if not 0 < self.min_effect <= 1:
            raise ValueError(f"min_effect must be in (0, 1], not {self.min_effect}")
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
        context: bool = False,
    ) -> CompareSettings:
        return cls(
            k=config.k,
            alpha=config.alpha,
            min_effect=config.min_effect,
            latency_tolerance=config.latency_tolerance,
            max_errors=config.max_errors,
            max_unknown_ids=config.max_unknown_ids,
            seed=config.seed,
            rel_level=rel_level,
            gate_on=tuple(gate_on),
            query_differences=tuple(query_differences),
            context=context,
        )

    @property
    def specs(self) -> tuple[MetricSpec, ...]:
        """Every metric compared: the defaults at each k, then the gates, grouped by name."""
        names = _DEFAULT_METRICS + (_CONTEXT_METRICS if self.context else ())
        chosen = {MetricSpec(name, k) for name in names for k in self.k}
        chosen |= {parse_metric(name) for name in self.gate_on}
        order = {name: i for i, name in enumerate(names)}
        return tuple(sorted(chosen, key=lambda s: (order.get(s.name, len(order)), *s.sort_key())))


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
    sandbox: str | None = None  # how its boots were contained: "bubblewrap", "plain", "mixed"


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
    # What defines this measurement (harness.score.definition); None in comparisons saved before.
    definition: Definition | None = None


@dataclass(frozen=True)
class HitDetail:
    """The paired test of a hit@k row, and each side's drift.

    `drift_*` counts queries whose hit@k is not the same in every repeat of that side;
    `topk_drift_*` those whose deduplicated top-k list is not identical in every repeat (a
    superset).  Drift is shown, and is inside the test; it never sets a bar.  `ci_low`/`ci_high`:
    the paired 95% percentile bootstrap interval of the delta of per-query hit rates, computed
    exactly on their lattice (`sequential.lattice_bootstrap_interval`; drawn, seeded, only past
    its size), drawn in the HTML report; the verdict is the exact test's.
    """

    test: BinaryTest
    drift_baseline: int
    drift_candidate: int
    topk_drift_baseline: int
    topk_drift_candidate: int
    # Paired bootstrap interval of the hit-rate delta (as for continuous rows), for a picture of
    # its size; the verdict is the exact test's.
    ci_low: float | None = None
    ci_high: float | None = None


@dataclass(frozen=True)
class MetricRow:
    """One metric in one scope: means, delta, test, verdict, and words for what decided it.

    `note` is shown after the verdict when it needs one (CI includes 0, not significant after
    Holm); `reason` is the statistics' own account; `power` what the row's test could see.
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
    p_adjusted: float | None = None  # Holm: across slices, or across the headline's tests
    collapse: str | None = None  # slices only: why this row is a slice collapse
    hit: HitDetail | None = None  # hit@k only
    power: Power | None = None
    # Whether this row decides the headline (hit@k at every k and every gate_on metric, in the
    # overall scope and in each slice): a row that does not is information, its label is its
    # own uncorrected test's, and the reports say "(not deciding)" beside it.
    deciding: bool = False
    # The variation between boots (harness.verdict.boots): inside the row's p and interval.
    boots: BootComponent | None = None
    # Deciding rows only: the delta's 1 - 2 alpha interval against the band (TOST), what
    # "no measurable difference" is decided by (harness.verdict.equivalence).
    equivalence: Equivalence | None = None


@dataclass(frozen=True)
class Boots:
    """Variation between boots in the headline (`harness.verdict.boots`), in the row where it
    weighs most: whether it could be estimated (two or more boots on a side), whether it is
    present (the boots' means spread beyond what their queries explain, at 5%), the standard
    deviation of a boot's mean beyond its queries' noise, its share of the variance of the
    row's delta, how many times wider that makes the row's interval, and the words."""

    repeats: tuple[int, int]  # boots (usable repeats) per side: baseline, candidate
    estimable: bool
    present: bool
    metric: str | None
    between_sd: float
    share: float
    widening: float
    df: int
    words: str


@dataclass(frozen=True)
class Scope:
    """The overall rows, or one slice's (n = its analysed answerable queries)."""

    name: str
    n: int
    rows: tuple[MetricRow, ...]

    def row(self, metric: str) -> MetricRow | None:
        return next((r for r in self.rows if r.metric == metric), None)


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
class Machine:
    """What the machine was doing while both sides were measured (over every usable repeat)."""

    load_max: float  # the highest 1-minute load average seen around any repeat's queries
    cpu_count: int
    client_cpu_ms: float  # the client's own CPU time per timed query, median over repeats
    busy: bool  # load_max > cpu_count: the figures are not to be trusted (a warning says why)


@dataclass(frozen=True)
class Latency:
    baseline: LatencySummary | None
    candidate: LatencySummary | None
    n_paired: int
    test: LatencyTest | None
    words: str  # "1.52x slower (95% CI 1.40-1.65)", or why latency was not compared
    not_compared: str | None = None  # why no latency verdict is given, and the fix
    concurrency: int = 1
    throughput_baseline: Throughput | None = None  # under --concurrency N > 1 only
    throughput_candidate: Throughput | None = None
    machine: Machine | None = None
    # For the plots: each side's latency percentiles 0, 1, ..., 100 (ms, numpy "linear"), over
    # the same answers as its summary; and the percentiles of every per-query paired ratio
    # candidate/baseline of every round (empty when latency was not paired).
    percentiles_baseline: tuple[float, ...] = ()
    percentiles_candidate: tuple[float, ...] = ()
    ratio_percentiles: tuple[float, ...] = ()
    # How much slower the second of a back-to-back pair was (harness.verdict.order_effect),
    # when the runs recorded the order; and the seed that order was drawn from.
    order_effect: OrderEffect | None = None
    order_seed: int | None = None
    # p50/p95/p99 by round (verdict.latency_tail); the worst called of them and `test`
    tail: tuple[TailRow, ...] = ()
    verdict: Verdict | None = None


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
class QueryDelta:
    query_id: str
    slice: str
    delta: float  # candidate - baseline, each side's mean over its usable repeats
    flip: Direction | None = None  # its flip at `QueryDeltas.flips_at`, if it flipped


@dataclass(frozen=True)
class QueryDeltas:
    """Per analysed answerable query, candidate - baseline of `metric` (the first continuous
    metric of the headline, else nDCG at its largest cutoff, else the first continuous one
    compared, else the headline hit@k: a 0/1 metric's deltas are its flips and nothing more),
    sorted by delta then query id, each marked with its flip at `flips_at` (the first hit@k)."""

    metric: str
    flips_at: str | None
    deltas: tuple[QueryDelta, ...]


@dataclass(frozen=True)
class PrepareStep:
    """One step between a side's readiness and its queries (a prepare command, the loader's
    batches, its index call): the median seconds over the repeats that ran it. Never part of
    query latency."""

    side: str
    step: str  # "prepare[0]", "load", "index"
    median_s: float
    repeats: int


@dataclass(frozen=True)
class ErrorKindSummary:
    """The errored answers of one side of one kind: how many, by HTTP status, one sample of what
    the service said (its first ~200 characters, None once redacted), and what to do."""

    side: str
    kind: str  # an ErrorKind value, or "missing"
    count: int
    asked: int  # answers expected over the usable repeats: the share is count / asked
    statuses: tuple[tuple[int, int], ...]  # (HTTP status >= 300, answers), by status
    sample: str | None  # one errored answer's detail (the body excerpt for an HTTP status)
    sample_query: str | None  # the query id that sample answered
    advice: str


@dataclass(frozen=True)
class RepeatMeans:
    """One usable repeat of one side: the mean of each compared metric over the analysed
    answerable queries (in the order of `Comparison.overall.rows`), and its latency p50 (ms)."""

    side: str
    index: int  # the repeat's index in its run (its round, for runs measured together)
    means: tuple[float, ...]
    latency_p50: float | None = None


@dataclass(frozen=True)
class TopScores:
    """One side's top-result scores, answerable and unanswerable queries apart, sorted (what
    `harness threshold` analyses: low median over repeats, empty answers counted apart), and the
    no-answer cutoff it chooses, with its rates and words."""

    side: str
    answerable: tuple[float, ...]
    unanswerable: tuple[float, ...]
    empty_answerable: int
    empty_unanswerable: int
    cutoff: float | None
    abstention_rate: float | None
    false_answer_rate: float | None
    separable: bool
    words: str


@dataclass(frozen=True)
class JudgedShare:
    """One scope's judged shares: `baseline` and `candidate` as in the module docstring (None:
    that side returned nothing there), and how many distinct (query, document) pairs each side
    left unjudged in its top k."""

    scope: str  # "overall", a slice's name, or "flipped at hit@K"
    n: int  # queries
    baseline: float | None
    candidate: float | None
    unjudged_baseline: int
    unjudged_candidate: int


@dataclass(frozen=True)
class HoleReach:
    """How far a pooled gold set's unjudged documents could move hit@k's mean delta
    (`harness.verdict.holes.reach`): up (the candidate's, were they relevant), down (the
    baseline's), and the queries and (query, document) pairs that could."""

    k: int
    up: float
    down: float
    queries: int
    documents: int


@dataclass(frozen=True)
class Holes:
    """The judged shares of every scope at cutoff `k` (`harness.verdict.holes`), the warning
    when the sides differ by more than `margin`, and the first `holes.MOST_PAIRS` unjudged
    (query, document) pairs of the candidate's top k, then the baseline's, flipped queries
    first."""

    k: int
    margin: float
    shares: tuple[JudgedShare, ...]
    warning: str | None = None
    unjudged: tuple[tuple[str, str, str], ...] = ()  # (side, query id, document id)
    reach: tuple[HoleReach, ...] = ()  # per headline hit@k, pooled gold sets only
    # On the judged documents alone (`harness.verdict.condensed`), pooled gold sets only.
    condensed: tuple[MetricRow, ...] = ()


@dataclass(frozen=True)
class ScopeChange:
    """How much one scope's rankings changed (`harness.verdict.overlap`): the mean over its
    queries of the rank-biased overlap and of Jaccard@k, and how many queries' top k changed."""

    scope: str
    n: int
    rbo: float
    jaccard: float
    changed: int


@dataclass(frozen=True)
class QueryChange:
    query_id: str
    slice: str
    rbo: float
    jaccard: float


@dataclass(frozen=True)
class RankingChanges:
    """How much the rankings changed, which needs no judgement (`harness.verdict.overlap`): RBO
    (persistence `p`) and Jaccard@k per scope, and the queries that changed most."""

    k: int
    p: float
    scopes: tuple[ScopeChange, ...]
    most_changed: tuple[QueryChange, ...] = ()


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
    power: Power | None  # the headline test that could see least (largest mde)
    no_answer: NoAnswer
    outranks: Outranks
    latency: Latency
    flips: tuple[Flips, ...]
    findings: tuple[str, ...] = ()  # e.g. "candidate unstable: ..."
    floors: tuple[FloorRow, ...] = ()  # [gate.floors] on the candidate (harness.gate.floors)
    errors: tuple[ErrorKindSummary, ...] = ()  # per side and kind, when any answer errored
    prepare: tuple[PrepareStep, ...] = ()  # per side and step, when anything ran after ready
    repeats: tuple[RepeatMeans, ...] = ()
    top_scores: tuple[TopScores, ...] = ()  # the sides whose service returns scores
    # The retrieval/generation 2x2 of each side and how queries moved (compare --*-answers).
    twobytwo: TwoByTwoComparison | None = None
    query_deltas: QueryDeltas | None = None  # the per-query delta plot's (issue 27)
    # compare --sequential: the queries asked and the rule's answer (harness.verdict.asked)
    sequential: Sequential | None = None
    # Variation between boots in the headline rows, and how much of their intervals it is.
    boots: Boots | None = None
    holes: Holes | None = None  # how much of each side's top k was judged (verdict.holes)
    changes: RankingChanges | None = None  # how much the rankings changed (verdict.overlap)
    resources: Resources | None = None  # build and boot costs, paired (verdict.resources)
    load: Load | None = None  # latency under load per rate (compare --rate, verdict.load)
    noninferiority: NonInferiority | None = None  # compare --non-inferior

    @property
    def valid(self) -> bool:
        return not self.invalid_reasons

    @property
    def floors_failed(self) -> bool:
        return any(not f.passed for f in self.floors)

    @property
    def verdicts(self) -> tuple[Verdict, Verdict]:
        """(quality, latency): what the exit status is made of."""
        return self.verdict_quality, self.verdict_latency

    @property
    def hit_rows(self) -> tuple[MetricRow, ...]:
        return tuple(r for r in self.overall.rows if r.hit is not None)

    @property
    def collapses(self) -> tuple[tuple[Scope, MetricRow], ...]:
        return tuple((s, r) for s in self.slices for r in s.rows if r.collapse)


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
    error_kinds: tuple[ErrorKindSummary, ...] = ()  # the same errors with statuses and advice
    prepare: tuple[PrepareStep, ...] = ()  # each step after readiness, median over repeats

    @property
    def complete(self) -> bool:
        """Every repeat ran to the end and every query was answered: `harness run` exits 0."""
        return not self.run.failures and not any(self.errors.values())

"""`harness gold stats`: what a gold set holds, counted. Pure: a GoldSet in, GoldStats out.

    gold_stats(gold, machine_grades=0, both=()) -> GoldStats

- per slice (sorted by name): queries, answerable (`GoldQuery.answerable`), unanswerable;
- relevant per query: over the answerable queries, how many documents have grade >= 1
  (a histogram, and its min, median, mean and max; the median of an even count is the mean of
  the two middle values); 0 for an answerable query whose answer nobody has judged yet;
- grades: how many judgements carry each grade, grade 0 (judged not relevant) included;
- the unanswerable share: unanswerable queries / all queries;
- how many queries carry `outranks` pairs and a `derivation`;
- with `machine_grades` and `both` (a native file's "machine" and "judged_by" keys, counted by
  `harness.gold.provenance.labelled_stats`): how many machine grades it keeps apart, and where a
  person and a machine both graded a pair their agreement (below).

Agreement: Cohen's kappa of two raters on the same pairs.

    cohen_kappa(a, b)                       unweighted: (p_o - p_e) / (1 - p_e)
    cohen_kappa(a, b, weights="quadratic")  1 - sum(w O) / sum(w E), w_ij = (i-j)^2 / (K-1)^2
    agreement(pairs) -> Agreement           quadratic on the grades, unweighted on grade >= 1

O is the observed joint table of the two raters' grades (as proportions), E the table their
marginals would give by chance; the categories are every integer from the smallest grade seen
(or given) to the largest, so the quadratic weight of a disagreement is its squared distance in
grades (statsmodels' `cohens_kappa(table, wt="quadratic")` on the same square table).  Kappa is
undefined (None) when chance alone predicts the observed agreement perfectly (both raters gave
one category throughout: 1 - p_e = 0) or there is no pair.  `harness judge merge` and
`harness gold stats` report it where a person and a machine labelled the same pair.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.values.types import GoldSet


def cohen_kappa(first: Sequence[int], second: Sequence[int], *, weights: str | None = None,
                categories: Sequence[int] = ()) -> float | None:
    """Cohen's kappa of two raters' integer grades, paired by position (see the module
    docstring); `weights` None or "quadratic"; `categories` widens the range of grades."""
    if len(first) != len(second):
        raise ValueError(f"two raters, one grade each per pair: {len(first)} != {len(second)}")
    if weights not in (None, "quadratic"):
        raise ValueError(f"weights is None or 'quadratic', not {weights!r}")
    if not first:
        return None
    seen = [*first, *second, *categories]
    low, high = min(seen), max(seen)
    size = high - low + 1
    n = len(first)
    observed = [[0.0] * size for _ in range(size)]
    for a, b in zip(first, second, strict=True):
        observed[a - low][b - low] += 1 / n
    rows = [sum(row) for row in observed]
    cols = [sum(observed[i][j] for i in range(size)) for j in range(size)]

    def weight(i: int, j: int) -> float:  # the disagreement weight
        if weights is None:
            return 0.0 if i == j else 1.0
        return (i - j) ** 2 / (size - 1) ** 2 if size > 1 else 0.0

    seen_off = sum(weight(i, j) * observed[i][j] for i in range(size) for j in range(size))
    chance_off = sum(weight(i, j) * rows[i] * cols[j] for i in range(size) for j in range(size))
    if chance_off <= 1e-15:
        return None
    return 1.0 - seen_off / chance_off


@dataclass(frozen=True)
class Agreement:
    """A person's and a machine's grades on the same pairs: how many, and Cohen's kappa on the
    grades (quadratic-weighted) and on relevant vs not (grade >= 1); None where undefined."""

    pairs: int
    kappa_grades: float | None
    kappa_relevant: float | None
    same: int  # pairs given the same grade

    def describe(self) -> str:
        def shown(value: float | None) -> str:
            return "undefined (one grade throughout)" if value is None else f"{value:.3f}"

        return (f"person vs machine on {self.pairs} pair{'s' * (self.pairs != 1)}: "
                f"{self.same} graded alike; Cohen's kappa {shown(self.kappa_grades)} on the "
                f"grades (quadratic-weighted), {shown(self.kappa_relevant)} on relevant "
                "(grade >= 1) vs not")


def agreement(pairs: Sequence[tuple[int, int]]) -> Agreement:
    """(person grade, machine grade) pairs -> Agreement."""
    person = [p for p, _ in pairs]
    machine = [m for _, m in pairs]
    return Agreement(
        pairs=len(pairs),
        kappa_grades=cohen_kappa(person, machine, weights="quadratic"),
        kappa_relevant=cohen_kappa([int(g >= 1) for g in person], [int(g >= 1) for g in machine],
                                   categories=(0, 1)),
        same=sum(p == m for p, m in pairs),
    )


@dataclass(frozen=True)
class SliceStats:
    slice: str
    queries: int
    answerable: int

    @property
    def unanswerable(self) -> int:
        return self.queries - self.answerable


@dataclass(frozen=True)
class GoldStats:
    """Counts of one gold set; `relevant_*` are None when no query is answerable."""

    source: str
    format: str
    hash: str
    queries: int
    answerable: int
    slices: tuple[SliceStats, ...]
    relevant_histogram: Mapping[int, int]  # relevant documents -> answerable queries with that many
    relevant_min: int | None
    relevant_median: float | None
    relevant_mean: float | None
    relevant_max: int | None
    grades: Mapping[int, int]  # grade -> judgements, ascending
    judgements: int
    with_outranks: int
    with_derivation: int
    machine_grades: int = 0  # under "machine": kept apart, not scored
    agreement: Agreement | None = None  # None: no pair graded by both a person and a machine

    @property
    def unanswerable(self) -> int:
        return self.queries - self.answerable

    @property
    def unanswerable_share(self) -> float:
        return self.unanswerable / self.queries if self.queries else 0.0


def gold_stats(gold: GoldSet, *, machine_grades: int = 0,
               both: Sequence[tuple[int, int]] = ()) -> GoldStats:
    """Count what the module docstring lists; `both`: (person, machine) grades of the pairs
    both graded."""
    relevant = sorted(sum(grade >= 1 for grade in q.relevant.values())
                      for q in gold.queries if q.answerable)
    grades = Counter(grade for q in gold.queries for grade in q.relevant.values())
    slices = tuple(
        SliceStats(name, len(members), sum(q.answerable for q in members))
        for name in gold.slices
        for members in [[q for q in gold.queries if q.slice == name]]
    )
    return GoldStats(
        source=gold.source, format=gold.format, hash=gold.hash, queries=len(gold),
        answerable=len(relevant), slices=slices,
        relevant_histogram=dict(sorted(Counter(relevant).items())),
        relevant_min=relevant[0] if relevant else None,
        relevant_median=float(statistics.median(relevant)) if relevant else None,
        relevant_mean=statistics.fmean(relevant) if relevant else None,
        relevant_max=relevant[-1] if relevant else None,
        grades=dict(sorted(grades.items())), judgements=sum(grades.values()),
        with_outranks=sum(bool(q.outranks) for q in gold.queries),
        with_derivation=sum(q.derivation is not None for q in gold.queries),
        machine_grades=machine_grades,
        agreement=agreement(both) if both else None,
    )

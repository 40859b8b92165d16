"""`harness gold stats`: what a gold set holds, counted. Pure: a GoldSet in, GoldStats out.

    gold_stats(gold) -> GoldStats

- per slice (sorted by name): queries, answerable (`GoldQuery.answerable`), unanswerable;
- relevant per query: over the answerable queries, how many documents have grade >= 1
  (a histogram, and its min, median, mean and max; the median of an even count is the mean of
  the two middle values); 0 for an answerable query whose answer nobody has judged yet;
- grades: how many judgements carry each grade, grade 0 (judged not relevant) included;
- the unanswerable share: unanswerable queries / all queries;
- how many queries carry `outranks` pairs and a `derivation`.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from harness.types import GoldSet


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

    @property
    def unanswerable(self) -> int:
        return self.queries - self.answerable

    @property
    def unanswerable_share(self) -> float:
        return self.unanswerable / self.queries if self.queries else 0.0


def gold_stats(gold: GoldSet) -> GoldStats:
    """Count what the module docstring lists."""
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
    )

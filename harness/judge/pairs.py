"""The unjudged (query, document) pairs a comparison's verdict waits on, most decisive first.
Pure: a gold set, the two sides' runs and the headline cutoffs in; pairs out.

    decisive_pairs(gold, baseline, candidate, ks=(10,), rel_level=1, every=False) -> [Pair]

A side's ranking is each usable repeat's deduplicated answer (`harness.score.judged.dedupe`;
repeats that failed and answers that errored are skipped), over the answerable queries
(`GoldQuery.answerable`) not in `excluded`. A document is unjudged when the query's "relevant"
does not name it (grade 0 is a judgement). The pairs come in three tiers, each pair once, in
its first tier:

1. reach (`harness.verdict.holes.reach`'s documents): per headline k and side, on a repeat where
   that side's top k holds no document of grade >= rel_level (a miss), the unjudged documents of
   its top k that the other side shows in none of its top k: judged relevant, each would turn
   the miss into a hit. Queries whose hit@k (the mean over repeats) differs between the sides
   come first, then the rest; within each, by the best rank the document has on either side.
2. above: unjudged documents ranked above a side's first relevant document in its top max(k),
   what a condensed-list (judged-only) metric depends on; by best rank.
3. with `every`: every other unjudged document in either side's top max(k); by best rank.

Ties keep the gold set's query order, then the document id. `baseline_rank`/`candidate_rank`:
the best 1-based rank over repeats in that side's deduplicated list, None when not in its top
max(k).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from harness.score.judged import dedupe
from harness.values.types import GoldQuery, GoldSet, RefRun

SIDES = ("baseline", "candidate")
TIERS = ("reach", "above", "other")


@dataclass(frozen=True)
class Pair:
    """One unjudged (query, document) pair and why it matters."""

    query_id: str
    doc_id: str
    baseline_rank: int | None
    candidate_rank: int | None
    why: str
    tier: str  # one of TIERS
    flipped: bool = False  # the query's hit@k differs between the sides (a reach pair's)

    @property
    def best_rank(self) -> int:
        ranks = [r for r in (self.baseline_rank, self.candidate_rank) if r is not None]
        return min(ranks, default=1 << 30)


@dataclass
class _Found:
    why: list[str] = field(default_factory=list)
    tier: int = len(TIERS)
    flipped: bool = False


def rankings(run: RefRun) -> dict[str, list[tuple[str, ...]]]:
    """Per query id, each usable repeat's deduplicated ranking (failed repeats and errored
    answers left out)."""
    found: dict[str, list[tuple[str, ...]]] = {}
    for repeat in run.repeats:
        if repeat.failure is not None:
            continue
        for result in repeat.results:
            if result.error is None:
                found.setdefault(result.query_id, []).append(tuple(dedupe(result.ids)))
    return found


def _best(ranked: Sequence[tuple[str, ...]], doc: str, depth: int) -> int | None:
    ranks = [top.index(doc) + 1 for top in ranked if doc in top[:depth]]
    return min(ranks) if ranks else None


def _hit_rate(ranked: Sequence[tuple[str, ...]], grades: dict[str, int], k: int,
              rel_level: int) -> float:
    if not ranked:
        return 0.0
    hits = sum(any(grades.get(d, 0) >= rel_level for d in top[:k]) for top in ranked)
    return hits / len(ranked)


def _query_pairs(q: GoldQuery, sides: tuple[list[tuple[str, ...]], ...], ks: Sequence[int],
                 rel_level: int, every: bool) -> dict[str, _Found]:
    grades = dict(q.relevant)
    depth = max(ks)
    found: dict[str, _Found] = {}

    def note(doc: str, tier: int, why: str, flipped: bool = False) -> None:
        entry = found.setdefault(doc, _Found())
        if tier < entry.tier:
            entry.tier, entry.flipped = tier, flipped
        if tier == entry.tier and why not in entry.why:
            entry.why.append(why)
        entry.flipped = entry.flipped or flipped

    for k in sorted(ks):
        rates = [_hit_rate(ranked, grades, k, rel_level) for ranked in sides]
        flipped = rates[0] != rates[1]
        shown = [{d for top in ranked for d in top[:k]} for ranked in sides]
        for which, ranked in enumerate(sides):
            for top in ranked:
                head = top[:k]
                if any(grades.get(d, 0) >= rel_level for d in head):
                    continue
                for doc in head:
                    if doc not in grades and doc not in shown[1 - which]:
                        differs = f" (hit@{k} differs between the sides here)" if flipped else ""
                        note(doc, 0, f"could turn the {SIDES[which]}'s miss at hit@{k} into a "
                             f"hit{differs}", flipped)
    for which, ranked in enumerate(sides):
        for top in ranked:
            head = top[:depth]
            first = next((i for i, d in enumerate(head) if grades.get(d, 0) >= rel_level), None)
            if first is None:
                continue
            for doc in head[:first]:
                if doc not in grades:
                    note(doc, 1, f"ranked above the {SIDES[which]}'s first relevant document "
                         f"in its top {depth}")
    if every:
        for which, ranked in enumerate(sides):
            for top in ranked:
                for doc in top[:depth]:
                    if doc not in grades:
                        note(doc, 2, f"unjudged in the {SIDES[which]}'s top {depth}")
    return found


def decisive_pairs(gold: GoldSet, baseline: RefRun, candidate: RefRun, ks: Sequence[int] = (10,),
                   rel_level: int = 1, every: bool = False,
                   excluded: Collection[str] = ()) -> list[Pair]:
    """The pairs of the module docstring, in order."""
    if not ks or min(ks) < 1:
        raise ValueError(f"headline cutoffs are integers >= 1, got {tuple(ks)}")
    depth = max(ks)
    runs = (rankings(baseline), rankings(candidate))
    keyed: list[tuple[tuple[int, int, int, int, str], Pair]] = []
    for position, q in enumerate(gold.queries):
        if not q.answerable or q.id in excluded:
            continue
        sides = (runs[0].get(q.id, []), runs[1].get(q.id, []))
        for doc, entry in _query_pairs(q, sides, ks, rel_level, every).items():
            pair = Pair(q.id, doc, _best(sides[0], doc, depth), _best(sides[1], doc, depth),
                        "; ".join(entry.why), TIERS[entry.tier], entry.flipped)
            first = 0 if entry.tier == 0 and entry.flipped else 1
            keyed.append(((entry.tier, first, pair.best_rank, position, doc), pair))
    keyed.sort(key=lambda item: item[0])
    return [pair for _, pair in keyed]

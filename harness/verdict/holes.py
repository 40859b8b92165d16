"""Holes in the judgements: how much of what each side returned was judged.  Pure.

    holes = judged_shares(ids, gold, base, cand, k, scopes={"overall": mask, ...}, flipped=mask)

Most gold sets are judged from what the current system returns: someone reads main's top
results and marks which are relevant.  A candidate that brings up other documents is then
scored against documents nobody judged, which count as not relevant (trec_eval's convention,
and harness's): a gain there reads as no change, or as a loss.  This is pooling bias, and the
pre-merge case is its worst one: the candidate is, by definition, the system nobody judged.

What is measured, per side, for the top k of its deduplicated answers (k: the largest headline
cutoff), over each side's usable repeats and the analysed answerable queries of a scope:

    judged share = (documents in the top k with any judgement, grade 0 included)
                   / (documents returned in the top k)

pooled over the scope's queries and repeats (ir_measures' Judged@k is the same ratio per query,
`harness.score.metrics.judged_at`: `harness metrics --metrics Judged@10` gives its mean), and the
distinct (query, document) pairs left unjudged there: what a person would have to judge.  A
query that returned nothing counts for neither side of the ratio.

When the gold set records judged non-relevant documents (a pool: some grade 0) and the two
sides' judged shares differ by more than `MARGIN` overall, a warning says so, above the tables,
with the number of pairs to judge: the verdict may be measuring the holes.  A gold set that
judges only relevant documents is read as complete, as it always was: there a side's judged
share is its precision, and a lower one is a loss, not a hole.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from harness.score.judged import dedupe
from harness.values.types import GoldSet
from harness.verdict.comparison import HoleReach, Holes, JudgedShare, MetricRow
from harness.verdict.scopes import Side

MARGIN = 0.05
"""How far apart the sides' judged shares may be before the report warns: as far as the
default band, the change the verdict is about (an unjudged twentieth of the top 10 can hide a
change of that size)."""
MOST_PAIRS = 500  # unjudged pairs listed in the comparison (the counts are always whole)

BoolArray = npt.NDArray[np.bool_]


def _side(side: Side, ids: Sequence[str], gold: GoldSet, k: int) -> _Counts:
    """Per query of `ids`: judged documents in the top k summed over repeats, documents returned
    there summed over repeats, and the distinct unjudged ones (counted; their ids on demand).
    Read from the judged rankings (`Side.pooled`: one row per distinct answer) when there are
    some, so a repeat or a side that answered the same reads it once."""
    pooled = side.pooled
    judged_rows = None if pooled is None else pooled.judged.judged
    ranked = None if pooled is None else pooled.judged.n_ranked
    rows = side.pool_rows
    if pooled is None or judged_rows is None or ranked is None or rows.shape[1] != len(ids):
        return _Counts.walk(side, ids, gold, k)
    top = judged_rows[:, :k]
    judged_in = top.sum(axis=1)
    returned_in = np.minimum(ranked, k)
    per_row_holes = returned_in - judged_in
    same = (rows == rows[:1]).all(axis=0)  # one answer in every repeat: its holes, counted once
    distinct = np.where(same, per_row_holes[rows[0]], 0)

    def holes_of(i: int) -> set[str]:
        found: set[str] = set()
        for row in set(rows[:, i].tolist()):
            top_ids = side.deduped(row)[:k]
            found.update(doc for j, doc in enumerate(top_ids) if not top[row, j])
        return found

    for i in np.flatnonzero(~same).tolist():
        distinct[i] = len(holes_of(i))
    return _Counts(
        judged_in[rows].sum(axis=0).astype(float),
        returned_in[rows].sum(axis=0).astype(float),
        np.asarray(distinct),
        holes_of,
    )


@dataclass(frozen=True)
class _Counts:
    judged: np.ndarray  # per query, over repeats
    returned: np.ndarray
    unjudged: np.ndarray  # distinct unjudged documents per query
    holes_of: Callable[[int], set[str]]  # query position -> those documents

    @classmethod
    def walk(cls, side: Side, ids: Sequence[str], gold: GoldSet, k: int) -> _Counts:
        """The same from the answers themselves (a side scored without pooled rankings)."""
        judged = np.zeros(len(ids))
        returned = np.zeros(len(ids))
        holes: list[set[str]] = [set() for _ in ids]
        for i, qid in enumerate(ids):
            grades = gold.by_id[qid].relevant
            for answers in side.answers:
                answer = answers.get(qid)
                if answer is None or answer.error is not None:
                    continue
                top = dedupe(answer.ids)[:k]
                returned[i] += len(top)
                judged[i] += sum(doc in grades for doc in top)
                holes[i].update(doc for doc in top if doc not in grades)
        counts = np.array([len(h) for h in holes])
        return cls(judged, returned, counts, holes.__getitem__)


def _share(judged: np.ndarray, returned: np.ndarray, mask: BoolArray) -> float | None:
    total = float(returned[mask].sum())
    return None if total == 0 else float(judged[mask].sum()) / total


def judged_shares(
    ids: Sequence[str],
    gold: GoldSet,
    base: Side,
    cand: Side,
    k: int,
    scopes: Mapping[str, BoolArray],
    flipped: BoolArray | None = None,
    flipped_at: str = "",
    pooled: bool = False,
) -> Holes:
    """The judged shares of each scope of `scopes` (name -> mask over `ids`, "overall" first)
    and of the flipped queries (`flipped`, at `flipped_at`), and, for a `pooled` gold set
    (`pooled_gold`), the warning."""
    sides = [_side(s, ids, gold, k) for s in (base, cand)]
    masks = dict(scopes)
    if flipped is not None and flipped.any():
        masks[f"flipped at {flipped_at}"] = flipped
    b, c = sides
    shares = [
        JudgedShare(
            scope=name,
            n=int(mask.sum()),
            baseline=_share(b.judged, b.returned, mask),
            candidate=_share(c.judged, c.returned, mask),
            unjudged_baseline=int(b.unjudged[mask].sum()),
            unjudged_candidate=int(c.unjudged[mask].sum()),
        )
        for name, mask in masks.items()
    ]
    first = np.argsort(~flipped, kind="stable") if flipped is not None else range(len(ids))
    listed: list[tuple[str, str, str]] = []
    for name, counts in (("candidate", c), ("baseline", b)):
        for i in first:
            if len(listed) >= MOST_PAIRS:
                break
            if counts.unjudged[int(i)]:
                listed += [(name, ids[int(i)], doc) for doc in sorted(counts.holes_of(int(i)))]
    listed = listed[:MOST_PAIRS]
    warning = _warning(shares[0], k) if shares and pooled else None
    return Holes(k, MARGIN, tuple(shares), warning, tuple(listed))


def _warning(overall: JudgedShare, k: int) -> str | None:
    b, c = overall.baseline, overall.candidate
    if b is None or c is None or abs(b - c) <= MARGIN:
        return None
    less, more = ("candidate", "baseline") if c < b else ("baseline", "candidate")
    pairs = overall.unjudged_candidate if less == "candidate" else overall.unjudged_baseline
    low, high = min(b, c), max(b, c)
    return (
        f"judgments incomplete: {low:.1%} of the {less}'s top-{k} documents are judged, "
        f"against {high:.1%} of the {more}'s (more than {MARGIN:g} apart): an unjudged document "
        f"counts as not relevant, so a gain among the {less}'s {pairs} unjudged (query, "
        "document) pairs reads as no change or a loss; judge them (`harness judge pairs` on "
        "the saved comparison lists them, most decisive first) and compare again"
    )


def pooled_gold(gold: GoldSet) -> bool:
    """Whether the gold set records judged non-relevant documents (some grade 0): a pool, whose
    unjudged documents are holes rather than documents known not to be relevant.  The native
    header's "judged" decides when it is there: "pooled" (even with no grade 0), or "complete"
    (the judgements are the whole truth: an unjudged document is known not relevant)."""
    if gold.pooled is not None:
        return gold.pooled
    return any(g <= 0 for q in gold.queries for g in q.relevant.values())


def reach(
    ids: Sequence[str], gold: GoldSet, base: Side, cand: Side, k: int, rel_level: int
) -> HoleReach:
    """How far the unjudged documents could move hit@k's mean delta: `up` when every unjudged
    document the candidate alone ranks in its top k, on a query it misses, were relevant (the
    candidate's rate there rising by the share of its repeats that could flip), `down` the same
    for the baseline; and the queries and distinct documents that could."""
    n = len(ids)
    up = down = 0.0
    queries: set[str] = set()
    documents: set[tuple[str, str]] = set()
    walked = _open(base, cand, ids, k, rel_level)
    sides = (_Tops(base, ids, k), _Tops(cand, ids, k))
    for i in range(n) if walked is None else walked:
        qid = ids[i]
        grades = gold.by_id[qid].relevant
        tops = [side[i] for side in sides]
        shown = [{d for top in each for d in top} for each in tops]
        for which in (0, 1):
            other = shown[1 - which]
            could = 0
            for top in tops[which]:
                if any(grades.get(d, 0) >= rel_level for d in top):
                    continue  # a hit already: judging more cannot raise it
                new = [d for d in top if d not in grades and d not in other]
                if new:
                    could += 1
                    documents.update((qid, d) for d in new)
            if could:
                queries.add(qid)
                share = could / max(1, len(tops[which]))
                if which:
                    up += share
                else:
                    down += share
    return HoleReach(k, up / n if n else 0.0, down / n if n else 0.0, len(queries),
                     len(documents))  # fmt: skip


class _Tops:
    """`_tops` of one side, a query at a time (a query whose answers have no hole that could
    count is never cut into lists)."""

    def __init__(self, side: Side, ids: Sequence[str], k: int) -> None:
        self.side, self.ids, self.k = side, ids, k
        rows = side.pool_rows
        self.pooled = side.pooled is not None and rows.shape[1] == len(ids)

    def __getitem__(self, i: int) -> list[tuple[str, ...]]:
        side, k = self.side, self.k
        if self.pooled:
            return [side.deduped(r)[:k] for r in side.pool_rows[:, i].tolist()]
        qid = self.ids[i]
        return [dedupe(a[qid].ids)[:k] for a in side.answers if qid in a and a[qid].error is None]


def _open(base: Side, cand: Side, ids: Sequence[str], k: int, rel_level: int) -> list[int] | None:
    """The positions of `ids` where `reach` must walk the lists: some usable answer of either
    side misses at k and has an unjudged document in its top k (elsewhere no answer can count,
    whatever the other side shows), read from the judged rankings; None (walk every query)
    when a side has none."""
    found = np.zeros(len(ids), dtype=bool)
    for side in (base, cand):
        pooled, rows = side.pooled, side.pool_rows
        judged = None if pooled is None else pooled.judged
        if (judged is None or judged.judged is None or judged.n_ranked is None
                or side.rel_level != rel_level or rows.shape[1] != len(ids)):
            return None
        width = min(k, judged.width)
        hit = np.any(judged.relevant[:, :width], axis=1)
        inside: BoolArray = np.arange(width) < np.minimum(judged.n_ranked, k)[:, None]
        holes = np.any(inside & ~judged.judged[:, :width], axis=1)
        if rows.size:
            found |= (~hit & holes)[rows].any(axis=0)
    return np.flatnonzero(found).tolist()


def hidden(holes: Holes | None, rows: Sequence[MetricRow], band: float) -> str | None:
    """Why "no measurable difference" cannot be said: the unjudged documents of a pooled gold
    set could move a headline hit@k's interval past the band (`reach`); None when they could
    not (or the gold set is not pooled)."""
    for r in () if holes is None else holes.reach:
        row = next((x for x in rows if x.metric == f"hit@{r.k}"), None)
        eq = None if row is None else row.equivalence
        if eq is None or (eq.high + r.up < band and eq.low - r.down > -band):
            continue
        return (
            f"judgments incomplete: hit@{r.k}'s {eq.confidence:.0%} interval "
            f"[{eq.low:+.3f}, {eq.high:+.3f}] lies inside ±{band:g}, but {r.documents} "
            f"unjudged (query, document) pairs on {r.queries} queries, ranked in one side's top "
            f"{r.k} alone where it misses, could move it by up to +{r.up:.3f} / -{r.down:.3f} "
            "were they relevant; judge them (`harness judge pairs` on the saved comparison "
            "lists them, most decisive first) and compare again"
        )
    return None

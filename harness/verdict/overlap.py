"""How much the rankings changed, which needs no judgement at all.  Pure.

    rbo(baseline_ids, candidate_ids, p=0.9)          # rank-biased overlap, extrapolated
    jaccard(baseline_ids, candidate_ids, k=10)       # |top k in both| / |top k in either|
    changes = ranking_changes(ids, gold, base, cand, k, scopes)   # per scope, and the queries

A gold set with holes cannot say whether a candidate's new documents are better; it can say how
many there are. Beside the verdict, per scope, each query's candidate ranking is compared with
the baseline's of the same round (repeat r with repeat r; the mean over the rounds), both
deduplicated and cut at k:

- rank-biased overlap (Webber, Moffat and Zobel, "A similarity measure for indefinite
  rankings", TOIS 2010), extrapolated (their RBO_ext, eq. 32, which handles lists of different
  lengths): with X_d the overlap of the two top-d lists, s and l the shorter and longer length,

      RBO_ext = (1 - p) / p * (sum_{d=1..l} X_d / d * p^d
                               + sum_{d=s+1..l} X_s (d - s) / (s d) * p^d)
                + ((X_l - X_s) / l + X_s / s) * p^l

  1 for identical lists, 0 for disjoint ones; p = 0.9 puts 86% of the weight on the top 10.
  Two empty lists are identical (1); one empty list against another is 0.
- Jaccard@k: the documents in both top-k lists over the documents in either (1 when both are
  empty).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from harness.score.judged import dedupe
from harness.values.types import GoldSet
from harness.verdict.comparison import QueryChange, RankingChanges, ScopeChange
from harness.verdict.scopes import Side

P = 0.9  # RBO's persistence
MOST_CHANGED = 10  # queries listed, lowest overlap first

BoolArray = npt.NDArray[np.bool_]


def rbo(a: Sequence[str], b: Sequence[str], p: float = P) -> float:
    """RBO_ext of two rankings (deduplicated, as given; module docstring)."""
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), not {p}")
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    s, n = len(short), len(long_)  # the docstring's s and l
    if n == 0:
        return 1.0
    if s == 0:
        return 0.0
    seen_short: set[str] = set()
    seen_long: set[str] = set()
    overlap = 0
    x = [0] * (n + 1)  # x[d]: overlap of the top-d lists (the short one stops at s)
    for d in range(1, n + 1):
        right = long_[d - 1]
        if d <= s:
            left = short[d - 1]
            overlap += left in seen_long or left == right
            seen_short.add(left)
            if right != left:
                overlap += right in seen_short
        else:
            overlap += right in seen_short
        seen_long.add(right)
        x[d] = overlap
    weights = _weights(p, n)
    total = sum(x[d] / d * weights[d] for d in range(1, n + 1))
    total += sum(x[s] * (d - s) / (s * d) * weights[d] for d in range(s + 1, n + 1))
    return float((1 - p) / p * total + ((x[n] - x[s]) / n + x[s] / s) * weights[n])


@functools.lru_cache(maxsize=64)
def _weights(p: float, n: int) -> tuple[float, ...]:
    return tuple(p**d for d in range(n + 1))


def jaccard(a: Sequence[str], b: Sequence[str], k: int) -> float:
    """|top k of a and of b| / |top k of a or of b| (1 when both are empty)."""
    top_a, top_b = set(a[:k]), set(b[:k])
    either = top_a | top_b
    return 1.0 if not either else len(top_a & top_b) / len(either)


def _per_query(
    ids: Sequence[str], base: Side, cand: Side, k: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Per query of `ids`: RBO and Jaccard@k, each the mean over the rounds both sides have.
    Read from the judged rankings both sides share (`Side.pooled`: one row per distinct
    answer, so a pair of answers seen in several rounds is compared once) when they have them."""
    pooled = base.pooled
    if pooled is None or cand.pooled is not pooled or base.pool_rows.shape[1] != len(ids):
        return _walk(ids, base, cand, k)
    rounds = min(base.pool_rows.shape[0], cand.pool_rows.shape[0])
    ranked = pooled.judged.n_ranked
    if rounds == 0 or ranked is None or k > pooled.max_k:
        return _pairs(ids, base, cand, k, rounds)
    rows_b, rows_c = base.pool_rows[:rounds], cand.pool_rows[:rounds]
    same = rows_b == rows_c
    overlaps = np.zeros(rows_b.shape)
    shared = np.ones(rows_b.shape)  # Jaccard@k of a list with itself (or of two empty ones)
    # One answer on both sides: its RBO with itself depends only on its length (its top-d
    # lists overlap in d documents at every depth), so it is worked out once per length.
    lengths = np.minimum(ranked[rows_b[same]], k)
    itself = {n: _itself(n) for n in np.unique(lengths).tolist()}
    table = np.zeros(max(itself, default=0) + 1)
    for n, value in itself.items():
        table[n] = value
    overlaps[same] = table[lengths]
    seen: dict[tuple[int, int], tuple[float, float]] = {}
    where = np.nonzero(~same)
    for r, i, row_b, row_c in zip(*(w.tolist() for w in where), rows_b[where].tolist(),
                                  rows_c[where].tolist(), strict=True):
        if (row_b, row_c) not in seen:
            x, y = base.deduped(row_b)[:k], cand.deduped(row_c)[:k]
            seen[row_b, row_c] = (rbo(x, y), jaccard(x, y, k))
        overlaps[r, i], shared[r, i] = seen[row_b, row_c]
    return _mean(overlaps), _mean(shared)


def _itself(n: int) -> float:
    """RBO of a list of `n` distinct ids with itself."""
    ranking = tuple(map(str, range(n)))
    return rbo(ranking, ranking)


def _mean(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The mean over the rounds (rows) of each column, added round after round as
    `sum(...) / len(...)` adds them."""
    total = values[0].copy()
    for more in values[1:]:
        total += more
    mean: npt.NDArray[np.float64] = total / len(values)
    return mean


def _pairs(
    ids: Sequence[str], base: Side, cand: Side, k: int, rounds: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """`_per_query` pair by pair (the judged rankings have no ranked lengths)."""
    seen: dict[tuple[int, int], tuple[float, float]] = {}
    overlaps = np.zeros(len(ids))
    shared = np.zeros(len(ids))
    pairs = np.stack([base.pool_rows[:rounds], cand.pool_rows[:rounds]], axis=-1)
    for i in range(len(ids)):
        got = []
        for row_b, row_c in pairs[:, i].tolist():
            if (row_b, row_c) not in seen:
                x, y = base.deduped(row_b)[:k], cand.deduped(row_c)[:k]
                seen[row_b, row_c] = (rbo(x, y), jaccard(x, y, k))
            got.append(seen[row_b, row_c])
        overlaps[i] = sum(r for r, _ in got) / len(got)
        shared[i] = sum(j for _, j in got) / len(got)
    return overlaps, shared


def _walk(
    ids: Sequence[str], base: Side, cand: Side, k: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The same from the answers themselves (sides scored without pooled rankings)."""
    rounds = list(zip(base.answers, cand.answers, strict=False))
    overlaps = np.zeros(len(ids))
    shared = np.zeros(len(ids))
    for i, qid in enumerate(ids):
        got = [
            (rbo(x, y), jaccard(x, y, k))
            for x, y in (
                (dedupe(b[qid].ids)[:k], dedupe(c[qid].ids)[:k])
                for b, c in rounds
                if qid in b and qid in c
            )
        ]
        if got:
            overlaps[i] = sum(r for r, _ in got) / len(got)
            shared[i] = sum(j for _, j in got) / len(got)
    return overlaps, shared


def ranking_changes(
    ids: Sequence[str],
    gold: GoldSet,
    base: Side,
    cand: Side,
    k: int,
    scopes: Mapping[str, BoolArray],
) -> RankingChanges:
    """Mean RBO and Jaccard@k per scope (name -> mask over `ids`), the share of queries whose
    top k changed at all, and the MOST_CHANGED queries of lowest RBO."""
    overlaps, shared = _per_query(ids, base, cand, k)
    per_scope = tuple(
        ScopeChange(
            scope=name,
            n=int(mask.sum()),
            rbo=float(overlaps[mask].mean()) if mask.any() else 1.0,
            jaccard=float(shared[mask].mean()) if mask.any() else 1.0,
            changed=int((shared[mask] < 1).sum()),
        )
        for name, mask in scopes.items()
    )
    order = sorted(range(len(ids)), key=lambda i: (overlaps[i], ids[i]))
    most = tuple(
        QueryChange(ids[i], gold.by_id[ids[i]].slice, float(overlaps[i]), float(shared[i]))
        for i in order[:MOST_CHANGED]
        if overlaps[i] < 1
    )
    return RankingChanges(k=k, p=P, scopes=per_scope, most_changed=most)

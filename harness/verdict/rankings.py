"""Several repeats' answers read together: each repeat's rankings as strings, an answer repeated
from the repeat before built once (`ok_rankings`), and two records' tables of returned ids
holding an id they share once (`share_strings`). Part of the compare stage (`scopes`,
`compare`); pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress
from operator import eq

import numpy as np

from harness.values.answers import Answers, Columns, Int64


def share_strings(repeats: Sequence[Answers]) -> None:
    """Decode the tables of returned ids of `repeats` so that an id returned in several of
    them is mostly one string object (`Strings.share`): the two sides of a compare are read
    from two records, each with its own table of mostly the same ids (at 100k queries, 1.8
    million of them a side, about 130 MB of strings each). The ids are paired by where they
    were returned: the same place in the answers to the same query of each table's first
    repeat (no table of every id is built to find them)."""
    firsts = list({id(a.columns.docs): a for a in reversed(repeats)}.values())[::-1]
    if len(firsts) < 2:
        return
    first = firsts[0]
    for other in firsts[1:]:
        mine, theirs = _places(other, first)
        other.columns.docs.share(first.columns.docs, mine, theirs)


def _places(a: Answers, b: Answers) -> tuple[Int64, Int64]:
    """The codes of the ids at the same place of the answers of `a` and `b` to one query (in
    rows where both answer it, in the same row, with as many ids): a's, then b's."""
    ca, cb = a.columns, b.columns
    n = min(len(ca), len(cb))
    sizes = np.diff(ca.ids_at)[:n]
    same = np.fromiter(map(eq, a.query_ids[:n], b.query_ids[:n]), dtype=bool, count=n)
    rows = np.flatnonzero(same & (sizes == np.diff(cb.ids_at)[:n]))
    counts = sizes[rows]
    offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    at_a = np.repeat(ca.ids_at[rows], counts) + offsets
    at_b = np.repeat(cb.ids_at[rows], counts) + offsets
    return ca.ids[at_a].astype(np.int64), cb.ids[at_b].astype(np.int64)


def ok_rankings(repeats: Sequence[Answers]) -> list[dict[str, tuple[str, ...]]]:
    """Per repeat, the returned ids of each query whose answer (`Answers.query_rows`) did not
    error. Repeats read from one record (one table of ids) mostly repeat their answers: an
    answer equal to the one before it, for the same query, is the same tuple, built once."""
    out: list[dict[str, tuple[str, ...]]] = []
    before: tuple[Columns, Int64, list[tuple[str, ...]]] | None = None
    for answers in repeats:
        rows, last = answers.query_rows, answers.last_rows
        keep = answers.ok[last]
        picked = last[keep]
        c = answers.columns
        same = _same_rows(before, c, picked)
        tuples: list[tuple[str, ...]] = [()] * len(picked)
        if same is not None and before is not None:
            for i, j in enumerate(same.tolist()):
                if j >= 0:
                    tuples[i] = before[2][j]
            fresh = np.flatnonzero(same < 0)
            for i, t in zip(fresh.tolist(), answers.rankings(picked[fresh]), strict=True):
                tuples[i] = t
        else:
            tuples = answers.rankings(picked)
        out.append(dict(zip(compress(rows, keep.tolist()), tuples, strict=True)))
        before = (c, picked, tuples)
    return out


def _same_rows(
    before: tuple[Columns, Int64, list[tuple[str, ...]]] | None, c: Columns, picked: Int64
) -> Int64 | None:
    """For each of `picked` (rows of `c`), the position in `before`'s picked rows of an equal
    answer to the same query (-1: none); None when the two repeats share no table."""
    if before is None:
        return None
    b, b_picked, _ = before
    if b.docs is not c.docs or b.queries is not c.queries:
        return None
    where = np.full(len(b.queries), -1, dtype=np.int64)
    where[b.query[b_picked]] = np.arange(len(b_picked))
    match = where[c.query[picked]]
    rows = b_picked[np.maximum(match, 0)]
    size = np.diff(c.ids_at)[picked]
    equal = (match >= 0) & (np.diff(b.ids_at)[rows] == size)
    for n in np.unique(size[equal]).tolist():  # compared a length at a time, as matrices
        group = np.flatnonzero(equal & (size == n))
        if n:
            mine = c.ids[c.ids_at[picked[group]][:, None] + np.arange(n)]
            theirs = b.ids[b.ids_at[rows[group]][:, None] + np.arange(n)]
            equal[group] = (mine == theirs).all(axis=1)
    return np.where(equal, match, -1)

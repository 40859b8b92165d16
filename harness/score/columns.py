"""A TREC run read column-wise: pandas' C tokenizer, numpy sorts, nothing per line in Python.

    found = read_trec_columns(text)   # (rankings, scores), or None: let the line-by-line reader
                                      # find and name every problem

The fast path accepts exactly what `harness.score.runfile`'s line-by-line TREC reader accepts
and gives the same rankings and scores; whenever the text holds anything that reader would
report (a line with other than 6 columns, a score that is not a finite number, a docid twice
for a query) or split differently (a line or field break other than space, tab and newline:
str.split and str.splitlines know more than pandas' whitespace tokenizer), it returns None, and
the caller reads the text again line by line, collecting every problem with its line number.

The order is trec_eval's: score descending, ties by docid descending (code point order). numpy
sorts by (query, -score) (stable), and only runs of tied scores are then ordered by docid in
Python. Rankings and scores come back as read-only mappings (`Ranked`) over one list of doc ids
and one float array: a query's tuple is built when it is looked up, so a 10M-line run holds 10M
ids once, not twice, and scores no one asks for are never turned into Python floats.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

# Separators str.split()/splitlines() honour and pandas' whitespace tokenizer does not (and \r,
# which pandas takes as a line end on its own): text holding any of them takes the slow path.
_ASCII_BREAKS = (b"\r", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e", b"\x1f")
_UTF8_BREAKS = re.compile(
    b"\xc2[\x85\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]|\xe2\x81\x9f|\xe3\x80\x80"
)
_COLUMNS = ["qid", "q0", "doc", "rank", "score", "tag"]
_MIX = np.uint64(0x9E3779B97F4A7C15)  # spreads query codes over the 64 bits of a doc's hash


class Ranked(Mapping[str, tuple[Any, ...]]):
    """Read-only {query id: tuple of values[start:end]}, the tuple built on each lookup."""

    def __init__(
        self,
        spans: dict[str, tuple[int, int]],
        values: Sequence[Any] | npt.NDArray[Any],
        *,
        floats: bool = False,
    ) -> None:
        self._spans, self._values, self._floats = spans, values, floats

    def __getitem__(self, key: str) -> tuple[Any, ...]:
        start, end = self._spans[key]
        if self._floats:  # a numpy array: its slice as Python floats
            return tuple(self._values[start:end].tolist())  # type: ignore[union-attr]
        return tuple(self._values[start:end])

    def __iter__(self) -> Iterator[str]:
        return iter(self._spans)

    def __len__(self) -> int:
        return len(self._spans)

    def __contains__(self, key: object) -> bool:
        return key in self._spans

    def flat(self, ids: Sequence[str]) -> tuple[Any, list[int]]:
        """The values of each query of `ids` (none for a query absent), flattened in that order
        (a float64 array for floats, else a list), and how many each query has."""
        positions, sizes = span_positions(self._spans, ids)
        if self._floats:
            return self._values[positions], sizes  # type: ignore[call-overload]
        values = self._values
        return [values[i] for i in positions.tolist()], sizes


def span_positions(
    spans: Mapping[str, tuple[int, int]], ids: Sequence[str], k: int | None = None
) -> tuple[npt.NDArray[np.int64], list[int]]:
    """The positions of the values of each query of `ids` (its first `k`, when given), in that
    order, and how many each query has (0 for a query `spans` lacks)."""
    found = [spans.get(qid, (0, 0)) for qid in ids]
    starts = np.fromiter((s for s, _ in found), dtype=np.int64, count=len(found))
    ends = np.fromiter((e for _, e in found), dtype=np.int64, count=len(found))
    sizes = ends - starts if k is None else np.minimum(ends - starts, k)
    total = int(sizes.sum())
    first = np.cumsum(sizes) - sizes
    return np.repeat(starts - first, sizes) + np.arange(total), sizes.tolist()


def read_trec_columns(data: bytes) -> tuple[Ranked, Ranked] | None:
    """(rankings, scores) of a well-formed TREC run (UTF-8 bytes, already checked to decode),
    or None when the text needs the line reader."""
    import pandas as pd

    if any(b in data for b in _ASCII_BREAKS) or (not data.isascii() and _UTF8_BREAKS.search(data)):
        return None
    read_csv: Any = pd.read_csv  # its overloads do not know a dict of dtypes by column name
    try:
        frame = read_csv(
            io.BytesIO(data),
            sep=r"\s+",
            header=None,
            names=_COLUMNS,
            usecols=["qid", "doc", "score", "tag"],
            dtype={"qid": object, "doc": object, "score": np.float64, "tag": "category"},
            quoting=csv.QUOTE_NONE,
            na_filter=False,
            skip_blank_lines=True,
            engine="c",
        )
    except (ValueError, pd.errors.ParserError):  # a short line, a wrong count, a word as score
        return None
    tags = frame["tag"]  # a category only to spot a line of 5 columns (its tag is "" or NaN)
    if frame.empty or tags.isna().any() or "" in {str(t) for t in tags.cat.categories}:
        return None
    score: npt.NDArray[np.float64] = frame["score"].to_numpy(np.float64)
    if not np.isfinite(score).all():
        return None
    # Codes in order of first appearance (as the line reader's dict has the queries); not a
    # category dtype, whose categories pandas would read as numbers ("001" as 1).
    codes, names = pd.factorize(frame["qid"].to_numpy(object))
    query_codes = codes.astype(np.int64)
    docs = frame["doc"].to_numpy(object)
    del frame
    # A docid twice for a query: equal (query, hash(docid)) keys, found by one integer sort. A
    # hash collision only sends the text to the line reader, which finds no problem there.
    hashes = np.fromiter(map(hash, docs), dtype=np.int64, count=len(docs)).view(np.uint64)
    keys = np.sort(hashes ^ (query_codes.astype(np.uint64) * _MIX))
    if (keys[1:] == keys[:-1]).any():
        return None
    del hashes, keys
    order = np.lexsort((-score, query_codes))  # stable: ties keep file order until below
    query_codes, score, ranked = query_codes[order], score[order], docs[order].tolist()
    del docs, order
    _break_ties(query_codes, score, ranked)
    # Queries in order of first appearance, as the line reader's dict has them.
    starts = np.flatnonzero(np.r_[True, query_codes[1:] != query_codes[:-1]])
    ends = np.r_[starts[1:], len(query_codes)]
    span_of = {
        code: (start, end)
        for code, start, end in zip(
            query_codes[starts].tolist(), starts.tolist(), ends.tolist(), strict=True
        )
    }
    spans = {str(names[code]): span_of[code] for code in range(len(names))}
    return Ranked(spans, ranked), Ranked(spans, score, floats=True)


def _break_ties(
    codes: npt.NDArray[np.int64], score: npt.NDArray[np.float64], docs: list[Any]
) -> None:
    """Order each run of equal (query, score) by docid descending, in place."""
    same = (codes[1:] == codes[:-1]) & (score[1:] == score[:-1])
    if not same.any():
        return
    edges = np.diff(np.r_[0, same.astype(np.int8), 0])
    for start, end in zip(
        np.flatnonzero(edges == 1).tolist(), (np.flatnonzero(edges == -1) + 1).tolist(), strict=True
    ):
        docs[start:end] = sorted(docs[start:end], reverse=True)

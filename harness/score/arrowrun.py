"""A TREC run read by pyarrow's multi-threaded CSV reader: no Python object per line.

    found = read_trec_arrow(data)   # (rankings, scores), or None: let a slower reader decide

The fastest of the three TREC readers (then `harness.score.columns`, then the line reader of
`harness.score.runfile`, which names every problem). It takes only text whose columns are
separated by exactly one space (no tab, no run of spaces, nothing before the first column or
after the last; blank lines are fine), since pyarrow splits on one byte; and, like the
column-wise reader, it declines anything the line reader would report or split differently:
a line with other than 6 columns, a score that is not a finite number, a docid twice for a
query, a break character str.split knows and pyarrow does not, a byte-order mark.

Doc ids stay in Arrow's buffers. Duplicates are found by one integer sort of 64-bit
(query, docid) hashes computed from those buffers in numpy (a collision only declines the
file: the line reader then finds nothing wrong); the file's own order is kept when it is
already trec_eval's (score descending, ties by docid descending: what most tools write), else
one stable sort puts it there. `ArrowRanked.heads` gives the top k ids of many queries as
Python strings at once (what `harness.score.evaluation` reads); a query's full tuple is built
only when it is looked up.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from harness.score.columns import Ranked, span_positions

_UTF8_BREAKS = re.compile(
    b"\xc2[\x85\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]|\xe2\x81\x9f|\xe3\x80\x80"
)
_NAMES = ["qid", "q0", "doc", "rank", "score", "tag"]
_MIX = np.uint64(0x9E3779B97F4A7C15)
_MUL = np.uint64(0xBF58476D1CE4E5B9)
U64 = npt.NDArray[np.uint64]


class ArrowRanked(Mapping[str, tuple[str, ...]]):
    """Read-only {query id: doc ids in rank order} over Arrow strings (a chunked array)."""

    def __init__(self, spans: dict[str, tuple[int, int]], docs: Any) -> None:
        self._spans, self._docs = spans, docs

    def __getitem__(self, key: str) -> tuple[str, ...]:
        start, end = self._spans[key]
        return tuple(self._docs.slice(start, end - start).to_pylist())

    def __iter__(self) -> Iterator[str]:
        return iter(self._spans)

    def __len__(self) -> int:
        return len(self._spans)

    def __contains__(self, key: object) -> bool:
        return key in self._spans

    def flat(self, ids: Sequence[str]) -> tuple[list[str], list[int]]:
        """Every doc id of each query of `ids`, flattened in that order, and how many each
        query has (0 for a query the run lacks)."""
        positions, sizes = span_positions(self._spans, ids)
        flat: list[str] = self._docs.take(_indices(positions)).to_pylist()
        return flat, sizes

    def heads(self, ids: Sequence[str], k: int) -> tuple[list[str], list[int]]:
        """The first k doc ids of each query of `ids`, flattened in that order, and how many
        each query has (0 for a query the run lacks): a TREC run read here holds no docid twice
        for a query, so these are the first k unique ids too."""
        positions, sizes = span_positions(self._spans, ids, k)
        flat: list[str] = self._docs.take(_indices(positions)).to_pylist()
        return flat, sizes


def read_trec_arrow(data: bytes) -> tuple[ArrowRanked, Ranked] | None:
    """(rankings, scores) of a well-formed single-space TREC run (UTF-8 bytes, already
    checked to decode), or None when a slower reader must look at it; None too when pyarrow
    is not installed."""
    if _odd_bytes(data) or data.startswith(b"\xef\xbb\xbf"):
        return None
    if not data.isascii() and _UTF8_BREAKS.search(data):
        return None
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.csv as pcsv
    except ImportError:
        return None
    try:
        table = pcsv.read_csv(
            pa.py_buffer(data),
            # One thread: Arrow's CPU pool, once started, may still be tearing down when the
            # interpreter exits, and then the process aborts after its output ("terminate
            # called without an active exception", exit -6: apache/arrow#34314). 2 of 240
            # loaded `harness metrics` runs did; the parse is no slower on one thread here.
            read_options=pcsv.ReadOptions(column_names=_NAMES, use_threads=False),
            parse_options=pcsv.ParseOptions(
                delimiter=" ",
                quote_char=False,
                double_quote=False,
                escape_char=False,
                newlines_in_values=False,
                ignore_empty_lines=True,
            ),
            convert_options=pcsv.ConvertOptions(
                column_types={"qid": pa.string(), "doc": pa.string(), "score": pa.float64()},
                include_columns=["qid", "doc", "score"],
                null_values=[],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # a wrong count, a word as score
        return None
    if table.num_rows == 0 or table["score"].null_count:
        return None
    score: npt.NDArray[np.float64] = np.concatenate(
        [_numbers(chunk, np.float64) for chunk in table["score"].chunks]
    )
    if not np.isfinite(score).all():
        return None
    qids = table["qid"].combine_chunks()
    codes, names = _factorize(qids, pc)
    del qids
    docs = table["doc"]
    del table
    keys = codes.astype(np.uint64)  # in place from here: no temporary as large as the run
    keys *= _MIX
    at = 0
    for chunk in docs.chunks:
        keys[at : at + len(chunk)] ^= _hashes(chunk)
        at += len(chunk)
    keys.sort()
    if (keys[1:] == keys[:-1]).any():
        return None  # a docid twice for a query (or a hash collision): the line reader decides
    del keys
    order = _trec_order(codes, score, docs)
    if order is not None:
        codes, score = codes[order], score[order]
        docs = docs.take(_indices(order))
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    ends = np.r_[starts[1:], len(codes)]
    spans = dict(zip(names, zip(starts.tolist(), ends.tolist(), strict=True), strict=True))
    return ArrowRanked(spans, docs), Ranked(spans, score, floats=True)


# numpy <-> Arrow through buffers: pyarrow's own conversions import pandas (a second's start-up)


def _numbers(array: Any, dtype: type[np.generic]) -> npt.NDArray[Any]:
    """A numpy view of a fixed-width Arrow array without nulls."""
    size = np.dtype(dtype).itemsize
    return np.frombuffer(
        array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * size
    )


def _indices(positions: npt.NDArray[Any]) -> Any:
    """An Arrow int64 array over the same memory as `positions`."""
    import pyarrow as pa

    flat = np.ascontiguousarray(positions, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(flat), [None, pa.py_buffer(flat)])


def _odd_bytes(data: bytes) -> bool:
    """Whether the text holds what pyarrow would split otherwise than str.split: an ASCII
    control character other than newline (tab, CR, the breaks str.split knows), or a space
    beside another space, a line end or an end of the text (an empty field for pyarrow, not
    for str.split). Checked block by block, so no temporary as large as the text."""
    if data[:1] == b" " or data[-1:] == b" ":
        return True
    view = np.frombuffer(data, dtype=np.uint8)
    step = 1 << 22
    for at in range(0, len(view), step):
        block = view[at : at + step + 1]  # one byte more: a pair across two blocks
        gap = block <= 32  # a space, a newline or a control character
        if np.count_nonzero(gap[:step]) != np.count_nonzero(block[:step] == 32) + np.count_nonzero(
            block[:step] == 10
        ):
            return True
        pairs = np.flatnonzero(gap[:-1] & gap[1:])  # two separators in a row
        if len(pairs) and ((block[pairs] == 32) | (block[pairs + 1] == 32)).any():
            return True  # not two newlines (a blank line): a space is one of them
    return False


def _factorize(qids: Any, pc: Any) -> tuple[npt.NDArray[np.int64], list[str]]:
    """Query codes in order of first appearance and the ids they stand for."""
    n = len(qids)
    changes = pc.indices_nonzero(pc.not_equal(qids.slice(1), qids.slice(0, n - 1)))
    starts = np.r_[0, _numbers(changes, np.uint64).astype(np.int64) + 1]
    names: list[str] = qids.take(_indices(starts)).to_pylist()
    if len(set(names)) == len(names):  # each query's lines together: one block per query
        sizes = np.diff(np.r_[starts, n])
        return np.repeat(np.arange(len(names), dtype=np.int64), sizes), names
    encoded = pc.dictionary_encode(qids)  # codes in order of first appearance
    return _numbers(encoded.indices, np.int32).astype(np.int64), encoded.dictionary.to_pylist()


def _hashes(chunk: Any) -> U64:
    """A 64-bit hash of each string of an Arrow string array, from its buffers."""
    n = len(chunk)
    _, offsets_buffer, data_buffer = chunk.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int32, count=n + 1, offset=chunk.offset * 4)
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.empty(0)
    padded = np.concatenate([data.astype(np.uint8, copy=False), np.zeros(8, np.uint8)])
    # words[i] = the 8 bytes from byte i (an unaligned view of the same memory)
    words = np.ndarray((len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))
    starts = offsets[:-1].astype(np.int64)
    lengths = np.diff(offsets).astype(np.int64)
    h = lengths.astype(np.uint64) * _MUL
    rows = np.arange(n)
    j = 0
    while len(rows):
        word = words[starts[rows] + j]
        left = np.minimum(lengths[rows] - j, 8).astype(np.uint64)
        partial = left < 8
        word[partial] &= (np.uint64(1) << (np.uint64(8) * left[partial])) - np.uint64(1)
        h[rows] = _mix(h[rows] ^ word)
        j += 8
        rows = rows[lengths[rows] > j]
    return _mix(h)


def _mix(x: U64) -> U64:
    """splitmix64's finaliser: every input bit reaches every output bit."""
    x = (x ^ (x >> np.uint64(30))) * _MUL
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _trec_order(
    codes: npt.NDArray[np.int64], score: npt.NDArray[np.float64], docs: Any
) -> npt.NDArray[np.int64] | None:
    """The permutation putting the rows in trec_eval's order (query in order of first
    appearance, score descending, docid descending), or None when they already are."""
    same = codes[1:] == codes[:-1]
    grouped = not (codes[1:] < codes[:-1]).any()
    if grouped and not (same & (score[1:] > score[:-1])).any():
        tied = np.flatnonzero(same & (score[1:] == score[:-1]))
        if not len(tied):
            return None
        above: list[str] = docs.take(_indices(tied)).to_pylist()
        below: list[str] = docs.take(_indices(tied + 1)).to_pylist()
        if all(a > b for a, b in zip(above, below, strict=True)):
            return None
    order = np.lexsort((-score, codes))  # stable: tied rows keep file order until below
    codes, score = codes[order], score[order]
    same = (codes[1:] == codes[:-1]) & (score[1:] == score[:-1])
    if same.any():
        edges = np.diff(np.r_[0, same.astype(np.int8), 0])
        firsts = np.flatnonzero(edges == 1)
        lasts = np.flatnonzero(edges == -1) + 1
        rows = np.concatenate([order[a:b] for a, b in zip(firsts, lasts, strict=True)])
        names: list[str] = docs.take(_indices(rows)).to_pylist()
        at = 0
        for a, b in zip(firsts.tolist(), lasts.tolist(), strict=True):
            run = names[at : at + b - a]
            ranked = sorted(range(b - a), key=run.__getitem__, reverse=True)
            order[a:b] = order[a:b][ranked]
            at += b - a
    return order

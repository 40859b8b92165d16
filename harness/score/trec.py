"""TREC qrels and a TREC run as numpy tables, joined into `JudgedRanks`: `harness metrics`' fast
path, with no Python object per line.

    qrels = read_qrels(buffer)     # Qrels, or None: the exact reader must look at the file
    run = read_run(buffer)         # RunTable, or None likewise
    judged = join(qrels, run, max_k, rel_level)   # Joined: JudgedRanks over qrels' queries
    qrels_hash(qrels)              # harness.gold.canonical_hash of the same gold set

`buffer` is a file's bytes followed by 8 zero bytes (`harness.score.tokens` reads 8 at a time).

Each reader accepts exactly what the exact reader would read without a problem and gives the
same values (tests/score/test_trec_tables.py checks both against it):
`harness.gold.tables.read_qrels` (4 columns `qid iteration docid grade`, ASCII-digit grades,
no (query, docid) twice) and
`harness.score.runfile`'s line reader (6 columns `qid Q0 docid rank score tag`, finite scores,
no docid twice for a query); anything else, or text that is not `tokens.regular`, gives None,
and the caller reads the file with the exact reader, which names every problem by line.

Ids stay bytes in the file's buffer. Queries are coded in order of first appearance (as the
exact readers' dicts hold them): a query's lines are compared, as bytes, with the line before,
so a run written query by query decodes one id per query. Doc ids are 64-bit hashes: a docid
twice for a query is two equal (query, hash) keys, found by one integer sort; a grade is found
by a run line's key among the qrels' keys and then checked byte for byte, so a hash collision
only sends the file to the exact reader, never gives a wrong grade. The order is trec_eval's
(score descending, ties by docid descending, bytewise, which for UTF-8 is code point order):
a run already in that order (what most tools write) is not sorted; any other takes one
`lexsort` by (query, -score), then each run of tied scores is ordered by docid. Pure.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Any

import numpy as np
import numpy.typing as npt

from harness.score import tokens
from harness.score.judged import JudgedRanks, judge_columns
from harness.score.tokens import F64, I64, U8, U64

I32 = npt.NDArray[np.int32]

_MIX = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True, eq=False)
class Qrels:
    """Judgements in file order: `query` codes into `names` (order of first appearance)."""

    names: list[str]
    query: I32
    key: U64  # a 64-bit hash of (query id, docid)
    grade: I64
    doc_start: I64  # of the docid in `buffer`
    doc_length: I32
    buffer: U8


@dataclass(frozen=True, eq=False)
class RunTable:
    """A run's lines in file order: `query` codes into `names` (order of first appearance)."""

    names: list[str]
    query: I32
    key: U64  # a 64-bit hash of (query id, docid)
    score: F64
    doc_start: I64
    doc_length: I32
    buffer: U8


@dataclass(frozen=True, eq=False)
class Joined:
    """The run judged against the qrels, one row per qrels query (order of `Qrels.names`):
    `present[q]` whether the run has query q; `extra` the run's other queries, sorted."""

    judged: JudgedRanks
    present: npt.NDArray[np.bool_]
    extra: tuple[str, ...]


class _Columns:
    """Per-line columns filled block by block into arrays sized for the most lines the text
    can hold (pages never written are never resident), then cut to the lines found."""

    def __init__(self, buffer: U8, width: int) -> None:
        most = (len(buffer) - 8) // (2 * width - 1) + 1
        self.query = np.empty(most, dtype=np.int32)
        self.key = np.empty(most, dtype=np.uint64)
        self.doc_start = np.empty(most, dtype=np.int64)
        self.doc_length = np.empty(most, dtype=np.int32)
        self.value: npt.NDArray[Any] = np.empty(0)
        self.n = 0
        self.names: list[str] = []
        self.code_of: dict[str, int] = {}

    def add(self, buffer: U8, query: tuple[I64, I64], doc: tuple[I64, I64]) -> None:
        """Lines of one block: (starts, lengths) of their query ids and docids."""
        a, b = self.n, self.n + len(query[0])
        codes, query_hash = _codes(buffer, *query, self.names, self.code_of)
        self.query[a:b] = codes
        self.doc_start[a:b] = doc[0]
        self.doc_length[a:b] = doc[1]
        key = tokens.hashes(buffer, *doc)
        key ^= query_hash
        self.key[a:b] = key
        self.n = b

    def unique(self) -> bool:
        """Whether no (query, doc) key occurs twice (a hash collision also says no)."""
        keys = np.sort(self.key[: self.n])
        return not (keys[1:] == keys[:-1]).any()


def _codes(
    buffer: U8, starts: I64, lengths: I64, names: list[str], code_of: dict[str, int]
) -> tuple[I64, U64]:
    """The code of each line's query id (new ids appended to `names`), and a 64-bit hash of
    it (times an odd constant: a docid equal to its query id does not cancel it out in the
    key). A line whose id has the bytes of the line before's takes its code: a file written
    query by query decodes and hashes one id per query."""
    n = len(starts)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint64)
    changed = np.ones(n, dtype=bool)
    first = tokens.first_words(buffer, starts, lengths)
    changed[1:] = (first[1:] != first[:-1]) | (lengths[1:] != lengths[:-1])
    longer = np.flatnonzero(~changed[1:] & (lengths[1:] > 8))  # alike so far: read on
    changed[longer + 1] = ~tokens.same(buffer, starts[longer + 1], buffer, starts[longer],
                                       lengths[longer])
    heads = np.flatnonzero(changed)
    codes = np.empty(len(heads), dtype=np.int64)
    for i, name in enumerate(tokens.strings(buffer, starts[heads], lengths[heads])):
        code = codes[i] = code_of.setdefault(name, len(names))
        if code == len(names):
            names.append(name)
    hashed = tokens.hashes(buffer, starts[heads], lengths[heads])
    hashed *= _MIX
    sizes = np.diff(np.r_[heads, n])
    return np.repeat(codes, sizes), np.repeat(hashed, sizes)


def _read(buffer: U8, width: int, columns: tuple[int, int, int], numbers: Any) -> _Columns | None:
    """The columns of a file of `width` tokens a line: query id, docid and a number (parsed by
    `numbers`, None when one is not such) at `columns`; None when anything declines."""
    text = buffer[:-8]
    if not tokens.plain(text):
        return None
    table = _Columns(buffer, width)
    values = []
    for at, block in tokens.blocks(text):
        cut = tokens.fields(block, width, columns)
        if cut is None:
            return None
        (query, query_length), (doc, doc_length), (number, number_length) = cut
        for starts in (query, doc, number):
            starts += at
        value = numbers(buffer, number, number_length)
        if value is None:
            return None
        table.add(buffer, (query, query_length), (doc, doc_length))
        values.append(value)
    if not table.names or not table.unique():
        return None
    table.value = np.concatenate(values)
    return table


def read_qrels(buffer: U8) -> Qrels | None:
    """The judgements of a well-formed TREC qrels file, or None (see the module docstring)."""
    t = _read(buffer, 4, (0, 2, 3), tokens.naturals)
    if t is None:
        return None
    n = t.n
    return Qrels(t.names, t.query[:n], t.key[:n], t.value, t.doc_start[:n],
                 t.doc_length[:n], buffer)


def read_run(buffer: U8) -> RunTable | None:
    """The lines of a well-formed TREC run, or None (see the module docstring)."""
    t = _read(buffer, 6, (0, 2, 4), tokens.decimals)
    if t is None:
        return None
    n = t.n
    return RunTable(t.names, t.query[:n], t.key[:n], t.value, t.doc_start[:n],
                    t.doc_length[:n], buffer)


def _docid_order(buffer: U8, starts: Sequence[int], lengths: Sequence[int]) -> list[int]:
    """Positions 0..n-1 of these docids by docid descending (bytes: code point order)."""
    ids = [bytes(buffer[s : s + n]) for s, n in zip(starts, lengths, strict=True)]
    return sorted(range(len(ids)), key=ids.__getitem__, reverse=True)


def trec_order(run: RunTable) -> I64 | None:
    """The permutation putting the run's lines in trec_eval's order (queries in order of
    first appearance, score descending, docid descending), or None when they already are."""
    query, score = run.query, run.score
    same = query[1:] == query[:-1]
    grouped = np.count_nonzero(~same) + 1 == len(run.names)
    if grouped and not (same & (score[1:] > score[:-1])).any():
        tied = np.flatnonzero(same & (score[1:] == score[:-1]))
        if not len(tied) or _descending(run, tied):
            return None
    order: I64 = np.lexsort((-score, query))  # stable: tied lines keep file order until below
    query, score = query[order], score[order]
    tied = (query[1:] == query[:-1]) & (score[1:] == score[:-1])
    if tied.any():
        edges = np.diff(np.r_[0, tied.astype(np.int8), 0])
        for a, b in zip(np.flatnonzero(edges == 1).tolist(),
                        (np.flatnonzero(edges == -1) + 1).tolist(), strict=True):
            rows = order[a:b]
            ranked = _docid_order(run.buffer, run.doc_start[rows].tolist(),
                                  run.doc_length[rows].tolist())
            order[a:b] = rows[ranked]
    return order


def _descending(run: RunTable, tied: I64) -> bool:
    """Whether each tied line's docid is above the next line's (bytewise)."""
    buf, start = run.buffer, run.doc_start
    upper, lower = run.doc_length[tied].astype(np.int64), run.doc_length[tied + 1].astype(np.int64)
    # The first 8 bytes, big-endian, compare as the bytes do (a shorter id, padded with
    # zeros, below a longer one it begins); only ids alike in those are compared whole.
    above = tokens.first_words(buf, start[tied], upper).byteswap()
    below = tokens.first_words(buf, start[tied + 1], lower).byteswap()
    if (above < below).any():
        return False
    for i in np.flatnonzero(above == below).tolist():
        a, b = int(start[tied[i]]), int(start[tied[i] + 1])
        if bytes(buf[a : a + upper[i]]) <= bytes(buf[b : b + lower[i]]):
            return False
    return True


def join(qrels: Qrels, run: RunTable, max_k: int, rel_level: int = 1) -> Joined | None:
    """The run judged against the qrels (`judged.judge`'s JudgedRanks of each qrels query's
    ranking, cut at max_k); None when a hash matched other bytes (the exact path decides)."""
    n = len(qrels.names)
    gold_of = {name: i for i, name in enumerate(qrels.names)}
    to_gold = np.array([gold_of.get(name, -1) for name in run.names], dtype=np.int64)
    rows, grade = _judged_lines(qrels, run, to_gold)
    if rows is None or grade is None:
        return None
    position = _positions(run, rows)
    inside = position < max_k
    rows, grade, position = rows[inside], grade[inside], position[inside]
    sizes = np.bincount(run.query, minlength=len(run.names))
    mine = to_gold >= 0
    ranking_size = np.zeros(n, dtype=np.int64)
    ranking_size[to_gold[mine]] = np.minimum(sizes[mine], max_k)
    judged = judge_columns(to_gold[run.query[rows]], position, grade, ranking_size, qrels.query,
                           qrels.grade, max_k, rel_level)
    present = np.zeros(n, dtype=bool)
    present[to_gold[mine]] = True
    extra = tuple(sorted(name for name, g in zip(run.names, to_gold.tolist(), strict=True)
                         if g < 0))
    return Joined(judged, present, extra)


def _positions(run: RunTable, rows: I64) -> I64:
    """The 0-based rank of each of these lines in its query's ranking (trec_eval's order)."""
    order = trec_order(run)
    query = run.query if order is None else run.query[order]
    heads = np.flatnonzero(np.r_[True, query[1:] != query[:-1]])
    if order is None:
        at = rows
    else:
        where = np.empty(len(order), dtype=np.int64)
        where[order] = np.arange(len(order))
        at = where[rows]
    return at - heads[np.searchsorted(heads, at, side="right") - 1]


def _judged_lines(qrels: Qrels, run: RunTable, to_gold: I64) -> tuple[I64 | None, I64 | None]:
    """The lines of the run whose (query, docid) the qrels judge, and their grades; (None,
    None) when a hash matched other bytes."""
    by_key = np.argsort(qrels.key)
    sorted_keys = qrels.key[by_key]
    # Most lines are unjudged: a bitmap of the judged keys' low bits rules out nearly all,
    # without a temporary as long as the run but the bitmap's answer.
    bits = max(16, min(26, int(len(sorted_keys) * 16).bit_length()))
    low = np.uint64((1 << bits) - 1)
    seen = np.zeros(1 << bits, dtype=bool)
    seen[(sorted_keys & low).view(np.int64)] = True
    maybe = np.flatnonzero(seen[(run.key & low).view(np.int64)])
    wanted = run.key[maybe]
    by_wanted = np.argsort(wanted)  # sorted needles: searchsorted walks the keys once
    at = np.empty(len(wanted), dtype=np.int64)
    at[by_wanted] = np.minimum(np.searchsorted(sorted_keys, wanted[by_wanted]),
                               len(sorted_keys) - 1)
    hit = sorted_keys[at] == wanted
    rows, judged = maybe[hit], by_key[at[hit]]
    match = (qrels.query[judged] == to_gold[run.query[rows]]) & (
        qrels.doc_length[judged] == run.doc_length[rows])
    match[match] = tokens.same(qrels.buffer, qrels.doc_start[judged[match]], run.buffer,
                               run.doc_start[rows[match]], run.doc_length[rows[match]])
    if not match.all():
        return None, None
    return rows, qrels.grade[judged]


_HEAD = ',"outranks":[],"relevant":{"'
_TAIL = b'},"slice":"default","text":""}'
_CHUNK = 1 << 17  # judgements hashed at a time: a few MB of temporaries


def qrels_hash(qrels: Qrels) -> str:
    """`harness.gold.canonical_hash` of the gold set these qrels are without a topics file
    (each query with text "", slice "default", no outranks or derivation): its canonical JSON
    written as bytes, judgement by judgement, from the file's own bytes."""
    width = -(-int(qrels.doc_length.max()) // 8) * 8
    buffer = np.concatenate([qrels.buffer, np.zeros(width, dtype=np.uint8)])
    docs = tokens.rows(buffer, qrels.doc_start, width).copy()
    docs[np.arange(width) >= qrels.doc_length[:, None]] = 0
    if ((docs == 34) | (docs == 92)).any():  # a quote or backslash: JSON escapes it
        return _hash_by_json(qrels, docs)
    by_id = sorted(range(len(qrels.names)), key=qrels.names.__getitem__)
    rank = np.empty(len(by_id), dtype=np.int64)
    rank[by_id] = np.arange(len(by_id))
    # Each query's docids in byte order: big-endian words compare as the bytes do.
    words = docs.view(">u8")
    order = np.lexsort((*(words[:, i] for i in reversed(range(words.shape[1]))),
                        rank[qrels.query]))
    heads = np.array([(("," if i else "") + '{"derivation":null,"id":'
                       + encode_basestring(qrels.names[q]) + _HEAD).encode("utf-8")
                      for i, q in enumerate(by_id)])
    heads_u8 = heads.view(np.uint8).reshape(len(heads), -1)
    values, which = np.unique(qrels.grade, return_inverse=True)
    grades = np.array([f'":{g}'.encode() for g in values.tolist()])
    grades_u8 = grades.view(np.uint8).reshape(len(grades), -1)
    tail = np.frombuffer(_TAIL, dtype=np.uint8)
    query = rank[qrels.query[order]]
    first = np.r_[True, query[1:] != query[:-1]]
    last = np.r_[query[1:] != query[:-1], True]
    h, g = heads_u8.shape[1], grades_u8.shape[1]
    digest = hashlib.sha256(b"[")
    for a in range(0, len(order), _CHUNK):
        rows = order[a : a + _CHUNK]
        lead, end = first[a : a + _CHUNK], last[a : a + _CHUNK]
        out = np.zeros((len(rows), h + width + g + len(tail)), dtype=np.uint8)
        out[lead, :h] = heads_u8[query[a : a + _CHUNK][lead]]
        out[~lead, :2] = np.frombuffer(b',"', dtype=np.uint8)
        out[:, h : h + width] = docs[rows]
        out[:, h + width : h + width + g] = grades_u8[which[rows]]
        out[end, h + width + g :] = tail
        digest.update(out[out != 0].tobytes())
    digest.update(b"]")
    return digest.hexdigest()


def _hash_by_json(qrels: Qrels, docs: U8) -> str:
    """qrels_hash through the json encoder, which escapes what needs escaping."""
    names = [bytes(row).rstrip(b"\0").decode("utf-8") for row in docs]
    relevant: list[dict[str, int]] = [{} for _ in qrels.names]
    for q, doc, grade in zip(qrels.query.tolist(), names, qrels.grade.tolist(), strict=True):
        relevant[q][doc] = grade
    forms: list[dict[str, object]] = [
        {"derivation": None, "id": qrels.names[q], "outranks": [],
         "relevant": dict(sorted(relevant[q].items())), "slice": "default", "text": ""}
        for q in sorted(range(len(qrels.names)), key=qrels.names.__getitem__)
    ]
    text = json.dumps(forms, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()

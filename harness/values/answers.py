"""What a service answered, one repeat at a time, held column by column.

    answers = Answers.of(results)        # from QueryResult values (the runner, a test)
    answers[i]                           # a QueryResult, built when asked for
    answers.columns                      # the columns: numpy arrays, one row an answer
    answers.query_ids, answers.rankings()    # every answer's query id; its ids as strings
    answers.where(qid)                   # the row of a query's (last) answer

A `Repeat` holds its answers as an `Answers` (a `Sequence[QueryResult]`): every returned id is
an int32 code into one table of the distinct ids (`Strings`), and the scores, status, error and
latency of each answer are numpy columns. A compare of 100k queries, three repeats a side and
20 ids an answer holds 600k answers: as QueryResult objects, each with a tuple of strings, that
is about 3 GB; as columns a tenth of it. A run record stores the same columns
(`harness.results.records`), so it is read back without a Python object per answer, and only
when they are first asked for (`Answers.later`): a comparison read back from its cache, or a
record looked at for reuse, never reads them.

Types layer: imports no other harness module (`harness.values.types` re-exports `ErrorKind` and
`QueryResult` from here).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import compress, repeat
from operator import eq
from typing import Any, overload

import numpy as np
import numpy.typing as npt

Int8 = npt.NDArray[np.int8]
Int32 = npt.NDArray[np.int32]
Int64 = npt.NDArray[np.int64]
Float64 = npt.NDArray[np.float64]
Bool = npt.NDArray[np.bool_]


class ErrorKind(enum.StrEnum):
    """Why a query produced no ranking. A failed query is never scored as an empty ranking."""

    TIMEOUT = "timeout"
    CONNECTION = "connection"
    HTTP_STATUS = "http_status"  # a non-2xx answer
    NOT_JSON = "not_json"
    NO_MATCH = "no_match"  # the ids JMESPath found nothing in the response
    BAD_SHAPE = "bad_shape"  # the ids path matched, but not a list of strings/numbers
    TOO_LARGE = "too_large"  # the answer was longer than query.max_bytes


ERROR_KINDS: tuple[ErrorKind, ...] = tuple(ErrorKind)
"""The `error` column's codes: ERROR_KINDS[code], -1 for no error. Append only: a record
stores the codes."""
NONE = -1  # the code of None in the status, error and text columns


@dataclass(frozen=True)
class QueryResult:
    """What the service answered to one gold query in one repeat.

    `ids` are the raw result positions as returned (duplicates kept here; metrics drop later
    duplicates). `latency_ns` runs from request start to the last byte of the response.
    `texts`, when `query.texts` is set, is the returned context text of each position (None
    where the service sent none); None when not asked for, or redacted from a record.
    """

    query_id: str
    ids: tuple[str, ...] = ()
    scores: tuple[float, ...] | None = None
    status: int | None = None
    error: ErrorKind | None = None
    detail: str | None = None
    latency_ns: int = 0
    texts: tuple[str | None, ...] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


# --------------------------------------------------------------------------- a string table


class Strings:
    """Distinct strings: kept as UTF-8 bytes (joined by newlines) and the end of each, and
    decoded into Python strings once, when first asked for (`values`)."""

    __slots__ = ("_blob", "_ends", "_objects", "_rows", "_values")

    def __init__(self, values: list[str]) -> None:
        self._values: list[str] | None = values
        self._blob: bytes | None = None
        self._ends: Int64 | None = None
        self._objects: npt.NDArray[np.object_] | None = None
        # The last `Answers.query_rows` made over this table, with the codes it was made from:
        # the repeats of one record mostly ask the same queries in the same order.
        self._rows: tuple[Int32, dict[str, int]] | None = None

    @classmethod
    def encoded(cls, blob: bytes, ends: Int64) -> Strings:
        """The table stored as `blob` and `ends` (see `encode`), decoded when first used."""
        table = cls([])
        table._values, table._blob, table._ends = None, blob, ends
        return table

    def take(self, codes: npt.NDArray[np.integer[Any]]) -> list[Any]:
        """The string of each code (nested lists for a matrix of codes), gathered at C speed."""
        found: list[Any] = self._array()[codes].tolist()
        return found

    def _array(self) -> npt.NDArray[np.object_]:
        if self._objects is None:
            objects = np.empty(len(self), dtype=object)
            objects[:] = self.values
            # Held once: as this array from now on, not as a list too.
            self._objects, self._values = objects, None
        return self._objects

    def __len__(self) -> int:
        for held in (self._values, self._objects, self._ends):
            if held is not None:
                return len(held)
        return 0

    def share(self, other: Strings, mine: Int64, theirs: Int64) -> None:
        """Decode this table (when it is not yet) holding entry mine[i] as the very string
        object of other's entry theirs[i] wherever the two are equal (pairs that are not equal
        are ignored): two records' tables of mostly the same ids then hold each once in
        memory. The strings are equal either way; only their objects are shared."""
        if self._values is not None or self._objects is not None:
            return
        assert self._blob is not None and self._ends is not None
        objects = np.empty(len(self._ends), dtype=object)
        objects[:] = _decode(self._blob, self._ends)
        self._blob = self._ends = None
        match = np.full(len(objects), -1, dtype=np.int64)
        match[mine] = theirs
        where = np.flatnonzero(match >= 0)
        found = other._array()[match[where]]
        same = np.fromiter(map(eq, found.tolist(), objects[where].tolist()), dtype=bool,
                           count=len(where))  # fmt: skip
        objects[where[same]] = found[same]
        self._objects = objects

    @property
    def values(self) -> list[str]:
        if self._values is not None:
            return self._values
        if self._objects is not None:
            found: list[str] = self._objects.tolist()
            return found
        assert self._blob is not None and self._ends is not None
        self._values = _decode(self._blob, self._ends)
        self._blob = self._ends = None  # encoded again when asked: rarely, and cheaply
        return self._values

    def encode(self) -> tuple[bytes, Int64]:
        """(blob, ends): the strings in UTF-8 joined by b"\\n", and the byte offset where each
        ends; entry i is blob[ends[i - 1] + 1 : ends[i]] (from 0 for the first)."""
        if self._blob is not None and self._ends is not None:
            return self._blob, self._ends
        values = self.values
        text = "\n".join(values)
        blob = text.encode("utf-8", "surrogatepass")
        if len(blob) == len(text):  # ASCII: a byte a character
            sizes = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
        else:
            sizes = np.fromiter(
                (len(v.encode("utf-8", "surrogatepass")) for v in values),
                dtype=np.int64,
                count=len(values),
            )
        ends = np.cumsum(sizes) + np.arange(len(values), dtype=np.int64)
        return blob, ends


def _decode(blob: bytes, ends: Int64) -> list[str]:
    if not len(ends):
        return []
    text = blob.decode("utf-8", "surrogatepass")
    parts = text.split("\n")
    if len(parts) == len(ends):  # no string holds a newline: the fast way is the right one
        return parts
    starts = np.concatenate(([0], ends[:-1] + 1)).tolist()
    return [
        blob[a:b].decode("utf-8", "surrogatepass")
        for a, b in zip(starts, ends.tolist(), strict=True)
    ]


def _table(values: Iterable[str], table: dict[str, int]) -> Int32:
    """Each value's code in `table`, adding the new ones in order of first appearance."""
    add = table.setdefault
    return np.fromiter((add(v, len(table)) for v in values), dtype=np.int32)


# --------------------------------------------------------------------------- the columns


@dataclass(frozen=True, eq=False)
class Columns:
    """Every answer of one repeat, a row each (n answers); ragged values (ids, scores, texts)
    flattened, with the bounds of each answer's part: answer i's ids are
    `docs.values[c] for c in ids[ids_at[i]:ids_at[i + 1]]`."""

    queries: Strings  # the distinct query ids
    query: Int32  # n: the answer's query id, a code into `queries`
    docs: Strings  # the distinct returned ids
    ids: Int32  # every returned id, answer after answer, as returned: a code into `docs`
    ids_at: Int64  # n + 1
    scores: Float64  # every score, answer after answer
    scores_at: Int64  # n + 1
    scored: Bool  # n: False where scores is None
    status: Int32  # n: the HTTP status, NONE where None
    error: Int8  # n: a code into ERROR_KINDS, NONE where None
    latency_ns: Int64  # n
    details: Mapping[int, str]  # row -> detail, where not None
    texts: Strings | None  # the distinct returned texts; None: no answer has texts
    text: Int32  # every returned text, answer after answer: a code into texts, NONE: None
    text_at: Int64  # n + 1
    texted: Bool  # n: False where texts is None

    def __len__(self) -> int:
        return len(self.query)


def _bounds(sizes: Iterable[int], n: int) -> Int64:
    at = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.fromiter(sizes, dtype=np.int64, count=n), out=at[1:])
    return at


def columns_of(results: Sequence[QueryResult]) -> Columns:
    """The columns of `results`, in order."""
    n = len(results)
    queries: dict[str, int] = {}
    docs: dict[str, int] = {}
    query = _table((r.query_id for r in results), queries)
    ids = _table((d for r in results for d in r.ids), docs)
    scored = np.fromiter((r.scores is not None for r in results), dtype=np.bool_, count=n)
    scores = np.fromiter(
        (s for r in results if r.scores is not None for s in r.scores), dtype=np.float64
    )
    codes = {kind: i for i, kind in enumerate(ERROR_KINDS)}
    columns = Columns(
        queries=Strings(list(queries)),
        query=query,
        docs=Strings(list(docs)),
        ids=ids,
        ids_at=_bounds((len(r.ids) for r in results), n),
        scores=scores,
        scores_at=_bounds((len(r.scores or ()) for r in results), n),
        scored=scored,
        status=np.fromiter(
            (NONE if r.status is None else r.status for r in results), dtype=np.int32, count=n
        ),
        error=np.fromiter(
            (NONE if r.error is None else codes[r.error] for r in results), dtype=np.int8, count=n
        ),
        latency_ns=np.fromiter((r.latency_ns for r in results), dtype=np.int64, count=n),
        details={i: r.detail for i, r in enumerate(results) if r.detail is not None},
        texts=None,
        text=np.zeros(0, np.int32),
        text_at=np.zeros(n + 1, np.int64),
        texted=np.zeros(n, np.bool_),
    )
    if all(r.texts is None for r in results):
        return columns
    texts: dict[str | None, int] = {}
    text = np.fromiter(
        (
            NONE if t is None else texts.setdefault(t, len(texts))
            for r in results
            for t in r.texts or ()
        ),
        dtype=np.int32,
    )
    return replace(
        columns,
        texts=Strings([t for t in texts if t is not None]),
        text=text,
        text_at=_bounds((len(r.texts or ()) for r in results), n),
        texted=np.fromiter((r.texts is not None for r in results), np.bool_, count=n),
    )


def ranked_columns(query_ids: Sequence[str], docs: Iterable[str], sizes: Sequence[int],
                   scores: Sequence[float] | Float64, score_sizes: Sequence[int],
                   scored: Sequence[bool]) -> Columns:
    """`columns_of` of the untimed `QueryResult(query_ids[i], ids, scores)`, without building
    them, from the ids flattened (`docs`, `sizes` a query), the scores likewise and `scored`
    (False: scores None): a run file's rankings (`harness.verdict.systems.as_ref_run`)."""
    n, queries, table = len(query_ids), dict[str, int](), dict[str, int]()
    query, ids = _table(query_ids, queries), _table(docs, table)
    return Columns(
        queries=Strings(list(queries)),
        query=query,
        docs=Strings(list(table)),
        ids=ids,
        ids_at=_bounds(sizes, n),
        scores=np.asarray(scores, dtype=np.float64).reshape(-1),
        scores_at=_bounds(score_sizes, n),
        scored=np.fromiter(scored, dtype=np.bool_, count=n),
        status=np.full(n, NONE, dtype=np.int32),
        error=np.full(n, NONE, dtype=np.int8),
        latency_ns=np.zeros(n, dtype=np.int64), details={}, texts=None,
        text=np.zeros(0, np.int32),
        text_at=np.zeros(n + 1, np.int64),
        texted=np.zeros(n, np.bool_),
    )


# --------------------------------------------------------------------------- a repeat's answers


class Answers(Sequence[QueryResult]):
    """One repeat's answers (see the module docstring): a read-only sequence of QueryResult
    over `Columns`, which may be read only when first needed (`later`)."""

    __slots__ = (
        "_all_texts",
        "_columns",
        "_errors",
        "_index",
        "_last",
        "_load",
        "_n",
        "_query_ids",
        "origin",
    )

    def __init__(self, columns: Columns) -> None:
        self._columns: Columns | None = columns
        self._load: Callable[[], Columns] | None = None
        self._n = len(columns)
        self._errors: int | None = None
        self._all_texts: bool | None = None
        self._index: dict[str, int] | None = None
        self._last: Int64 | None = None
        self._query_ids: list[str] | None = None
        # Where they were read from: (file, its sha256, the repeat's place in it, its repeats);
        # None when made here. A record saved again from every repeat of one file copies it.
        self.origin: tuple[str, str, int, int] | None = None

    @classmethod
    def of(cls, results: Iterable[QueryResult]) -> Answers:
        if isinstance(results, Answers):
            return results
        return cls(columns_of(tuple(results)))

    @classmethod
    def later(
        cls,
        n: int,
        errors: int,
        all_texts: bool,
        load: Callable[[], Columns],
        origin: tuple[str, str, int, int] | None = None,
    ) -> Answers:
        """`n` answers, `errors` of them errored, every one with texts or not, whose columns
        `load()` reads when first asked for (it raises what reading them raises)."""
        answers = cls.__new__(cls)
        answers._columns, answers._load, answers._n = None, load, n
        answers._errors, answers._all_texts = errors, all_texts
        answers._index = answers._last = answers._query_ids = None
        answers.origin = origin
        return answers

    @property
    def columns(self) -> Columns:
        if self._columns is None:
            assert self._load is not None
            columns = self._load()
            if len(columns) != self._n:
                raise ValueError(f"{len(columns)} answers where {self._n} were recorded")
            self._columns, self._load = columns, None
        return self._columns

    @property
    def loaded(self) -> bool:
        return self._columns is not None

    # ----------------------------------------------------------------------- the sequence

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> QueryResult: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[QueryResult, ...]: ...

    def __getitem__(self, i: int | slice) -> QueryResult | tuple[QueryResult, ...]:
        if isinstance(i, slice):
            return tuple(self._result(j) for j in range(*i.indices(self._n)))
        if not -self._n <= i < self._n:
            raise IndexError("answer index out of range")
        return self._result(i % self._n if self._n else i)

    def __iter__(self) -> Iterator[QueryResult]:
        return map(self._result, range(self._n))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"Answers({self._n} answers{'' if self.loaded else ', not read yet'})"

    def __reduce__(self) -> tuple[Any, ...]:  # a pickle (a Ray round) carries the columns
        return (Answers, (self.columns,))

    def _result(self, i: int) -> QueryResult:
        c = self.columns
        a, b = int(c.ids_at[i]), int(c.ids_at[i + 1])
        scores = None
        if c.scored[i]:
            scores = tuple(c.scores[int(c.scores_at[i]) : int(c.scores_at[i + 1])].tolist())
        texts = None
        if c.texts is not None and c.texted[i]:
            table = c.texts.values
            codes = c.text[int(c.text_at[i]) : int(c.text_at[i + 1])].tolist()
            texts = tuple(None if t == NONE else table[t] for t in codes)
        status, error = int(c.status[i]), int(c.error[i])
        return QueryResult(
            query_id=self.query_ids[i],
            ids=tuple(c.docs.take(c.ids[a:b])),
            scores=scores,
            status=None if status == NONE else status,
            error=None if error == NONE else ERROR_KINDS[error],
            detail=c.details.get(i),
            latency_ns=int(c.latency_ns[i]),
            texts=texts,
        )

    # ----------------------------------------------------------------------- whole columns

    @property
    def errors(self) -> int:
        """How many answers errored."""
        if self._errors is None:
            self._errors = int(np.count_nonzero(self.columns.error != NONE))
        return self._errors

    @property
    def all_texts(self) -> bool:
        """Every answer carries its returned texts (none was redacted or not asked for)."""
        if self._all_texts is None:
            self._all_texts = bool(self.columns.texted.all())
        return self._all_texts

    @property
    def ok(self) -> Bool:
        """Per answer: it did not error."""
        ok: Bool = np.equal(self.columns.error, NONE)  # typed: `==` on arrays is Any
        return ok

    @property
    def query_ids(self) -> list[str]:
        """Each answer's query id."""
        if self._query_ids is None:
            c = self.columns
            self._query_ids = c.queries.take(c.query)
        return self._query_ids

    @property
    def query_rows(self) -> Mapping[str, int]:
        """Each query id answered (in the order first asked) and the row of its answer: the
        last, when it was asked twice (as `{r.query_id: r for r in results}` keeps it)."""
        if self._index is None:
            c = self.columns
            made = c.queries._rows
            if made is not None and np.array_equal(made[0], c.query):
                self._index = made[1]  # read-only here: shared with the repeats like this one
            else:
                self._index = {q: i for i, q in enumerate(self.query_ids)}
                c.queries._rows = (c.query, self._index)
        return self._index

    def where(self, query_id: str) -> int | None:
        """The row of `query_id`'s answer (`query_rows`); None: it has none."""
        return self.query_rows.get(query_id)

    def rows(self, query_ids: Sequence[str]) -> Int64:
        """`where` of each of `query_ids`, -1 for one without an answer."""
        found = list(map(self.query_rows.get, query_ids, repeat(-1)))
        return np.array(found, dtype=np.int64)

    @property
    def last_rows(self) -> Int64:
        """The rows of `query_rows`, in its order."""
        if self._last is None:
            rows = self.query_rows
            self._last = np.fromiter(rows.values(), dtype=np.int64, count=len(rows))
        return self._last

    def by_query(self) -> Mapping[str, QueryResult]:
        """The answers by query id (`query_rows`), each built when looked up."""
        return _ByQuery(self)

    def answered(self) -> set[str]:
        """The query ids whose answer (`query_rows`) did not error."""
        return set(compress(self.query_rows, self.ok[self.last_rows].tolist()))

    def latencies(self) -> Int64:
        """The latency (ns) of every answer that did not error and was timed, in order."""
        c = self.columns
        found: Int64 = c.latency_ns[(c.error == NONE) & (c.latency_ns > 0)]
        return found

    def rankings(self, rows: Iterable[int] | None = None) -> list[tuple[str, ...]]:
        """The returned ids of each answer (of `rows`: default every one), as strings."""
        c = self.columns
        picked = np.arange(self._n) if rows is None else np.fromiter(rows, dtype=np.int64)
        sizes = np.diff(c.ids_at)[picked]
        if len(picked) and (sizes == sizes[0]).all():  # the usual case: one length, a matrix
            at = c.ids_at[picked][:, None] + np.arange(int(sizes[0]))
            return list(map(tuple, c.docs.take(c.ids[at]) if sizes[0] else [[]] * len(picked)))
        flat = c.docs.take(c.ids)
        at = c.ids_at.tolist()
        return [tuple(flat[at[i] : at[i + 1]]) for i in picked.tolist()]

    def first_scores(self) -> tuple[Bool, Float64]:
        """(has, score) per answer: whether it returned an id with scores, and the first."""
        c = self.columns
        has = c.scored & (c.ids_at[1:] > c.ids_at[:-1]) & (c.scores_at[1:] > c.scores_at[:-1])
        first = np.full(self._n, np.nan)
        first[has] = c.scores[c.scores_at[:-1][has]]
        return has, first

    def redacted(self) -> Answers:
        """These answers without what may quote a response body or a document: every error
        detail and returned text becomes None (ids, scores, status, error kind stay)."""
        c = self.columns
        if not c.details and c.texts is None:
            return self
        return Answers(
            replace(
                c,
                details={},
                texts=None,
                text=np.zeros(0, np.int32),
                text_at=np.zeros(self._n + 1, np.int64),
                texted=np.zeros(self._n, np.bool_),
            )
        )


class _ByQuery(Mapping[str, QueryResult]):
    """`Answers.by_query`: a read-only mapping over the columns; nothing is built until asked."""

    __slots__ = ("_answers",)

    def __init__(self, answers: Answers) -> None:
        self._answers = answers

    def __getitem__(self, query_id: str) -> QueryResult:
        row = self._answers.where(query_id)
        if row is None:
            raise KeyError(query_id)
        return self._answers[row]

    def __contains__(self, query_id: object) -> bool:
        return query_id in self._answers.query_rows

    def __iter__(self) -> Iterator[str]:
        return iter(self._answers.query_rows)

    def __len__(self) -> int:
        return len(self._answers.query_rows)

"""A run record's answers on disk: every repeat's columns (`harness.values.answers.Columns`) in one
numpy `.npz` file beside the record's JSON header (`runs/X.json` + `runs/X.npz`).

    data = encode([answers of repeat 0, of repeat 1, ...])      # the file's bytes
    Sidecar(path, sha256, size).repeat(i) -> Columns            # read once, checked, sliced

The file is what np.savez writes (a zip of NAME.npy members, stored, dated 1980-01-01 so that the
same answers give the same bytes) and holds plain arrays, never a pickle; the rows of every
repeat one after the other:

    format          int64 [1]       FORMAT
    answers         int64 [R + 1]   repeat r's answers are rows answers[r]:answers[r + 1]
    queries_blob    uint8, queries_ends int64   the distinct query ids (`Strings.encode`)
    query           int32 [N]       each answer's query id, a code into queries
    docs_blob       uint8, docs_ends int64      the distinct returned ids
    ids             int32 [M]       every returned id, as returned, a code into docs
    ids_at          int64 [N + 1]   answer n's ids are ids[ids_at[n]:ids_at[n + 1]]
    scores          float64, scores_at int64 [N + 1], scored bool [N] (False: no scores)
    status          int32 [N] (-1: none), error int8 [N] (`ERROR_KINDS` code, -1: none)
    latency_ns      int64 [N]
    detail_rows     int64 [D], details_blob uint8, details_ends int64: the error details
    texts_blob      uint8, texts_ends int64, text int32 (-1: none), text_at int64 [N + 1],
    texted          bool [N] (False: no texts): the returned texts (query.texts)

The header names the file's sha256 and size: a file that is missing, cut short, damaged or
another record's is a ResultsError naming it, never a wrong answer.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import ResultsError
from harness.process.inputs import RESULTS, open_input
from harness.text.scrub import registered, scrub_text
from harness.values.answers import ERROR_KINDS, NONE, Answers, Columns, Int32, Int64, Strings

FORMAT = 1
SUFFIX = ".npz"


def sidecar_of(header: Path) -> Path:
    """Where the answers of the record `header` (X.json) are: X.npz beside it."""
    return header.with_suffix(SUFFIX)


def _merged(tables: Sequence[Strings], codes: Sequence[Int32]) -> tuple[Strings, Int32]:
    """One table for every repeat's codes (`codes[r]` into `tables[r]`), and the codes into
    it, concatenated. Repeats read from one record share their table already."""
    if tables and all(t is tables[0] for t in tables):
        return tables[0], _concat(codes, np.int32)
    merged: dict[str, int] = {}
    out = []
    for table, part in zip(tables, codes, strict=True):
        add = merged.setdefault
        remap = np.fromiter(
            (add(v, len(merged)) for v in table.values), dtype=np.int32, count=len(table)
        )
        out.append(np.where(part == NONE, NONE, remap[part]) if len(remap) else part)
    return Strings(list(merged)), _concat(out, np.int32)


def _concat(parts: Sequence[Any], dtype: Any) -> Any:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)


def _bounds(parts: Sequence[Int64]) -> Int64:
    """Per-answer bounds of several repeats (each starting at 0) as one array."""
    out, base = [np.zeros(1, np.int64)], 0
    for at in parts:
        out.append(at[1:] + base)
        base += int(at[-1])
    return np.concatenate(out).astype(np.int64, copy=False)


def encode(repeats: Sequence[Answers]) -> bytes:
    """The sidecar file of these repeats' answers (see the module docstring)."""
    cols = [a.columns for a in repeats]
    queries, query = _merged([c.queries for c in cols], [c.query for c in cols])
    docs, ids = _merged([c.docs for c in cols], [c.ids for c in cols])
    tables = [(c.texts, c.text) for c in cols if c.texts is not None]
    texts, text = (
        _merged([t for t, _ in tables], [codes for _, codes in tables])
        if tables
        else (Strings([]), np.zeros(0, np.int32))
    )
    starts = np.cumsum([0, *map(len, cols)]).astype(np.int64)
    detail_rows = [int(s) + i for s, c in zip(starts, cols, strict=False) for i in c.details]
    details = Strings([d for c in cols for d in c.details.values()])
    arrays: dict[str, Any] = {
        "format": np.array([FORMAT], np.int64),
        "answers": starts,
        "query": query,
        "ids": ids,
        "ids_at": _bounds([c.ids_at for c in cols]),
        "scores": _concat([c.scores for c in cols], np.float64),
        "scores_at": _bounds([c.scores_at for c in cols]),
        "scored": _concat([c.scored for c in cols], np.bool_),
        "status": _concat([c.status for c in cols], np.int32),
        "error": _concat([c.error for c in cols], np.int8),
        "latency_ns": _concat([c.latency_ns for c in cols], np.int64),
        "detail_rows": np.array(detail_rows, np.int64),
        "text": text,
        "text_at": _bounds([c.text_at for c in cols]),
        "texted": _concat([c.texted for c in cols], np.bool_),
    }
    for name, table in (
        ("queries", queries),
        ("docs", docs),
        ("details", details),
        ("texts", texts),
    ):
        if registered():
            # A credential in an answer (an error's detail, a returned text) is scrubbed here,
            # before the bytes are hashed: the write's own scrub cannot change a zip's bytes
            # without breaking the member's length and the header's sha256.
            table = Strings([scrub_text(value) for value in table.values])
        blob, ends = table.encode()
        arrays[f"{name}_blob"] = np.frombuffer(blob, dtype=np.uint8)
        arrays[f"{name}_ends"] = ends
    # np.savez's layout (one NAME.npy member each, stored), written here so that the same
    # answers give the same bytes: savez stamps each member with the time it was written.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name in sorted(arrays):
            member = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            with archive.open(member, "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asarray(arrays[name]), allow_pickle=False)
    return buffer.getvalue()


_FIX = [
    "the record's answers were cut short or changed after it was written: remove the record "
    "(its .json and .npz) and measure again (compare --fresh), or restore both files from a copy"
]


class Sidecar:
    """The answers file of one record, read (and checked against the header's sha256 and
    size) when a repeat's columns are first asked for; every repeat is then a slice of it."""

    def __init__(
        self, path: Path, sha256: str, size: int, counts: Sequence[tuple[int, int]]
    ) -> None:
        """`counts`: each repeat's answers and errored answers, as its record says."""
        self.path, self.sha256, self.size, self.counts = path, sha256, size, list(counts)
        self._arrays: dict[str, Any] | None = None
        self._tables: dict[str, Strings] = {}

    def check_present(self) -> None:
        """ResultsError when the file is missing or not the size the header says (cheap: a
        stat; the content is checked when it is read)."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            raise ResultsError(
                f"{self.path}: missing: a run record's answers are kept in the .npz file "
                "beside its .json",
                ["copy the two files together, or measure again (compare --fresh)"],
            ) from None
        except OSError as exc:
            raise ResultsError(f"{self.path}: cannot be read ({exc.strerror or exc})") from None
        if size != self.size:
            raise ResultsError(
                f"{self.path}: {size:,} bytes where its record says {self.size:,}", _FIX
            )

    def _read(self) -> dict[str, Any]:
        if self._arrays is not None:
            return self._arrays
        self.check_present()
        try:  # hashed as it streams, then read array by array: never two copies in memory
            with open_input(self.path, RESULTS) as f:  # a FIFO or a device: ResultsError
                digest = hashlib.file_digest(f, "sha256").hexdigest()
                if digest != self.sha256:
                    raise ResultsError(
                        f"{self.path}: its sha256 is not the one its record names (damaged, or "
                        "another record's answers)",
                        _FIX,
                    )
                f.seek(0)
                with np.load(f, allow_pickle=False) as npz:
                    arrays = {name: npz[name] for name in npz.files}
        except (ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            raise ResultsError(f"{self.path}: not a readable answers file ({exc})", _FIX) from None
        except OSError as exc:
            raise ResultsError(f"{self.path}: cannot be read ({exc.strerror or exc})") from None
        problem = _problem(arrays, self.counts)
        if problem:
            raise ResultsError(f"{self.path}: {problem}", _FIX)
        self._arrays = arrays
        return arrays

    def _table(self, name: str) -> Strings:
        if name not in self._tables:
            a = self._read()
            blob = a[f"{name}_blob"].tobytes()
            try:  # checked here, so that decoding it later cannot fail
                blob.decode("utf-8", "surrogatepass")
            except UnicodeDecodeError as exc:
                raise ResultsError(f"{self.path}: {name} are not UTF-8 ({exc})", _FIX) from None
            self._tables[name] = Strings.encoded(blob, a[f"{name}_ends"].astype(np.int64))
            # The table holds them now (and lets them go once decoded).
            del a[f"{name}_blob"], a[f"{name}_ends"]
        return self._tables[name]

    def repeat(self, r: int) -> Columns:
        """Repeat r's columns (its rows of the file, their bounds from 0)."""
        a = self._read()
        lo, hi = (int(x) for x in a["answers"][r : r + 2])

        def rows(name: str) -> Any:
            return a[name][lo:hi]

        def ragged(name: str, at: str) -> tuple[Any, Int64]:
            bounds = a[at][lo : hi + 1]
            return a[name][int(bounds[0]) : int(bounds[-1])], bounds - bounds[0]

        ids, ids_at = ragged("ids", "ids_at")
        scores, scores_at = ragged("scores", "scores_at")
        text, text_at = ragged("text", "text_at")
        detail_rows = a["detail_rows"].tolist()
        in_repeat = [(i, row - lo) for i, row in enumerate(detail_rows) if lo <= row < hi]
        details = self._table("details").values if in_repeat else []
        texted = rows("texted")
        return Columns(
            queries=self._table("queries"),
            query=rows("query"),
            docs=self._table("docs"),
            ids=ids,
            ids_at=ids_at,
            scores=scores,
            scores_at=scores_at,
            scored=rows("scored"),
            status=rows("status"),
            error=rows("error"),
            latency_ns=rows("latency_ns"),
            details={row: details[i] for i, row in in_repeat},
            texts=self._table("texts") if texted.any() else None,
            text=text,
            text_at=text_at,
            texted=texted,
        )


_KINDS = {
    "format": "i",
    "answers": "i",
    "query": "i",
    "ids": "i",
    "ids_at": "i",
    "scores": "f",
    "scores_at": "i",
    "scored": "b",
    "status": "i",
    "error": "i",
    "latency_ns": "i",
    "detail_rows": "i",
    "text": "i",
    "text_at": "i",
    "texted": "b",
    **{
        f"{t}_{p}": k
        for t in ("queries", "docs", "details", "texts")
        for p, k in (("blob", "u"), ("ends", "i"))
    },
}


def _problem(a: dict[str, Any], counts: Sequence[tuple[int, int]]) -> str | None:
    """What makes these arrays not the answers of repeats of `counts` (answers, errored) each
    (None: nothing). Checked so that a file that passed the sha256 check but was written by
    something else is an error, not an IndexError deep in a compare or a wrong count."""
    for name, kind in _KINDS.items():
        if name not in a:
            return f"no {name} array"
        if a[name].ndim != 1 or a[name].dtype.kind != kind:
            return f"{name} is not a flat array of kind {kind!r}"
    if int(a["format"][0]) != FORMAT:
        return f"answers format {int(a['format'][0])}, this harness reads {FORMAT}"
    n = len(a["query"])
    answers = a["answers"]
    if len(answers) != len(counts) + 1 or answers[0] != 0 or answers[-1] != n:
        return f"{len(answers) - 1} repeats where its record has {len(counts)}"
    if np.any(np.diff(answers) < 0):
        return "repeat bounds out of order"
    if np.diff(answers).tolist() != [c[0] for c in counts]:
        return "the answers of each repeat are not as many as its record says"
    for name in ("scored", "status", "error", "latency_ns", "texted"):
        if len(a[name]) != n:
            return f"{len(a[name])} {name} values for {n} answers"
    for flat, at in (("ids", "ids_at"), ("scores", "scores_at"), ("text", "text_at")):
        bounds = a[at]
        if len(bounds) != n + 1 or bounds[0] != 0 or bounds[-1] != len(a[flat]):
            return f"{at} does not bound {flat}"
        if np.any(np.diff(bounds) < 0):
            return f"{at} out of order"
    for codes, table, low in (("query", "queries", 0), ("ids", "docs", 0), ("text", "texts", -1)):
        size = len(a[f"{table}_ends"])
        if len(a[codes]) and (a[codes].min() < low or a[codes].max() >= size):
            return f"{codes} codes outside their table of {size}"
    if len(a["error"]) and (a["error"].min() < NONE or a["error"].max() >= len(ERROR_KINDS)):
        return "an unknown error kind"
    running = np.concatenate(([0], np.cumsum(a["error"] != NONE)))
    errored = running[answers[1:]] - running[answers[:-1]]
    if errored.tolist() != [c[1] for c in counts]:
        return "the errored answers of each repeat are not as many as its record says"
    rows = a["detail_rows"]
    if len(rows) != len(a["details_ends"]) or (len(rows) and (rows.min() < 0 or rows.max() >= n)):
        return "error details that belong to no answer"
    for table in ("queries", "docs", "details", "texts"):
        ends = a[f"{table}_ends"]
        if len(ends) and (np.any(np.diff(ends) < 1) or ends[-1] != len(a[f"{table}_blob"])):
            return f"{table} table bounds do not fit its bytes"
    return None

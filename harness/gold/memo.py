"""A gold set parsed, validated and hashed once per file content: `load_gold`'s result kept in the
harness cache, read back when the same bytes are loaded again.

    key = gold_key(files, path, fmt, split, texts)   None: not cached (read as usual)
    gold = recall(key)                               None: no sound entry
    remember(key, gold)
    value = derived(name, digest, compute)           a short text derived from content (the
                                                     hash `harness metrics` prints of TREC qrels)

Key: sha256 of this module's SCHEMA, the harness version, the size and mtime of the reader's own
source files (an edited reader in a development checkout reads afresh), what `load_gold` was
asked (the path as given, the format, the BEIR split, whether texts are needed) and the bytes of
every file read (the gold file; a TREC topics file; a BEIR folder's queries.jsonl and qrels).
So a changed byte is a new key: a file that now has an error is parsed afresh and raises its
own GoldError (file:line); only a load that succeeded is ever stored. A load with a corpus is
never cached (the corpus check needs where each judged id was read).

Entries: `<cache dir>/gold/<key>.json` (`harness.leftovers.cache_dir`: $HARNESS_CACHE_DIR, ...),
two lines: a header {"schema", "key", "sha256"} and the payload, the GoldSet as JSON (its
queries as rows, their judgements in the file's order); the header's sha256 is the payload's.
Written to a temp file in the folder and renamed over the entry (atomic: two writers of one
key write the same bytes, the last rename wins; a reader sees a whole entry or none). An entry
that cannot be read, is for another key or schema, or whose payload does not match its sha256 or
its shape is ignored and written again: never trusted. The cache is an optimisation: a folder
that cannot be written only means the next load parses again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from harness import __version__
from harness.leftovers import cache_dir
from harness.types import CorpusInfo, GoldQuery, GoldSet

SCHEMA = 1
FOLDER = "gold"
_SOURCES = ("load.py", "native.py", "tables.py", "reading.py", "canonical.py", "memo.py",
            "../score/trec.py")
_FIELDS = ("id", "text", "slice", "relevant", "outranks", "derivation", "spans", "line",
           "declared")


def _code_stamp() -> str:
    here = Path(__file__).parent
    stamps = []
    for name in (*_SOURCES, "../types.py"):
        try:
            info = os.stat(here / name)
        except OSError:
            continue
        stamps.append(f"{name}:{info.st_size}:{info.st_mtime_ns}")
    return ",".join(stamps)


def gold_key(files: Sequence[Path], path: Path, fmt: str | None, split: str,
             texts: bool) -> str | None:
    """The cache key of loading `path` that reads `files`, or None when one of them is not a
    plain file that can be read (the reader then says what is wrong, as it always has)."""
    asked = {"schema": SCHEMA, "version": __version__, "code": _code_stamp(), "path": str(path),
             "fmt": fmt, "split": split, "texts": texts, "files": [str(f) for f in files]}
    digest = hashlib.sha256(json.dumps(asked, sort_keys=True).encode())
    for file in files:
        try:
            if not file.is_file():  # never open a FIFO or a device here
                return None
            with file.open("rb") as handle:
                digest.update(hashlib.file_digest(handle, "sha256").digest())
        except OSError:
            return None
    return digest.hexdigest()


def _entry(key: str) -> Path:
    return cache_dir() / FOLDER / f"{key}.json"


def _row(query: GoldQuery) -> list[object]:
    return [query.id, query.text, query.slice, query.relevant,
            [list(pair) for pair in query.outranks], query.derivation,
            {doc: list(spans) for doc, spans in query.spans.items()}, query.line,
            query.declared]


def remember(key: str, gold: GoldSet) -> None:
    """Store `gold` under `key` (atomic, replacing any entry); a failure to write is ignored."""
    corpus = None if gold.corpus is None else [gold.corpus.name, gold.corpus.sha256]
    payload = json.dumps({"source": gold.source, "format": gold.format, "hash": gold.hash,
                          "corpus": corpus, "version": gold.version, "pooled": gold.pooled,
                          "queries": [_row(q) for q in gold.queries]},
                         ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    header = json.dumps({"schema": SCHEMA, "key": key,
                         "sha256": hashlib.sha256(payload).hexdigest()}).encode()
    _write(_entry(key), header + b"\n" + payload)


def _write(path: Path, data: bytes) -> None:
    """`data` as `path`, atomically (a temp file renamed over it); a failure is ignored."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem[:16]}.", suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temp)


def recall(key: str) -> GoldSet | None:
    """The GoldSet stored under `key`, or None when there is no sound entry for it."""
    try:
        data = _entry(key).read_bytes()
    except OSError:
        return None
    try:
        return _decode(data, key)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None  # damaged, foreign or of another shape: parsed afresh and written again


def _decode(data: bytes, key: str) -> GoldSet | None:
    header_text, _, payload = data.partition(b"\n")
    header = json.loads(header_text)
    if (not isinstance(header, dict) or header.get("schema") != SCHEMA
            or header.get("key") != key
            or header.get("sha256") != hashlib.sha256(payload).hexdigest()):
        return None
    found = json.loads(payload)
    corpus = found["corpus"]
    new = object.__new__
    queries = []
    # Built without GoldQuery.__init__ (a frozen dataclass sets each field through
    # object.__setattr__, several times slower at 100,000 queries): the fields a parse gave,
    # checked by the digest above; their types as the readers make them.
    for row in found["queries"]:
        if len(row) != len(_FIELDS) or type(row[3]) is not dict or type(row[6]) is not dict:
            return None
        query = new(GoldQuery)
        row[4] = tuple((a, b) for a, b in row[4]) if row[4] else ()
        if row[6]:
            row[6] = {doc: tuple(spans) for doc, spans in row[6].items()}
        query.__dict__.update(zip(_FIELDS, row, strict=True))
        queries.append(query)
    return GoldSet(tuple(queries), str(found["source"]), str(found["format"]),
                   str(found["hash"]), None if corpus is None else CorpusInfo(*corpus),
                   int(found["version"]), found["pooled"])


def derived(name: str, digest: str, compute: Callable[[], str]) -> str:
    """`compute()`, a short text derived from content whose sha256 is `digest` (e.g. the
    canonical hash of TREC qrels read column-wise: `harness.score.trec.qrels_hash`), computed
    once per content and kept as `<cache dir>/gold/<key>.txt`: {"schema", "key", "value",
    "sha256" of the value}, checked like a gold entry (another key, schema or digest: computed
    and written again)."""
    asked = {"schema": SCHEMA, "version": __version__, "code": _code_stamp(), "name": name,
             "content": digest}
    key = hashlib.sha256(json.dumps(asked, sort_keys=True).encode()).hexdigest()
    path = cache_dir() / FOLDER / f"{key}.txt"
    with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
        entry = json.loads(path.read_bytes())
        value = entry.get("value")
        if (entry.get("schema") == SCHEMA and entry.get("key") == key and isinstance(value, str)
                and entry.get("sha256") == hashlib.sha256(value.encode()).hexdigest()):
            return value
    value = compute()
    text = json.dumps({"schema": SCHEMA, "key": key, "value": value,
                       "sha256": hashlib.sha256(value.encode()).hexdigest()})
    _write(path, text.encode())
    return value

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

Entries: `<cache dir>/gold/<key>.gold` (`harness.process.leftovers.cache_dir`: $HARNESS_CACHE_DIR,
...): a JSON header line {"schema", "key", "python", "sha256"}, then the payload, the GoldSet's
fields and its queries as rows (their judgements in the file's order) in `marshal`'s format, which
reads back 2-3 times faster than JSON and keeps tuples as tuples. The payload is unmarshalled only
once the header names this key, this schema and this Python's marshal format, and the payload's
sha256 matches the header's: a damaged entry never reaches marshal (whose reader trusts its input),
one written by another Python or harness is never read. Written to a temp file in the folder and
renamed over the entry (atomic: two writers of one key write the same bytes, the last rename wins; a
reader sees a whole entry or none). An entry that cannot be read, is for another key or schema, or
whose payload does not match its sha256 or its shape is ignored and written again: never trusted.
The cache is an optimisation: a folder that cannot be written only means the next load parses again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import marshal
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness import __version__
from harness.process.inputs import GOLD, QUERIES, pseudo_filesystem
from harness.process.leftovers import cache_dir
from harness.values.types import CorpusInfo, GoldQuery, GoldSet

SCHEMA = 1
FOLDER = "gold"
_SOURCES = ("load.py", "native.py", "tables.py", "reading.py", "canonical.py", "memo.py",
            "../score/trec.py")
_FIELDS = ("id", "text", "slice", "relevant", "outranks", "derivation", "spans", "line",
           "declared")
# marshal's format is this Python's: an entry says which one wrote it.
_PYTHON = f"{sys.implementation.name}-{sys.version_info[0]}.{sys.version_info[1]}-{marshal.version}"


def _code_stamp() -> str:
    here = Path(__file__).parent
    stamps = []
    for name in (*_SOURCES, "../values/types.py"):
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
    asked = {"schema": SCHEMA, "version": __version__, "code": _code_stamp(), "python": _PYTHON,
             "path": str(path),
             "fmt": fmt, "split": split, "texts": texts, "files": [str(f) for f in files]}
    digest = hashlib.sha256(json.dumps(asked, sort_keys=True).encode())
    for file in files:
        try:
            info = file.stat()
            # Never open a FIFO, a device or a file of a kernel filesystem here (regular by its
            # mode, 0 bytes by its size, yet /proc/self/pagemap reads on for 256 GiB): the
            # reader refuses them, saying what they are.
            if not stat.S_ISREG(info.st_mode) or pseudo_filesystem(info.st_dev) is not None:
                return None
            # Nor hash a file past its reader's cap (a sparse 4 GiB file read whole before the
            # reader refuses it at its size): the reader says so at once.
            if info.st_size > min(GOLD.cap, QUERIES.cap):
                return None
            with file.open("rb") as handle:
                digest.update(hashlib.file_digest(handle, "sha256").digest())
        except OSError:
            return None
    return digest.hexdigest()


def _entry(key: str) -> Path:
    return cache_dir() / FOLDER / f"{key}.gold"


def _row(query: GoldQuery) -> tuple[object, ...]:
    return (query.id, query.text, query.slice, dict(query.relevant), tuple(query.outranks),
            query.derivation, dict(query.spans), query.line, query.declared)


def remember(key: str, gold: GoldSet) -> None:
    """Store `gold` under `key` (atomic, replacing any entry); a failure to write is ignored."""
    corpus = None if gold.corpus is None else (gold.corpus.name, gold.corpus.sha256)
    fields: Any = (gold.source, gold.format, gold.hash, corpus, gold.version, gold.pooled,
                   tuple(_row(q) for q in gold.queries))
    try:
        payload = marshal.dumps(fields)
    except ValueError:  # a value marshal cannot write (a GoldSet made by hand): not cached
        return
    header = json.dumps({"schema": SCHEMA, "key": key, "python": _PYTHON,
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
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, EOFError):
        return None  # damaged, foreign or of another shape: parsed afresh and written again


def _decode(data: bytes, key: str) -> GoldSet | None:
    header_text, _, payload = data.partition(b"\n")
    header = json.loads(header_text)
    if (not isinstance(header, dict) or header.get("schema") != SCHEMA
            or header.get("key") != key or header.get("python") != _PYTHON
            or header.get("sha256") != hashlib.sha256(payload).hexdigest()):
        return None
    source, fmt, digest, corpus, version, pooled, rows = marshal.loads(payload)
    new = object.__new__
    queries = []
    # Built without GoldQuery.__init__ (a frozen dataclass sets each field through
    # object.__setattr__, several times slower at 100,000 queries): the fields a parse gave,
    # as it gave them (checked by the digest above), each of the type the readers make.
    for row in rows:
        if len(row) != len(_FIELDS) or type(row[3]) is not dict or type(row[6]) is not dict:
            return None
        query = new(GoldQuery)
        query.__dict__.update(zip(_FIELDS, row, strict=True))
        queries.append(query)
    return GoldSet(tuple(queries), str(source), str(fmt), str(digest),
                   None if corpus is None else CorpusInfo(*corpus), int(version), pooled)


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

"""The corpus a gold set is judged against: its document ids and the sha256 of its file.

    load_corpus_ids(path) -> (ids, sha256)   enough for load_gold's integrity check
    load_corpus(path) -> Corpus              every document, for `gold check` and `gold build`
    document_fields(path, names) -> (rows, keys)   named fields of every document (query.id_field)

A corpus is JSON Lines, one object per document with its id in "id" (this project's collections)
or "_id" (BEIR); other keys are ignored. A folder means the `corpus.jsonl` inside it (BEIR layout).
Integer ids are read as their decimal string, since services often return numbers.
`load_corpus` also reads "title" (optional) and "text" (required), both strings.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from harness.errors import GoldError
from harness.gold.documents import Corpus, Document
from harness.gold.reading import (
    LONE_SURROGATE,
    NESTED_TOO_DEEPLY,
    DocRef,
    Problems,
    has_lone_surrogate,
    json_error,
    json_type,
    not_utf8,
)
from harness.process.inputs import CORPUS, is_input_file, open_input
from harness.text.encodings import SAMPLE, encoding_problem

_CHUNK = 1 << 20
_DECODE = json.JSONDecoder().decode  # what json.loads(str) calls


def corpus_file(path: Path) -> Path:
    """The corpus file a path names: the path itself, or `corpus.jsonl` inside a folder."""
    try:
        file = path / "corpus.jsonl" if path.is_dir() else path
        found = is_input_file(file, CORPUS)  # a FIFO or /dev/zero is said, not "not found"
    except OSError as exc:  # a folder above it this user may not enter
        raise _unreadable(path, exc) from None
    if not found:
        raise GoldError(f"{file}: corpus not found; pass the corpus JSONL file or its BEIR folder")
    return file


def _unreadable(file: Path, exc: OSError) -> GoldError:
    return GoldError(
        f"{file}: cannot read the corpus ({exc.strerror or exc}); check that this user may read "
        "it and enter every folder above it"
    )


@contextlib.contextmanager
def _opened(file: Path) -> Iterator[BinaryIO]:
    """The corpus file open for reading; GoldError naming it when it cannot be read."""
    try:
        handle = open_input(file, CORPUS)  # a regular file, streamed up to the corpus cap
    except OSError as exc:
        raise _unreadable(file, exc) from None
    with handle:
        yield handle


def file_sha256(path: Path | str) -> str:
    """sha256 hex of a file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open_input(path, CORPUS) as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def load_corpus_ids(path: Path | str) -> tuple[frozenset[str], str]:
    """The document ids of a corpus and the sha256 of its file, computed in one pass.

    Raises GoldError listing every malformed line, missing or non-string id, and duplicate id.
    """
    ids, sha256, _ = _scan(corpus_file(Path(path)), documents=False)
    return ids, sha256


def load_corpus(path: Path | str) -> Corpus:
    """Every document of a corpus (file order) with the file's sha256; `name` is `path` as given.

    Raises GoldError listing every problem `load_corpus_ids` would, and every "title" or "text"
    that is not a string (a missing "title" is ""; a missing "text" is a problem).
    """
    _, sha256, documents = _scan(corpus_file(Path(path)), documents=True)
    return Corpus(tuple(documents), str(path), sha256)


def document_fields(
    path: Path | str, names: Sequence[str]
) -> tuple[list[tuple[str, tuple[object, ...]]], frozenset[str]]:
    """Each document's id with the values of its fields `names` (None where a line lacks one),
    in file order, and every key any line holds (to tell a misspelt field from a missing one).
    GoldError listing every malformed line and missing id, as `load_corpus_ids` would."""
    file = corpus_file(Path(path))
    problems = Problems()
    found: list[tuple[str, tuple[object, ...]]] = []
    keys: set[str] = set()
    with _opened(file) as handle:
        wide = encoding_problem(handle.read(SAMPLE), file)
        if wide is not None:
            raise GoldError(f"{file}:1: {wide}")
        handle.seek(0)
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            row = _quick_row(raw)
            if row is None:
                row = _row(raw, file, number, problems)
            doc_id = None if row is None else _quick_id(row) or _doc_id(row, file, number,
                                                                       problems)
            if row is None or doc_id is None:
                continue
            keys.update(row)
            found.append((doc_id, tuple(row.get(name) for name in names)))
    problems.raise_if_any(f"{file}: the corpus is malformed")
    return found, frozenset(keys)


def _scan(file: Path, *, documents: bool) -> tuple[frozenset[str], str, list[Document]]:
    problems = Problems()
    digest = hashlib.sha256()
    first_line: dict[str, int] = {}
    found: list[Document] = []
    with _opened(file) as handle:
        wide = encoding_problem(handle.read(SAMPLE), file)
        if wide is not None:
            raise GoldError(f"{file}:1: {wide}")
        handle.seek(0)
        for number, raw in enumerate(handle, start=1):
            digest.update(raw)
            if not raw.strip():
                continue
            row = _quick_row(raw)
            if row is None:  # anything unusual: the exact reading, which names each problem
                row = _row(raw, file, number, problems)
            doc_id = None if row is None else _quick_id(row) or _doc_id(row, file, number,
                                                                       problems)
            if row is None or doc_id is None:
                continue
            if doc_id in first_line:
                problems.add(file, f"duplicate document id {doc_id!r} (first at line "
                              f"{first_line[doc_id]}); ids must be unique", number, "id")
                continue
            first_line[doc_id] = number
            if documents:
                title, text = row.get("title", ""), row.get("text")
                if type(title) is not str or type(text) is not str:
                    title, text = _field(row, "title", file, number, problems), \
                        _field(row, "text", file, number, problems)
                if title is not None and text is not None:
                    found.append(Document(doc_id, title, text, number))
    if not first_line and not problems:
        problems.add(file, "the corpus has no documents")
    problems.raise_if_any(f"{file}: the corpus is malformed")
    return frozenset(first_line), digest.hexdigest(), found


def _quick_row(raw: bytes) -> dict[str, object] | None:
    """The object on a line when it is strict UTF-8 JSON holding an object, else None.

    json.loads(raw) would read the same object: its encoding detection says UTF-8 for every line
    that decodes as strict UTF-8 and then parses (a BOM, a NUL in the first two bytes or a UTF-16
    or -32 line fails one or the other), and strict decoding never lets through a surrogate that
    "surrogatepass" would. Skipping the detection, and the problem bookkeeping, is the saving."""
    if b"\\ud" in raw or b"\\uD" in raw:  # maybe a lone surrogate: the exact reading
        return None
    try:
        row = _DECODE(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # also UnicodeDecodeError; RecursionError: nesting
        return None
    return row if type(row) is dict else None


def _quick_id(row: dict[str, object]) -> str | None:
    """A plain "id" string (no "_id"), as `_doc_id` would return it; None for anything else."""
    doc_id = row.get("id")
    if type(doc_id) is str and doc_id and not doc_id.isspace() and "_id" not in row:
        return doc_id
    return None


def _row(raw: bytes, file: Path, number: int, problems: Problems) -> dict[str, object] | None:
    try:
        # Strict UTF-8 first: json.loads(bytes) would take a line starting \xff\xfe for UTF-16.
        row = json.loads(raw.decode("utf-8-sig"))
    except RecursionError:
        problems.add(file, f"the line {NESTED_TOO_DEEPLY}", number)
        return None
    except UnicodeDecodeError as exc:
        problems.add(file, not_utf8(exc, "the corpus", in_line=True), number)
        return None
    except ValueError as exc:
        problems.add(file, json_error(exc), number)
        return None
    if has_lone_surrogate(row):
        problems.add(file, f"the line {LONE_SURROGATE}", number)
        return None
    if not isinstance(row, dict):
        problems.add(file, f"expected a JSON object per document, got {json_type(row)}", number)
        return None
    return row


def _field(row: dict[str, object], key: str, file: Path, number: int,
           problems: Problems) -> str | None:
    value = row.get(key, "" if key == "title" else None)
    if isinstance(value, str):
        return value
    got = "it is missing" if key not in row else f"got {json_type(value)}"
    problems.add(file, f'"{key}" is a string ({got}); the checks read the title and text', number,
                 key)
    return None


def _doc_id(row: dict[str, object], file: Path, number: int, problems: Problems) -> str | None:
    ids = [row[key] for key in ("_id", "id") if key in row]
    if not ids:
        problems.add(file, 'a document needs an "id" (or BEIR "_id")', number, "id")
        return None
    if len(ids) == 2 and ids[0] != ids[1]:
        problems.add(file, f'"_id" {ids[0]!r} and "id" {ids[1]!r} disagree; keep one', number, "id")
        return None
    doc_id = ids[0]
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        return str(doc_id)
    if not isinstance(doc_id, str) or not doc_id.strip():
        got = "a blank string" if isinstance(doc_id, str) else json_type(doc_id)
        problems.add(file, f"a document id is a string with a non-blank character, got {got}",
                     number, "id")
        return None
    return doc_id


def dangling(refs: Iterable[DocRef], ids: frozenset[str], corpus: Path,
             problems: Problems) -> None:
    """Record a problem for every reference to a document the corpus lacks.

    When none of the references is in the corpus, one more problem says so first: that is a
    wrong corpus (or a different id scheme), not a few stale judgements.
    """
    refs = list(refs)
    missing = [ref for ref in refs if ref.doc_id not in ids]
    if missing and len(missing) == len(refs) > 1:
        problems.add(corpus, f"none of the {len(refs)} documents the gold set names is in this "
                     "corpus: is it the corpus the gold set was made for?")
    for ref in missing:
        problems.add(ref.path, f"query {ref.query_id!r}: document {ref.doc_id!r} is not in "
                     f"the corpus {corpus}", ref.line, ref.field)

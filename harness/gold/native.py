"""The native gold format, JSON Lines: an optional header line, then one query per line.

    {"format": "harness-gold", "version": 1, "corpus": {"name": "kb.jsonl", "sha256": "<hex>"}}
    {"id": "q17", "query": "who owns billing?", "slice": "entity", "relevant": {"d4": 2, "d9": 0}}
    {"id": "q18", "query": "rotate the TLS cert", "relevant": ["d12"], "outranks": [["d12", "d3"]]}
    {"id": "q19", "query": "drain a node", "relevant": {"d7": 0}, "answerable": true}

Every rule below that a line breaks is one Problem at path:line: field (gold/README.md repeats
them with examples). Blank lines are skipped; line numbers are 1-based physical lines.

- Header (optional, first non-blank line only; recognised by a "format" or "version" key):
  "format" = "harness-gold" and "version" = 1 are required; "corpus" = {"name": non-empty string,
  "sha256": 64 lowercase hex digits (optional)}, "description" (string) and "judged" are
  optional. "judged" says what a query judged only 0 (some judgements, none of grade >= 1) is:
  "pooled" (the judgements are a pool of what some system returned: answerable, its answer not
  found yet) or "complete" (unanswerable: the meaning without the key). It sets such a query's
  `GoldQuery.declared` unless the query has its own "answerable" key.
- Query: "id" (non-empty string, unique in the file), "query" (a string with a non-blank
  character) and "relevant" are required. "relevant" is an object {doc id: grade} with each grade
  an integer >= 0 (true and 2.0 are not integers; 0 = judged not relevant), or an array of distinct
  doc ids meaning grade 1 each; empty means an unanswerable query. Optional: "slice" (non-blank
  string, default "default"), "outranks" (array of [correct_id, stale_id] pairs of two distinct
  non-empty strings), "derivation" (string), "spans" (an object {doc id: array of answer
  spans}, each span a non-empty string, the doc id one judged relevant, grade >= 1, in this
  query; `gold check --corpus` checks each span is verbatim in that document's text),
  "answerable" (true or false: whether the corpus holds an answer, `GoldQuery.declared`; false
  beside a grade >= 1 is a contradiction). Without it, or the header's "judged", a query is
  answerable when it has a grade >= 1. "machine" ({doc id: grade}, a machine's grades, kept
  apart: they do not score) and "judged_by" ({doc id: {"by", "kind", "at", "from"}}, where a
  merged grade came from) are written by `harness judge merge` (`harness.gold.provenance`);
  neither enters the hash. `read_native_labels` reads them.
- Everywhere: no unknown key, no key twice in one object, no NaN/Infinity, one JSON object a line,
  at least one query in the file.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import cast

from harness.errors import GoldError, clip
from harness.gold.provenance import QueryLabels, parse_judged_by, parse_machine
from harness.gold.reading import (
    DocRef,
    JsonObject,
    Parsed,
    Problems,
    bad_grade,
    json_error,
    json_type,
    loads,
    numbered_lines,
)
from harness.values.types import OVERALL, CorpusInfo, GoldQuery, GoldSet

FORMAT_NAME = "harness-gold"
VERSION = 1
_HEADER_KEYS = ("format", "version", "corpus", "description", "judged")
# The header's "judged": what a query judged only 0 is (GoldQuery.declared), by value.
JUDGED = {"pooled": True, "complete": False}
_CORPUS_KEYS = ("name", "sha256")
RESERVED_SLICE = (
    f'slice "{OVERALL}" is reserved: it names the whole gold set in every report and gate '
    "file; rename this slice"
)
_QUERY_KEYS = ("id", "query", "relevant", "slice", "outranks", "derivation", "spans",
               "answerable", "machine", "judged_by")
_REQUIRED = ("id", "query", "relevant")
_SHA256 = re.compile(r"[0-9a-f]{64}")


def read_native(path: Path, problems: Problems,
                labels: dict[str, QueryLabels] | None = None, *, refs: bool = True) -> Parsed:
    """Parse a native gold file, recording every problem (no queries if it is not UTF-8);
    `labels` collects each query's "machine" and "judged_by" keys, when given; `refs=False`
    leaves out where each doc id was read (only a corpus check needs it)."""
    lines = numbered_lines(path, problems)
    if lines is None:
        return Parsed((), (), str(path), "native")
    return parse_native(lines, str(path), problems, labels, refs=refs)


def read_native_labels(path: Path | str) -> dict[str, QueryLabels]:
    """Each query's "machine" grades and "judged_by" provenance, by query id (queries without
    either left out); GoldError listing every problem of the file."""
    problems = Problems()
    labels: dict[str, QueryLabels] = {}
    read_native(Path(path), problems, labels)
    problems.raise_if_any(f"{path}: the gold set is invalid")
    return labels


def parse_native(lines: Iterable[tuple[int, str]], path: str, problems: Problems,
                 labels: dict[str, QueryLabels] | None = None, *, refs: bool = True) -> Parsed:
    """Parse numbered non-blank lines of the native format (see the module docstring)."""
    queries: list[GoldQuery] = []
    where: list[DocRef] | None = [] if refs else None
    first_line: dict[str, int] = {}
    corpus: CorpusInfo | None = None
    judged: bool | None = None  # the header's "judged", as GoldQuery.declared
    header_line: int | None = None
    query_lines = 0
    for index, (number, text) in enumerate(lines):
        try:
            value = loads(text)
        except ValueError as exc:
            problems.add(path, json_error(exc), number)
            query_lines += 1
            continue
        if not isinstance(value, JsonObject):
            problems.add(path, "expected a JSON object (a query, or the header on the first "
                         f"line), got {json_type(value)}", number)
            query_lines += 1
            continue
        if "format" in value or "version" in value:
            if index == 0:
                corpus, header_line = _check_header(value, path, number, problems), number
                judged = _header_judged(value, path, number, problems)
            else:
                problems.add(path, "a header is only allowed on the first line; move it there "
                             "or delete it", number, "format")
            continue
        query_lines += 1
        before = len(problems)
        query_id = value.get("id")
        if isinstance(query_id, str) and query_id in first_line:
            problems.add(path, f"duplicate query id {query_id!r}: lines {first_line[query_id]} "
                         f"and {number}; give each query its own id", number, "id")
        elif isinstance(query_id, str) and query_id:
            first_line[query_id] = number
        query = _check_query(value, path, number, problems, where, judged)
        found = _labels(value, query, path, number, problems)
        if query is not None and len(problems) == before:
            queries.append(query)
            if labels is not None and (found.machine or found.judged_by):
                labels[query.id] = found
    if query_lines == 0 and header_line is None:
        problems.add(path, "no queries: the file is empty, and a gold set needs at least one "
                     "(JSON lines, gold/README.md, or TREC qrels `qid 0 docid grade`)")
    elif query_lines == 0:
        problems.add(path, "no queries: the file needs at least one query line after the header")
    return Parsed(tuple(queries), tuple(where or ()), path, "native", corpus, header_line,
                  pooled=judged)


def _check_keys(obj: JsonObject, known: tuple[str, ...], path: str, number: int,
                problems: Problems, prefix: str = "") -> None:
    for key in obj.duplicates:
        problems.add(path, f"key {key!r} appears twice; keep one", number, prefix + key)
    for key in obj:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            guess = f"did you mean {close[0]!r}? " if close else ""
            problems.add(path, f"unknown field {key!r}; {guess}known fields: {', '.join(known)}",
                         number, prefix + key)


def _non_blank(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _check_header(obj: JsonObject, path: str, number: int,
                  problems: Problems) -> CorpusInfo | None:
    _check_keys(obj, _HEADER_KEYS, path, number, problems)
    if obj.get("format") != FORMAT_NAME:
        problems.add(path, f'the header needs "format": "{FORMAT_NAME}"', number, "format")
    version = obj.get("version")
    if type(version) is not int or version != VERSION:
        got = "it is missing" if "version" not in obj else f"got {json.dumps(version)}"
        problems.add(path, f'the header needs "version": {VERSION} ({got}); this harness '
                     f"reads version {VERSION}", number, "version")
    if "description" in obj and not isinstance(obj["description"], str):
        problems.add(path, f"description is a string, got {json_type(obj['description'])}",
                     number, "description")
    if "corpus" not in obj:
        return None
    corpus = obj["corpus"]
    if not isinstance(corpus, JsonObject):
        problems.add(path, 'corpus is an object {"name": ..., "sha256": ...}, got '
                     f"{json_type(corpus)}", number, "corpus")
        return None
    _check_keys(corpus, _CORPUS_KEYS, path, number, problems, prefix="corpus.")
    name, sha256 = corpus.get("name"), corpus.get("sha256")
    if not _non_blank(name):
        problems.add(path, "corpus.name is required: the corpus file name or path", number,
                     "corpus.name")
    if sha256 is not None and not (isinstance(sha256, str) and _SHA256.fullmatch(sha256)):
        problems.add(path, "corpus.sha256 is 64 lowercase hex digits (`sha256sum FILE`)", number,
                     "corpus.sha256")
    if isinstance(name, str) and (sha256 is None or isinstance(sha256, str)):
        return CorpusInfo(name, sha256)
    return None


def _header_judged(obj: JsonObject, path: str, number: int, problems: Problems) -> bool | None:
    """The header's "judged" as the GoldQuery.declared of a query judged only 0; None when
    absent or wrong."""
    if "judged" not in obj:
        return None
    value = obj["judged"]
    if isinstance(value, str) and value in JUDGED:
        return JUDGED[value]
    problems.add(path, 'judged is "pooled" (a query judged only 0 is answerable, its answer not '
                 'found yet) or "complete" (such a query is unanswerable), got '
                 f"{clip(json.dumps(value), 40)}", number, "judged")
    return None


def _check_query(obj: JsonObject, path: str, number: int, problems: Problems,
                 refs: list[DocRef] | None, judged: bool | None = None) -> GoldQuery | None:
    _check_keys(obj, _QUERY_KEYS, path, number, problems)
    for key in _REQUIRED:
        if key not in obj:
            problems.add(path, f"required field {key!r} is missing", number, key)
    query_id, text, slice_ = obj.get("id"), obj.get("query"), obj.get("slice", "default")
    if "id" in obj and not _non_blank(query_id):
        problems.add(path, f"id is a string with a non-blank character, got "
                     f"{json.dumps(query_id)}", number, "id")
    if "query" in obj and not _non_blank(text):
        problems.add(path, "query is the text sent to the service: a string with a non-blank "
                     f"character, got {json.dumps(text)}", number, "query")
    if not _non_blank(slice_):
        problems.add(path, f"slice is a non-blank string, got {json.dumps(slice_)}", number,
                     "slice")
    elif slice_ == OVERALL:
        problems.add(path, RESERVED_SLICE, number, "slice")
    derivation = obj.get("derivation")
    if "derivation" in obj and not isinstance(derivation, str):
        problems.add(path, f"derivation is a string, got {json_type(derivation)}", number,
                     "derivation")
    label = query_id if isinstance(query_id, str) else f"at line {number}"
    relevant = _relevant(obj["relevant"], path, number, problems) if "relevant" in obj else {}
    outranks = parse_outranks(obj.get("outranks", []), path, number, problems)
    spans = parse_spans(obj["spans"], relevant, path, number, problems) if "spans" in obj else {}
    if refs is not None:
        refs.extend(DocRef(path, number, "relevant", label, doc) for doc in relevant)
        refs.extend(DocRef(path, number, f"outranks[{i}]", label, doc)
                    for i, pair in enumerate(outranks) for doc in pair)
    declared = _answerable(obj, relevant, judged, path, number, problems)
    if not (isinstance(query_id, str) and isinstance(text, str) and isinstance(slice_, str)):
        return None
    note = derivation if isinstance(derivation, str) else None
    return GoldQuery(query_id, text, slice_, relevant, outranks, note, spans, number, declared)


def _labels(obj: JsonObject, query: GoldQuery | None, path: str, number: int,
            problems: Problems) -> QueryLabels:
    """The query's "machine" and "judged_by" keys (`harness.gold.provenance`), checked."""
    if "machine" not in obj and "judged_by" not in obj:
        return QueryLabels()
    machine = parse_machine(obj["machine"], path, number, problems) if "machine" in obj else {}
    relevant = query.relevant if query is not None else {}
    judged_by = (parse_judged_by(obj["judged_by"], relevant, machine, path, number, problems)
                 if "judged_by" in obj else {})
    return QueryLabels(machine, judged_by)


def _answerable(obj: JsonObject, relevant: dict[str, int], judged: bool | None, path: str,
                number: int, problems: Problems) -> bool | None:
    """GoldQuery.declared: the query's "answerable" key, else the header's "judged" for a query
    judged only 0, else None (the grades decide)."""
    if "answerable" not in obj:
        return judged if relevant and max(relevant.values()) < 1 else None
    value = obj["answerable"]
    if not isinstance(value, bool):
        problems.add(path, "answerable is true or false (whether the corpus holds an answer), "
                     f"got {clip(json.dumps(value), 40)}", number, "answerable")
        return None
    graded = [doc for doc, grade in relevant.items() if grade >= 1]
    if not value and graded:
        shown = ", ".join(repr(doc) for doc in graded[:3]) + (" ..." if len(graded) > 3 else "")
        problems.add(path, f"answerable is false, but {shown} "
                     f"{'has' if len(graded) == 1 else 'have'} grade >= 1: a query with a "
                     "relevant document is answerable; drop the key, or judge them 0", number,
                     "answerable")
        return None  # told once, as a problem (GoldQuery refuses the pair)
    return value


def parse_spans(value: object, relevant: dict[str, int], path: str, number: int,
                problems: Problems) -> dict[str, tuple[str, ...]]:
    """{doc id: [span, ...]}: each doc judged relevant (grade >= 1), each span a non-empty
    string; every fault is a problem at field spans.DOC[i]."""
    if not isinstance(value, JsonObject):
        problems.add(path, 'spans is an object {"doc_id": ["verbatim answer span", ...]}, got '
                     f"{json_type(value)}", number, "spans")
        return {}
    found: dict[str, tuple[str, ...]] = {}
    for doc in value.duplicates:
        problems.add(path, f"spans of document {doc!r} are given twice; merge them", number,
                     f"spans.{doc}")
    for doc, items in value.items():
        where = f"spans.{doc}"
        if relevant.get(doc, 0) < 1:
            why = "is judged 0" if doc in relevant else "is not judged in this query"
            problems.add(path, f"document {doc!r} {why}: spans are the evidence of a relevant "
                         "document; judge it relevant (grade >= 1) or drop its spans", number,
                         where)
            continue
        if not isinstance(items, list) or not items:
            problems.add(path, f"{where} is a non-empty array of span strings, got "
                         f"{json.dumps(items) if isinstance(items, list) else json_type(items)}",
                         number, where)
            continue
        bad = [i for i, item in enumerate(items) if not (isinstance(item, str) and item)]
        for i in bad:
            problems.add(path, f"a span is a non-empty string copied verbatim from the "
                         f"document's text, got {json.dumps(items[i])}", number, f"{where}[{i}]")
        if not bad:
            found[doc] = tuple(items)
    return found


def _relevant(value: object, path: str, number: int, problems: Problems) -> dict[str, int]:
    found: dict[str, int] = {}
    if isinstance(value, JsonObject):
        for doc in value.duplicates:
            problems.add(path, f"document {doc!r} is judged twice; keep one grade", number,
                         "relevant")
        for doc, grade in value.items():
            if not doc.strip():
                problems.add(path, f"a document id has a non-blank character, got {doc!r}",
                             number, "relevant")
            elif (rule := bad_grade(grade)) is not None:
                problems.add(path, f"document {doc!r} has grade {clip(json.dumps(grade), 40)}; "
                             f"{rule}",
                             number, "relevant")
            else:
                found[doc] = cast(int, grade)  # bad_grade passed it: a whole number
    elif isinstance(value, list):
        for doc in value:
            if not _non_blank(doc):
                problems.add(path, "a list of relevant documents holds non-empty string ids, got "
                             f"{json.dumps(doc)}", number, "relevant")
            elif doc in found:
                problems.add(path, f"document {doc!r} is listed twice; list each once", number,
                             "relevant")
            else:
                found[doc] = 1
    else:
        problems.add(path, "relevant is an object {doc_id: grade} or an array of doc ids, got "
                     f"{json_type(value)}", number, "relevant")
    return found


def parse_outranks(value: object, path: str, number: int,
                   problems: Problems) -> tuple[tuple[str, str], ...]:
    """[correct_id, stale_id] pairs (also read from BEIR/TREC query rows), each fault a problem."""
    if not isinstance(value, list):
        problems.add(path, f"outranks is an array of [correct_id, stale_id] pairs, got "
                     f"{json_type(value)}", number, "outranks")
        return ()
    pairs = []
    for index, pair in enumerate(value):
        if (isinstance(pair, list) and len(pair) == 2
                and all(_non_blank(d) for d in pair) and pair[0] != pair[1]):
            pairs.append((str(pair[0]), str(pair[1])))
        else:
            problems.add(path, "each outranks entry is [correct_id, stale_id]: two different "
                         f"non-blank doc ids, got {json.dumps(pair)}", number, f"outranks[{index}]")
    return tuple(pairs)


# --------------------------------------------------------------------------- writing


def _record(query: GoldQuery, labels: QueryLabels | None = None) -> dict[str, object]:
    record: dict[str, object] = {"id": query.id, "query": query.text, "slice": query.slice,
                                 "relevant": dict(query.relevant)}
    if query.outranks:
        record["outranks"] = [list(pair) for pair in query.outranks]
    if query.derivation is not None:
        record["derivation"] = query.derivation
    if query.spans:
        record["spans"] = {doc: list(spans) for doc, spans in query.spans.items()}
    if query.declared is not None:
        record["answerable"] = query.declared
    if labels is not None and labels.machine:
        record["machine"] = dict(labels.machine)
    if labels is not None and labels.judged_by:
        record["judged_by"] = {doc: who.to_json() for doc, who in labels.judged_by.items()}
    return record


def _line(value: dict[str, object], sort_keys: bool = True) -> str:
    text = json.dumps(value, sort_keys=sort_keys, ensure_ascii=False)
    # Keep the file one record a line for readers that also split on these (str.splitlines).
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").replace("\x85", "\\u0085")


def write_native(gold: GoldSet | Iterable[GoldQuery], path: Path | str, *,
                 corpus: CorpusInfo | None = None, description: str | None = None,
                 overwrite: bool = True,
                 labels: Mapping[str, QueryLabels] | None = None) -> None:
    """Write the header ("format" first) and one sorted-key line per query, atomically.

    The queries keep their order. `corpus` defaults to a GoldSet's own corpus. The lines are
    checked with the reader's rules first, so this never writes a file `load_gold` would refuse
    (GoldError instead); the file appears whole or not at all (temp file + os.replace). With
    `overwrite=False` an existing `path` is a GoldError and is left alone. `labels` (query id ->
    its "machine" and "judged_by", as `read_native_labels` gives them) are written back.
    """
    path = Path(path)
    if not overwrite and path.exists():
        raise GoldError(f"{path}: already exists; choose another output, or pass --force to "
                        "replace it")
    if isinstance(gold, GoldSet):
        corpus = corpus if corpus is not None else gold.corpus
        queries: Iterable[GoldQuery] = gold.queries
    else:
        queries = gold
    header: dict[str, object] = {"format": FORMAT_NAME, "version": VERSION}
    if corpus is not None:
        header["corpus"] = {"name": corpus.name} | ({"sha256": corpus.sha256}
                                                     if corpus.sha256 else {})
    if description is not None:
        header["description"] = description
    # The header keeps "format" first, so that `head -1` tells what the file is.
    found = labels or {}
    lines = [_line(header, sort_keys=False), *(_line(_record(q, found.get(q.id))) for q in queries)]
    problems = Problems()
    parse_native(enumerate(lines, start=1), str(path), problems)
    problems.raise_if_any(f"{path}: refusing to write an invalid gold set (lines as they would be)")
    replace_text(path, "".join(line + "\n" for line in lines))


def replace_text(path: Path, text: str) -> None:
    """Write `text` to `path` through a temp file in its folder, fsynced and renamed over it:
    whole or untouched (the mode of a file replaced is kept); GoldError when it cannot."""
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o644
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise GoldError(f"{path}: cannot write the gold set: {exc.strerror}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        if isinstance(exc, OSError):
            raise GoldError(f"{path}: cannot write the gold set: {exc.strerror}") from exc
        raise

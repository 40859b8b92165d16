"""BEIR folders and TREC qrels: judgements in a table, query texts in a separate file.

BEIR: a folder with `queries.jsonl` and `qrels/<split>.tsv` (or a flat `qrels.tsv`, taken as the
default split "test"); the qrels start with the header `query-id<TAB>corpus-id<TAB>score`
(`doc-id` is accepted for the middle column), then one `qid<TAB>docid<TAB>grade` a line.
TREC: qrels lines `qid iteration docid grade`, whitespace-separated, the iteration ignored; the
texts come from a topics file, JSONL or `qid<TAB>text`.

Queries files: JSONL rows {"_id" or "id", "text", ...}, or, for TREC, TSV lines `qid<TAB>text`
(the id is stripped, the text kept as written). In a JSONL row the slice comes from "slice" or
"metadata"."slice", else "default"; "derivation" (a string) and "outranks" (the native format's
[correct_id, stale_id] pairs) are read the same way, from the row or its "metadata", so that
`harness gold convert` can carry them; other keys, such as BEIR's "title", are ignored.

Only queries with at least one judgement (grade 0 included) are loaded, in the order of the
queries file: BEIR's evaluation and trec_eval score exactly the judged queries, so an unjudged
query is ignored, not reported. `GoldQuery.line` is the query's line in the queries file. A judged
query without a text, a duplicate (query, document) pair, a grade that is not an integer >= 0 and
every malformed line are problems; so is a table with no judged query.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, cast

from harness.errors import GoldError, clip
from harness.gold.native import RESERVED_SLICE, parse_outranks
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
    parse_grade,
)
from harness.process.inputs import GOLD, QUERIES, is_input_file
from harness.values.types import OVERALL, GoldQuery

BEIR_HEADER = "query-id\tcorpus-id\tscore"


@dataclass(frozen=True)
class _Topic:
    id: str
    text: str
    slice: str
    line: int
    derivation: str | None = None
    outranks: tuple[tuple[str, str], ...] = ()


class _Judgement(NamedTuple):
    query_id: str
    doc_id: str
    grade: int
    line: int


@dataclass(frozen=True)
class _Columns:
    """How one table format names its columns, for messages."""

    query: str
    doc: str
    grade: str


_BEIR = _Columns("query-id", "corpus-id", "score")
_TREC = _Columns("qid", "docid", "relevance")


def beir_qrels(folder: Path, split: str) -> Path:
    """The qrels file of a BEIR split: qrels/<split>.tsv, or qrels.tsv for the split "test"."""
    candidates = [folder / "qrels" / f"{split}.tsv"]
    if split == "test":
        candidates.append(folder / "qrels.tsv")
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    splits = sorted(p.stem for p in (folder / "qrels").glob("*.tsv"))
    have = f"; splits here: {', '.join(splits)}" if splits else ""
    tried = " or ".join(str(c) for c in candidates)
    raise GoldError(f"{folder}: no qrels for split {split!r}: looked for {tried}{have}")


def read_beir(folder: Path, split: str, problems: Problems, refs: bool = True) -> Parsed:
    """The judged queries of a BEIR folder (see the module docstring)."""
    queries = folder / "queries.jsonl"
    if not is_input_file(queries, QUERIES):
        raise GoldError(f"{folder}: a folder is read as a BEIR gold set, and it holds no "
                        "queries.jsonl; name the gold file itself (gold/gold.jsonl), or a BEIR "
                        "folder holding queries.jsonl and qrels/<split>.tsv")
    qrels = beir_qrels(folder, split)
    topics = read_topics(queries, problems)
    judgements = _table(qrels, _BEIR, problems)
    return _assemble(topics, judgements, queries, qrels, str(folder), "beir", _BEIR, problems,
                     refs)


def read_trec(qrels: Path, queries: Path, problems: Problems, refs: bool = True) -> Parsed:
    """The judged queries of a TREC qrels file and its topics file (see the module docstring)."""
    if not is_input_file(queries, QUERIES):
        raise GoldError(f"{queries}: queries file not found; TREC qrels need the query texts "
                        "(JSONL or qid<TAB>text)")
    topics = read_topics(queries, problems)
    judgements = _table(qrels, _TREC, problems)
    return _assemble(topics, judgements, queries, qrels, str(qrels), "trec", _TREC, problems,
                     refs)


def read_qrels(qrels: Path, problems: Problems, refs: bool = True) -> Parsed:
    """The judged queries of TREC qrels alone, for scoring only (`harness metrics`, as
    `trec_eval qrels run`): scoring reads no query text, so each query's text is empty, its
    slice "default", and the queries come in the order the qrels first name them."""
    judgements = _table(qrels, _TREC, problems)
    topics: dict[str, _Topic] = {}
    for row in judgements:
        topics.setdefault(row.query_id, _Topic(row.query_id, "", "default", row.line))
    return _assemble(topics, judgements, qrels, qrels, str(qrels), "trec", _TREC, problems,
                     refs)


def read_topics(path: Path, problems: Problems) -> dict[str, _Topic] | None:
    """Query texts by id from a JSONL or `qid<TAB>text` file, recording every problem.

    None when the file is unreadable as a whole (not UTF-8, SGML): then the judged queries are
    not each reported as lacking a text.
    """
    lines = numbered_lines(path, problems, QUERIES)
    if lines is None:
        return None
    if lines and lines[0][1].lstrip().startswith("<"):
        problems.add(path, "looks like TREC SGML topics (<top>); convert them to one "
                     "`qid<TAB>text` a line or to JSONL {\"id\", \"text\"}", lines[0][0])
        return None
    jsonl = bool(lines) and lines[0][1].lstrip().startswith("{")
    topics: dict[str, _Topic] = {}
    for number, text in lines:
        topic = _json_topic(text, path, number, problems) if jsonl else \
            _tsv_topic(text, path, number, problems)
        if topic is None:
            continue
        if topic.id in topics:
            problems.add(path, f"duplicate query id {topic.id!r}: lines {topics[topic.id].line} "
                         f"and {number}; give each query its own id", number, "id")
            continue
        topics[topic.id] = topic
    return topics


def _tsv_topic(text: str, path: Path, number: int, problems: Problems) -> _Topic | None:
    parts = text.split("\t", 1)
    if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
        problems.add(path, "expected `qid<TAB>text` with a non-blank id and text", number)
        return None
    return _Topic(parts[0].strip(), parts[1], "default", number)


def _json_topic(text: str, path: Path, number: int, problems: Problems) -> _Topic | None:
    try:
        row = loads(text)
    except ValueError as exc:
        problems.add(path, json_error(exc), number)
        return None
    if not isinstance(row, JsonObject):
        problems.add(path, f"expected a JSON object per query, got {json_type(row)}", number)
        return None
    before = len(problems)
    for key in row.duplicates:
        problems.add(path, f"key {key!r} appears twice; keep one", number, key)
    ids = [row[key] for key in ("_id", "id") if key in row]
    query_id = ids[0] if ids else None
    if isinstance(query_id, int) and not isinstance(query_id, bool):
        query_id = str(query_id)
    if not (isinstance(query_id, str) and query_id.strip()):
        problems.add(path, 'a query needs an "_id" or "id": a string with a non-blank character',
                     number, "id")
    elif len(ids) == 2 and str(ids[1]) != query_id:
        problems.add(path, f'"_id" {ids[0]!r} and "id" {ids[1]!r} disagree; keep one', number,
                     "id")
    query_text = row.get("text")
    if not (isinstance(query_text, str) and query_text.strip()):
        problems.add(path, "text is the query sent to the service: a string with a non-blank "
                     f"character, got {json_type(query_text)}", number, "text")
    metadata = row.get("metadata")
    extra = metadata if isinstance(metadata, dict) else {}
    slice_ = row.get("slice", extra.get("slice", "default"))
    if not (isinstance(slice_, str) and slice_.strip()):
        problems.add(path, f"slice is a non-blank string, got {json_type(slice_)}", number,
                     "slice")
    elif slice_ == OVERALL:
        problems.add(path, RESERVED_SLICE, number, "slice")
    derivation = row.get("derivation", extra.get("derivation"))
    if derivation is not None and not isinstance(derivation, str):
        problems.add(path, f"derivation is a string, got {json_type(derivation)}", number,
                     "derivation")
    outranks = parse_outranks(row.get("outranks", extra.get("outranks", [])), str(path), number,
                              problems)
    if len(problems) > before or not (isinstance(query_id, str) and isinstance(query_text, str)
                                      and isinstance(slice_, str)):
        return None
    return _Topic(query_id, query_text, slice_, number,
                  derivation if isinstance(derivation, str) else None, outranks)


def _table(path: Path, columns: _Columns, problems: Problems) -> list[_Judgement]:
    """Judgement rows of a BEIR (tab, with header) or TREC (whitespace, 4 columns) qrels file."""
    if not is_input_file(path, GOLD):
        raise GoldError(f"{path}: qrels file not found")
    lines = numbered_lines(path, problems) or []
    beir = columns is _BEIR
    if beir and lines:
        number, first = lines[0]
        cells = first.split("\t")
        if len(cells) == 3 and cells[0] == "query-id" and cells[1] in ("corpus-id", "doc-id") \
                and cells[2] == "score":
            lines = lines[1:]
        else:
            problems.add(path, "the first line must be the header `query-id<TAB>corpus-id<TAB>"
                         "score`; add it", number)
    elif lines and _looks_beir(lines[0][1]):
        # BEIR's flat qrels.tsv given where TREC qrels are read: one problem, not one per line
        problems.add(path, "this is a BEIR qrels file (header `query-id corpus-id score`), not "
                     "TREC qrels (`qid iteration docid relevance`): give the BEIR folder that "
                     f"holds it instead ({path.parent}, with queries.jsonl and qrels.tsv or "
                     "qrels/<split>.tsv)", lines[0][0])
        return []
    found = []
    widths: dict[int, list[int]] = {}  # a wrong column count: its lines, reported once
    for number, text in lines:
        cells = text.split("\t") if beir else text.split()
        if len(cells) != (3 if beir else 4):
            widths.setdefault(len(cells), []).append(number)
        else:
            query_id, doc_id, grade_text = cells[0], cells[-2], cells[-1]
            # parse_grade's rule, its common case (ASCII digits) without a regex
            grade = int(grade_text) if grade_text.isdigit() and grade_text.isascii() \
                else parse_grade(grade_text)
            if (rule := bad_grade(grade)) is not None:
                problems.add(path, f"grade {clip(grade_text, 40)!r}: {rule}", number,
                             columns.grade)
            elif not query_id.strip() or not doc_id.strip():
                field = columns.query if not query_id.strip() else columns.doc
                problems.add(path, "an id has a non-blank character", number, field)
            else:
                found.append(_Judgement(query_id, doc_id, cast(int, grade), number))
    for width, numbers in widths.items():
        expected = ("3 tab-separated columns `query-id corpus-id score`" if beir
                    else "4 whitespace-separated columns `qid iteration docid relevance`")
        more = ""
        if len(numbers) > 1:
            shown = ", ".join(map(str, numbers[1:6])) + (", ..." if len(numbers) > 6 else "")
            more = f" (and on {len(numbers) - 1} more lines: {shown})"
        hint = ""
        if not beir and width == 3:
            hint = ("; 3 columns are BEIR's `query-id corpus-id score`: give the BEIR folder "
                    "(queries.jsonl with qrels.tsv or qrels/<split>.tsv) instead")
        problems.add(path, f"expected {expected}, got {width}{more}{hint}", numbers[0])
    return found


def _looks_beir(first: str) -> bool:
    """Whether a qrels file's first line is BEIR's header."""
    cells = first.split("\t")
    return len(cells) == 3 and cells[0] == "query-id" and cells[1] in ("corpus-id", "doc-id")


def _assemble(topics: dict[str, _Topic] | None, judgements: list[_Judgement], queries_path: Path,
              qrels: Path, source: str, fmt: str, columns: _Columns,
              problems: Problems, want_refs: bool = True) -> Parsed:
    """The judged queries of `topics` (all, when None), with where each doc id was read
    (`want_refs`: only a corpus check needs them)."""
    known = topics if topics is not None else {}
    relevant: dict[str, dict[str, int]] = {}
    first_line: dict[tuple[str, str], int] = {}
    refs = []
    where, field = str(qrels), columns.doc
    for query_id, doc_id, grade, line in judgements:
        judged = relevant.get(query_id)
        if judged is None:
            if topics is not None and query_id not in topics:
                problems.add(qrels, f"query {query_id!r} is judged here but has no text in "
                             f"{queries_path}; add it there or drop its judgements", line,
                             columns.query)
            judged = relevant[query_id] = {}
        elif doc_id in judged:
            if not first_line:  # built at the first repeat only: most tables have none
                for r in judgements:
                    first_line.setdefault((r.query_id, r.doc_id), r.line)
            problems.add(qrels, f"query {query_id!r} judges document {doc_id!r} twice: "
                         f"lines {first_line[query_id, doc_id]} and {line}; keep one", line, field)
            continue
        judged[doc_id] = grade
        if want_refs:
            refs.append(DocRef(where, line, field, query_id, doc_id))
    queries = tuple(GoldQuery(t.id, t.text, t.slice, relevant[t.id], t.outranks, t.derivation,
                              line=t.line)
                    for t in known.values() if t.id in relevant)
    if want_refs:
        refs += [DocRef(str(queries_path), q.line, f"outranks[{i}]", q.id, doc)
                 for q in queries for i, pair in enumerate(q.outranks) for doc in pair]
    if not queries and not problems:
        problems.add(qrels, f"no queries: no query of {queries_path} has a judgement here")
    return Parsed(queries, tuple(refs), source, fmt)

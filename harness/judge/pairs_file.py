"""`harness judge pairs`' files: what it reads (a saved comparison, its run records, the gold set
it was made against, a corpus) and the pairs file it writes, JSONL or CSV, with the columns

    order, query_id, query, doc_id, title, text, baseline_rank, candidate_rank, why, comparison

`read_pairs` reads either back (what `harness judge label` pipes to its command, and what the
judging page shows), each bad line named: the one reader of pairs files.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import GoldError, HarnessError, ResultsError, clip
from harness.gold.reading import (
    JsonObject,
    Problems,
    json_error,
    json_type,
    loads,
    not_utf8,
    numbered_lines,
)
from harness.process.inputs import GiB, Kind, read_input
from harness.text.encodings import SAMPLE, encoding_problem

if TYPE_CHECKING:
    from harness.gold.documents import Corpus
    from harness.judge.pairs import Pair
    from harness.values.types import GoldSet, RefRun
    from harness.verdict.comparison import Comparison

COLUMNS = ("order", "query_id", "query", "doc_id", "title", "text", "baseline_rank",
           "candidate_rank", "why", "comparison")
RANKS = ("baseline_rank", "candidate_rank")
TEXTS = ("query", "title", "text", "why", "comparison")
PAIRS = Kind("pairs file", GiB, GoldError)
Row = dict[str, object]


@dataclass(frozen=True)
class Saved:
    """A saved comparison with what it was made from."""

    directory: Path
    comparison: Comparison
    gold: GoldSet
    baseline: RefRun
    candidate: RefRun

    @property
    def name(self) -> str:
        return self.directory.resolve().name


def load_saved(directory: Path, gold_path: Path | None) -> Saved:
    """The comparison in `directory`, its two run records, and its gold set (`gold_path`, else
    the header's source when it exists); HarnessError when the gold set is another than the one
    the comparison was made against (its hash differs)."""
    from harness.gold import load_gold
    from harness.results.comparisons import load_comparison
    from harness.results.records import load_record

    if not directory.is_dir():
        raise ResultsError(f"{directory}: not a saved comparison directory",
                           ["pass a results/<stamp>_<sha8>_<sha8>/ directory"])
    comparison = load_comparison(directory)
    runs = [load_record(directory, side) for side in ("baseline", "candidate")]
    recorded = comparison.header.gold
    if gold_path is None:
        gold_path = Path(recorded.source)
        if not gold_path.is_file():
            raise GoldError(f"{directory}: the comparison's gold set {recorded.source} is not "
                            "here; pass it with --gold FILE")
    gold = load_gold(gold_path)
    if gold.hash != recorded.hash:
        raise GoldError(
            f"{gold_path}: gold sha256 {gold.hash[:12]} is not the {recorded.hash[:12]} the "
            f"comparison {directory} was made against: judged since? run compare again "
            "(or pass --gold with the gold file it used)")
    return Saved(directory, comparison, gold, runs[0], runs[1])


def pair_rows(pairs: Sequence[Pair], gold: GoldSet, corpus: Corpus | None,
              comparison: str) -> list[Row]:
    """One row per pair (the module docstring's columns); title and text "" without a corpus or
    for a document it lacks."""
    docs = {d.id: d for d in corpus.documents} if corpus is not None else {}
    rows: list[Row] = []
    for order, pair in enumerate(pairs, start=1):
        doc = docs.get(pair.doc_id)
        rows.append({
            "order": order, "query_id": pair.query_id,
            "query": gold.by_id[pair.query_id].text, "doc_id": pair.doc_id,
            "title": doc.title if doc else "", "text": doc.text if doc else "",
            "baseline_rank": pair.baseline_rank, "candidate_rank": pair.candidate_rank,
            "why": pair.why, "comparison": comparison,
        })
    return rows


def render_rows(rows: Sequence[Row], fmt: str) -> str:
    """"jsonl" (one object a line, the columns in order) or "csv" (RFC 4180, a header row; a
    missing rank is an empty cell)."""
    if fmt == "jsonl":
        return "".join(json.dumps({c: row[c] for c in COLUMNS}, ensure_ascii=False) + "\n"
                       for row in rows)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow(["" if row[c] is None else row[c] for c in COLUMNS])
    return out.getvalue()


def write_new(path: Path, text: str) -> None:
    """`text` to a new file at `path`, atomically; an existing file is a HarnessError."""
    from harness.results.files import write_text_new

    if path.exists():
        raise HarnessError(f"{path}: already exists; pairs files are never overwritten: choose "
                           "another --out, or remove it")
    write_text_new(path, text)


def read_pairs(path: Path, *, complete: bool = False) -> list[Row]:
    """The rows of a pairs file, JSONL or (by its .csv suffix) CSV with a header row, in file
    order; GoldError naming each bad line (path:line: field: what and how to fix it).

    Every row needs non-blank "query_id" and "doc_id" strings, and a pair twice is an error. A
    CSV row reads as its JSONL twin would: an empty rank cell is null, ranks and "order" are
    integers. `complete`: every column too, typed (a rank an integer >= 1 or null, "order" an
    integer, the others strings), as the judging page shows them."""
    if not path.is_file():
        raise GoldError(f"{path}: pairs file not found; write one with `harness judge pairs DIR "
                        "--out FILE.jsonl`")
    problems = Problems()
    numbered = _csv_rows(path, problems) if path.suffix.lower() == ".csv" else _jsonl_rows(
        path, problems)
    rows: list[Row] = []
    seen: dict[tuple[str, str], int] = {}
    for number, value in numbered:
        before = len(problems)
        ids = [value.get(key) for key in ("query_id", "doc_id")]
        for key, v in zip(("query_id", "doc_id"), ids, strict=True):
            if not (isinstance(v, str) and v.strip()):
                problems.add(str(path), f"{key} is a non-blank string, not "
                             f"{clip(json.dumps(v), 40)}", number, key)
        if complete:
            _check_columns(value, str(path), number, problems)
        if len(problems) != before:
            continue
        pair = (str(ids[0]), str(ids[1]))
        if pair in seen:
            problems.add(str(path), f"pair {pair} is listed twice (line {seen[pair]} too); keep "
                         "one", number)
            continue
        seen[pair] = number
        rows.append(value)
    problems.raise_if_any(f"{path}: the pairs file is invalid",
                          hint="write it again with `harness judge pairs`")
    if not rows:
        raise GoldError(f"{path}: no pairs in the file; nothing to judge (write it with "
                        "`harness judge pairs`)")
    return rows


def _jsonl_rows(path: Path, problems: Problems) -> list[tuple[int, Row]]:
    found: list[tuple[int, Row]] = []
    for number, text in numbered_lines(path, problems, PAIRS) or ():
        try:
            value = loads(text)
        except ValueError as exc:
            problems.add(str(path), json_error(exc), number)
            continue
        if not isinstance(value, JsonObject):
            problems.add(str(path), f"expected a JSON object (one pair), got {json_type(value)}",
                         number)
            continue
        found.append((number, dict(value)))
    return found


def _csv_rows(path: Path, problems: Problems) -> list[tuple[int, Row]]:
    """The CSV's rows, each at the physical line it starts on (a quoted cell may hold newlines),
    ranks and order as integers when they are ("" rank: None)."""
    text = _text(path, problems)
    if text is None:
        return []
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    found: list[tuple[int, Row]] = []
    try:
        header = reader.fieldnames or ()
        missing = [name for name in COLUMNS if name not in header]
        if missing:
            problems.add(str(path), f"the header lacks {', '.join(missing)}; the header is "
                         f"{','.join(COLUMNS)}", 1)
            return []
        start = reader.line_num + 1
        for row in reader:
            if None in row or None in row.values():
                extra = row.get(None) or ()  # past the header's cells; None: short of them
                cells = sum(v is not None for k, v in row.items() if k is not None) + len(extra)
                problems.add(str(path), f"has {cells} cells, the header {len(header)}", start)
            else:
                ranks = {name: None if row[name] == "" else _integer(row[name])
                         for name in RANKS}
                found.append((start, {**row, **ranks, "order": _integer(row["order"])}))
            start = reader.line_num + 1
    except csv.Error as error:
        problems.add(str(path), f"not CSV ({error}); write it again with `harness judge pairs`",
                     reader.line_num)
    return found


def _text(path: Path, problems: Problems) -> str | None:
    """The whole file as text (a leading BOM dropped); None, with the problem, when not UTF-8."""
    data = read_input(path, PAIRS)
    wide = encoding_problem(data[:SAMPLE], path)
    if wide is not None:
        problems.add(str(path), wide, 1)
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        problems.add(str(path), not_utf8(exc, "the file"), data.count(b"\n", 0, exc.start) + 1)
        return None


def _integer(cell: str) -> int | str:
    """A CSV cell as an int when it is one, else as written (then reported as not a number)."""
    try:
        return int(cell.strip())
    except ValueError:
        return cell


def _check_columns(row: Row, path: str, number: int, problems: Problems) -> None:
    """Each column present and of its type (query_id and doc_id are checked by the caller)."""
    absent = [name for name in COLUMNS if name not in row and name not in ("query_id", "doc_id")]
    if absent:  # one line for them all (query_id and doc_id have theirs)
        problems.add(path, f"missing {', '.join(absent)}; each pair has {', '.join(COLUMNS)}",
                     number, absent[0])
    for name in TEXTS:
        if name in row and not isinstance(row[name], str):
            problems.add(path, f"must be a string, not {clip(json.dumps(row[name]), 40)}",
                         number, name)
    for name in RANKS:
        value = row.get(name)
        if name in row and value is not None and not (type(value) is int and value >= 1):
            problems.add(path, "must be a rank of 1 or more, or null (not returned), not "
                         f"{clip(json.dumps(value), 40)}", number, name)
    if "order" in row and type(row["order"]) is not int:
        problems.add(path, f"must be a whole number, not {clip(json.dumps(row['order']), 40)}",
                     number, "order")

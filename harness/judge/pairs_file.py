"""`harness judge pairs`' files: what it reads (a saved comparison, its run records, the gold set
it was made against, a corpus) and the pairs file it writes, JSONL or CSV, with the columns

    order, query_id, query, doc_id, title, text, baseline_rank, candidate_rank, why, comparison

`read_pairs` reads a pairs JSONL back (what `harness judge label` pipes to its command, and the
judging page shows), each bad line named.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.errors import GoldError, HarnessError, ResultsError
from harness.gold.documents import Corpus
from harness.gold.reading import JsonObject, Problems, json_error, json_type, loads, numbered_lines
from harness.judge.pairs import Pair
from harness.types import GoldSet, RefRun
from harness.verdict.comparison import Comparison

COLUMNS = ("order", "query_id", "query", "doc_id", "title", "text", "baseline_rank",
           "candidate_rank", "why", "comparison")
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


def read_pairs(path: Path) -> list[Row]:
    """The rows of a pairs JSONL (each needs non-blank "query_id" and "doc_id"; a pair twice is
    an error), in order; GoldError naming each bad line."""
    if not path.is_file():
        raise GoldError(f"{path}: pairs file not found; write one with `harness judge pairs DIR "
                        "--out FILE.jsonl`")
    problems = Problems()
    rows: list[Row] = []
    seen: dict[tuple[str, str], int] = {}
    for number, text in numbered_lines(path, problems) or ():
        try:
            value = loads(text)
        except ValueError as exc:
            problems.add(str(path), json_error(exc), number)
            continue
        if not isinstance(value, JsonObject):
            problems.add(str(path), f"expected a JSON object (one pair), got {json_type(value)}",
                         number)
            continue
        ids = [value.get(key) for key in ("query_id", "doc_id")]
        bad = [key for key, v in zip(("query_id", "doc_id"), ids, strict=True)
               if not (isinstance(v, str) and v.strip())]
        for key in bad:
            problems.add(str(path), f"{key} is a non-blank string", number, key)
        if bad:
            continue
        pair = (str(ids[0]), str(ids[1]))
        if pair in seen:
            problems.add(str(path), f"pair {pair} is listed twice (line {seen[pair]} too); keep "
                         "one", number)
            continue
        seen[pair] = number
        rows.append(dict(value))
    problems.raise_if_any(f"{path}: the pairs file is invalid",
                          hint="write it again with `harness judge pairs`")
    if not rows:
        raise GoldError(f"{path}: no pairs in the file; nothing to label")
    return rows

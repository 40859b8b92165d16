"""Read a run file: a TREC run or the harness's native JSONL, detected by the first non-blank line.

TREC (`qid Q0 docid rank score tag`, whitespace separated, six columns): each query's documents
are ordered by score descending, ties broken by docid descending (bytewise, which for UTF-8 is
code point order), exactly as trec_eval sorts them, so both score the same order.  The rank
column is ignored, as trec_eval ignores it; so are Q0 and tag.

Native JSONL, one object a line: `{"id": qid, "ranking": [docid, ...]}`, optionally with
`"scores": [number, ...]` aligned with the ranking (on every line or on none).  The list order is
the ranking; duplicate docids are kept here (metrics drop later duplicates).  Ids may be strings
or integers (integers are read as their decimal string).

Every malformed line is collected first and reported once, as a ResultsError whose details read
`path:line: field: message`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from harness.errors import HarnessError, Problem, ResultsError
from harness.process.inputs import GOLD, RUN, Kind, open_input, read_input
from harness.score.arrowrun import read_trec_arrow
from harness.score.columns import read_trec_columns
from harness.score.evaluation import Evaluation, evaluate_judged
from harness.score.metrics import MetricSpec
from harness.score.trec import Joined, Qrels, join, qrels_hash, read_qrels
from harness.score.trec import read_run as read_trec_table
from harness.values.types import GoldSet

TREC_LINE = "qid Q0 docid rank score tag"
JSONL_LINE = '{"id": qid, "ranking": [docid, ...], "scores": [number, ...]}'
_JSONL_KEYS = frozenset({"id", "ranking", "scores"})
_FIRST = re.compile(rb"[^ \t\n\r\x0b\x0c]")  # the first byte that is not ASCII whitespace
_SHOWN = 50  # problems listed in full; a file in the wrong format would yield one per line


@dataclass(frozen=True)
class Run:
    """Ranked doc ids per query id; `scores` aligned with them, or None when the file has none."""

    rankings: Mapping[str, tuple[str, ...]]  # from a TREC file, maybe an `ArrowRanked`
    scores: Mapping[str, tuple[float, ...]] | None
    source: str
    format: str  # "trec" | "jsonl"
    sha256: str = ""  # of the file's bytes (load_run); "" for text parsed in memory

    def __len__(self) -> int:
        return len(self.rankings)


def trec_order(scored: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    """(docid, score) pairs in trec_eval's order: score descending, then docid descending."""
    return sorted(scored, key=lambda pair: (pair[1], pair[0]), reverse=True)


def load_run(path: str | Path) -> Run:
    """Read a TREC or JSONL run file; raises ResultsError listing every malformed line."""
    source = str(path)
    try:
        data = read_input(path, RUN)  # a regular file of at most 32 GiB (harness.process.inputs)
        if not data.isascii():
            data.decode("utf-8")  # only to fail here, naming the byte, before any parsing
    except FileNotFoundError:
        raise ResultsError(f"run file {source} does not exist", ["check the --run path"]) from None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ResultsError(
            f"run file {source} is not UTF-8 text",
            [f"  line {line}, byte {exc.start}: {exc.reason}", "write the run file as UTF-8"],
        ) from None
    except OSError as exc:
        raise ResultsError(f"cannot read run file {source}: {exc.strerror}") from None
    digest = hashlib.sha256(data).hexdigest()
    first = _FIRST.search(data)
    if first is not None and first.group() != b"{":  # TREC: column-wise when all is well formed
        found = read_trec_arrow(data) or read_trec_columns(data)
        if found is not None:
            return Run(found[0], found[1], source, "trec", digest)
    # JSONL, or a TREC file with a problem: line by line, naming every problem.
    return replace(parse_run(data.decode("utf-8"), source), sha256=digest)


@dataclass(frozen=True)
class TrecTables:
    """TREC qrels and a TREC run read as tables (`harness.score.trec`) and joined: what
    `harness metrics` scores without a Python object per line."""

    qrels: Qrels
    joined: Joined
    source: str  # the qrels path, as the gold set names its source

    @cached_property
    def hash(self) -> str:
        """The gold set's content hash (`harness.gold.canonical_hash`), computed when first
        asked for and once per qrels content (`harness.gold.memo.derived`: a re-run of
        `harness metrics` on the same qrels reads it back)."""
        from harness.gold.memo import derived

        digest = hashlib.sha256(self.qrels.buffer.data).hexdigest()
        return derived("qrels_hash", digest, lambda: qrels_hash(self.qrels))

    def __len__(self) -> int:
        return len(self.qrels.names)


def load_trec_tables(
    qrels: str | Path, run: str | Path, max_k: int, rel_level: int = 1
) -> TrecTables | None:
    """TREC qrels and a TREC run read and joined column-wise, or None when either needs its
    exact reader (`load_gold`, `load_run`): a malformed, irregular or unreadable file, which
    that reader then names line by line, or a run with none of the qrels' queries."""
    gold_bytes, run_bytes = _padded(qrels, GOLD), _padded(run, RUN)
    if gold_bytes is None or run_bytes is None or b"{" in (_first(gold_bytes), _first(run_bytes)):
        return None  # a native gold set or a JSONL run (a line of either may split in 4 or 6)
    judgements = read_qrels(gold_bytes)
    if judgements is None:
        return None
    table = read_trec_table(run_bytes)
    if table is None:
        return None
    joined = join(judgements, table, max_k, rel_level)
    if joined is None or not joined.present.any():
        return None
    return TrecTables(judgements, joined, str(qrels))


def evaluate_trec_files(
    qrels: str | Path, run: str | Path, specs: Sequence[MetricSpec], rel_level: int = 1
) -> tuple[Evaluation, TrecTables] | None:
    """`harness metrics` of TREC qrels (without a topics file) and a TREC run, read
    column-wise: the Evaluation `evaluate(..., judged_as_zero=True)` gives on what the exact
    readers read, and the gold set's facts; None when a file needs its exact reader."""
    tables = load_trec_tables(qrels, run, max(spec.depth for spec in specs), rel_level)
    if tables is None:
        return None
    joined = tables.joined
    found = evaluate_judged(
        tables.qrels.names, joined.judged, joined.present, joined.extra, specs, rel_level
    )
    return found, tables


def _first(buffer: npt.NDArray[np.uint8]) -> bytes:
    """The first byte that is not ASCII whitespace (b"" for none): what tells a JSONL file."""
    start = bytes(buffer[:4096])
    found = _FIRST.search(start) or _FIRST.search(bytes(buffer[:-8]))
    return b"" if found is None else found.group()


def _padded(path: str | Path, kind: Kind) -> npt.NDArray[np.uint8] | None:
    """A file's bytes and 8 zero bytes after them, read into one array; None when it cannot
    be read (the exact reader says why: a FIFO, /dev/zero, a file past `kind`'s cap too)."""
    try:
        with open_input(path, kind) as handle:
            size = os.fstat(handle.fileno()).st_size
            buffer = np.zeros(size + 8, dtype=np.uint8)
            if handle.readinto(memoryview(buffer)[:size]) != size:  # type: ignore[arg-type]
                return None
    except (OSError, HarnessError):
        return None
    return buffer


def start_loading_run(path: str | Path) -> Callable[[], Run]:
    """Start `load_run(path)` in a background thread; the function returned waits for its Run
    (or raises its error). pyarrow's parser and numpy release the GIL, so the run is read while
    the caller reads the gold set in Python. A daemon thread: an interrupted caller does not
    wait for it."""
    found: list[Run] = []
    failed: list[BaseException] = []

    def work() -> None:
        try:
            found.append(load_run(path))
        except BaseException as exc:  # handed to the caller, in its thread
            failed.append(exc)

    thread = threading.Thread(target=work, name="harness-load-run", daemon=True)
    thread.start()

    def result() -> Run:
        thread.join()
        if failed:
            raise failed[0]
        return found[0]

    return result


def require_gold_queries(run: Run, gold: GoldSet, gold_path: str | Path) -> None:
    """ResultsError when the run names none of the gold set's queries: the wrong file, or ids
    written differently (a run lacking only some of them scores those 0, as trec_eval -c)."""
    if not set(run.rankings) & set(gold.by_id):
        raise ResultsError(
            f"{run.source}: names none of the {len(gold)} queries of {gold_path}",
            ["check that the run and the gold set use the same query ids"],
        )


def require_known_queries(run: Run, gold: GoldSet, gold_path: str | Path) -> None:
    """ResultsError naming `path:line` of the first line of each query of `run` that the gold
    set does not have (a run of another collection or split, or ids written another way): the
    comparison would silently drop them, as trec_eval does, and score what is left."""
    unknown = set(run.rankings) - gold.by_id.keys()
    if not unknown:
        return
    found: dict[str, int] = {}
    text = read_input(run.source, RUN).decode("utf-8") if run.source != "<run>" else ""
    for number, line in enumerate(text.splitlines(), start=1):
        qid = _query_of(line, run.format)
        if qid in unknown and qid not in found:
            found[qid] = number
    problems = [
        Problem(run.source, f"query {qid} is not in the gold set", number, "id")
        for qid, number in sorted(found.items(), key=lambda item: item[1])
    ]
    details = [f"  {p}" for p in problems[:_SHOWN]]
    if len(problems) > _SHOWN:
        details.append(f"  ... and {len(problems) - _SHOWN} more queries")
    details.append(
        f"compare runs of the gold set's queries: drop those lines, or give the gold set they "
        f"come from (--gold; {gold_path} has {len(gold)} queries, e.g. {gold.queries[0].id})"
    )
    noun = "query is" if len(unknown) == 1 else "queries are"
    raise ResultsError(f"{run.source}: {len(unknown)} {noun} not in {gold_path}", details)


def _query_of(line: str, fmt: str) -> str | None:
    """The query id of one run-file line (None for a blank or unreadable line)."""
    if fmt == "trec":
        cols = line.split(maxsplit=1)
        return cols[0] if cols else None
    try:
        obj = json.loads(line)
    except json.JSONDecodeError:
        return None
    return _as_id(obj.get("id")) if isinstance(obj, dict) else None


def parse_run(text: str, source: str = "<run>") -> Run:
    """Parse run-file text (the format is the first non-blank line's: `{` means JSONL)."""
    first = next((line.lstrip() for line in text.splitlines() if line.strip()), None)
    if first is None:
        raise ResultsError(
            f"run file {source} has no results",
            [f"write one line per result ({TREC_LINE}) or per query ({JSONL_LINE})"],
        )
    return _parse_jsonl(text, source) if first.startswith("{") else _parse_trec(text, source)


def _fail(source: str, kind: str, problems: list[Problem], expected: str) -> ResultsError:
    lines = len({p.line for p in problems})
    noun = "line is" if lines == 1 else "lines are"
    details = [f"  {p}" for p in problems[:_SHOWN]]
    if len(problems) > _SHOWN:
        details.append(f"  ... and {len(problems) - _SHOWN} more problems")
    details.append(f"a {kind} run line is: {expected}")
    return ResultsError(f"{lines} {noun} malformed in {kind} run file {source}", details)


def _parse_trec(text: str, source: str) -> Run:
    problems: list[Problem] = []
    by_query: dict[str, dict[str, float]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        cols = line.split()
        if not cols:
            continue
        if len(cols) != 6:
            problems.append(
                Problem(source, f"expected 6 columns, found {len(cols)}", number, "columns")
            )
            continue
        qid, _, doc, _, raw, _ = cols
        try:
            score = float(raw)
        except ValueError:
            score = math.nan
        if not math.isfinite(score):
            problems.append(Problem(source, f"{raw!r} is not a finite number", number, "score"))
            continue
        docs = by_query.setdefault(qid, {})
        if doc in docs:
            # trec_eval refuses these too: the order of the two copies would be arbitrary.
            problems.append(
                Problem(source, f"{doc} is listed twice for query {qid}", number, "docid")
            )
            continue
        docs[doc] = score
    if problems:
        raise _fail(source, "TREC", problems, TREC_LINE)
    rankings: dict[str, tuple[str, ...]] = {}
    scores: dict[str, tuple[float, ...]] = {}
    for qid, docs in by_query.items():
        ordered = trec_order(docs.items())
        rankings[qid] = tuple(doc for doc, _ in ordered)
        scores[qid] = tuple(score for _, score in ordered)
    return Run(MappingProxyType(rankings), MappingProxyType(scores), source, "trec")


def _as_id(value: object) -> str | None:
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _is_score(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _parse_jsonl(text: str, source: str) -> Run:
    problems: list[Problem] = []
    rankings: dict[str, tuple[str, ...]] = {}
    scores: dict[str, tuple[float, ...]] = {}
    first_line: dict[str, int] = {}
    with_scores: list[int] = []
    without_scores: list[int] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue

        def problem(message: str, field: str, at: int = number) -> None:
            problems.append(Problem(source, message, at, field))

        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problem(f"not JSON ({exc.msg}; column {exc.colno})", "json")
            continue
        if not isinstance(obj, dict):
            problem(f"expected a JSON object, found {type(obj).__name__}", "json")
            continue
        for key in sorted(set(obj) - _JSONL_KEYS):
            problem("unknown key (known: id, ranking, scores)", key)
        qid = _as_id(obj.get("id"))
        if qid is None:
            problem("missing, or not a non-empty string or integer", "id")
        elif qid in first_line:
            problem(f"query {qid} already given on line {first_line[qid]}", "id")
            qid = None
        else:
            first_line[qid] = number
        raw_ranking = obj.get("ranking")
        ranking: list[str] = []
        if not isinstance(raw_ranking, list):
            problem("missing, or not a list of doc ids", "ranking")
            raw_ranking = []
        for i, value in enumerate(raw_ranking):
            doc = _as_id(value)
            if doc is None:
                problem(f"{value!r} is not a non-empty string or integer", f"ranking[{i}]")
            else:
                ranking.append(doc)
        raw_scores = obj.get("scores")
        if raw_scores is None:
            without_scores.append(number)
        else:
            with_scores.append(number)
            if not isinstance(raw_scores, list) or not all(map(_is_score, raw_scores)):
                problem("not a list of finite numbers", "scores")
            elif len(raw_scores) != len(raw_ranking):
                problem(f"{len(raw_scores)} scores for {len(raw_ranking)} ids", "scores")
            elif qid is not None:
                scores[qid] = tuple(float(s) for s in raw_scores)
        if qid is not None:
            rankings[qid] = tuple(ranking)
    if with_scores and without_scores:
        problems.append(
            Problem(
                source,
                f"no scores here but line {with_scores[0]} has them: give them on every line "
                "or on none",
                without_scores[0],
                "scores",
            )
        )
    if problems:
        raise _fail(source, "JSONL", sorted(problems, key=lambda p: p.line or 0), JSONL_LINE)
    return Run(
        MappingProxyType(rankings),
        MappingProxyType(scores) if with_scores else None,
        source,
        "jsonl",
    )

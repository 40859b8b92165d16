"""A run record in the field's formats: a TREC run file, or a per-query table (CSV, Parquet).

TREC (`qid Q0 docid rank score tag`, what trec_eval, ir_measures, ranx and PyTerrier read): one
repeat of the record (`repeat`, default the first), one line per unique returned id (later
duplicates dropped, as harness's metrics drop them; trec_eval refuses a docid twice), queries in
the record's order.  The score is the service's own when it returned finite scores for every id
of that query; otherwise (no `query.scores`, or a NaN or infinite one) the scores are filled as
`len - position` (n, n-1, ..., 1), which keeps the service's order.  Lines are written in
trec_eval's order, score descending and ties by docid descending, and `rank` counts in that
order: so a service that returns tied scores in another order is scored by trec_eval in this one
(`harness.score.runfile` reads it back the same way).  A failed query (timeout, HTTP error) has
no lines: trec_eval, with `-c`, scores it 0.  The tag is `harness-<ref>-<sha8>`, whitespace
replaced.

Per-query table: one row per (repeat, query): ref, sha, repeat, query_id, status, error,
latency_ms, returned (unique ids), ids (a JSON array, as returned); with a gold set also slice,
answerable and one column per metric (the query's score in that repeat, as `harness metrics`
computes it; empty for an unanswerable or failed query).  CSV and Parquet go through pandas;
Parquet needs pyarrow (`pip install 'retrieval-harness[arrow]'`).
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.errors import HarnessError, NotComparableError, ResultsError
from harness.process.extras import require
from harness.score.judged import dedupe
from harness.score.metrics import MetricSpec
from harness.score.runfile import trec_order
from harness.values.types import GoldSet, QueryResult, RefRun

if TYPE_CHECKING:
    import pandas as pd

FORMATS = ("trec", "csv", "parquet")
_SPACE = re.compile(r"\s+")


def _repeat(run: RefRun, repeat: int | None) -> int:
    if not run.repeats:
        raise ResultsError(f"{run.record_path or 'the run record'}: holds no repeat to export")
    if repeat is None:
        return 0
    indexes = [r.index for r in run.repeats]
    if repeat not in indexes:
        raise ResultsError(
            f"--repeat {repeat}: the record holds repeats {', '.join(map(str, indexes))}",
            ["pass one of them"],
        )
    return indexes.index(repeat)


def trec_lines(result: QueryResult, tag: str) -> list[str]:
    """One query's answer as TREC run lines (see the module docstring for the score rule)."""
    if not result.ok:
        return []
    first: dict[str, float | None] = {}
    scores = result.scores
    usable = scores is not None and all(math.isfinite(s) for s in scores)
    for i, doc in enumerate(result.ids):
        if doc not in first:
            first[doc] = scores[i] if usable and scores is not None else None
    docs = list(first)
    scored = [
        (doc, float(len(docs) - i) if s is None else s) for i, (doc, s) in enumerate(first.items())
    ]
    return [
        f"{result.query_id} Q0 {doc} {rank} {score!r} {tag}"
        for rank, (doc, score) in enumerate(trec_order(scored), start=1)
    ]


def to_trec(run: RefRun, repeat: int | None = None) -> str:
    """The record's `repeat` (default: its first) as a TREC run file's text."""
    chosen = run.repeats[_repeat(run, repeat)]
    tag = _SPACE.sub("_", f"harness-{run.ref}-{run.sha[:8]}")
    for result in chosen.results:
        if _SPACE.search(result.query_id) or any(_SPACE.search(d) for d in result.ids):
            raise ResultsError(
                f"query {result.query_id!r}: a query or document id holds whitespace, which a "
                "TREC run file cannot",
                ["export --format csv or parquet instead"],
            )
    lines = [line for result in chosen.results for line in trec_lines(result, tag)]
    return "".join(f"{line}\n" for line in lines)


def per_query_frame(
    run: RefRun, gold: GoldSet | None = None, specs: Sequence[MetricSpec] = ()
) -> pd.DataFrame:
    """One row per (repeat, query), with metric columns when `gold` is given (see above)."""
    import pandas as pd

    from harness.score.evaluation import evaluate

    if gold is not None and gold.hash != run.gold_hash:
        raise NotComparableError(
            f"the run was measured on gold set {run.gold_hash[:12]}, not {gold.hash[:12]} "
            f"({gold.source})",
            ["pass the gold set the run was measured on (--gold)"],
        )
    rows: list[dict[str, object]] = []
    for rep in run.repeats:
        scored: dict[str, dict[str, float]] = {}
        if gold is not None and specs:
            answered = {r.query_id: r.ids for r in rep.results if r.ok}
            ev = evaluate(gold, answered, specs)
            scored = {qid: dict(ev.per_query[qid]) for qid in ev.query_ids if qid in answered}
        for r in rep.results:
            row: dict[str, object] = {
                "ref": run.ref,
                "sha": run.sha,
                "repeat": rep.index,
                "query_id": r.query_id,
                "status": r.status,
                "error": None if r.error is None else r.error.value,
                "latency_ms": r.latency_ns / 1e6,
                "returned": len(dedupe(r.ids)),
                "ids": json.dumps(list(r.ids), ensure_ascii=False),
            }
            if gold is not None:
                query = gold.by_id.get(r.query_id)
                row["slice"] = None if query is None else query.slice
                row["answerable"] = None if query is None else query.answerable
                values = scored.get(r.query_id, {})
                for spec in specs:
                    row[str(spec)] = values.get(str(spec), math.nan)
            rows.append(row)
    frame = pd.DataFrame(rows)
    for column in ("status",):
        if column in frame:
            frame[column] = frame[column].astype("Int64")
    return frame


def to_table(frame: pd.DataFrame, fmt: str) -> bytes:
    """The frame as CSV (UTF-8) or Parquet bytes; Parquet without pyarrow is a clear error."""
    if fmt == "csv":
        return bytes(frame.to_csv(index=False, lineterminator="\n").encode("utf-8"))
    if fmt != "parquet":
        raise HarnessError(f"--format {fmt}: not a table format; use csv or parquet")
    require("pyarrow", "--format parquet")  # or --format csv, which needs nothing more
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False, engine="pyarrow")
    return buffer.getvalue()

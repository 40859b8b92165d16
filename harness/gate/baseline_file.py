"""The committed baseline file: its byte-stable text, reading it back strictly, and rewriting it.

    baseline_to_text(baseline) -> str       the same Baseline always gives the same bytes
    read_baseline(path) -> Baseline         ResultsError names the field that is wrong
    read_baseline_or_none(path)             None when there is no file yet (--update-baseline)
    write_baseline(path, baseline) -> bool  atomic; False when the bytes are unchanged

JSON with sorted keys, every number rounded to 6 decimals, and no clock, host or path in it; one
line per top-level entry and one per scope and metric, so that a change of one number is a
one-line diff naming its scope and metric.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.errors import ResultsError, require_schema
from harness.gate.measure import Baseline, ScopeValues, rounded
from harness.process.inputs import BASELINE, read_input
from harness.score.definition import definition_from_dict
from harness.score.metrics import parse_metric
from harness.values.types import OVERALL

SCHEMA = "harness-baseline"
SCHEMA_VERSION = 1


def _row_key(scope: str, metric: str) -> str:
    return f"{scope} {metric}" if scope == OVERALL else f"slice {scope} {metric}"


def baseline_to_dict(b: Baseline) -> dict[str, Any]:
    """The document: one entry per scope and metric under "rows", every number rounded."""
    table: dict[str, dict[str, Any]] = {}
    for name in b.scopes:
        scope = b.scope(name)
        if scope is None:
            continue
        for m in b.metrics:
            table[_row_key(name, m)] = {
                "n": scope.n,
                "value": rounded(scope.values[m]),
                "noise": rounded(scope.noise[m]),
            }
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "gold": {"sha256": b.gold_hash, "queries": b.gold_queries},
        "metrics": list(b.metrics),
        "measured": {"sha": b.sha, "repeats": b.repeats},
        "rows": table,
        **({"definition": b.definition.to_dict()} if b.definition is not None else {}),
        **({"per_query": _per_query_table(b)} if b.per_query else {}),
    }


def _per_query_table(b: Baseline) -> dict[str, float]:
    """ "METRIC QUERY-ID" -> value: one line each in the file, so a query that moved is a
    one-line diff naming it (a metric name has no space; an id may)."""
    return {
        f"{metric} {qid}": rounded(value)
        for metric, values in b.per_query.items()
        for qid, value in values.items()
    }


def _per_query_from(table: object, metrics: Sequence[str]) -> dict[str, dict[str, float]]:
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise ValueError("per_query: expected an object")
    out: dict[str, dict[str, float]] = {}
    for key, value in table.items():
        metric, _, qid = str(key).partition(" ")
        if metric not in metrics or not qid:
            raise ValueError(f'per_query.{key}: expected "METRIC QUERY-ID" of a gated metric')
        out.setdefault(metric, {})[qid] = _number(value, f"per_query.{key}")
    if out and set(out) != set(metrics):
        missing = sorted(set(metrics) - set(out))
        raise ValueError(f"per_query: no values of {', '.join(missing)}")
    return out


def _line(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)


def baseline_to_text(b: Baseline) -> str:
    """The file's text: sorted keys at every level, one line per top-level entry and one line
    per row, so that the same Baseline always gives the same bytes and a change of one number
    is a one-line diff naming its scope and metric:

        -    "slice rare mrr@10": {"n": 12, "noise": 0.0, "value": 1.0},
        +    "slice rare mrr@10": {"n": 12, "noise": 0.0, "value": 0.0},
    """
    document = baseline_to_dict(b)
    entries = []
    for key in sorted(document):
        if key in ("rows", "per_query"):
            rows = [f"    {_line(k)}: {_line(v)}" for k, v in sorted(document[key].items())]
            entries.append(f"  {_line(key)}: {{\n" + ",\n".join(rows) + "\n  }")
        else:
            entries.append(f"  {_line(key)}: {_line(document[key])}")
    return "{\n" + ",\n".join(entries) + "\n}\n"


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where}: expected a number, got {value!r}")
    return float(value)


def _scopes_from(table: object, metrics: Sequence[str]) -> dict[str, ScopeValues]:
    if not isinstance(table, dict):
        raise ValueError("rows: expected an object")
    grouped: dict[str, dict[str, tuple[int, float, float]]] = {}
    for key, row in table.items():
        where = f"rows.{key}"
        scope, _, metric = str(key).rpartition(" ")
        if scope != OVERALL and not scope.startswith("slice "):
            raise ValueError(f'{where}: expected "overall METRIC" or "slice NAME METRIC"')
        if not isinstance(row, dict):
            raise ValueError(f"{where}: expected an object")
        n = row.get("n")
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"{where}.n: expected a count, got {n!r}")
        name = scope if scope == OVERALL else scope.removeprefix("slice ")
        grouped.setdefault(name, {})[metric] = (
            n,
            _number(row.get("value"), f"{where}.value"),
            _number(row.get("noise"), f"{where}.noise"),
        )
    if OVERALL not in grouped:
        raise ValueError('rows: no "overall" rows')
    out = {}
    for name, by_metric in grouped.items():
        missing = [m for m in metrics if m not in by_metric]
        if missing:
            raise ValueError(f"rows: no row {_row_key(name, missing[0])!r}")
        counts = {n for n, _, _ in by_metric.values()}
        if len(counts) != 1:
            raise ValueError(f"rows: the rows of {name!r} disagree on n ({sorted(counts)})")
        out[name] = ScopeValues(
            counts.pop(),
            {m: by_metric[m][1] for m in metrics},
            {m: by_metric[m][2] for m in metrics},
        )
    return out


def baseline_from_dict(doc: Mapping[str, Any], source: str) -> Baseline:
    """Read a baseline document back; ResultsError names the field that is wrong."""
    require_schema(
        doc,
        source,
        schema=SCHEMA,
        version=SCHEMA_VERSION,
        what="baseline",
        wrong_hint=[
            "write one with: harness gate --ref main --baseline-file FILE --update-baseline"
        ],
        version_hint=["measure it again with --update-baseline"],
    )
    try:
        gold, measured, metrics = doc["gold"], doc["measured"], doc["metrics"]
        if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
            raise ValueError("metrics: expected a list of metric names")
        for m in metrics:
            parse_metric(m)
        scopes = _scopes_from(doc.get("rows"), metrics)
        return Baseline(
            gold_hash=str(gold["sha256"]),
            gold_queries=int(gold["queries"]),
            metrics=tuple(metrics),
            sha=str(measured["sha"]),
            repeats=int(measured["repeats"]),
            overall=scopes.pop(OVERALL),
            slices=scopes,
            definition=definition_from_dict(doc.get("definition")),
            per_query=_per_query_from(doc.get("per_query"), metrics),
        )
    except (KeyError, TypeError, ValueError) as exc:
        what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
        raise ResultsError(
            f"{source}: malformed baseline: {what}",
            ["measure it again with --update-baseline (and commit the file as written)"],
        ) from None


def read_baseline(path: Path) -> Baseline:
    try:
        text = read_input(path, BASELINE, "--baseline-file").decode("utf-8")
    except FileNotFoundError:
        raise ResultsError(
            f"{path}: no baseline file",
            [
                f"record one on the base branch: harness gate --ref main --baseline-file {path} "
                "--update-baseline, and commit it"
            ],
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{path}: cannot read the baseline file ({exc})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
    except RecursionError:
        raise ResultsError(f"{path}: not a baseline file (JSON nested too deeply)") from None
    if not isinstance(doc, dict):
        raise ResultsError(f"{path}: expected a JSON object at the top level")
    return baseline_from_dict(doc, str(path))


def read_baseline_or_none(path: Path) -> Baseline | None:
    """None when nothing exists at `path` (a baseline about to be written for the first time);
    otherwise `read_baseline`, which raises on anything wrong with the file."""
    if not path.exists():
        return None
    return read_baseline(path)


def write_baseline(path: Path, baseline: Baseline) -> bool:
    """Replace `path` atomically with the baseline's text; False when the bytes are unchanged.

    Unlike results, this file is meant to be rewritten: its diff is the point.
    """
    data = baseline_to_text(baseline).encode("utf-8")
    try:
        if read_input(path, BASELINE, "--baseline-file") == data:
            return False
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return True

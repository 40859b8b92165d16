"""`harness gate`: fail CI when a ref falls below a committed baseline by more than the noise.

    measured = measure(gold, run, ("mrr@10", "recall@10"), max_errors=0)   # pure
    result = check(read_baseline(path), measured, strict=False)           # pure
    render_gate(result, "text" | "markdown" | "json")
    write_baseline(path, measured.baseline)        # --update-baseline: byte-stable rewrite

What is measured (`measure`): the gold queries answered without error in every usable repeat
(a repeat whose only failure is an unconfirmed teardown is usable; any other failed repeat, a
build failure, or more errored answers than `max_errors` make the run invalid, as in compare).
Each repeat is scored with `harness.evaluation.evaluate` on those queries; a scope's value for a
metric is the mean over repeats of that repeat's mean over the scope's answerable queries, and
its noise is the range of those repeat means (max - min: 0 with one repeat, or with a service
that answers identically every time). Scopes are "overall" and every slice with at least one
answerable query.

The baseline file is JSON with sorted keys, every number rounded to 6 decimals, and no clock,
host or path in it, so the same measurement always gives the same bytes. It holds the gold
set's sha256, the gated metrics, the commit it was measured on and its repeats, and one line per
scope and metric ("overall mrr@10", "slice rare mrr@10": n, value, noise), so that its diff in a
pull request is the before/after table, one line per number that moved.

The rule (`check`), for every scope of the baseline and every gated metric, with before and
after rounded to 6 decimals and tolerance = max(noise recorded, noise now), or 0 with
`strict`:

- the slice has no analysed answerable query now  -> "vanished", fails;
- before > 0 and after == 0                       -> "fell to zero", fails whatever the noise;
- before - after > tolerance                      -> "dropped", fails;
- after - before > tolerance                      -> "improved", passes (update the baseline);
- otherwise                                       -> "ok" (inside the noise), passes.

A gold set whose sha256 differs from the baseline's, or a gated metric the baseline does not
hold, is NOT_COMPARABLE: never a pass. An invalid run is INVALID: never a pass either.
"""

from __future__ import annotations

import enum
import json
import os
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tabulate import tabulate

from harness.errors import ResultsError
from harness.evaluation import evaluate
from harness.metrics import parse_metric
from harness.types import GoldSet, QueryResult, RefRun

SCHEMA = "harness-baseline"
SCHEMA_VERSION = 1
DIGITS = 6
DEFAULT_METRICS = ("mrr@10", "recall@10")
OVERALL = "overall"
_WARNING_STAGES = frozenset({"teardown"})  # as in compare: every answer was collected


def _round(x: float) -> float:
    # + 0.0 turns -0.0 into 0.0, so that the same number always prints the same.
    return round(float(x), DIGITS) + 0.0


# --------------------------------------------------------------------------- values


@dataclass(frozen=True)
class ScopeValues:
    """One scope: n answerable queries analysed, and per metric its value and noise."""

    n: int
    values: Mapping[str, float]
    noise: Mapping[str, float]


@dataclass(frozen=True)
class Baseline:
    """What a baseline file holds (and what a fresh measurement produces)."""

    gold_hash: str
    gold_queries: int
    metrics: tuple[str, ...]
    sha: str
    repeats: int
    overall: ScopeValues
    slices: Mapping[str, ScopeValues]

    def scope(self, name: str) -> ScopeValues | None:
        return self.overall if name == OVERALL else self.slices.get(name)

    @property
    def scopes(self) -> tuple[str, ...]:
        return (OVERALL, *sorted(self.slices))


@dataclass(frozen=True)
class Measured:
    """A run measured for the gate: a Baseline when the run is valid, else the reasons."""

    baseline: Baseline | None
    invalid: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    ref: str = ""


# --------------------------------------------------------------------------- measuring (pure)


def _usable(run: RefRun) -> list[dict[str, QueryResult]]:
    if run.build_failure is not None:
        return []
    return [
        {r.query_id: r for r in rep.results}
        for rep in run.repeats
        if rep.failure is None or rep.failure.stage in _WARNING_STAGES
    ]


def _validity(gold: GoldSet, run: RefRun, max_errors: int) -> tuple[list[str], list[str]]:
    label = f"{run.ref} ({run.sha[:8]})"
    invalid, warnings = [], []
    if run.build_failure is not None:
        invalid.append(f"{label}: build failed: {run.build_failure.message}")
    elif not run.repeats:
        invalid.append(f"{label}: no repeats were run; run it with --repeats 1 or more")
    for rep in run.repeats:
        if rep.failure is not None and rep.failure.stage not in _WARNING_STAGES:
            log = f"; see {rep.log_path}" if rep.log_path else ""
            invalid.append(
                f"{label}: repeat {rep.index + 1} failed at {rep.failure.stage}: "
                f"{rep.failure.message}{log}"
            )
    kinds: Counter[str] = Counter()
    for answers in _usable(run):
        for q in gold.queries:
            got = answers.get(q.id)
            kind = "missing" if got is None else got.error and got.error.value
            if kind:
                kinds[kind] += 1
    errored = sum(kinds.values())
    if errored:
        counts = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items()))
        what = f"{label}: {errored} errored answer{'s' * (errored != 1)} ({counts})"
        if errored > max_errors:
            invalid.append(
                f"{what} exceed max_errors = {max_errors}; see the service log, "
                "or raise compare.max_errors"
            )
        else:
            warnings.append(f"{what}, within max_errors; those queries are left out")
    if run.gold_hash != gold.hash:
        invalid.append(
            f"{label} was measured against gold {run.gold_hash[:12]}, not the gold set given "
            f"({gold.hash[:12]}); run it again"
        )
    return invalid, warnings


def _scope(
    per_repeat: Sequence[Mapping[str, float]], n: int, metrics: Sequence[str]
) -> ScopeValues:
    values = {m: _round(sum(r[m] for r in per_repeat) / len(per_repeat)) for m in metrics}
    noise = {
        m: _round(max(r[m] for r in per_repeat) - min(r[m] for r in per_repeat)) for m in metrics
    }
    return ScopeValues(n, values, noise)


def measure(gold: GoldSet, run: RefRun, metrics: Sequence[str], *, max_errors: int = 0) -> Measured:
    """Score `run` for the gate (see the module docstring); metrics are canonical names."""
    specs = tuple(parse_metric(m) for m in metrics)
    names = tuple(str(s) for s in specs)
    invalid, warnings = _validity(gold, run, max_errors)
    usable = _usable(run)
    if invalid or not usable:
        return Measured(None, tuple(invalid), tuple(warnings), run.ref)
    analysed = tuple(q for q in gold.queries if all(q.id in a and a[q.id].ok for a in usable))
    subset = replace(gold, queries=analysed)
    evaluations = [
        evaluate(subset, {qid: r.ids for qid, r in a.items() if r.ok}, specs) for a in usable
    ]
    if not evaluations[0].n:
        reason = f"{run.ref} ({run.sha[:8]}): no answerable query was answered: nothing to gate"
        return Measured(None, (reason,), tuple(warnings), run.ref)
    overall = _scope([ev.aggregate for ev in evaluations], evaluations[0].n, names)
    slices = {
        name: _scope([ev.slices[name].values for ev in evaluations], score.n, names)
        for name, score in evaluations[0].slices.items()
        if score.n
    }
    baseline = Baseline(
        gold_hash=gold.hash,
        gold_queries=len(gold),
        metrics=names,
        sha=run.sha,
        repeats=len(usable),
        overall=overall,
        slices=slices,
    )
    return Measured(baseline, (), tuple(warnings), run.ref)


# --------------------------------------------------------------------------- the rule (pure)


class Outcome(enum.StrEnum):
    """What the gate concluded; the CLI maps each to its exit status."""

    PASS = "pass"
    FAIL = "fail"
    NOT_COMPARABLE = "not comparable"
    INVALID = "invalid"
    UPDATED = "updated"  # --update-baseline: the rows are the before -> after table


@dataclass(frozen=True)
class GateRow:
    """One scope and metric: before, after, the tolerance applied, and what the rule says."""

    scope: str
    metric: str
    before: float | None
    after: float | None
    tolerance: float | None  # None where no comparison is made ("new", "vanished")
    status: str  # "ok" | "improved" | "dropped" | "fell to zero" | "vanished" | "new"

    @property
    def failed(self) -> bool:
        return self.status in ("dropped", "fell to zero", "vanished")

    @property
    def change(self) -> float | None:
        if self.before is None or self.after is None:
            return None
        return _round(self.after - self.before)


@dataclass(frozen=True)
class GateResult:
    outcome: Outcome
    reason: str
    rows: tuple[GateRow, ...]
    strict: bool
    details: tuple[str, ...] = ()  # invalid reasons, warnings, what differs
    baseline_sha: str | None = None
    ref: str = ""
    sha: str | None = None

    @property
    def failing(self) -> tuple[GateRow, ...]:
        return tuple(r for r in self.rows if r.failed)


def _row(
    scope: str, metric: str, before: ScopeValues, after: ScopeValues | None, strict: bool
) -> GateRow:
    b = _round(before.values[metric])
    if after is None or after.n == 0:
        return GateRow(scope, metric, b, None, None, "vanished")
    a = _round(after.values[metric])
    tolerance = 0.0 if strict else _round(max(before.noise[metric], after.noise[metric]))
    change = _round(a - b)
    if b > 0 and a == 0:
        status = "fell to zero"
    elif -change > tolerance:
        status = "dropped"
    elif change > tolerance:
        status = "improved"
    else:
        status = "ok"
    return GateRow(scope, metric, b, a, tolerance, status)


def rows(
    before: Baseline | None, after: Baseline, metrics: Sequence[str], strict: bool
) -> list[GateRow]:
    """Every gate row, the baseline's scopes first (overall, then slices by name), then scopes
    only `after` has ("new", never a failure); with no baseline at all, every row is new."""
    out = []
    if before is not None:
        out += [
            _row(scope, m, values, after.scope(scope), strict)
            for scope in before.scopes
            if (values := before.scope(scope)) is not None
            for m in metrics
        ]
    known = set(before.scopes) if before is not None else set()
    for scope in after.scopes:
        values = after.scope(scope)
        if scope not in known and values is not None:
            out += [GateRow(scope, m, None, _round(values.values[m]), None, "new") for m in metrics]
    return out


def check(
    recorded: Baseline,
    now: Measured,
    *,
    strict: bool = False,
    metrics: Sequence[str] | None = None,
) -> GateResult:
    """Apply the rule of the module docstring; `metrics` default to the baseline's."""
    gated = tuple(metrics) if metrics else recorded.metrics
    current = now.baseline

    def result(
        outcome: Outcome, reason: str, found: Sequence[GateRow] = (), details: Sequence[str] = ()
    ) -> GateResult:
        return GateResult(
            outcome=outcome,
            reason=reason,
            rows=tuple(found),
            strict=strict,
            details=tuple(details),
            baseline_sha=recorded.sha,
            ref=now.ref,
            sha=None if current is None else current.sha,
        )

    if current is None:
        reason = "the run is invalid, so nothing can be gated (this is not a pass)"
        return result(Outcome.INVALID, reason, details=now.invalid)
    if current.gold_hash != recorded.gold_hash:
        reason = (
            f"the gold set changed since the baseline was recorded (sha256 "
            f"{recorded.gold_hash[:12]} then, {current.gold_hash[:12]} now): the numbers are not "
            "comparable, and this is not a pass"
        )
        hint = "measure the base branch again with --update-baseline on the new gold set"
        return result(Outcome.NOT_COMPARABLE, reason, details=(hint,))
    missing = [m for m in gated if m not in recorded.metrics or m not in current.metrics]
    if missing:
        reason = (
            f"the baseline holds {', '.join(recorded.metrics)}, not {', '.join(missing)}: "
            "not comparable, and this is not a pass"
        )
        hint = f"record them: --update-baseline --metrics {','.join(gated)}"
        return result(Outcome.NOT_COMPARABLE, reason, details=(hint,))
    found = rows(recorded, current, gated, strict)
    failing = [r for r in found if r.failed]
    rule = "zero tolerance (--strict)" if strict else "beyond the noise"
    if failing:
        n = len(failing)
        reason = f"{n} row{'s' * (n != 1)} fell below the baseline ({rule})"
        return result(Outcome.FAIL, reason, found, now.warnings)
    reason = f"no row fell below the baseline ({rule})"
    if any(r.status == "improved" for r in found):
        reason += "; some improved: --update-baseline records them"
    return result(Outcome.PASS, reason, found, now.warnings)


def update(recorded: Baseline | None, now: Measured) -> GateResult:
    """What --update-baseline shows: the new values against the old file's, rule applied for
    information only (outcome UPDATED), or INVALID when the run cannot become a baseline."""
    current = now.baseline
    if current is None:
        reason = "the run is invalid: the baseline file was left as it was"
        return GateResult(Outcome.INVALID, reason, (), False, now.invalid, None, now.ref)
    comparable = recorded is not None and recorded.gold_hash == current.gold_hash
    before = recorded if comparable else None
    common = [m for m in current.metrics if before is not None and m in before.metrics]
    found = rows(before, current, common, strict=False) if common else []
    found += rows(None, current, [m for m in current.metrics if m not in common], strict=False)
    details = list(now.warnings)
    if recorded is not None and not comparable:
        details.append(
            f"the gold set changed (sha256 {recorded.gold_hash[:12]} -> {current.gold_hash[:12]}): "
            "the old numbers are not comparable and are not shown"
        )
    moved = sum(r.status != "ok" for r in found)
    reason = f"the baseline now records {current.sha[:8]}: " + (
        f"{moved} of {len(found)} rows moved beyond the noise or are new"
        if recorded is not None
        else f"a new baseline of {len(found)} rows"
    )
    return GateResult(
        Outcome.UPDATED,
        reason,
        tuple(found),
        False,
        tuple(details),
        None if recorded is None else recorded.sha,
        now.ref,
        current.sha,
    )


# --------------------------------------------------------------------------- the file


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
                "value": _round(scope.values[m]),
                "noise": _round(scope.noise[m]),
            }
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "gold": {"sha256": b.gold_hash, "queries": b.gold_queries},
        "metrics": list(b.metrics),
        "measured": {"sha": b.sha, "repeats": b.repeats},
        "rows": table,
    }


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
        if key == "rows":
            rows = [f"    {_line(k)}: {_line(v)}" for k, v in sorted(document[key].items())]
            entries.append('  "rows": {\n' + ",\n".join(rows) + "\n  }")
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
    if doc.get("schema") != SCHEMA:
        raise ResultsError(
            f"{source}: not a harness baseline (schema {doc.get('schema')!r})",
            ["write one with: harness gate --ref main --baseline-file FILE --update-baseline"],
        )
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise ResultsError(
            f"{source}: baseline schema_version {doc.get('schema_version')!r}, this harness "
            f"reads {SCHEMA_VERSION}",
            ["measure it again with --update-baseline"],
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
        )
    except (KeyError, TypeError, ValueError) as exc:
        what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
        raise ResultsError(
            f"{source}: malformed baseline: {what}",
            ["measure it again with --update-baseline (and commit the file as written)"],
        ) from None


def read_baseline(path: Path) -> Baseline:
    try:
        text = path.read_text(encoding="utf-8")
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
    if not isinstance(doc, dict):
        raise ResultsError(f"{path}: expected a JSON object at the top level")
    return baseline_from_dict(doc, str(path))


def write_baseline(path: Path, baseline: Baseline) -> bool:
    """Replace `path` atomically with the baseline's text; False when the bytes are unchanged.

    Unlike results, this file is meant to be rewritten: its diff is the point.
    """
    data = baseline_to_text(baseline).encode("utf-8")
    try:
        if path.read_bytes() == data:
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


# --------------------------------------------------------------------------- rendering (pure)

# Backslash-escaped so that slice names, refs and paths render literally in a PR comment.
_MD_ESCAPES = str.maketrans({ch: "\\" + ch for ch in "\\`*_[]<|"})


def _md(text: str) -> str:
    return text.translate(_MD_ESCAPES)


_HEADERS = ("scope", "metric", "baseline", "now", "change", "tolerance", "status")


def _num(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "-"
    return f"{x:+.4f}" if signed else f"{x:.4f}"


def _table_rows(found: Sequence[GateRow]) -> tuple[tuple[str, ...], ...]:
    return tuple(
        (
            r.scope,
            r.metric,
            _num(r.before),
            _num(r.after),
            _num(r.change, signed=True),
            _num(r.tolerance),
            r.status.upper() if r.failed else r.status,
        )
        for r in found
    )


@dataclass(frozen=True)
class _Block:
    kind: str  # "title" | "heading" | "lines" | "table"
    lines: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()


def _blocks(result: GateResult, baseline_file: str) -> list[_Block]:
    then = f"measured on {result.baseline_sha[:8]}" if result.baseline_sha else "new"
    now = f"{result.ref} ({result.sha[:8]})" if result.sha else result.ref
    about = (
        f"baseline: {baseline_file or 'the baseline file'} ({then}); now: {now}",
        "rule: a row fails when it drops by more than its tolerance, max(noise recorded, noise "
        "now) (0 with --strict), falls to zero, or its slice vanishes",
        *result.details,
    )
    out = [
        _Block("title", (f"gate: {result.outcome.value.upper()}: {result.reason}",)),
        _Block("lines", about),
    ]
    if result.failing:
        out += [
            _Block("heading", ("Failing rows",)),
            _Block("table", rows=_table_rows(result.failing)),
        ]
    if result.rows:
        out += [
            _Block("heading", ("Before -> after, every row",)),
            _Block("table", rows=_table_rows(result.rows)),
        ]
    return out


def render_gate(result: GateResult, fmt: str, *, baseline_file: str = "") -> str:
    """`fmt` is "text", "markdown" or "json"."""
    if fmt == "json":
        return json.dumps(gate_to_dict(result, baseline_file), sort_keys=True, indent=2) + "\n"
    if fmt not in ("text", "markdown"):
        raise ValueError(f"unknown format {fmt!r}; known: text, markdown, json")
    md = fmt == "markdown"
    esc = _md if md else str
    parts = []
    for b in _blocks(result, baseline_file):
        if b.kind == "table":
            style = "github" if md else "simple"
            rows = [tuple(map(esc, r)) for r in b.rows]
            parts.append(tabulate(rows, _HEADERS, tablefmt=style, disable_numparse=True))
        elif b.kind == "title":
            parts.append(f"## {esc(b.lines[0])}" if md else b.lines[0])
        elif b.kind == "heading":
            parts.append(f"### {b.lines[0]}" if md else f"{b.lines[0]}\n{'-' * len(b.lines[0])}")
        else:
            parts.append("\n".join(f"- {esc(x)}" if md else x for x in b.lines))
    return "\n\n".join(parts) + "\n"


def gate_to_dict(result: GateResult, baseline_file: str = "") -> dict[str, Any]:
    return {
        "schema": "harness-gate",
        "schema_version": 1,
        "outcome": result.outcome.value,
        "reason": result.reason,
        "strict": result.strict,
        "baseline_file": baseline_file,
        "baseline_sha": result.baseline_sha,
        "ref": result.ref,
        "sha": result.sha,
        "details": list(result.details),
        "rows": [
            {
                "scope": r.scope,
                "metric": r.metric,
                "before": r.before,
                "after": r.after,
                "change": r.change,
                "tolerance": r.tolerance,
                "status": r.status,
                "failed": r.failed,
            }
            for r in result.rows
        ],
    }

"""`harness sweep`: set a ranking knob from measurement, one isolated run per value.

    params = (parse_param("SINK=0,1,20"),)            # NAME=V1,V2,...; several make a grid
    points = grid(params)                             # every combination, in the order given
    runs = run_sweep(plan, "baseline", "main", points, repeats=3)   # I/O: the runner
    sweep = summarise(gold, ref, points, runs, reference, metrics, settings)   # pure
    render_sweep(sweep, "text" | "markdown" | "json");  save_sweep(results_dir, sweep, ...)

How a value reaches the service: as an environment pin NAME=value on the side's
`service.env` (replacing any pin of that name from the config), so each value has its own
config hash, its own run record and its own reusable measurements. A start command reads it
from the environment, e.g. `start = "{python} svc.py --port {port} --rrf-k $RRF_K"` (the
command runs under /bin/sh); `{NAME}` placeholders are not supported, since the config schema
accepts only the harness's own placeholders.

Runs: one RefSession per value, opened together, repeats interleaved (v1, v2, ..., v1, v2, ...)
so that machine drift hits every value alike, as `run_pair` does for two refs.

Statistics: every value is compared with the reference value (the first, or `--reference`) by
`harness.compare.compare`, the reference playing the baseline: the same paired tests, noise
floor and Holm correction across slices as `harness compare`. The reference row's numbers are
the baseline side of the first valid comparison.

The table, one per metric: one row per value, one column per scope (overall, then each slice
with an answerable query, in gold order). A cell holds the value's mean (compare's numbers:
hit@k from modal outcomes, other metrics as the mean over queries of the per-query mean over
repeats), then `+` / `-` when the paired test calls it improved / regressed against the
reference, `*` when it is the highest in its column among the valid rows (every value tied at
the top is marked, after rounding to 6 decimals), and `!` when compare flags that slice as
collapsed (fell to zero from non-zero, or regressed while the overall row did not). An invalid
value (a boot failure, too many errored queries) shows "invalid" in every cell, is never best,
and makes `harness sweep` exit 3.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tabulate import tabulate

from harness.compare import compare
from harness.comparison import CompareSettings, Comparison, MetricRow
from harness.config import HarnessConfig
from harness.document import comparison_to_dict
from harness.results import utc_stamp, write_json_new, write_text_new
from harness.runner import RefSession, RunPlan, run_interleaved
from harness.types import GoldSet, RefRun, Verdict

SCHEMA = "harness-sweep"
SCHEMA_VERSION = 1
SWEEP_FILE = "sweep.json"
REPORT_FILE = "report.md"
DEFAULT_METRICS = ("mrr@10", "recall@10")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BEST_DIGITS = 6

Point = tuple[tuple[str, str], ...]
"""One grid point: (name, value) pairs in the order the parameters were given."""


# --------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class Param:
    """One swept knob: an environment variable name and the values to try, in order."""

    name: str
    values: tuple[str, ...]


def parse_param(text: str) -> Param:
    """Parse `NAME=V1,V2,...`; ValueError says what is wrong and how to write it.

    NAME must be an environment variable name; values are taken literally (spaces around the
    commas are stripped), must be non-empty and distinct.
    """
    name, eq, rest = text.partition("=")
    name = name.strip()
    example = "e.g. --param RRF_K=20,60,100"
    if not eq:
        raise ValueError(f"{text!r}: expected NAME=V1,V2,... ({example})")
    if not _ENV_NAME.fullmatch(name):
        raise ValueError(f"{text!r}: {name!r} is not an environment variable name ({example})")
    values = tuple(v.strip() for v in rest.split(","))
    if not all(values):
        raise ValueError(f"{text!r}: an empty value; list values separated by commas ({example})")
    repeated = sorted({v for v in values if values.count(v) > 1})
    if repeated:
        raise ValueError(f"{text!r}: value {repeated[0]!r} is listed twice")
    return Param(name, values)


def grid(params: Sequence[Param]) -> tuple[Point, ...]:
    """Every combination of the values, the first parameter varying slowest.

    ValueError when a name is given twice or the grid has fewer than two points (a sweep of
    one value has nothing to choose between).
    """
    names = [p.name for p in params]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"--param {twice[0]} is given twice; list all its values in one --param")
    points = tuple(
        tuple(zip(names, combo, strict=True))
        for combo in itertools.product(*(p.values for p in params))
    )
    if len(points) < 2:
        raise ValueError("a sweep needs at least two values to compare, e.g. NAME=V1,V2")
    return points


def label(point: Point) -> str:
    """How a value is named in tables, files and run records: "SINK=1" or "A=1,B=x"."""
    return ",".join(f"{name}={value}" for name, value in point)


def find_reference(points: Sequence[Point], text: str | None) -> int:
    """The index of the reference point: the first, or the one `--reference` names.

    `text` is a bare value when one parameter is swept ("60"), else a label ("A=1,B=x").
    """
    if text is None:
        return 0
    for i, point in enumerate(points):
        if text == label(point) or (len(point) == 1 and text == point[0][1]):
            return i
    known = ", ".join(label(p) for p in points)
    raise ValueError(f"--reference {text!r} is not one of the swept values: {known}")


def overridden_pins(config: HarnessConfig, side: str, params: Sequence[Param]) -> tuple[str, ...]:
    """The swept names that the config already pins in `side`'s service.env."""
    return tuple(p.name for p in params if p.name in config.side(side).service.env)


def with_point(config: HarnessConfig, side: str, point: Point) -> HarnessConfig:
    """`config` with the point's values pinned in `side`'s service.env (overriding any pin)."""
    chosen = config.side(side)
    service = replace(chosen.service, env={**chosen.service.env, **dict(point)})
    changed = replace(chosen, service=service)
    if side == "baseline":
        return replace(config, baseline=changed)
    return replace(config, candidate=changed)


# --------------------------------------------------------------------------- running (I/O)


def run_sweep(
    plan: RunPlan,
    side: str,
    ref: str,
    points: Sequence[Point],
    *,
    repeats: int,
    fresh: bool = False,
) -> tuple[RefRun, ...]:
    """One RefRun per point, in order: a session each, repeats interleaved across the points.

    A point whose record already exists for exactly these inputs (its env pin is part of the
    config hash) is reused unless `fresh`. Each record's `ref` is "REF [NAME=value]".
    """
    sessions = [
        RefSession(
            replace(plan, config=with_point(plan.config, side, point)),
            side,
            ref,
            label=f"{ref} [{label(point)}]",  # names the value in progress lines and records
        )
        for point in points
    ]
    return run_interleaved(sessions, repeats=repeats, fresh=fresh)


# --------------------------------------------------------------------------- the summary (pure)


@dataclass(frozen=True)
class Cell:
    """One value's number for one metric in one scope, and how it stands against the reference.

    `value` is None when the row is invalid or the scope has no analysed query; `verdict` is
    None on the reference row; `p` is compare's p-value (Holm-adjusted across slices in a
    slice); `collapse` is compare's reason for a slice collapse.
    """

    value: float | None
    delta: float | None = None
    p: float | None = None
    verdict: Verdict | None = None
    best: bool = False
    collapse: str | None = None


@dataclass(frozen=True)
class SweepRow:
    """One swept value: its cells by scope then metric, and the headline of its comparison."""

    label: str
    point: Point
    reference: bool
    valid: bool
    reasons: tuple[str, ...]  # why the comparison is invalid
    quality: str  # "reference", or the comparison's quality verdict
    quality_reason: str  # why (empty for the reference)
    latency: str  # "reference", or the latency verdict and the paired ratio in words
    collapses: tuple[str, ...]  # "slice (metric)" for each collapsed slice row
    record_path: str | None
    cells: Mapping[str, Mapping[str, Cell]]


@dataclass(frozen=True)
class Sweep:
    """Everything a sweep report shows; `scopes` are "overall" then the slices in gold order."""

    ref: str
    sha: str
    side: str
    params: tuple[Param, ...]
    reference: str
    metrics: tuple[str, ...]
    scopes: tuple[str, ...]
    repeats: int
    gold_source: str
    gold_hash: str
    n_answerable: int
    alpha: float
    seed: int
    overridden: tuple[str, ...]  # config env pins the sweep replaced
    rows: tuple[SweepRow, ...]

    @property
    def valid(self) -> bool:
        return all(row.valid for row in self.rows)

    def best(self, scope: str, metric: str) -> tuple[str, ...]:
        return tuple(r.label for r in self.rows if r.cells[scope][metric].best)


def summarise(
    gold: GoldSet,
    points: Sequence[Point],
    runs: Sequence[RefRun],
    reference: int,
    metrics: Sequence[str],
    settings: CompareSettings,
    *,
    side: str = "baseline",
    overridden: Sequence[str] = (),
) -> tuple[Sweep, dict[str, Comparison]]:
    """Compare every run with the reference run and lay the numbers out per metric and scope.

    `settings.gate_on` should include `metrics` so that compare computes them at any k.
    Returns the Sweep and each comparison by its value's label (the reference has none).
    """
    ref_run = runs[reference]
    comparisons = {
        label(points[i]): compare(gold, ref_run, run, settings)
        for i, run in enumerate(runs)
        if i != reference
    }
    answerable = {q.slice for q in gold.queries if q.answerable}
    scopes = ("overall", *(name for name in gold.slices if name in answerable))
    first_valid = next((c for c in comparisons.values() if c.valid), None)
    rows = []
    for i, point in enumerate(points):
        name = label(point)
        if i == reference:
            rows.append(_reference_row(name, point, ref_run, first_valid, scopes, metrics))
        else:
            rows.append(_value_row(name, point, runs[i], comparisons[name], scopes, metrics))
    rows = _mark_best(rows, scopes, metrics)
    sweep = Sweep(
        ref=ref_run.ref.partition(" [")[0],
        sha=ref_run.sha,
        side=side,
        params=_params_of(points),
        reference=label(points[reference]),
        metrics=tuple(metrics),
        scopes=scopes,
        repeats=max(len(run.repeats) for run in runs),
        gold_source=gold.source,
        gold_hash=gold.hash,
        n_answerable=sum(q.answerable for q in gold.queries),
        alpha=settings.alpha,
        seed=settings.seed,
        overridden=tuple(overridden),
        rows=tuple(rows),
    )
    return sweep, comparisons


def _params_of(points: Sequence[Point]) -> tuple[Param, ...]:
    names = [name for name, _ in points[0]]
    return tuple(
        Param(name, tuple(dict.fromkeys(p[j][1] for p in points))) for j, name in enumerate(names)
    )


def _scope_rows(c: Comparison, scope: str) -> Mapping[str, MetricRow]:
    found = (
        c.overall if scope == "overall" else next((s for s in c.slices if s.name == scope), None)
    )
    return {} if found is None else {r.metric: r for r in found.rows}


def _reference_row(
    name: str,
    point: Point,
    run: RefRun,
    first_valid: Comparison | None,
    scopes: Sequence[str],
    metrics: Sequence[str],
) -> SweepRow:
    cells: dict[str, dict[str, Cell]] = {}
    for scope in scopes:
        rows = _scope_rows(first_valid, scope) if first_valid else {}
        cells[scope] = {m: Cell(rows[m].baseline if m in rows else None) for m in metrics}
    reasons = () if first_valid else ("no value could be compared with it (see their reasons)",)
    return SweepRow(
        label=name,
        point=point,
        reference=True,
        valid=first_valid is not None,
        reasons=reasons,
        quality="reference",
        quality_reason="",
        latency="reference",
        collapses=(),
        record_path=run.record_path,
        cells=cells,
    )


def _value_row(
    name: str,
    point: Point,
    run: RefRun,
    c: Comparison,
    scopes: Sequence[str],
    metrics: Sequence[str],
) -> SweepRow:
    cells: dict[str, dict[str, Cell]] = {}
    for scope in scopes:
        rows = _scope_rows(c, scope) if c.valid else {}
        cells[scope] = {
            m: Cell(
                value=rows[m].candidate,
                delta=rows[m].delta,
                p=rows[m].p_adjusted if rows[m].p_adjusted is not None else rows[m].p,
                verdict=rows[m].verdict,
                collapse=rows[m].collapse,
            )
            if m in rows
            else Cell(None)
            for m in metrics
        }
    collapses = tuple(
        f"{scope.name} ({r.metric})" for scope, r in c.collapses if r.metric in metrics
    )
    return SweepRow(
        label=name,
        point=point,
        reference=False,
        valid=c.valid,
        reasons=c.invalid_reasons,
        quality=c.verdict_quality.value,
        quality_reason=c.quality_reason,
        latency=f"{c.verdict_latency.value}: {c.latency.words}",
        collapses=collapses,
        record_path=run.record_path,
        cells=cells,
    )


def _mark_best(
    rows: Sequence[SweepRow], scopes: Sequence[str], metrics: Sequence[str]
) -> list[SweepRow]:
    best: dict[tuple[str, str], float] = {}
    for scope in scopes:
        for m in metrics:
            values = [
                round(v, _BEST_DIGITS)
                for r in rows
                if r.valid and (v := r.cells[scope][m].value) is not None
            ]
            if values:
                best[scope, m] = max(values)
    out = []
    for row in rows:
        cells = {
            scope: {
                m: replace(cell, best=True)
                if row.valid
                and cell.value is not None
                and round(cell.value, _BEST_DIGITS) == best.get((scope, m))
                else cell
                for m, cell in by_metric.items()
            }
            for scope, by_metric in row.cells.items()
        }
        out.append(replace(row, cells=cells))
    return out


# --------------------------------------------------------------------------- rendering (pure)

_MARKS = {Verdict.IMPROVED: " +", Verdict.REGRESSED: " -"}
LEGEND = (
    "* best in its column; + / - improved / regressed against the reference (the paired tests "
    "of compare, Holm-corrected across slices); ! slice collapse (fell to zero, or regressed "
    "while the overall row did not)"
)


def _cell_text(row: SweepRow, cell: Cell) -> str:
    if not row.valid:
        return "invalid"
    if cell.value is None:
        return "-"
    text = f"{cell.value:.3f}"
    text += _MARKS.get(cell.verdict, "") if cell.verdict else ""
    text += " *" if cell.best else ""
    text += " !" if cell.collapse else ""
    return text


def _row_name(row: SweepRow) -> str:
    return f"{row.label} (reference)" if row.reference else row.label


def _best_lines(s: Sweep) -> list[str]:
    """Per metric, overall: the best value and whether it is distinguishable from the reference."""
    lines = []
    by_label = {r.label: r for r in s.rows}
    for m in s.metrics:
        best = s.best("overall", m)
        if not best:
            lines.append(f"{m}: no valid value")
            continue
        if s.reference in best:
            lines.append(f"{m}: the reference {s.reference} is (one of) the best; keep it")
            continue
        parts = []
        for name in best:
            cell = by_label[name].cells["overall"][m]
            verdict = cell.verdict.value if cell.verdict else "-"
            delta = f"{cell.delta:+.3f}" if cell.delta is not None else "-"
            parts.append(f"{name} ({delta} against the reference: {verdict})")
        lines.append(f"{m}: best {'; '.join(parts)}")
    return lines


@dataclass(frozen=True)
class _Block:
    kind: str  # "title" | "heading" | "lines" | "table"
    lines: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()


def _layout(s: Sweep) -> list[_Block]:
    """The report, shared by text and Markdown: what was swept, verdicts, one table per metric."""
    values = ", ".join(f"{p.name} = {', '.join(p.values)}" for p in s.params)
    title = f"harness sweep: {s.ref} ({s.sha[:8]}), {values}; reference {s.reference}"
    about = [
        f"gold set: {s.gold_source} (sha256 {s.gold_hash[:12]}), {s.n_answerable} answerable "
        f"queries; {s.repeats} repeat{'s' * (s.repeats != 1)} per value; alpha {s.alpha:g}; "
        f"seed {s.seed}",
        f"each value is set as an environment pin on the {s.side} side's service",
    ]
    about += [
        f"warning: the sweep overrides the config's pin service.env.{n}" for n in s.overridden
    ]
    about += [f"{row.label} is invalid: {why}" for row in s.rows for why in row.reasons]
    verdicts = tuple(
        (_row_name(r), r.quality, r.latency, ", ".join(r.collapses) or "-") for r in s.rows
    )
    out = [
        _Block("title", (title,)),
        _Block("lines", tuple(about)),
        _Block("heading", ("Against the reference",)),
        _Block("table", headers=("value", "quality", "latency", "slice collapses"), rows=verdicts),
        _Block(
            "lines", tuple(f"{r.label}: {r.quality_reason}" for r in s.rows if r.quality_reason)
        ),
    ]
    for m in s.metrics:
        rows = tuple(
            (_row_name(r), *(_cell_text(r, r.cells[scope][m]) for scope in s.scopes))
            for r in s.rows
        )
        out.append(_Block("heading", (f"{m} by slice",)))
        out.append(_Block("table", headers=("value", *s.scopes), rows=rows))
    out.append(_Block("lines", (LEGEND, *_best_lines(s))))
    return out


def _render_text(s: Sweep) -> str:
    parts = []
    for b in _layout(s):
        if b.kind == "table":
            parts.append(tabulate(b.rows, b.headers, tablefmt="simple", disable_numparse=True))
        elif b.kind in ("title", "heading"):
            parts.append(f"{b.lines[0]}\n{'-' * len(b.lines[0])}")
        else:
            parts.append("\n".join(b.lines))
    return "\n\n".join(parts) + "\n"


_MD_ESCAPES = str.maketrans({ch: "\\" + ch for ch in "\\`*_[]<|"})


def _md(text: str) -> str:
    return text.translate(_MD_ESCAPES)


def _render_markdown(s: Sweep) -> str:
    parts = []
    for b in _layout(s):
        if b.kind == "table":
            cells = [tuple(map(_md, r)) for r in b.rows]
            parts.append(tabulate(cells, b.headers, tablefmt="github", disable_numparse=True))
        elif b.kind == "title":
            parts.append(f"## {_md(b.lines[0])}")
        elif b.kind == "heading":
            parts.append(f"### {_md(b.lines[0])}")
        else:
            parts.append("\n".join(f"- {_md(line)}" for line in b.lines))
    return "\n\n".join(parts) + "\n"


def sweep_to_dict(s: Sweep) -> dict[str, Any]:
    """The JSON document: schema, version, then every field; cells by scope then metric."""

    def cell(c: Cell) -> dict[str, Any]:
        return {
            "value": c.value,
            "delta": c.delta,
            "p": c.p,
            "verdict": None if c.verdict is None else c.verdict.value,
            "best": c.best,
            "collapse": c.collapse,
        }

    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "valid": s.valid,
        "ref": s.ref,
        "sha": s.sha,
        "side": s.side,
        "params": {p.name: list(p.values) for p in s.params},
        "reference": s.reference,
        "metrics": list(s.metrics),
        "scopes": list(s.scopes),
        "repeats": s.repeats,
        "gold": {"source": s.gold_source, "hash": s.gold_hash, "n_answerable": s.n_answerable},
        "alpha": s.alpha,
        "seed": s.seed,
        "overridden_env": list(s.overridden),
        "best": {scope: {m: list(s.best(scope, m)) for m in s.metrics} for scope in s.scopes},
        "rows": [
            {
                "label": r.label,
                "params": dict(r.point),
                "reference": r.reference,
                "valid": r.valid,
                "invalid_reasons": list(r.reasons),
                "quality": r.quality,
                "quality_reason": r.quality_reason,
                "latency": r.latency,
                "collapses": list(r.collapses),
                "record_path": r.record_path,
                "cells": {
                    scope: {m: cell(c) for m, c in by_metric.items()}
                    for scope, by_metric in r.cells.items()
                },
            }
            for r in s.rows
        ],
    }


def _render_json(s: Sweep) -> str:
    return json.dumps(sweep_to_dict(s), sort_keys=True, indent=2, allow_nan=False) + "\n"


RENDERERS = {"text": _render_text, "markdown": _render_markdown, "json": _render_json}


def render_sweep(sweep: Sweep, fmt: str) -> str:
    """The sweep as `fmt`, a key of RENDERERS."""
    try:
        return RENDERERS[fmt](sweep)
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(RENDERERS)}") from None


# --------------------------------------------------------------------------- saving (I/O)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=,-]+", "-", text).strip("-")[:80] or "value"


def save_sweep(results_dir: Path, sweep: Sweep, comparisons: Mapping[str, Comparison]) -> Path:
    """Write results_dir/sweep_<UTC stamp>/ (suffixed -2, -3, ... if taken) holding sweep.json,
    report.md and vs_<value>.json, each value's comparison with the reference, which
    `harness report PATH` renders in full. Return the directory."""
    stem = f"sweep_{utc_stamp()}"
    directory, n = results_dir / stem, 1
    while True:
        try:
            directory.mkdir(parents=True)
            break
        except FileExistsError:
            n += 1
            directory = results_dir / f"{stem}-{n}"
    write_json_new(directory / SWEEP_FILE, sweep_to_dict(sweep))
    write_text_new(directory / REPORT_FILE, render_sweep(sweep, "markdown"))
    for name, comparison in comparisons.items():
        write_json_new(directory / f"vs_{_slug(name)}.json", comparison_to_dict(comparison))
    return directory

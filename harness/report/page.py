"""The report stage: a Comparison in, text out.  It formats; it computes nothing.

    render(comparison, fmt, *, redact=False) -> str    fmt in RENDERERS: text, markdown, json
    render_evaluation(evaluation, fmt, per_query=False) -> str           `harness metrics`
    render_run(summary, fmt) -> str                                      `harness run`
    render_failures(run) -> str                                          `harness run`, on stderr

Text (a terminal) and Markdown (a PR comment) share one page, built once as `harness.layout`
blocks: the verdicts in words first, any reason the run is invalid above everything, then the
numbers.
Numbers: rates and metric values with 3 decimals, p with 2 significant digits or "<0.0001",
latencies in ms with 1 decimal.  JSON is the Comparison itself (`harness.document`: schema-
versioned, reads back into an equal Comparison), with sorted keys.  `redact=True` leaves every
query text out of every format (a Comparison holds no document text: ids, hashes and numbers
only).  Saving a comparison to a results directory, and loading it back, is `harness.results`'s.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tabulate import tabulate

from harness import layout
from harness.comparison import Comparison, Flip, HitDetail, MetricRow, RunSummary, Scope
from harness.document import comparison_to_dict, jsonable
from harness.evaluation import Evaluation
from harness.layout import Block
from harness.types import GoldSet, RefRun

SHOWN_FLIPS = 50  # per cutoff in text and Markdown; JSON keeps every one


# --------------------------------------------------------------------------- numbers


def _rate(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _signed(x: float) -> str:
    return f"{x:+.3f}"


def _p(p: float | None) -> str:
    """Two significant digits ("0.031", "0.00049", "1.0"), or "<0.0001"."""
    if p is None:
        return "-"
    return "<0.0001" if p < 0.0001 else f"{p:#.2g}"


def _ms(x: float) -> str:
    return f"{x:.1f}"


def _rank(rank: int | None) -> str:
    return "-" if rank is None else str(rank)


def _queries(n: int) -> str:
    return f"{n} quer{'y' if n == 1 else 'ies'}"


# --------------------------------------------------------------------------- the page


def _hit_line(row: MetricRow, hit: HitDetail) -> str:
    t = hit.test
    line = (
        f"{row.metric}: {_rate(row.baseline)} -> {_rate(row.candidate)} "
        f"({t.net:+d} queries, b={t.b} c={t.c}, McNemar exact p={_p(t.p)}): {row.verdict.value}"
    )
    return f"{line}; {row.note}" if row.note else line


def _metric_table(scope: Scope, ci: str, slices: bool) -> tuple[Block, list[str]]:
    headers = ["metric", "baseline", "candidate", "delta", ci, "p"]
    headers += ["Holm p"] if slices else []
    rows, notes = [], []
    for r in scope.rows:
        interval = (
            "" if r.ci_low is None or r.ci_high is None else f"[{r.ci_low:+.3f}, {r.ci_high:+.3f}]"
        )
        verdict = r.verdict.value + (" *" if r.note else "") + (" COLLAPSE" if r.collapse else "")
        cells = [
            r.metric,
            _rate(r.baseline),
            _rate(r.candidate),
            _signed(r.delta),
            interval,
            _p(r.p),
        ]
        cells += [_p(r.p_adjusted)] if slices else []
        rows.append((*cells, verdict))
        if r.note and (slices or r.hit is None):  # the hit@k lines above already say it
            notes.append(f"* {r.metric}: {r.note}")
    align = ("left", *["right"] * (len(headers) - 1), "left")
    return Block("table", headers=(*headers, "verdict"), rows=tuple(rows), align=align), notes


def _flip_rows(flips: Sequence[Flip], redact: bool) -> tuple[tuple[str, ...], ...]:
    rows = []
    for f in flips[:SHOWN_FLIPS]:
        cells = [
            f.query_id,
            f.slice,
            f"{_rank(f.rank_before)} -> {_rank(f.rank_after)}",
            f.direction.value,
        ]
        rows.append(tuple(cells if redact else [*cells, " ".join((f.text or "").split())]))
    return tuple(rows)


def _blocks(c: Comparison, redact: bool) -> list[Block]:
    """The report, top to bottom: why it is invalid, the verdicts, what was compared, numbers."""
    h = c.header
    title = (
        f"harness: {h.baseline.ref} ({h.baseline.short_sha}) -> "
        f"{h.candidate.ref} ({h.candidate.short_sha})"
    )
    out = [Block("title", (title,))]
    if not c.valid:
        why = ("INVALID: no verdict can be given, because:", *(f"- {r}" for r in c.invalid_reasons))
        out.append(Block("alert", why))
    verdicts = (
        (f"quality: {c.verdict_quality.value}", c.quality_reason),
        (f"latency: {c.verdict_latency.value}", c.latency_reason),
    )
    out.append(Block("verdicts", rows=verdicts))
    out.append(Block("lines", _about(c)))
    mark = "" if c.valid else " [invalid run: for diagnosis only]"
    for section in (_quality, _answers, _latency, _noise):
        out += section(c, mark)
    out += _flip_blocks(c, mark, redact)
    return out


def _about(c: Comparison) -> tuple[str, ...]:
    h, s = c.header, c.settings
    reused = [
        f"{ref.side} reused from {ref.record_path or 'an earlier run'}"
        for ref in (h.baseline, h.candidate)
        if ref.reused
    ]
    gates = f"; gate on {', '.join(s.gate_on)}" if s.gate_on else ""
    lines = [
        f"baseline: {h.baseline.ref} {h.baseline.sha}",
        f"candidate: {h.candidate.ref} {h.candidate.sha}",
        f"gold set: {h.gold.source} (sha256 {h.gold.hash[:12]}), {_queries(h.gold.n)}: "
        f"{h.gold.n_answerable} answerable, {h.gold.n_unanswerable} unanswerable",
        f"repeats: baseline {h.baseline.usable_repeats} of {h.baseline.repeats}, candidate "
        f"{h.candidate.usable_repeats} of {h.candidate.repeats}"
        + (f" ({'; '.join(reused)})" if reused else ""),
        f"settings: k {', '.join(map(str, s.k))}; alpha {s.alpha:g}; latency tolerance "
        f"±{s.latency_tolerance:.0%}; max errors {s.max_errors}; seed {s.seed}; "
        f"{s.resamples} resamples{gates}",
        "query differences between the sides: " + (", ".join(h.query_differences) or "none"),
    ]
    if h.excluded:
        shown = ", ".join(h.excluded[:10]) + (", ..." if len(h.excluded) > 10 else "")
        lines.append(f"left out (an errored or missing answer): {len(h.excluded)} ({shown})")
    lines += [f"warning: {w}" for w in c.warnings]
    return tuple(lines)


def _quality(c: Comparison, mark: str) -> list[Block]:
    if not c.hit_rows:
        return []
    out = [
        Block("heading", (f"hit@k over {_queries(c.overall.n)}{mark}",)),
        Block("lines", tuple(_hit_line(r, r.hit) for r in c.hit_rows if r.hit)),
    ]
    collapses = [
        f"slice collapse: {scope.name} {r.metric} {_rate(r.baseline)} -> "
        f"{_rate(r.candidate)} ({r.collapse})"
        for scope, r in c.collapses
    ]
    out += layout.section(f"Slice collapses{mark}", collapses)
    ci = f"{100 * (1 - c.settings.alpha):g}% CI"
    for scope in (c.overall, *c.slices):
        is_slice = scope is not c.overall
        name = (
            f"Slice {scope.name} (n={scope.n})" if is_slice else f"Metrics, all {_queries(scope.n)}"
        )
        table, notes = _metric_table(scope, ci, slices=is_slice)
        out += [Block("heading", (f"{name}{mark}",)), table]
        out += [Block("lines", tuple(notes))] if notes else []
    return out


def _answers(c: Comparison, mark: str) -> list[Block]:
    na, o = c.no_answer, c.outranks
    lines = []
    if na.n:
        lines.append(
            f"unanswerable queries returning anything: baseline {na.baseline} of {na.n} "
            f"({_rate(na.baseline_rate)}), candidate {na.candidate} of {na.n} "
            f"({_rate(na.candidate_rate)})"
        )
    if o.n:
        lines.append(
            f"outranks pairs holding (correction above the stale fact): baseline "
            f"{o.baseline} of {o.n}, candidate {o.candidate} of {o.n}"
        )
    return layout.section(f"Unanswerable queries and outranks pairs{mark}", lines)


def _latency(c: Comparison, mark: str) -> list[Block]:
    lat = c.latency
    out = [Block("heading", (f"Latency, ms (errored answers excluded){mark}",))]
    rows = tuple(
        (side, str(x.n), _ms(x.p50), _ms(x.p95), _ms(x.p99), _ms(x.max), _ms(x.mean))
        for side, x in (("baseline", lat.baseline), ("candidate", lat.candidate))
        if x
    )
    if rows:
        headers = ("ref", "n", "p50", "p95", "p99", "max", "mean")
        out.append(Block("table", headers=headers, rows=rows, align=("left", *["right"] * 6)))
    verdict = f": {lat.test.verdict.value}" if lat.test else ""
    paired = f"candidate/baseline, paired median over {_queries(lat.n_paired)}"
    out.append(Block("lines", (f"{paired}: {lat.words}{verdict}",)))
    return out


def _noise(c: Comparison, mark: str) -> list[Block]:
    lines = [
        f"{r.metric}: drift baseline {r.hit.drift_baseline}, candidate {r.hit.drift_candidate} "
        f"(top-{r.metric.partition('@')[2]} lists changed: {r.hit.topk_drift_baseline}, "
        f"{r.hit.topk_drift_candidate}); noise floor {_queries(r.hit.test.floor)}"
        for r in c.hit_rows
        if r.hit
    ]
    d = c.detectability
    if d is not None:
        if d.too_small:
            lines.append(
                f"gold set too small to call a change in {d.metric} ({_queries(d.n)}; "
                f"the smallest callable swing is {d.floor})"
            )
        else:
            lines.append(
                f"with {_queries(d.n)}, a change in {d.metric} smaller than "
                f"{_queries(d.floor)} cannot be called"
            )
        for s in d.slices:
            head = f"slice {s.name} ({_queries(s.n)}): "
            lines.append(
                f"{head}a change smaller than {_queries(s.smallest_swing)} cannot be called"
                if s.callable
                else f"{head}can never reach significance "
                f"(it would need a swing of {_queries(s.smallest_swing)})"
            )
    return layout.section(f"Drift, noise floor, detectability{mark}", lines)


def _flip_blocks(c: Comparison, mark: str, redact: bool) -> list[Block]:
    out = []
    headers = ("query", "slice", "rank before -> after", "change")
    for flips in c.flips:
        if not flips.flips:
            continue
        out.append(
            Block(
                "table",
                headers=headers if redact else (*headers, "query text"),
                rows=_flip_rows(flips.flips, redact),
                fold=f"Flips at {flips.metric}: {_queries(len(flips.flips))}{mark}",
            )
        )
        more = len(flips.flips) - SHOWN_FLIPS
        if more > 0:
            out.append(Block("lines", (f"... and {more} more (all of them in --format json)",)))
    return out


def _render_text(c: Comparison, redact: bool) -> str:
    return layout.text(_blocks(c, redact))


def _render_markdown(c: Comparison, redact: bool) -> str:
    return layout.markdown(_blocks(c, redact))


# --------------------------------------------------------------------------- JSON


def _render_json(c: Comparison, redact: bool) -> str:
    document = comparison_to_dict(c, redact=redact)
    return (
        json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    )


# --------------------------------------------------------------------------- the registry

RENDERERS: Mapping[str, Callable[[Comparison, bool], str]] = {
    "text": _render_text,
    "markdown": _render_markdown,
    "json": _render_json,
}


def render(comparison: Comparison, fmt: str, *, redact: bool = False) -> str:
    """The comparison as `fmt` (a key of RENDERERS); query text left out when `redact`."""
    try:
        renderer = RENDERERS[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(RENDERERS)}") from None
    return renderer(comparison, redact)


# --------------------------------------------------------------------------- metrics and runs


def render_evaluation(
    evaluation: Evaluation, fmt: str, per_query: bool = False, *, gold: GoldSet | None = None
) -> str:
    """`harness metrics` output: "table" (tabulate: all, then one row per slice with n), "json"
    ({"aggregate", "slices": {name: {metric..., "n"}}, "per_query", "gold"}) or "csv" (scope,
    metric, value rows; scope "all", "slice:NAME", "query:ID" or "gold").  Per-query values only
    when asked; the gold set's source and content hash whenever `gold` is given."""
    names = [str(s) for s in evaluation.specs]
    if fmt == "json":
        doc: dict[str, Any] = {
            "aggregate": dict(evaluation.aggregate),
            "slices": {k: {**v.values, "n": v.n} for k, v in evaluation.slices.items()},
        }
        if gold is not None:
            doc["gold"] = {"source": gold.source, "sha256": gold.hash, "queries": len(gold)}
        if per_query:
            doc["per_query"] = {q: dict(v) for q, v in evaluation.per_query.items()}
        return json.dumps(doc, sort_keys=True, indent=2, allow_nan=False) + "\n"
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(("scope", "metric", "value"))
        if gold is not None:
            writer.writerow(("gold", "sha256", gold.hash))
        writer.writerows(("all", m, repr(v)) for m, v in evaluation.aggregate.items())
        for name, sl in evaluation.slices.items():
            writer.writerow((f"slice:{name}", "n", sl.n))
            writer.writerows((f"slice:{name}", m, repr(v)) for m, v in sl.values.items())
        if per_query:
            for qid, values in evaluation.per_query.items():
                writer.writerows((f"query:{qid}", m, repr(v)) for m, v in values.items())
        return buffer.getvalue()
    if fmt != "table":
        raise ValueError(f"unknown format {fmt!r}; known: table, json, csv")

    def cells(values: Mapping[str, float]) -> list[str]:
        return [f"{values[m]:.4f}" if m in values else "-" for m in names]

    rows = [["all", str(evaluation.n), *cells(evaluation.aggregate)]]
    rows += [[f"slice {k}", str(v.n), *cells(v.values)] for k, v in evaluation.slices.items()]
    parts = [tabulate(rows, ["scope", "n", *names], tablefmt="simple", disable_numparse=True)]
    na, o = evaluation.no_answer, evaluation.outranks
    lines = []
    if na.n:
        lines.append(
            f"unanswerable queries returning anything: {na.false_positives} of {na.n} "
            f"({_rate(na.rate)})"
        )
    if o.n:
        lines.append(f"outranks pairs holding: {o.n_held} of {o.n}")
    if evaluation.missing:
        lines.append(
            f"answerable queries absent from the run (scored 0): {len(evaluation.missing)}"
        )
    if evaluation.extra:
        lines.append(f"run queries not in the gold set (ignored): {len(evaluation.extra)}")
    if gold is not None:
        lines.append(f"gold set: {gold.source} ({len(gold)} queries, sha256 {gold.hash[:12]})")
    parts += ["\n".join(lines)] if lines else []
    if per_query:
        table = [[q, *cells(v)] for q, v in evaluation.per_query.items()]
        parts.append(tabulate(table, ["query", *names], tablefmt="simple", disable_numparse=True))
    return "\n\n".join(parts) + "\n"


def render_run(summary: RunSummary, fmt: str) -> str:
    """`harness run` output: "json" (the summary and the record's path) or "table": a line per
    repeat, latency, the metrics overall and per slice, drift and errors by kind."""
    run = summary.run
    if fmt == "json":
        doc = {
            "ref": run.ref,
            "sha": run.sha,
            "record": run.record_path,
            "repeats": len(run.repeats),
            "usable_repeats": summary.usable,
            "errors": dict(summary.errors),
            "failures": [f"{f.stage}: {f.message}" for f in run.failures],
            "latency_ms": None if summary.latency is None else jsonable(summary.latency),
            "metrics": {name: {"n": n, **values} for name, n, values in summary.scopes},
            "drift": dict(summary.drift),
        }
        return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    if fmt != "table":
        raise ValueError(f"unknown format {fmt!r}; known: table, json")
    n_queries = len(run.repeats[0].results) if run.repeats else 0
    head = f"{run.ref} ({run.sha[:8]}{'+dirty' if '+dirty' in run.sha else ''}): "
    head += f"{len(run.repeats)} repeats of {_queries(n_queries)}"
    if run.build_failure is not None:
        head += f"\nbuild failed: {run.build_failure.message}"
    rows = [
        (
            str(rep.index + 1),
            str(len(rep.results)),
            str(rep.errors),
            *(
                f"{rep.timings_s[k]:.2f}" if k in rep.timings_s else "-"
                for k in ("boot", "queries")
            ),
            "confirmed" if rep.teardown_confirmed else "NOT confirmed",
            f"{rep.failure.stage}: {rep.failure.message}" if rep.failure else "",
        )
        for rep in run.repeats
    ]
    headers = ("repeat", "answers", "errors", "boot s", "queries s", "teardown", "failure")
    parts = [head, tabulate(rows, headers, tablefmt="simple", disable_numparse=True)]
    if summary.errors:
        kinds = ", ".join(f"{kind} {n}" for kind, n in summary.errors.items())
        parts.append(f"errored answers (not scored): {kinds}")
    if summary.latency is not None:
        lat = summary.latency
        parts.append(
            f"latency ms over {lat.n} answers: p50 {_ms(lat.p50)}, p95 {_ms(lat.p95)}, "
            f"p99 {_ms(lat.p99)}, max {_ms(lat.max)}, mean {_ms(lat.mean)}"
        )
    if summary.scopes:
        names = list(summary.scopes[0][2])
        table = [
            [
                name if name == "all" else f"slice {name}",
                str(n),
                *(f"{values[m]:.3f}" for m in names),
            ]
            for name, n, values in summary.scopes
        ]
        parts.append(
            f"metrics (mean over {summary.usable} repeats)\n"
            + tabulate(table, ["scope", "n", *names], tablefmt="simple", disable_numparse=True)
        )
    if summary.drift:
        parts.append(
            "drift: "
            + ", ".join(f"{m} {n} queries" for m, n in summary.drift.items())
            + " differ between repeats"
        )
    return "\n\n".join(parts) + "\n"


def render_failures(run: RefRun) -> str:
    """For stderr under `harness run`: each distinct failure of the run as an error line
    ("harness: error: STAGE: message"), then the service log lines that say why."""
    lines = []
    for failure in dict.fromkeys(run.failures):
        lines.append(f"harness: error: {failure.stage}: {failure.message}")
        lines += failure.log_tail
    return "".join(f"{line}\n" for line in lines)

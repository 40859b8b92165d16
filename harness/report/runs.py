"""The pages of one run and of a scored run file: `harness run` and `harness metrics`.

render_evaluation(evaluation, fmt, per_query=False) -> str           `harness metrics`
render_run(summary, fmt) -> str                                      `harness run`
render_failures(run) -> str                                          `harness run`, on stderr
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from harness.report.numbers import ms, queries, rate
from harness.score.evaluation import Evaluation
from harness.values.types import RefRun

if TYPE_CHECKING:
    from harness.verdict.comparison import RunSummary


class GoldFacts(Protocol):
    """What `render_evaluation` says of the gold set: a GoldSet, or `runfile.TrecTables`."""

    @property
    def source(self) -> str: ...

    @property
    def hash(self) -> str: ...

    def __len__(self) -> int: ...


def render_evaluation(
    evaluation: Evaluation, fmt: str, per_query: bool = False, *, gold: GoldFacts | None = None
) -> str:
    """`harness metrics` output: "text" (alias "table"; tabulate: all, then one row per slice
    with n), "json" ({"aggregate", "slices": {name: {metric..., "n"}}, "per_query", "gold"}) or
    "csv" (scope, metric, value rows; scope "all", "slice:NAME", "query:ID" or "gold").
    Per-query values only when asked; the gold set's source and content hash whenever `gold`
    is given."""
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
    if fmt not in ("text", "table"):  # "table": the old name, kept as an alias
        raise ValueError(f"unknown format {fmt!r}; known: text, json, csv")
    from tabulate import tabulate  # `harness metrics` in JSON or CSV does without it

    def cells(values: Mapping[str, float]) -> list[str]:
        return [f"{values[m]:.4f}" if m in values else "-" for m in names]

    rows = [["all", str(evaluation.n), *cells(evaluation.aggregate)]]
    # A gold set without slices has the one slice "default": the "all" row again, shown once.
    if list(evaluation.slices) != ["default"]:
        rows += [[f"slice {k}", str(v.n), *cells(v.values)] for k, v in evaluation.slices.items()]
    parts = [tabulate(rows, ["scope", "n", *names], tablefmt="simple", disable_numparse=True)]
    na, o = evaluation.no_answer, evaluation.outranks
    lines = []
    if na.n:
        lines.append(
            f"unanswerable queries returning anything: {na.false_positives} of {na.n} "
            f"({rate(na.rate)})"
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


def render_run(summary: RunSummary, fmt: str, *, redact: bool = False) -> str:
    """`harness run` output: "json" (the summary and the record's path) or "text" (alias
    "table"): a line per repeat, latency, the metrics overall and per slice, drift and errors
    by kind."""
    # Here, not at the top: `harness metrics` renders with this module and needs none of them.
    from tabulate import tabulate

    from harness.report.diagnosis import error_lines, prepare_lines
    from harness.results.document import jsonable

    run = summary.run
    if fmt == "json":
        doc = {
            "ref": run.ref,
            "sha": run.sha,
            "record": run.record_path,
            "sandbox": sorted({rep.sandbox for rep in run.repeats if rep.sandbox is not None}),
            "repeats": len(run.repeats),
            "usable_repeats": summary.usable,
            "errors": dict(summary.errors),
            "error_kinds": [
                jsonable(replace(e, sample=None) if redact else e) for e in summary.error_kinds
            ],
            "failures": [f"{f.stage}: {f.message}" for f in run.failures],
            "latency_ms": None if summary.latency is None else jsonable(summary.latency),
            "metrics": {name: {"n": n, **values} for name, n, values in summary.scopes},
            "drift": dict(summary.drift),
            "prepare_s": {s.step: s.median_s for s in summary.prepare},
            "definition": None if run.definition is None else run.definition.to_dict(),
        }
        return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    if fmt not in ("text", "table"):  # "table": the old name, kept as an alias
        raise ValueError(f"unknown format {fmt!r}; known: text, json")
    n_queries = len(run.repeats[0].results) if run.repeats else 0
    head = f"{run.ref} ({run.sha[:8]}{'+dirty' if '+dirty' in run.sha else ''}): "
    head += f"{len(run.repeats)} repeats of {queries(n_queries)}"
    modes = {rep.sandbox for rep in run.repeats if rep.sandbox is not None}
    if modes:
        head += f"\nisolation: {', '.join(sorted(modes))}"
    if run.definition is not None:
        head += f"\nevaluation definition: sha256 {run.definition.sha256}"
    if run.build_failure is not None:
        said = run.build_failure.message
        head += "\n" + (said if said.startswith("build failed") else f"build failed: {said}")
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
        parts.append(
            "\n".join(
                [
                    f"errored answers (not scored): {kinds}",
                    *error_lines(summary.error_kinds, redact=redact),
                ]
            )
        )
    if summary.prepare:
        (line,) = prepare_lines(summary.prepare)
        parts.append(f"before the queries (not latency): {line.removeprefix('run: ')}")
    if summary.latency is not None:
        lat = summary.latency
        parts.append(
            f"latency ms over {lat.n} answers: p50 {ms(lat.p50)}, p95 {ms(lat.p95)}, "
            f"p99 {ms(lat.p99)}, max {ms(lat.max)}, mean {ms(lat.mean)}"
        )
    if summary.scopes:
        names = list(summary.scopes[0][2])
        table = [
            [
                name if name == "all" else f"slice {name}",
                str(n),
                *(f"{values[m]:.3f}" for m in names),
            ]
            for name, n, values in _distinct_scopes(summary.scopes)
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
        said = failure.message
        said = said if said.startswith(failure.stage) else f"{failure.stage}: {said}"
        lines.append(f"harness: error: {said}")
        lines += failure.log_tail
    return "".join(f"{line}\n" for line in lines)


def _distinct_scopes(
    scopes: Sequence[tuple[str, int, Mapping[str, float]]],
) -> Sequence[tuple[str, int, Mapping[str, float]]]:
    """The run's scopes without the lone implicit slice "default" ("all" again)."""
    names = [s[0] for s in scopes]
    return [s for s in scopes if s[0] != "default"] if names == ["all", "default"] else scopes

"""Text and JSON for `gold check` and `gold stats`: a report in, a string out, nothing computed.

    render_check(report, fmt="text") -> str     one renderer per format in CHECK_RENDERERS
    render_stats(stats, fmt="text") -> str      one renderer per format in STATS_RENDERERS

JSON is for machines: `schema_version`, sorted keys, two-space indent, a final newline.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from harness.errors import SHOWN_CHARS, HarnessError, clip
from harness.gold.check import ALL, CheckReport, Finding, SlicePower
from harness.gold.summary import GoldStats

SCHEMA_VERSION = 1
_CORPUS_CHECKS = ("integrity", "staleness", "winnability", "leak")


def _plural(count: int, noun: str, nouns: str | None = None) -> str:
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"


def _pick(renderers: Mapping[str, Callable[..., str]], fmt: str) -> Callable[..., str]:
    if fmt not in renderers:
        raise HarnessError(f"unknown output format {fmt!r}; use one of {', '.join(renderers)}")
    return renderers[fmt]


# --------------------------------------------------------------------------- check


def render_check(report: CheckReport, fmt: str = "text") -> str:
    return _pick(CHECK_RENDERERS, fmt)(report)


def _where(report: CheckReport, finding: Finding) -> str:
    # A field that names one item of a list (spans.d4[1], outranks[0]) says which one.
    field = f"{finding.field}: " if finding.field and "[" in finding.field else ""
    if finding.line is None:
        return field
    if report.lines_in is None:
        return f"line {finding.line}: {field}"
    return f"{report.lines_in}:{finding.line}: {field}"


def _finding_line(report: CheckReport, finding: Finding) -> str:
    subject = f"query {finding.query_id!r}: " if finding.query_id is not None else ""
    # A finding quotes the query's text: a 50 MB query is never echoed whole.
    message = clip(finding.message, 2 * SHOWN_CHARS)
    return f"  {_where(report, finding)}{finding.severity}: {clip(subject)}{message}"


def _status(report: CheckReport, check: str, findings: tuple[Finding, ...]) -> str:
    if report.corpus is None and check in _CORPUS_CHECKS:
        return "skipped (no corpus)"
    counts = [_plural(sum(f.severity == s for f in findings), s)
              for s in ("error", "warning", "info") if any(f.severity == s for f in findings)]
    if counts:
        return ", ".join(counts)
    if check == "staleness":
        return "ok (the corpus sha256 is the one the header records)"
    return "ok"


def _swing(row: SlicePower, needed: int) -> str:
    if row.min_swing is None:
        return f"never (needs {needed} answerable)" if row.answerable else "not scored"
    return f"{row.min_swing} queries ({row.share:.0%})"


def _power_table(report: CheckReport) -> list[str]:
    rows = [(r.slice, str(r.queries), str(r.answerable), _swing(r, report.min_swing))
            for r in (*report.power, report.overall)]
    head = ("slice", "queries", "answerable", "smallest callable swing")
    widths = [max(len(row[i]) for row in (head, *rows)) for i in range(4)]
    return [f"  {a:<{widths[0]}}  {b:>{widths[1]}}  {c:>{widths[2]}}  {d}".rstrip()
            for a, b, c, d in (head, *rows)]


def _check_text(report: CheckReport) -> str:
    queries = _plural(report.queries, "query", "queries")
    lines = [f"gold check: {report.source} ({report.format}, {queries}, "
             f"sha256 {report.gold_hash[:12]})"]
    if report.corpus is not None:
        sha = f", sha256 {report.corpus.sha256[:12]}" if report.corpus.sha256 else ""
        present = (f"; {report.labelled_present} of {report.labelled_ids} labelled documents "
                   "exist")
        lines.append(f"corpus: {report.corpus.name} ({_plural(report.documents or 0, 'document')}"
                     f"{sha}){present}")
    lines.append("")
    for check, findings in report.grouped().items():
        status = _status(report, check, findings)
        if check == "power":
            status += (f" (McNemar exact at alpha {report.alpha:g}: a net swing under "
                       f"{report.min_swing} queries is never significant)")
        lines.append(f"{check + ':':<13}{status}")
        if check == "power":
            lines += _power_table(report)
        lines += [_finding_line(report, f) for f in findings
                  if not (check == "integrity" and report.corpus is None)]
    errors, warnings = report.count("error"), report.count("warning")
    verdict = ("fix the errors, then run `harness gold check` again" if errors else
               "the gold set can be used")
    lines += ["", f"result: {_plural(errors, 'error')}, {_plural(warnings, 'warning')}: {verdict}"]
    return "\n".join(lines) + "\n"


def _power_json(row: SlicePower) -> dict[str, object]:
    return {"slice": row.slice, "queries": row.queries, "answerable": row.answerable,
            "min_swing": row.min_swing, "share": row.share}


def _finding_json(finding: Finding) -> dict[str, object]:
    return {"severity": finding.severity, "check": finding.check, "query_id": finding.query_id,
            "line": finding.line, "field": finding.field, "message": finding.message}


def _check_json(report: CheckReport) -> str:
    corpus = None
    if report.corpus is not None:
        corpus = {"name": report.corpus.name, "sha256": report.corpus.sha256,
                  "documents": report.documents, "labelled_ids": report.labelled_ids,
                  "labelled_present": report.labelled_present}
    recorded = None if report.recorded is None else {"name": report.recorded.name,
                                                     "sha256": report.recorded.sha256}
    value = {
        "schema_version": SCHEMA_VERSION,
        "ok": report.ok,
        "gold": {"source": report.source, "format": report.format, "hash": report.gold_hash,
                 "queries": report.queries, "lines_in": report.lines_in, "recorded": recorded},
        "corpus": corpus,
        "alpha": report.alpha,
        "min_swing": report.min_swing,
        "counts": {s: report.count(s) for s in ("error", "warning", "info")},
        "checks": {c: [_finding_json(f) for f in fs] for c, fs in report.grouped().items()},
        "power": [_power_json(r) for r in report.power if r.slice != ALL],
        "overall": _power_json(report.overall),
    }
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


CHECK_RENDERERS: dict[str, Callable[[CheckReport], str]] = {"text": _check_text,
                                                             "json": _check_json}


# --------------------------------------------------------------------------- stats


def render_stats(stats: GoldStats, fmt: str = "text") -> str:
    return _pick(STATS_RENDERERS, fmt)(stats)


def _stats_text(stats: GoldStats) -> str:
    lines = [f"{stats.source} ({stats.format}, sha256 {stats.hash[:12]}): "
             f"{stats.queries} queries, {stats.answerable} answerable, {stats.unanswerable} "
             f"unanswerable ({stats.unanswerable_share:.1%})", ""]
    rows = [(s.slice, str(s.queries), str(s.answerable), str(s.unanswerable))
            for s in stats.slices]
    head = ("slice", "queries", "answerable", "unanswerable")
    widths = [max(len(row[i]) for row in (head, *rows)) for i in range(4)]
    lines += [f"  {a:<{widths[0]}}  {b:>{widths[1]}}  {c:>{widths[2]}}  {d:>{widths[3]}}"
              for a, b, c, d in (head, *rows)]
    lines.append("")
    if stats.relevant_min is None:
        lines.append("relevant per answerable query: no answerable query")
    else:
        lines.append(f"relevant per answerable query: min {stats.relevant_min}, median "
                     f"{stats.relevant_median:g}, mean {stats.relevant_mean:.2f}, max "
                     f"{stats.relevant_max}")
        lines += [f"  {n} relevant: {_plural(count, 'query', 'queries')}"
                  for n, count in stats.relevant_histogram.items()]
    grades = ", ".join(f"grade {g}: {count}" for g, count in stats.grades.items()) or "none"
    lines.append(f"judgements: {stats.judgements} ({grades})")
    lines.append(f"with outranks pairs: {stats.with_outranks}; with a derivation: "
                 f"{stats.with_derivation}")
    if stats.machine_grades:
        lines.append(f"machine grades kept apart (not scored): {stats.machine_grades}")
    if stats.agreement is not None:
        lines.append(stats.agreement.describe())
    return "\n".join(lines) + "\n"


def _stats_json(stats: GoldStats) -> str:
    value = {
        "schema_version": SCHEMA_VERSION,
        "source": stats.source, "format": stats.format, "hash": stats.hash,
        "queries": stats.queries, "answerable": stats.answerable,
        "unanswerable": stats.unanswerable, "unanswerable_share": stats.unanswerable_share,
        "slices": [{"slice": s.slice, "queries": s.queries, "answerable": s.answerable,
                    "unanswerable": s.unanswerable} for s in stats.slices],
        "relevant_per_query": {"histogram": {str(k): v for k, v in
                                             stats.relevant_histogram.items()},
                               "min": stats.relevant_min, "median": stats.relevant_median,
                               "mean": stats.relevant_mean, "max": stats.relevant_max},
        "grades": {str(k): v for k, v in stats.grades.items()},
        "judgements": stats.judgements,
        "with_outranks": stats.with_outranks, "with_derivation": stats.with_derivation,
    }
    if stats.machine_grades:  # only then: the document of a set without labels is unchanged
        value["machine_grades"] = stats.machine_grades
    if stats.agreement is not None:
        a = stats.agreement
        value["agreement"] = {"pairs": a.pairs, "same": a.same, "kappa_grades": a.kappa_grades,
                              "kappa_relevant": a.kappa_relevant}
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


STATS_RENDERERS: dict[str, Callable[[GoldStats], str]] = {"text": _stats_text,
                                                           "json": _stats_json}

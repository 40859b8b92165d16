"""A Watch rendered: text (the terminal), Markdown, JSON.  Formats; computes nothing.

    render_watch(watch, "text" | "markdown" | "json", measured_now=(), failed=()) -> str
    watch_document(watch, ...) -> dict     what report.json holds (schema_version 1)

The history page with the changes drawn is `harness.history.render` with `History.changes`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tabulate import tabulate

from harness.bisect.render import bisection_document
from harness.bisect.run import Commit, Outcome
from harness.watch.changepoint import Kind
from harness.watch.run import Finding, Watch

SCHEMA_VERSION = 1


def _level(x: float, latency: bool) -> str:
    return f"{x:.2f} ms" if latency else f"{x:.3f}"


def _size(f: Finding) -> str:
    c = f.change
    if f.latency:
        return f"{c.ratio:.2f}x"
    return f"{c.delta:+.3f}"


def describe(f: Finding) -> str:
    """A finding in a few words, as the history page labels its band."""
    culprit = f.culprit
    who = f", {culprit.short}" if culprit is not None else ""
    return f"{f.change.kind} {_size(f)}: {_status(f)}{who}"


def _status(f: Finding) -> str:
    if f.confirmed:
        return "regression" if f.regression else "improvement"
    return "not confirmed"


def _culprit(f: Finding) -> str:
    if not f.confirmed:
        return "-"
    if f.change.kind is Kind.DRIFT:
        return f"drift over {f.commits} commits"
    culprit = f.culprit
    if culprit is not None:
        return f"{culprit.short} {culprit.subject[:40]}"
    b = f.bisection
    if b is not None and b.outcome is Outcome.AMBIGUOUS:
        return "one of " + ", ".join(c.short for c in b.culprits)
    return f"not found ({b.outcome if b is not None else '-'})"


def _row(f: Finding) -> list[str]:
    c = f.change
    return [
        c.series,
        str(c.kind),
        f"{f.before.short}..{f.after.short}",
        str(f.commits),
        f"{_level(c.before, f.latency)} -> {_level(c.after, f.latency)} ({_size(f)})",
        f"{c.p:.4f}",
        str(f.judgement.verdict),
        _status(f),
        _culprit(f),
    ]


_HEADERS = [
    "series",
    "kind",
    "range",
    "commits",
    "level",
    "scan p",
    "fresh compare",
    "status",
    "culprit",
]


def _summary(w: Watch, measured_now: Sequence[Commit], failed: Sequence[Commit]) -> list[str]:
    some = next(iter(w.detections.values()), None)
    rate = f"{some.false_alarm:g}" if some is not None else "-"
    lines = [
        f"watch: {len(w.path)} commits on the first-parent path "
        f"({w.path[0].short}..{w.path[-1].short}), {len(w.measured)} measured "
        f"({len(measured_now)} now); {len(w.series)} series scanned, false-alarm rate "
        f"{rate} each",
    ]
    bands = ", ".join(  # latency's band is a ratio - 1: 0.1 is 10% slower or faster
        f"{name} ±{d.band * 100:g}%" if name.startswith("latency") else f"{name} ±{d.band:g}"
        for name, d in w.detections.items()
    )
    lines.append(f"least step looked for: {bands}")
    if failed:
        lines.append(
            "could not be measured (no usable repeat: see each run record): "
            + ", ".join(c.short for c in failed)
        )
    return lines


def _verdict_line(w: Watch) -> str:
    regressions = w.regressions
    confirmed = w.confirmed
    if regressions:
        return (
            f"{len(regressions)} confirmed regression{'s' * (len(regressions) != 1)}"
            f" ({len(confirmed)} confirmed changes, {len(w.findings)} flagged)"
        )
    if confirmed:
        return f"no regression; {len(confirmed)} confirmed improvement(s)"
    if w.findings:
        return f"no confirmed change: {len(w.findings)} flag(s), none called by the fresh compare"
    return "no change found"


def _details(w: Watch) -> list[str]:
    lines = []
    for f in w.findings:
        head = f"{f.change.series} {f.change.kind} {f.before.short}..{f.after.short}"
        lines.append(f"{head}: {f.judgement.verdict}: {f.judgement.reason}")
        if f.change.kind is Kind.DRIFT:
            lines.append(
                f"  no single step: the largest between adjacent commits was "
                f"{_jump(f)}, the whole range {_size(f)}"
            )
        if f.saved:
            lines.append(f"  fresh compare: {f.saved}")
        if f.bisection is not None:
            b = f.bisection
            lines.append(
                f"  bisect inside the range: {b.outcome}, {len(b.steps)} compares: {b.reason}"
            )
    return lines


def _jump(f: Finding) -> str:
    j = f.change.largest_jump
    if f.latency:
        import math

        return f"{math.exp(j):.3f}x"
    return f"{j:+.3f}"


def _text(w: Watch, measured_now: Sequence[Commit], failed: Sequence[Commit]) -> str:
    lines = [*_summary(w, measured_now, failed), "", _verdict_line(w)]
    if w.findings:
        rows = [_row(f) for f in w.findings]
        lines += ["", tabulate(rows, headers=_HEADERS, tablefmt="simple", disable_numparse=True)]
        lines += ["", *_details(w)]
    return "\n".join(lines) + "\n"


def _markdown(w: Watch, measured_now: Sequence[Commit], failed: Sequence[Commit]) -> str:
    lines = ["## harness watch", "", *_summary(w, measured_now, failed), ""]
    lines += [f"**{_verdict_line(w)}**", ""]
    if w.findings:
        rows = [_row(f) for f in w.findings]
        lines += [tabulate(rows, headers=_HEADERS, tablefmt="github", disable_numparse=True), ""]
        lines += [f"- {line.strip()}" for line in _details(w)]
    return "\n".join(lines) + "\n"


def _commit(c: Commit) -> dict[str, str]:
    return {"sha": c.sha, "subject": c.subject}


def watch_document(
    w: Watch, measured_now: Sequence[Commit] = (), failed: Sequence[Commit] = ()
) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "path": [_commit(c) for c in w.path],
        "measured": list(w.measured),
        "measured_now": [c.sha for c in measured_now],
        "failed": [c.sha for c in failed],
        "series": list(w.series),
        "detection": {
            name: {"false_alarm": d.false_alarm, "band": d.band, "sims": d.sims, "seed": d.seed}
            for name, d in w.detections.items()
        },
        "verdict": _verdict_line(w),
        "regressions": len(w.regressions),
        "findings": [
            {
                "series": f.change.series,
                "kind": str(f.change.kind),
                "before": _commit(f.before),
                "after": _commit(f.after),
                "commits": f.commits,
                "level_before": f.change.before,
                "level_after": f.change.after,
                "delta": f.change.delta,
                "z": f.change.z,
                "scan_p": f.change.p,
                "largest_jump": f.change.largest_jump,
                "regression": f.regression,
                "confirmed": f.confirmed,
                "verdict": str(f.judgement.verdict),
                "reason": f.judgement.reason,
                "comparison": f.saved,
                "culprit": None if f.culprit is None else _commit(f.culprit),
                "bisection": None if f.bisection is None else bisection_document(f.bisection),
            }
            for f in w.findings
        ],
    }


def _json(w: Watch, measured_now: Sequence[Commit], failed: Sequence[Commit]) -> str:
    return json.dumps(watch_document(w, measured_now, failed), indent=2) + "\n"


RENDERERS: Mapping[str, Callable[[Watch, Sequence[Commit], Sequence[Commit]], str]] = {
    "text": _text,
    "markdown": _markdown,
    "json": _json,
}


def render_watch(
    w: Watch, fmt: str, measured_now: Sequence[Commit] = (), failed: Sequence[Commit] = ()
) -> str:
    try:
        renderer = RENDERERS[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(RENDERERS)}") from None
    return renderer(w, measured_now, failed)

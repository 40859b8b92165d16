"""Errored answers, per side and kind, as report lines: counts, HTTP statuses, one sample of what
the service said, and the advice that fits (`harness.verdict.validity.error_kinds` decides it).

    error_lines(summaries, redact=False) -> [str]

Pure.  With `redact` the sample is left out (the body of an error answer may quote a document
or the query), and so it is when the Comparison was redacted before (its sample is None).
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.verdict.comparison import ErrorKindSummary


def error_lines(summaries: Sequence[ErrorKindSummary], *, redact: bool = False) -> list[str]:
    lines = []
    for e in summaries:
        head = f"{e.side}: {e.kind} {e.count} of {e.asked} answers"
        if e.statuses:
            head += " (" + ", ".join(f"HTTP {s}: {n}" for s, n in e.statuses) + ")"
        if redact or e.sample is None:
            head += "; sample body left out (--redact)" if redact else ""
        else:
            said = " ".join(e.sample.split())
            head += f"; e.g. {e.sample_query}: {said}"
        lines.append(head)
        if e.advice:
            lines.append(f"{e.side}: what to check: {e.advice}")
    return lines

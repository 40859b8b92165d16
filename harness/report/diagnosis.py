"""What a report says beside the numbers: errored answers, and the steps run before the queries.

    error_lines(summaries, redact=False) -> [str]   per side and kind: counts, HTTP statuses, one
                                                    sample of what the service said, the advice
                                                    (`harness.verdict.validity.error_kinds`)
    prepare_lines(steps) -> [str]                   per side: each prepare command's and loader
                                                    phase's median seconds, apart from latency

Pure.  With `redact` the sample is left out (the body of an error answer may quote a document
or the query), and so it is when the Comparison was redacted before (its sample is None).
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.verdict.comparison import ErrorKindSummary, PrepareStep


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


def prepare_lines(steps: Sequence[PrepareStep]) -> list[str]:
    by_side: dict[str, list[PrepareStep]] = {}
    for step in steps:
        by_side.setdefault(step.side, []).append(step)
    lines = []
    for side, found in by_side.items():
        rounds = max(s.repeats for s in found)
        timed = ", ".join(f"{s.step} {s.median_s:.3f} s" for s in found)
        median = "median over " + ("1 boot" if rounds == 1 else f"{rounds} boots")
        lines.append(f"{side}: {timed} ({median})")
    return lines

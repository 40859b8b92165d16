"""The "Latency under load" section (compare --rate): one row per rate and side, the verdict
per rate, what the SLO found, and whether the client kept its schedule.  Formats only."""

from __future__ import annotations

from harness.report.layout import Block
from harness.report.numbers import ms
from harness.verdict.comparison import Comparison
from harness.verdict.load import LoadSide


def _cell(value: float | None) -> str:
    return "-" if value is None else ms(value)


def _row(rate: float, s: LoadSide, slo: bool) -> tuple[str, ...]:
    cells: tuple[str, ...] = (
        f"{rate:g}/s",
        s.side,
        f"{s.achieved:,.1f}/s",
        _cell(s.p50),
        _cell(s.p95),
        _cell(s.p99),
        f"{s.errors}",
        f"{s.timeouts}",
        _cell(s.lag_p99),
    )
    if slo:
        cells += ("yes" if s.meets_slo else "NO",)
    return cells


def load_blocks(c: Comparison, mark: str) -> list[Block]:
    """Nothing without --rate."""
    load = c.load
    if load is None:
        return []
    title = f"Latency under load, ms from each request's intended send time (open loop){mark}"
    slo = load.slo is not None
    headers: tuple[str, ...] = (
        "rate", "ref", "answered", "p50", "p95", "p99", "errors", "timeouts", "send lag p99"
    )
    headers += (f"SLO {load.slo}",) if slo else ()
    rows = tuple(
        _row(r.rate, side, slo) for r in load.rates for side in (r.baseline, r.candidate)
    )
    align = ("left", "left", *["right"] * (len(headers) - 2))
    lines = [
        f"{load.statistic} candidate/baseline at {r.rate:g}/s, paired over rounds: {r.words}: "
        f"{r.verdict.value}"
        + ("" if r.test is None else f"; per-round ratios "
           f"{', '.join(f'{x:.2f}' for x in r.test.rounds)}")
        for r in load.rates
    ]
    lines += list(load.slo_words)
    lines += [r.lag_note for r in load.rates if r.lag_note]
    lines.append(
        f"{load.arrivals} arrivals (seed {load.seed}), the same schedule for both refs; "
        f"{load.duration} a round, rounds alternating baseline, candidate, candidate, baseline"
    )
    return [
        Block("heading", (title,)),
        Block("table", headers=headers, rows=rows, align=align),
        Block("lines", tuple(lines)),
    ]

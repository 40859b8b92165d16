"""The "Resources" section of the comparison page: what each side cost to build and run, and the
paired peak-RSS and time-to-ready rows (`harness.verdict.resources`).  It formats; it computes
nothing.

    resource_verdicts(comparison) -> (("peak RSS: regressed", reason), ...)   beside the verdicts
    resource_blocks(comparison, mark) -> [Block]                               the section
"""

from __future__ import annotations

from harness.report.layout import Block
from harness.verdict.comparison import Comparison
from harness.verdict.resources import ResourceSide

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def size(n: int | None) -> str:
    """Bytes in binary units with one decimal ("212.4 MiB"); "-" when unknown."""
    if n is None:
        return "-"
    value, unit = float(n), 0
    while value >= 1024 and unit < len(_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return f"{n} B" if unit == 0 else f"{value:.1f} {_UNITS[unit]}"


def _num(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def resource_verdicts(c: Comparison) -> tuple[tuple[str, str], ...]:
    """One verdict line per paired row ("peak RSS: regressed", its reason); none when the
    sides recorded no cost."""
    if c.resources is None:
        return ()
    return tuple((f"{r.name}: {r.verdict.value}", r.reason) for r in c.resources.rows)


def _row(side: ResourceSide) -> tuple[str, ...]:
    return (
        side.side,
        str(side.boots),
        _num(side.ready_s, ".2f"),
        size(side.peak_rss_bytes),
        _num(side.cpu_ms_per_query, ".2f"),
        _num(side.build_seconds, ".2f"),
        size(side.build_bytes),
    )


def resource_blocks(c: Comparison, mark: str) -> list[Block]:
    """The section: per side the medians over its boots and its build, then each paired row."""
    res = c.resources
    if res is None:
        return []
    headers = (
        "ref",
        "boots",
        "ready, s",
        "peak RSS",
        "CPU ms/query",
        "build, s",
        "build size",
    )
    table = Block(
        "table",
        headers=headers,
        rows=(_row(res.baseline), _row(res.candidate)),
        align=("left", *["right"] * 6),
    )
    lines = [
        f"candidate/baseline {r.name} (±{r.tolerance:.0%} is no difference): {r.reason}: "
        f"{r.verdict.value}"
        for r in res.rows
    ]
    lines.append(
        "medians over each side's boots; peak RSS of the service's whole process tree (sampled, "
        "and each process's own kernel peak); CPU from ready to teardown over the answers; "
        "a cached build shows the time and size recorded when it ran"
    )
    heading = Block("heading", (f"Resources (what each ref costs to build and run){mark}",))
    return [heading, table, Block("lines", tuple(lines))]

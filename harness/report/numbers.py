"""How a report writes a number: rates and metric values with 3 decimals, p with 2 significant
digits or "<0.0001", latencies in ms with 1 decimal, counts of queries in words."""

from __future__ import annotations

from collections.abc import Sequence

from harness.values.types import FloorRow


def rate(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def signed(x: float) -> str:
    return f"{x:+.3f}"


def p_value(p: float | None) -> str:
    """Two significant digits ("0.031", "0.00049", "1.0"), or "<0.0001"."""
    if p is None:
        return "-"
    return "<0.0001" if p < 0.0001 else f"{p:#.2g}"


def ms(x: float) -> str:
    return f"{x:.1f}"


def rank(rank: int | None) -> str:
    return "-" if rank is None else str(rank)


def queries(n: int) -> str:
    return f"{n} quer{'y' if n == 1 else 'ies'}"


def floor_lines(rows: Sequence[FloorRow]) -> tuple[str, ...]:
    """One line per floor, failing ones in capitals first: "FAILED overall mrr@10 0.700 (n=180),
    at least 0.78"."""
    ordered = sorted(rows, key=lambda r: r.passed)
    return tuple(
        f"{'ok' if r.passed else 'FAILED'}: {r.scope} {r.metric} "
        + ("not measured" if r.value is None else f"{r.value:.3f}")
        + f" (n={r.n}), {r.bound} {r.limit:g}"
        for r in ordered
    )

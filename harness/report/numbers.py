"""How a report writes a number: rates and metric values with 3 decimals, p with 2 significant
digits or "<0.0001", latencies in ms with 1 decimal, counts of queries in words."""

from __future__ import annotations


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

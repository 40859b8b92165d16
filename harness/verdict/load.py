"""Latency under load (compare --rate, --slo): per rate and side, percentiles from each request's
intended send time, and a paired verdict on the tail over rounds; the highest rate each side
sustains within the objective; whether the client kept its schedule.

    slo = parse_slo("p99<50ms")                        # Slo(99, 50.0); ValueError with an example
    load = load_verdict(rounds, slo=slo, tolerance=0.10, seed=7, arrivals="poisson",
                        duration="10s")

The rule at each rate is `harness.verdict.latency.latency_test` on the rounds' ratios of the
tail (the SLO's percentile, else p99), candidate over baseline, round k of the candidate paired
with round k of the baseline (played next to each other: baseline, candidate, candidate,
baseline, ...): rounds are the level, as for the latency verdict at one query in flight.
Pure, like the rest of harness.verdict.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from harness.values.types import LoadRound, Verdict
from harness.verdict.latency import LatencyTest, interval_words, latency_test

PERCENTILES = (50, 90, 95, 99)
MAX_ERROR_RATE = 0.01  # a side that fails 1% of its requests at a rate does not sustain it
LAG_FLOOR_MS = 5.0
LAG_SHARE = 0.10
"""The client kept its schedule at a rate when its p99 send lag is at most the larger of
LAG_FLOOR_MS and LAG_SHARE of the mean gap between requests (1/rate)."""

_SLO = re.compile(r"^\s*p(\d+)\s*<\s*(\d+(?:\.\d+)?)\s*(ms|s)\s*$")
SLO_EXAMPLE = "--slo p99<50ms (a percentile p50, p90, p95 or p99, '<', a time in ms or s)"


@dataclass(frozen=True)
class Slo:
    """A latency objective: the `percentile` of latency (from intended send time) below
    `limit_ms`, with fewer than MAX_ERROR_RATE of the requests failed."""

    percentile: int
    limit_ms: float

    def __str__(self) -> str:
        return f"p{self.percentile}<{self.limit_ms:g}ms"


def parse_slo(text: str) -> Slo:
    """--slo's value, strictly: "p99<50ms", "p95<0.2s".  ValueError names what is wrong."""
    match = _SLO.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not an objective: {SLO_EXAMPLE}")
    pct, number, unit = match.groups()
    if int(pct) not in PERCENTILES:
        raise ValueError(f"{text!r}: p{pct} is not one of p50, p90, p95, p99: {SLO_EXAMPLE}")
    limit = float(number) * (1000.0 if unit == "s" else 1.0)
    if not (math.isfinite(limit) and limit > 0):
        raise ValueError(f"{text!r}: the limit must be more than 0: {SLO_EXAMPLE}")
    return Slo(int(pct), limit)


def lag_limit_ms(rate: float) -> float:
    """The most p99 send lag at `rate` for the schedule to count as kept."""
    return max(LAG_FLOOR_MS, LAG_SHARE * 1000.0 / rate)


@dataclass(frozen=True)
class LoadSide:
    """One side at one rate, over its rounds: percentiles (ms, from intended send time) of every
    answered request pooled, the answered requests per second, errors and timeouts counted, the
    client's p99 send lag, and whether the objective held (None: no --slo)."""

    side: str
    rounds: int
    sent: int
    answered: int
    errors: int
    timeouts: int
    p50: float | None
    p95: float | None
    p99: float | None
    tail: float | None  # the verdict's percentile (the SLO's, else p99)
    achieved: float  # answered requests per second, mean over rounds
    lag_p99: float | None
    meets_slo: bool | None = None
    failure: str | None = None

    @property
    def error_rate(self) -> float:
        return (self.errors + self.timeouts) / self.sent if self.sent else 1.0


@dataclass(frozen=True)
class LoadRate:
    """One rate: both sides, the paired tail verdict over rounds, and whether the client kept
    the schedule (`lag_note`, None when it did)."""

    rate: float
    baseline: LoadSide
    candidate: LoadSide
    test: LatencyTest | None
    verdict: Verdict
    words: str
    lag_note: str | None = None


@dataclass(frozen=True)
class Load:
    """compare --rate's findings: every rate, the SLO's findings per side, one verdict."""

    rates: tuple[LoadRate, ...]
    statistic: str  # "p99", or the SLO's percentile
    arrivals: str
    duration: str
    seed: int
    verdict: Verdict
    words: str
    slo: str | None = None
    baseline_sustains: float | None = None  # the highest tested rate within the SLO
    candidate_sustains: float | None = None
    slo_words: tuple[str, ...] = ()


def _pct(values: Sequence[float], q: int) -> float | None:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else None


def _side(name: str, rounds: Sequence[LoadRound], q: int, slo: Slo | None) -> LoadSide:
    lat = [v for r in rounds for v in r.latencies_ms]
    lags = [v for r in rounds for v in r.lags_ms]
    played = [r for r in rounds if r.failure is None]
    achieved = [len(r.latencies_ms) / r.elapsed_s for r in played if r.elapsed_s > 0]
    side = LoadSide(
        side=name,
        rounds=len(played),
        sent=sum(r.sent for r in rounds),
        answered=len(lat),
        errors=sum(r.errors for r in rounds),
        timeouts=sum(r.timeouts for r in rounds),
        p50=_pct(lat, 50),
        p95=_pct(lat, 95),
        p99=_pct(lat, 99),
        tail=_pct(lat, q),
        achieved=float(np.mean(achieved)) if achieved else 0.0,
        lag_p99=_pct(lags, 99),
        failure=next((r.failure for r in rounds if r.failure is not None), None),
    )
    if slo is None:
        return side
    meets = (
        side.failure is None
        and side.tail is not None
        and side.tail < slo.limit_ms
        and side.error_rate < MAX_ERROR_RATE
    )
    return replace(side, meets_slo=meets)


def _rate_row(rate: float, rounds: Sequence[LoadRound], q: int, slo: Slo | None,
              tolerance: float) -> LoadRate:
    by = {s: sorted((r for r in rounds if r.side == s), key=lambda r: r.index)
          for s in ("baseline", "candidate")}
    base, cand = (_side(s, by[s], q, slo) for s in ("baseline", "candidate"))
    ratios = []
    for b, c in zip(by["baseline"], by["candidate"], strict=False):
        tb, tc = _pct(b.latencies_ms, q), _pct(c.latencies_ms, q)
        if tb is not None and tc is not None and tb > 0 and tc > 0:
            ratios.append(tc / tb)
    test = latency_test(ratios, tolerance=tolerance) if ratios else None
    failed = base.failure or cand.failure
    if failed is not None:
        verdict, words = Verdict.INVALID, f"a round could not be measured: {failed}"
    elif test is None:
        verdict, words = Verdict.INVALID, "no round answered on both sides"
    else:
        verdict = test.verdict
        words = f"p{q} {interval_words(test.ratio, test.ci_low, test.ci_high)} at {rate:g}/s"
        if verdict is Verdict.INCONCLUSIVE:
            words += f" ({len(ratios)} rounds: more --rate-rounds would tell)"
    limit = lag_limit_ms(rate)
    lagged = [s for s in (base, cand) if s.lag_p99 is not None and s.lag_p99 > limit]
    note = None
    if lagged:
        worst = max(s.lag_p99 or 0.0 for s in lagged)
        note = (
            f"the client could not keep the schedule at {rate:g}/s on this machine (p99 send "
            f"lag {worst:.1f} ms, above {limit:.1f} ms): the numbers at that rate measure the "
            "client too"
        )
    return LoadRate(rate, base, cand, test, verdict, words, note)


def _sustains(rows: Sequence[LoadRate], side: str, slo: Slo) -> tuple[float | None, str]:
    """The highest tested rate below the first one the side misses, and the words for it."""
    best = None
    for row in rows:
        one: LoadSide = getattr(row, side)
        if not one.meets_slo:
            if one.failure is not None:
                why = f"not measured ({one.failure})"
            elif one.error_rate >= MAX_ERROR_RATE:
                why = f"{one.error_rate:.1%} of requests failed"
            else:
                why = f"p{slo.percentile} {one.tail:,.0f} ms"
            return best, f"{side} misses the SLO ({slo}) from {row.rate:g}/s: {why}"
        best = row.rate
    top = rows[-1].rate if rows else 0.0
    return best, f"{side} meets the SLO ({slo}) at every tested rate, up to {top:g}/s"


def load_verdict(
    rounds: Sequence[LoadRound],
    *,
    slo: Slo | None,
    tolerance: float,
    seed: int,
    arrivals: str,
    duration: str,
) -> Load:
    """The load phase's findings: per rate, both sides and the tail ratio's verdict; overall,
    REGRESSED when any rate regressed (each named), IMPROVED when any improved and none
    regressed, NO_DIFFERENCE when every rate is, INVALID when a rate could not be measured,
    else INCONCLUSIVE."""
    q = slo.percentile if slo is not None else 99
    rates = sorted({r.rate for r in rounds})
    rows = tuple(
        _rate_row(rate, [r for r in rounds if r.rate == rate], q, slo, tolerance)
        for rate in rates
    )
    verdicts = [row.verdict for row in rows]
    pick = next(
        (v for v in (Verdict.REGRESSED, Verdict.IMPROVED, Verdict.INVALID) if v in verdicts),
        Verdict.NO_DIFFERENCE
        if verdicts and all(v is Verdict.NO_DIFFERENCE for v in verdicts)
        else Verdict.INCONCLUSIVE,
    )
    shown = [row.words for row in rows if row.verdict is pick] or [row.words for row in rows]
    words = "; ".join(shown) if rows else "no rate was measured"
    load = Load(rows, f"p{q}", arrivals, duration, seed, pick, words)
    if slo is None:
        return load
    b, b_words = _sustains(rows, "baseline", slo)
    c, c_words = _sustains(rows, "candidate", slo)
    return replace(load, slo=str(slo), baseline_sustains=b, candidate_sustains=c,
                   slo_words=(b_words, c_words))

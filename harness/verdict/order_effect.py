"""The order effect within time-paired rounds: how much slower the second request of a
back-to-back pair is than the first, estimated from a compare's own data.

    order_effect(rounds) -> OrderEffect | None     rounds: per round, (log ratios, baseline first)

Each query q of round r gives d = log(candidate / baseline latency), sent as a pair whose order
`harness.replay.order` balanced within the round.  With an order effect o (the log of second /
first) d is delta_r + o when the baseline went first (the candidate second) and delta_r - o when
the candidate did, so within a round

    o_r = (mean d | baseline first - mean d | candidate first) / 2
    var(o_r) = (s2_bf / n_bf + s2_cf / n_cf) / 4      (s2: the sample variances)

removes the round's candidate/baseline difference delta_r and its boots; the rounds' o_r are
combined by inverse variance with a normal interval (each round holds hundreds of pairs).  The
order was randomised per round, so the estimate is unbiased whatever the queries are.  Shown
as a ratio, exp(o): 1.043 is "the second of a pair is 4.3% slower".

Pure: no I/O, no randomness.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np


@dataclass(frozen=True)
class OrderEffect:
    """Second-of-pair / first-of-pair latency (geometric), its CI, and what it rests on."""

    ratio: float
    low: float
    high: float
    pairs: int
    rounds: int
    confidence: float = 0.95


def order_effect(
    rounds: Sequence[tuple[Sequence[float], Sequence[bool]]], confidence: float = 0.95
) -> OrderEffect | None:
    """The order effect over `rounds`, each (d, baseline_first) aligned per query; None when no
    round has two pairs of each order with any spread (nothing to estimate it from)."""
    estimates, weights, pairs = [], [], 0
    for d, first in rounds:
        values, flags = np.asarray(d, dtype=np.float64), np.asarray(first, dtype=bool)
        if values.shape != flags.shape:
            raise ValueError("each round needs one order flag per log ratio")
        bf, cf = values[flags], values[~flags]
        if bf.size < 2 or cf.size < 2:
            continue
        var = (bf.var(ddof=1) / bf.size + cf.var(ddof=1) / cf.size) / 4
        if not var > 0:
            continue
        estimates.append((bf.mean() - cf.mean()) / 2)
        weights.append(1 / var)
        pairs += values.size
    if not estimates:
        return None
    w = np.asarray(weights)
    o = float(np.dot(w, estimates) / w.sum())
    half = NormalDist().inv_cdf(0.5 + confidence / 2) * math.sqrt(1 / w.sum())
    return OrderEffect(
        ratio=math.exp(o),
        low=math.exp(o - half),
        high=math.exp(o + half),
        pairs=pairs,
        rounds=len(estimates),
        confidence=confidence,
    )


def order_words(effect: OrderEffect) -> str:
    """ "the second of a pair is 4.3% slower than the first (95% CI 3.8% to 4.7%), over 240
    pairs in 3 rounds" (faster when below 1)."""

    def pct(x: float) -> str:
        return f"{(x - 1) * 100:+.1f}%"

    way = "slower" if effect.ratio >= 1 else "faster"
    return (
        f"the second of a pair is {abs(effect.ratio - 1) * 100:.1f}% {way} than the first "
        f"({effect.confidence:.0%} CI {pct(effect.low)} to {pct(effect.high)}), over "
        f"{effect.pairs} pairs in {effect.rounds} round{'s' if effect.rounds != 1 else ''}"
    )

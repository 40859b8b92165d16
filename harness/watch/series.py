"""The series `harness watch` scans, from the history's points.  Pure.

    series = build(points, order, metrics)   # one per metric, then LATENCY

Each commit of `order` (oldest first) that has points contributes every usable repeat of every
record measured on it: per metric, the repeat's mean over the gold queries
(`Point.repeat_means`); for latency, the log of each boot's p50 in ms, so that a step is a
ratio.  A commit without a value for a series is left out of that series only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from harness.history.points import Point
from harness.history.table import LATENCY
from harness.watch.changepoint import Series


def build(points: Iterable[Point], order: Sequence[str], metrics: Sequence[str]) -> list[Series]:
    by_sha: dict[str, list[Point]] = {}
    for p in points:
        by_sha.setdefault(p.sha, []).append(p)
    out = []
    for name in (*metrics, LATENCY):
        shas, values = [], []
        for sha in order:
            repeats: list[float] = []
            for p in by_sha.get(sha, ()):
                if name == LATENCY:
                    repeats += [math.log(ms) for ms in p.latency_p50s if ms > 0]
                else:
                    repeats += p.repeat_means.get(name, ())
            if repeats:
                shas.append(sha)
                values.append(tuple(repeats))
        if len(shas) >= 2:
            out.append(Series(name, tuple(shas), tuple(values), log_scale=name == LATENCY))
    return out

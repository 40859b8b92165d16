"""The arrival schedule of an open-loop load round (compare --rate): when each request is meant to
leave, fixed before anything is sent and the same for both refs.  Pure: seeded, no clock.

    parse_rates("10,80") -> (10.0, 80.0)                   --rate's value (ValueError: why)
    parse_duration("10s") -> RateDuration(seconds=10.0)    --rate-duration's: a time or a count
    arrival_schedule(80.0, 800, seed=7, arrivals="poisson") -> (0.0, 0.0131, ...)  seconds

Why fixed in advance: a closed loop (the next request when the last answer came) slows down
with the service and so never sees the queue a slow service builds (coordinated omission).
Here the schedule says when each request was due, whatever the service did, and latency is
counted from that intended time (`harness.replay.open_loop`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

ARRIVALS = ("poisson", "constant")
MOST_RATE = 10_000.0  # requests/s: far past what one Python client can schedule on time
MOST_REQUESTS = 1_000_000


def parse_rates(text: str) -> tuple[float, ...]:
    """--rate's value: requests per second, comma-separated, each > 0 (sorted, duplicates
    dropped).  ValueError says what is wrong, with an example."""
    rates = []
    for part in text.split(","):
        try:
            rate = float(part.strip().removesuffix("/s"))
        except ValueError:
            raise ValueError(f"{part.strip()!r} is not a rate: give requests per second, e.g. "
                             "--rate 10,80") from None
        if not (math.isfinite(rate) and 0 < rate <= MOST_RATE):
            raise ValueError(f"a rate must be above 0 and at most {MOST_RATE:.0f}/s, not "
                             f"{part.strip()!r} (e.g. --rate 10,80)")
        rates.append(rate)
    return tuple(sorted(set(rates)))


@dataclass(frozen=True)
class RateDuration:
    """How long each load round lasts: `seconds` of schedule, or a count of `requests`."""

    seconds: float | None = None
    requests: int | None = None

    def count(self, rate: float) -> int:
        """The requests of one round at `rate`: at least 1."""
        if self.requests is not None:
            return self.requests
        assert self.seconds is not None
        return max(1, min(MOST_REQUESTS, math.ceil(rate * self.seconds)))

    def __str__(self) -> str:
        return f"{self.requests} requests" if self.requests is not None else f"{self.seconds:g}s"


DEFAULT_DURATION = RateDuration(seconds=10.0)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$")


def parse_duration(text: str) -> RateDuration:
    """--rate-duration's value: "10s", "500ms", "1m" (a time), or "300" (requests a round)."""
    match = _DURATION.match(text)
    forms = "a time (10s, 500ms, 1m) or a count of requests (300)"
    if match is None:
        raise ValueError(f"{text!r} is not {forms}")
    number, unit = match.groups()
    if unit is None:
        if "." in number or not 1 <= int(number) <= MOST_REQUESTS:
            raise ValueError(f"{text!r}: a count of requests is a whole number from 1 to "
                             f"{MOST_REQUESTS} ({forms})")
        return RateDuration(requests=int(number))
    seconds = float(number) * {"ms": 0.001, "s": 1.0, "m": 60.0}[unit]
    if seconds <= 0:
        raise ValueError(f"{text!r}: a round must last more than 0 s ({forms})")
    return RateDuration(seconds=seconds)


def arrival_schedule(
    rate: float, count: int, *, seed: int, arrivals: str = "poisson"
) -> tuple[float, ...]:
    """When each of `count` requests is due, in seconds from the round's start (the first at 0).

    "constant": every 1/rate s.  "poisson": exponential gaps of mean 1/rate, drawn from a
    generator seeded by (`seed`, the rate in mHz), so the same seed and rate give the same
    schedule to both refs and in every round, and another rate a schedule of its own."""
    if arrivals not in ARRIVALS:
        raise ValueError(f"arrivals must be one of {', '.join(ARRIVALS)}, not {arrivals!r}")
    if not (math.isfinite(rate) and rate > 0) or count < 1:
        raise ValueError("a schedule needs a rate > 0 and at least one request")
    if arrivals == "constant":
        return tuple(i / rate for i in range(count))
    import numpy as np  # loaded on use: `harness compare --help` stays light

    rng = np.random.default_rng([seed, round(rate * 1000)])
    gaps = rng.exponential(1.0 / rate, count - 1)
    return (0.0, *(float(t) for t in np.cumsum(gaps)))

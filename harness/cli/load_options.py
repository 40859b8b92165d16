"""compare's load options (--rate, --rate-duration, --rate-rounds, --arrivals, --slo), declared
and read here: a bad value is a usage error (exit 2) naming the option and an example.

    add_load_options(p)        on the compare parser
    ask = load_ask(args)       a LoadAsk, or None without --rate
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from harness.replay.schedule import ARRIVALS, DEFAULT_DURATION, parse_duration, parse_rates

if TYPE_CHECKING:
    from harness.compare.load import LoadAsk
    from harness.verdict.load import Slo

T = TypeVar("T")


def _checked(option: str, parse: Callable[[str], T]) -> Callable[[str], T]:
    def check(text: str) -> T:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    check.__name__ = option  # argparse names the type in "invalid ... value"
    return check


def _slo(text: str) -> Slo:
    from harness.verdict.load import parse_slo  # numpy: loaded when --slo is given

    return parse_slo(text)


def _rounds(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 2 <= n <= 100:
        raise ValueError(f"{text!r} is not a whole number from 2 to 100 (e.g. --rate-rounds 3)")
    return n


def add_load_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--rate",
        type=_checked("--rate", parse_rates),
        metavar="R[,R2,...]",
        help="after the timed rounds, send each side the gold queries open loop at R requests/s "
        "(latency from each request's intended send time; see docs/load.md)",
    )
    p.add_argument(
        "--rate-duration",
        type=_checked("--rate-duration", parse_duration),
        default=DEFAULT_DURATION,
        metavar="TIME|N",
        help="each load round's length: a time (10s, the default) or a count of requests (300)",
    )
    p.add_argument(
        "--rate-rounds",
        type=_checked("--rate-rounds", _rounds),
        default=3,
        metavar="N",
        help="load rounds per side and rate, each a fresh boot (default 3)",
    )
    p.add_argument(
        "--arrivals",
        choices=ARRIVALS,
        default="poisson",
        help="the gaps between requests: poisson (exponential, seeded by --seed; the default) "
        "or constant",
    )
    p.add_argument(
        "--slo",
        type=_checked("--slo", _slo),
        metavar="pNN<TIME",
        help="a latency objective under --rate, e.g. p99<50ms: the highest rate each side "
        "sustains within it (and under 1%% errors) is named",
    )


def load_ask(args: argparse.Namespace) -> LoadAsk | None:
    """What --rate asks, or None; --slo without --rate is a usage error (exit 2)."""
    from harness.compare.load import LoadAsk
    from harness.errors import HarnessError

    if args.rate is None:
        if args.slo is not None:
            raise HarnessError("--slo judges latency under load: give --rate too "
                               "(e.g. --rate 10,80 --slo p99<50ms)")
        return None
    slo: Slo | None = args.slo
    return LoadAsk(args.rate, args.rate_duration, args.rate_rounds, args.arrivals, slo)

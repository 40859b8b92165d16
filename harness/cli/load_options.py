"""compare's load options (--rate, --rate-duration, --rate-rounds, --arrivals, --slo), declared
and read here: a bad value is a usage error (exit 2) naming the option and an example.

    add_load_options(p)        on the compare parser
    ask = load_ask(args)       a LoadAsk, or None without --rate
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing for `compare --help`
if TYPE_CHECKING:
    from harness.compare.load import LoadAsk
    from harness.replay.schedule import RateDuration
    from harness.verdict.load import Slo

def _checked(option: str, parse: Callable[[str], object]) -> Callable[[str], object]:
    def check(text: str) -> object:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    check.__name__ = option  # argparse names the type in "invalid ... value"
    return check


# The stages' parsers are imported when an option is given, never for `harness --help`.
def _rates(text: str) -> tuple[float, ...]:
    from harness.replay.schedule import parse_rates

    return parse_rates(text)


def _duration(text: str) -> RateDuration:
    from harness.replay.schedule import parse_duration

    return parse_duration(text)


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
        type=_checked("--rate", _rates),
        metavar="R[,R2,...]",
        help="after the timed rounds, send each side the gold queries open loop at R requests/s "
        "(latency from each request's intended send time; see docs/load.md)",
    )
    p.add_argument(
        "--rate-duration",
        type=_checked("--rate-duration", _duration),
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
        choices=("poisson", "constant"),  # harness.replay.schedule.ARRIVALS
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
    from harness.replay.schedule import ARRIVALS, DEFAULT_DURATION

    if args.rate is None:
        if args.slo is not None:
            raise HarnessError("--slo judges latency under load: give --rate too "
                               "(e.g. --rate 10,80 --slo p99<50ms)")
        return None
    slo: Slo | None = args.slo
    assert args.arrivals in ARRIVALS
    duration = DEFAULT_DURATION if args.rate_duration is None else args.rate_duration
    return LoadAsk(args.rate, duration, args.rate_rounds, args.arrivals, slo)

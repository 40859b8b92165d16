"""Every number the command line takes, checked before anything is read, built or booted.

    check_args(args)     # HarnessError naming the option, the value given and the fix

argparse has already made each value an int or a float; what it cannot know is the range. A bad
value used to surface as a ValueError deep in a stage (after the baseline booted, or after the
whole measurement): here it is one line, exit 2, before anything starts.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass

from harness.errors import HarnessError, clip
from harness.values.limits import MAX_CONCURRENCY, MAX_COUNT, MAX_LIMIT, MAX_REPEATS, MAX_SEED


@dataclass(frozen=True)
class _Range:
    rule: str  # "between 0 and 1 (exclusive)"
    ok: Callable[[float], bool]
    example: str  # "--alpha 0.05"


def _count(low: int, high: int) -> tuple[str, Callable[[float], bool]]:
    """A count from `low` to `high`: the upper bound is named in the message, so a typo of
    1e11 repeats is refused before it runs for a lifetime."""
    return f"{low} or more and at most {high:,}", lambda v: low <= v <= high


_FRACTION = ("between 0 and 1 (exclusive)", lambda v: 0 < v < 1)

_RANGES: dict[str, _Range] = {
    "alpha": _Range(*_FRACTION, "--alpha 0.05"),
    "min_effect": _Range(
        "above 0 and at most 1 (a hit rate: 0.05 is 5 points)",
        lambda v: 0 < v <= 1,
        "--min-effect 0.05",
    ),
    "k": _Range(*_count(1, MAX_LIMIT), "--k 10"),
    "answers_k": _Range(*_count(1, MAX_LIMIT), "--answers-k 5"),
    "concurrency": _Range(*_count(1, MAX_CONCURRENCY), "--concurrency 1"),
    "latency_tolerance": _Range(
        "at least 0 and below 1 (a fraction: 0.10 is ±10%)",
        lambda v: 0 <= v < 1,
        "--latency-tolerance 0.10",
    ),
    "repeats": _Range(*_count(1, MAX_REPEATS), "--repeats 3"),
    "repeat": _Range(*_count(0, MAX_REPEATS - 1), "--repeat 0"),
    "max_errors": _Range(*_count(0, MAX_COUNT), "--max-errors 0"),
    "max_drop": _Range(
        "at least 0 and at most 1 (a metric's units: 0.02 is 2 points)",
        lambda v: 0 <= v <= 1,
        "--max-drop 0.02",
    ),
    "seed": _Range(*_count(0, MAX_SEED), "--seed 0"),
    "bins": _Range(*_count(1, 1000), "--bins 10"),
    # trec_eval takes -l0 (every judged document relevant, grade 0 too); here grade 0 is always
    # judged not relevant (gold/README.md), so 0 was a ValueError traceback deep in scoring.
    "rel_level": _Range(
        "1 or more and at most 1,000,000 (grade 0 is always judged not relevant)",
        lambda v: 1 <= v <= 1_000_000,
        "--rel-level 1",
    ),
    "exact_rare": _Range(*_count(0, 1_000_000), "--exact-rare 20"),
    "phrase": _Range(*_count(0, 1_000_000), "--phrase 20"),
    "nonsense": _Range(*_count(0, 1_000_000), "--nonsense 5"),
    "min_words": _Range(*_count(1, MAX_COUNT), "--min-words 20"),
    "max_words": _Range(*_count(1, MAX_COUNT), "--max-words 2000"),
    "phrase_words": _Range(*_count(1, 1000), "--phrase-words 3"),
    "max_phrase_docs": _Range(*_count(1, MAX_COUNT), "--max-phrase-docs 25"),
    "older_than": _Range(*_count(0, 36_500), "--older-than 30"),  # days: 100 years
}


def check_args(args: argparse.Namespace) -> None:
    """Raise HarnessError for the first option whose value is out of its range (or a --k given
    twice); options left unset (None) are the config's to check."""
    for name, spec in _RANGES.items():
        value = getattr(args, name, None)
        for item in value if isinstance(value, list) else [value]:
            if item is None:
                continue
            if not (math.isfinite(item) and spec.ok(item)):
                option = "--" + name.replace("_", "-")
                raise HarnessError(
                    f"{option} {clip(str(item))}: must be {spec.rule}, e.g. {spec.example}"
                )
    ks = getattr(args, "k", None)
    if isinstance(ks, list) and len(set(ks)) != len(ks):
        raise HarnessError(f"--k: the cutoff {_twice(ks)} is given twice; give each once")


def _twice(values: list[int]) -> int:
    return next(v for i, v in enumerate(values) if v in values[:i])

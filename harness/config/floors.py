"""The `[gate.floors]` table's syntax, checked when harness.toml is read: every key a metric name
(`harness.score.metrics.parse_metric`) or a lower-is-better rate (`no_answer_fp`), every value a
number in [0, 1], per-slice tables under `slice`. What a floor means on a run is
`harness.gate.floors`'; this module is what the config needs of it, kept here so that reading a
config imports no tool.

    problems = floor_problems(table)          # [(field suffix, message)]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

SLICE = "slice"  # the key under [gate.floors] that holds the per-slice tables


def _entry_problems(name: str, value: object, where: str) -> list[tuple[str, str]]:
    # Imported on use: the metric registry brings numpy, which reading a config must not load.
    from harness.score.metrics import NO_ANSWER_FP, lower_is_better

    try:
        lower_is_better(name)
    except ValueError as error:
        return [(f"{where}.{name}", f"{error}, or {NO_ANSWER_FP} (lower is better)")]
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(float(value)) or not 0 <= float(value) <= 1:  # type: ignore[arg-type]
        return [(f"{where}.{name}", f"must be a number from 0 to 1, not {value!r}")]
    return []


def floor_problems(table: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What is wrong with a [gate.floors] table, each with its field suffix (".mrr@10",
    ".slice.entity.ndcg@10")."""
    found: list[tuple[str, str]] = []
    for name, value in table.items():
        if name != SLICE:
            found += _entry_problems(name, value, "")
            continue
        if not isinstance(value, dict):
            found.append(
                (f".{SLICE}", "expected tables [gate.floors.slice.NAME] of metric = value")
            )
            continue
        for slice_name, inner in value.items():
            if not isinstance(inner, dict):
                where = f".{SLICE}.{slice_name}"
                found.append((where, f"expected a table [gate.floors.slice.{slice_name}]"))
                continue
            for metric, limit in inner.items():
                found += _entry_problems(metric, limit, f".{SLICE}.{slice_name}")
    return found

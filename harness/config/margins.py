"""The syntax of non-inferiority margins (`compare --non-inferior`, `harness gate --non-inferior`,
`[gate] non_inferior`), checked where they are read.  What a margin means is
`harness.verdict.noninferiority`'s; this module is what the config and the command line need of
it, so that reading them imports no stage.

    margins = parse_margins("0.02")                       # 0.02: every headline metric
    margins = parse_margins("ndcg@10=0.02,hit@5=0.03")    # {"ndcg@10": 0.02, "hit@5": 0.03}
    problems = margin_problems(value)                     # a TOML value: [(field suffix, message)]

A margin is a number in (0, 1]: how much worse than the baseline the candidate may be, in the
metric's units (a hit rate's share of queries, nDCG's points), and still be "not worse".
"""

from __future__ import annotations

import math
from collections.abc import Mapping

Margins = float | Mapping[str, float]
EXAMPLE = 'non_inferior = 0.02, or non_inferior = {"ndcg@10" = 0.02, "hit@5" = 0.03}'


def _number_problem(value: object) -> str | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(float(value)) or not 0 < float(value) <= 1:  # type: ignore[arg-type]
        return f"a margin must be a number in (0, 1], e.g. 0.02, not {value!r}"
    return None


def _name_problem(name: str) -> str | None:
    # Imported on use: the metric registry brings numpy, which reading a config must not load.
    from harness.score.metrics import parse_metric

    try:
        parse_metric(name)
    except ValueError as error:
        return str(error)
    return None


def margin_problems(value: object) -> list[tuple[str, str]]:
    """What is wrong with a `non_inferior` value: a number, or a table of metric = number."""
    if not isinstance(value, dict):
        problem = _number_problem(value)
        return [] if problem is None else [("", f"{problem} ({EXAMPLE})")]
    if not value:
        return [("", f"is an empty table: name a metric and its margin ({EXAMPLE})")]
    found = []
    for name, margin in value.items():
        problem = _name_problem(name) or _number_problem(margin)
        if problem is not None:
            found.append((f".{name}", problem))
    return found


def parse_margins(text: str) -> Margins:
    """The command line's margins: one number for every headline metric, or METRIC=MARGIN
    pairs separated by commas.  ValueError says what is wrong."""
    text = text.strip()
    if "=" not in text:
        try:
            value = float(text)
        except ValueError:
            raise ValueError(
                f"expected a margin such as 0.02, or METRIC=MARGIN pairs such as "
                f"ndcg@10=0.02,hit@5=0.03, not {text!r}"
            ) from None
        problem = _number_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value
    margins: dict[str, float] = {}
    for part in text.split(","):
        name, _, number = (s.strip() for s in part.partition("="))
        problem = _name_problem(name) if name else "a pair needs a metric name before '='"
        if problem is None:
            try:
                margins[name] = float(number)
            except ValueError:
                problem = f"{name}: expected a number after '=', not {number!r}"
        if problem is None:
            problem = _number_problem(margins[name])
        if problem is not None:
            raise ValueError(problem)
    return margins

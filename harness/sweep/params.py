"""The swept knobs: `--param NAME=V1,V2,...` (repeatable) and `--reference`, read into grid
points. Pure.

A point is one combination of values, (name, value) pairs in the order the parameters were
given; its label ("SINK=1", or "A=1,B=x" for a grid) names it in tables, files and records.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from harness.errors import HarnessError

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

Point = tuple[tuple[str, str], ...]
"""One grid point: (name, value) pairs in the order the parameters were given."""


@dataclass(frozen=True)
class Param:
    """One swept knob: an environment variable name and the values to try, in order."""

    name: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Grid:
    """What a sweep runs: its parameters, every point, and the index of the reference point."""

    params: tuple[Param, ...]
    points: tuple[Point, ...]
    reference: int


def parse_param(text: str) -> Param:
    """Parse `NAME=V1,V2,...`; ValueError says what is wrong and how to write it.

    NAME must be an environment variable name; values are taken literally (spaces around the
    commas are stripped), must be non-empty and distinct.
    """
    name, eq, rest = text.partition("=")
    name = name.strip()
    example = "e.g. --param RRF_K=20,60,100"
    if not eq:
        raise ValueError(f"{text!r}: expected NAME=V1,V2,... ({example})")
    if not _ENV_NAME.fullmatch(name):
        raise ValueError(f"{text!r}: {name!r} is not an environment variable name ({example})")
    values = tuple(v.strip() for v in rest.split(","))
    if not all(values):
        raise ValueError(f"{text!r}: an empty value; list values separated by commas ({example})")
    repeated = sorted({v for v in values if values.count(v) > 1})
    if repeated:
        raise ValueError(f"{text!r}: value {repeated[0]!r} is listed twice")
    return Param(name, values)


def grid(params: Sequence[Param]) -> tuple[Point, ...]:
    """Every combination of the values, the first parameter varying slowest.

    ValueError when a name is given twice or the grid has fewer than two points (a sweep of
    one value has nothing to choose between).
    """
    names = [p.name for p in params]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"--param {twice[0]} is given twice; list all its values in one --param")
    points = tuple(
        tuple(zip(names, combo, strict=True))
        for combo in itertools.product(*(p.values for p in params))
    )
    if len(points) < 2:
        raise ValueError("a sweep needs at least two values to compare, e.g. NAME=V1,V2")
    return points


def label(point: Point) -> str:
    """How a value is named in tables, files and run records: "SINK=1" or "A=1,B=x"."""
    return ",".join(f"{name}={value}" for name, value in point)


def find_reference(points: Sequence[Point], text: str | None) -> int:
    """The index of the reference point: the first, or the one `--reference` names.

    `text` is a bare value when one parameter is swept ("60"), else a label ("A=1,B=x").
    """
    if text is None:
        return 0
    for i, point in enumerate(points):
        if text == label(point) or (len(point) == 1 and text == point[0][1]):
            return i
    known = ", ".join(label(p) for p in points)
    raise ValueError(f"--reference {text!r} is not one of the swept values: {known}")


def read_grid(param_texts: Sequence[str], reference: str | None) -> Grid:
    """The --param texts and the --reference value read into a Grid; the first problem found
    is a HarnessError ("sweep: ..."), raised before anything is built."""
    try:
        params = tuple(parse_param(text) for text in param_texts)
        points = grid(params)
        return Grid(params, points, find_reference(points, reference))
    except ValueError as exc:
        raise HarnessError(f"sweep: {exc}") from None


def params_of(points: Sequence[Point]) -> tuple[Param, ...]:
    """The parameters the points were made of: names in order, each one's values in order."""
    names = [name for name, _ in points[0]]
    return tuple(
        Param(name, tuple(dict.fromkeys(p[j][1] for p in points))) for j, name in enumerate(names)
    )

"""The order within a time-paired round: which side of each query's pair is sent first.

    pair_orders(queries, sides, seed, index) -> list[int]   per query, the rotation of the sides
    in_rotation(sides, rotation) -> list                    the sides in that rotation's order
    draw_seed() -> int                                      a fresh seed, when none was given

The second request of a back-to-back pair runs measurably slower than the first (4.3% on
25,160 A/A pairs, issue 24), so the order must not favour a side: in every round each rotation
of the sides (for two sides: baseline first, candidate first) goes first in exactly
floor(n / k) of the n queries, the n mod k left over going to rotations that move on by round
(for two sides and an odd n, the side that goes first once more alternates), and which queries
get which rotation is shuffled afresh per round and per compare, from a seed the run records.
Deterministic for a given seed: a compare can be replayed.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def pair_orders(queries: int, sides: int, seed: int, index: int) -> list[int]:
    """Per query of round `index`, the rotation its pair is sent in (0: the sides in their given
    order, j: side j first), balanced as the module says and shuffled by (`seed`, `index`)."""
    if sides < 1 or queries < 0:
        raise ValueError(f"need sides >= 1 and queries >= 0, not {sides} and {queries}")
    each, extra = divmod(queries, sides)
    rotations = [j for j in range(sides) for _ in range(each)]
    # The left-over queries go to the next `extra` rotations, moved on by `extra` each round.
    rotations += [(index * extra + j) % sides for j in range(extra)]
    random.Random(f"harness-order:{seed}:{index}").shuffle(rotations)
    return rotations


def in_rotation(sides: Sequence[T], rotation: int) -> list[T]:
    """`sides` starting at `rotation`, wrapping around (each side first in one rotation)."""
    return [*sides[rotation:], *sides[:rotation]]


def draw_seed() -> int:
    """A fresh seed from the operating system's entropy: each compare draws its own order."""
    return secrets.randbelow(1 << 32)

"""Which commit to compare next, and what the marks so far say: `git bisect`'s rule, pure.

    path = (c1, c2, ..., cn)         first-parent history after the good end, oldest first; cn
                                     is the bad end (known bad by the user's word)
    marks = {index: Mark}            what each compared commit turned out to be
    next_index(len(path), marks)     the commit to compare next, or None when nothing is left
    answer(len(path), marks)         FOUND (one first bad commit), or the commits it could be

The first bad commit lies in (lo, hi]: lo the newest commit marked good (-1: the good end), hi
the oldest marked bad (n-1: the bad end).  The next commit is the one nearest the middle of that
range that is not marked skip (ties: the older), so an unskipped range of m commits takes
ceil(log2 m) comparisons; each skip costs one more (`git bisect skip`: a neighbour is tried,
never a guess), and the neighbour's uneven split can cost one more again, once: at most
ceil(log2 m) + skips + 1 (tests/bisect/test_bisect.py checks both bounds).  When only skipped
commits are left between lo and hi, the answer is every one of them and hi: ambiguous,
listed.  No I/O, no clock.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping


class Mark(enum.StrEnum):
    """What one compared commit was: as `git bisect good/bad/skip`."""

    GOOD = "good"
    BAD = "bad"
    SKIP = "skip"


def bounds(n: int, marks: Mapping[int, Mark]) -> tuple[int, int]:
    """(lo, hi): the first bad commit is one of path[lo + 1 .. hi]."""
    if n < 1:
        raise ValueError("a bisection needs at least one commit after the good end")
    hi = min((i for i, m in marks.items() if m is Mark.BAD), default=n - 1)
    lo = max((i for i, m in marks.items() if m is Mark.GOOD and i < hi), default=-1)
    return lo, hi


def next_index(n: int, marks: Mapping[int, Mark]) -> int | None:
    """The index to compare next: the unmarked commit of (lo, hi) nearest its middle; None when
    the range holds one commit or only skipped ones."""
    lo, hi = bounds(n, marks)
    testable = [i for i in range(lo + 1, hi) if i not in marks]
    if not testable:
        return None
    middle = (lo + hi) / 2
    return min(testable, key=lambda i: (abs(i - middle), i))


def candidates(n: int, marks: Mapping[int, Mark]) -> tuple[int, ...]:
    """The indices the first bad commit can still be, oldest first: one when it is found."""
    lo, hi = bounds(n, marks)
    return tuple(range(lo + 1, hi + 1))

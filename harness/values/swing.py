"""The smallest net swing an exact paired test can call, and the argument checks it shares with
`harness.verdict` (a broken contract is a ValueError: a bug in the caller, not user input).

    min_detectable_swing(alpha) -> int            6 at alpha 0.05: no smaller swing is significant
    detectable_swing(n_queries, alpha) -> int | None   None when a gold set is too small for any

Below the stages, so that `harness gold check` tells a gold set too small to decide anything
without importing the verdict stage (`harness.verdict.stats` re-exports these names). Pure.
"""

from __future__ import annotations

import math

import numpy as np


def check_count(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, not {value!r}")


def check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1 or math.isnan(alpha):
        raise ValueError(f"alpha must be in (0, 1), not {alpha}")


def min_detectable_swing(alpha: float = 0.05) -> int:
    """Smallest n such that n discordant pairs all one way give p < alpha.

    p(0, n) = 2 * 0.5**n, so n = 6 at alpha 0.05 (2/64 = 0.03125; n = 5 gives 0.0625) and 8 at
    0.01 (2/256 = 0.0078; n = 7 gives 0.0156).  No smaller net swing can ever be significant.
    """
    check_alpha(alpha)
    n = 1
    while min(1.0, 2 * 0.5**n) >= alpha:  # mcnemar_exact(0, n), in closed form
        n += 1
    return n


def detectable_swing(n_queries: int, alpha: float = 0.05) -> int | None:
    """`min_detectable_swing(alpha)` for a gold set of `n_queries`, or None when it never can be.

    A swing cannot exceed the number of queries: None means the gold set is too small for any
    change in a binary metric to be called at this alpha (report that, not "no difference").
    """
    check_count("n_queries", n_queries)
    swing = min_detectable_swing(alpha)
    return swing if swing <= n_queries else None

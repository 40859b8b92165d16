"""The test-only oracles (scipy, statsmodels), imported when a test first uses one.

Imported at the top of a test module they were loaded by every xdist worker's collection
(about 0.7 s each), though only a few tests on one worker call them."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


class _Lazy:
    """A module imported on its first attribute lookup."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):  # pytest's collection looks for _mock_name, __wrapped__, ...
            raise AttributeError(attr)
        return getattr(importlib.import_module(self._name), attr)


def _function(module: str, name: str) -> Callable[..., Any]:
    """`module.name`, the module imported at the first call."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = name
    return call


scipy_stats: Any = _Lazy("scipy.stats")
mcnemar = _function("statsmodels.stats.contingency_tables", "mcnemar")
multipletests = _function("statsmodels.stats.multitest", "multipletests")
bdtr = _function("scipy.special", "bdtr")
betaincinv = _function("scipy.special", "betaincinv")
gammaln = _function("scipy.special", "gammaln")
stdtrit = _function("scipy.special", "stdtrit")


def tango_reference(b: int, c: int, n: int, alpha: float) -> tuple[float, float]:
    """Tango's asymptotic score interval for (c - b) / n at 1 - alpha, transcribed from the
    published formula as the contingencytables R package writes it (Fagerland, Lydersen and
    Laake, "Statistical Analysis of Contingency Tables", ch. 8), with the candidate-only count
    as their n12 and the baseline-only as n21, its roots found by scipy's brentq: independent
    of harness.verdict.equivalence's bisection."""
    import math

    from scipy.optimize import brentq
    from scipy.stats import norm

    z = norm.ppf(1 - alpha / 2)
    n12, n21 = c, b

    def statistic(delta0: float) -> float:
        big_a = 2 * n
        big_b = -n12 - n21 + (2 * n - n12 + n21) * delta0
        big_c = -n21 * delta0 * (1 - delta0)
        p21 = (math.sqrt(big_b**2 - 4 * big_a * big_c) - big_b) / (2 * big_a)
        return (n12 - n21 - n * delta0) / math.sqrt(n * (2 * p21 + delta0 * (1 - delta0)))

    tol = 1e-9
    estimate = (n12 - n21) / n
    # As the R function: each limit a root over the whole of (-1, 1).
    low = -1.0 if estimate == -1 else brentq(lambda d: statistic(d) - z, -1 + tol, 1 - tol)
    high = 1.0 if estimate == 1 else brentq(lambda d: statistic(d) + z, -1 + tol, 1 - tol)
    return low, high

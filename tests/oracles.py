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

"""The test-only oracles (scipy, statsmodels), imported when a test first uses one.

Imported at the top of a test module they were loaded by every xdist worker's collection
(about 0.7 s each), though only a few tests on one worker call them."""

from __future__ import annotations

import importlib
from typing import Any


class _Lazy:
    """A module imported on its first attribute lookup."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):  # pytest's collection looks for _mock_name, __wrapped__, ...
            raise AttributeError(attr)
        return getattr(importlib.import_module(self._name), attr)


scipy_stats: Any = _Lazy("scipy.stats")
scipy_special: Any = _Lazy("scipy.special")
_tables: Any = _Lazy("statsmodels.stats.contingency_tables")
_multitest: Any = _Lazy("statsmodels.stats.multitest")


def mcnemar(*args: Any, **kwargs: Any) -> Any:
    """statsmodels.stats.contingency_tables.mcnemar."""
    return _tables.mcnemar(*args, **kwargs)


def multipletests(*args: Any, **kwargs: Any) -> Any:
    """statsmodels.stats.multitest.multipletests."""
    return _multitest.multipletests(*args, **kwargs)


def bdtr(*args: Any) -> Any:
    return scipy_special.bdtr(*args)


def betaincinv(*args: Any) -> Any:
    return scipy_special.betaincinv(*args)


def gammaln(*args: Any) -> Any:
    return scipy_special.gammaln(*args)


def stdtrit(*args: Any) -> Any:
    return scipy_special.stdtrit(*args)

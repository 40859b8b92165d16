"""The optional dependencies: which extra of `retrieval-harness` brings each, and the one-line
error when one is missing.

    bs4 = require("bs4", "query.select")      # the module, or a HarnessError (exit 2):
    # harness: error: query.select needs beautifulsoup4, which is not installed:
    #   install retrieval-harness[html] (pip install 'retrieval-harness[html]')

`pip install retrieval-harness` installs the core: enough for `compare`, `metrics`, the text,
Markdown, JSON and HTML reports. Each extra enables one thing more, and nothing in the core
path imports an extra's module at start-up (the TREC run reader falls back to its pure-Python
readers without pyarrow: `harness.score.arrowrun`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from harness.errors import HarnessError


@dataclass(frozen=True)
class Extra:
    """An optional module: the distribution that provides it and the extra that installs it."""

    distribution: str
    extra: str


EXTRAS: dict[str, Extra] = {
    "bs4": Extra("beautifulsoup4", "html"),
    "pyarrow": Extra("pyarrow", "arrow"),
    "ray": Extra("ray", "ray"),
}


def missing(module: str, what: str) -> HarnessError:
    """The error saying that `what` (an option, a format) needs `module` and how to get it."""
    found = EXTRAS[module]
    return HarnessError(
        f"{what} needs {found.distribution}, which is not installed: install "
        f"retrieval-harness[{found.extra}] (pip install 'retrieval-harness[{found.extra}]')"
    )


def require(module: str, what: str) -> ModuleType:
    """`module` imported, or the one-line HarnessError of `missing` (exit 2, no traceback)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise missing(module, what) from None

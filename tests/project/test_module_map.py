"""The module map: every `from harness.X import name` in harness/, tests/ and scripts/ names
something harness.X defines or imports (or a submodule X.name), and no harness module, imported
first into a fresh interpreter, runs into a circular import (tests/purity.py's `loaded_by`).
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest
from purity import imported_names, loaded_by

import harness

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted(
    path
    for folder in ("harness", "tests", "scripts")
    for path in (ROOT / folder).rglob("*.py")
    if "fixtures" not in path.parts
)
# Every harness module, by its dotted name, sorted.
MODULES = sorted(info.name for info in pkgutil.walk_packages(harness.__path__, prefix="harness."))


def test_every_harness_import_in_the_project_resolves() -> None:
    names = {(m, name) for m, name in imported_names(*SOURCES) if m.startswith("harness")}
    assert ("harness.score.evaluation", "evaluate") in names  # the scan sees the project's imports
    missing = []
    for module, name in sorted(names):
        imported = importlib.import_module(module)
        if not hasattr(imported, name):
            try:
                importlib.import_module(f"{module}.{name}")  # a submodule
            except ModuleNotFoundError:
                missing.append(f"{module}.{name}")
    assert missing == []


@pytest.mark.slow  # 165 fresh imports of harness (~10 s of CPU); test_architecture's static
def test_no_import_order_hits_a_cycle() -> None:  # cycle checks run in the inner loop
    # Each module imported first into an interpreter that forgot every harness module: a cycle
    # shows as an ImportError (a partly initialised module) for some first module.
    stages = {"harness.cli.main", "harness.verdict.decide", "harness.score.evaluation"}
    assert stages | {"harness.results.records"} <= set(MODULES)
    loaded = loaded_by(*MODULES)
    assert [m for m in MODULES if m not in loaded[m]] == []

"""The module map: every `from harness.X import name` in the project resolves, names that moved
are still the same objects where other modules import them from, and no import order hits a
cycle (harness.metrics and harness.report re-export lazily because of one).
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(
    path
    for folder in ("harness", "tests", "scripts")
    for path in (ROOT / folder).rglob("*.py")
    if "fixtures" not in path.parts
)

# Where a name moved from -> where it lives now, for the names other modules import by the old path.
MOVED = [
    ("harness.metrics", "evaluate", "harness.evaluation"),
    ("harness.compare", "CompareSettings", "harness.comparison"),
    ("harness.compare", "Comparison", "harness.comparison"),
    ("harness.compare", "MetricRow", "harness.comparison"),
    ("harness.compare", "RunSummary", "harness.comparison"),
    ("harness.compare", "summarise_run", "harness.compare.summary"),
    ("harness.report", "comparison_to_dict", "harness.document"),
    ("harness.report", "save_comparison", "harness.results"),
    ("harness.report", "load_comparison", "harness.results"),
]

# Each module of a cycle broken by a lazy re-export, and the modules around it.
FIRST_IMPORTS = [
    "harness.metrics",
    "harness.evaluation",
    "harness.comparison",
    "harness.compare",
    "harness.compare.scopes",
    "harness.compare.details",
    "harness.compare.summary",
    "harness.compare.validity",
    "harness.document",
    "harness.report",
    "harness.results",
]


def imported_names() -> set[tuple[str, str]]:
    found = set()
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("harness"):
                found |= {(node.module or "", alias.name) for alias in node.names}
    return found


def test_every_harness_import_in_the_project_resolves() -> None:
    names = imported_names()
    assert ("harness.metrics", "evaluate") in names  # harness.cli and harness.gate use it
    missing = []
    for module, name in sorted(names):
        imported = importlib.import_module(module)
        if not hasattr(imported, name):
            try:
                importlib.import_module(f"{module}.{name}")  # a submodule
            except ModuleNotFoundError:
                missing.append(f"{module}.{name}")
    assert missing == []


@pytest.mark.parametrize(("old", "name", "new"), MOVED)
def test_a_moved_name_is_the_same_object_by_its_old_path(old: str, name: str, new: str) -> None:
    assert getattr(importlib.import_module(old), name) is getattr(
        importlib.import_module(new), name
    )


@pytest.mark.parametrize("module", ["harness.metrics", "harness.report"])
def test_an_unknown_name_is_still_an_attribute_error(module: str) -> None:
    with pytest.raises(AttributeError, match=f"module '{module}' has no attribute 'nothing'"):
        importlib.import_module(module).nothing  # noqa: B018 (the lookup is the test)


def test_no_import_order_hits_a_cycle() -> None:
    # A fresh interpreter, forgetting every harness module before importing the next one first,
    # then asking it for the moved names.
    script = f"""
import importlib, sys
for first in {FIRST_IMPORTS!r}:
    for loaded in [m for m in sys.modules if m == "harness" or m.startswith("harness.")]:
        del sys.modules[loaded]
    importlib.import_module(first)
    for old, name, _ in {MOVED!r}:
        getattr(importlib.import_module(old), name)
print("ok")
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "ok\n", "")

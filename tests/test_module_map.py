"""The module map: every `from harness.X import name` in harness/, tests/ and scripts/ names
something harness.X defines or imports (or a submodule X.name), and no harness module, imported
first into a fresh interpreter, runs into a circular import.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import harness

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(
    path
    for folder in ("harness", "tests", "scripts")
    for path in (ROOT / folder).rglob("*.py")
    if "fixtures" not in path.parts
)
# Every harness module, by its dotted name, sorted.
MODULES = sorted(info.name for info in pkgutil.walk_packages(harness.__path__, prefix="harness."))


def imported_names() -> set[tuple[str, str]]:
    found = set()
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("harness"):
                found |= {(node.module or "", alias.name) for alias in node.names}
    return found


def test_every_harness_import_in_the_project_resolves() -> None:
    names = imported_names()
    assert ("harness.evaluation", "evaluate") in names  # the scan sees the project's imports
    missing = []
    for module, name in sorted(names):
        imported = importlib.import_module(module)
        if not hasattr(imported, name):
            try:
                importlib.import_module(f"{module}.{name}")  # a submodule
            except ModuleNotFoundError:
                missing.append(f"{module}.{name}")
    assert missing == []


def test_no_import_order_hits_a_cycle() -> None:
    # A fresh interpreter, forgetting every harness module before importing the next one first:
    # a cycle shows as an ImportError (a partly initialised module) for some first module.
    assert {"harness.cli", "harness.compare", "harness.evaluation", "harness.results"} <= set(
        MODULES
    )
    script = f"""
import importlib, sys
for first in {MODULES!r}:
    for loaded in [m for m in sys.modules if m == "harness" or m.startswith("harness.")]:
        del sys.modules[loaded]
    importlib.import_module(first)
print("ok")
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "ok\n", "")

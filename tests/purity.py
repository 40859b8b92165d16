"""What every purity test uses: the modules a source file imports, and the harness modules that
importing a module loads.

Pure (docs/architecture.md, "The stages, one way"): no I/O, no clock, no subprocess, no
unseeded randomness. Two cheap checks catch a pure module growing an impure dependency:

- `imported_modules(*sources)`: every module named by an import statement of the files (under
  `if TYPE_CHECKING:` too), for a test to hold against an allowlist (`imported_names`: the
  names each `from module import ...` takes);
- `loaded_by(*modules)`: per module, the harness modules loaded by importing it first into a
  fresh interpreter, so that a stage that does I/O cannot come in through another module.

`impurities(module)` puts both together for the modules split off the ones that run things:
imports outside PURE_LIBRARIES, and I/O stages (IO_STAGES) it loads.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

# Standard and third-party modules that compute without touching the outside world.
PURE_LIBRARIES = frozenset(
    {
        "__future__",
        "base64",  # a codec: the latency plans' table (harness.verdict.latency_bounds) is base85
        "bisect",
        "collections",
        "collections.abc",
        "dataclasses",
        "enum",
        "functools",
        "gc",  # the analysis pauses the cyclic collector while it runs: no I/O, no clock
        "html",
        "itertools",
        "json",
        "math",
        "operator",
        "re",
        "statistics",
        "types",
        "typing",
        "numpy",
        "numpy.typing",
        "scipy.special",
        "scipy.stats",
        "tabulate",
    }
)
# Harness modules that read or write files, start processes, talk HTTP, read the clock or the
# terminal (a module's submodules included).
IO_STAGES = (
    "harness.boot",
    "harness.checkout",
    "harness.cli",
    "harness.config",
    "harness.demo",
    "harness.gate.baseline_file",
    "harness.gold",
    "harness.process.inputs",
    "harness.replay",
    "harness.driver",
    # results/ but its JSON codec (document.py: the Comparison as a dict and back, no file)
    "harness.report.bundle",
    "harness.report.saved",
    "harness.results.cache",
    "harness.results.comparisons",
    "harness.results.export",
    "harness.results.files",
    "harness.results.records",
    "harness.results.sidecar",
    "harness.score.runfile",
    "harness.variants.run",
    "harness.sweep.run",
    "harness.matrix.spec",
    "harness.matrix.run",
)


def source_of(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, f"{module} not found"
    return Path(spec.origin)


def imported_modules(*sources: str | Path) -> set[str]:
    """Every module an import statement in `sources` names (`from . import x` names "")."""
    imported: set[str] = set()
    for source in sources:
        tree = ast.parse(Path(source).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                imported.add(node.module or "")
    return imported


def imported_names(*sources: str | Path) -> set[tuple[str, str]]:
    """Every (module, name) a `from module import name` statement in `sources` names."""
    found: set[tuple[str, str]] = set()
    for source in sources:
        for node in ast.walk(ast.parse(Path(source).read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                found |= {(node.module or "", alias.name) for alias in node.names}
    return found


def loaded_by(*modules: str) -> dict[str, set[str]]:
    """Per module, the harness modules in sys.modules after importing it first, in one fresh
    interpreter that forgets every harness module before the next."""
    script = f"""
import importlib, json, sys
found = {{}}
for module in {list(modules)!r}:
    for name in [m for m in sys.modules if m == "harness" or m.startswith("harness.")]:
        del sys.modules[name]
    importlib.import_module(module)
    found[module] = sorted(m for m in sys.modules if m == "harness" or m.startswith("harness."))
print(json.dumps(found))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr  # an ImportError: a cycle, or a missing module
    return {module: set(names) for module, names in json.loads(done.stdout).items()}


def _is_io(module: str) -> bool:
    return any(module == stage or module.startswith(f"{stage}.") for stage in IO_STAGES)


def impurities(*modules: str) -> dict[str, list[str]]:
    """Per module, what makes it impure: each import outside PURE_LIBRARIES and harness, and
    each I/O stage that importing it loads; an empty list for a pure module."""
    loaded = loaded_by(*modules)
    found = {}
    for module in modules:
        outside = {
            name
            for name in imported_modules(source_of(module))
            if name not in PURE_LIBRARIES and name != "harness" and not name.startswith("harness.")
        }
        found[module] = sorted(outside | {name for name in loaded[module] if _is_io(name)})
    return found

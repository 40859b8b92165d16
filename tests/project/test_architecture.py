"""The house: no import cycle between harness modules nor between its packages, the layers and
the stages one way (STAGE_ORDER), no module too long.

The import graph is read from the source (tests/import_graph.py): module-level and
function-level imports both count (a cycle dodged by importing inside a function is still two
modules that need each other), and so do package faces (`harness/x/__init__.py`, run before any
of `harness.x`'s modules is imported from outside it). docs/architecture.md states the
layers and the rules these tests hold.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import import_graph as graph
import pytest

# Each top-level module and package of harness/, by layer, lowest first. A module may import its
# own layer and the layers below; a new package fails test_every_module_has_a_layer until it is
# placed here (and in docs/architecture.md).
LAYERS: dict[str, tuple[str, ...]] = {
    # what every stage stands on, in BASE_ORDER: the one error tree, text handling, the values
    # that travel between stages, and the harness process's own primitives; none imports a stage
    "base": ("errors", "text", "values", "process"),
    # the pipeline, one package per stage (config is read first: every stage takes its values)
    "stages": (
        "config",
        "gold",
        "checkout",
        "boot",
        "replay",
        "score",
        "verdict",
        "report",
        "results",
        "driver",
    ),
    # what is built from the stages: each a command's engine
    "tools": (
        "compare", "variants", "sweep", "gate", "matrix", "history", "bisect", "watch", "judge",
        "demo", "schemas",
    ),
    # parsing, calling, mapping errors to exit codes
    "cli": ("cli",),
}
# The stages one way, lowest first, every import counted (inside functions and under
# TYPE_CHECKING too): a stage imports only the stages before it here. Drawn from the imports:
# gold reads the gold set and needs no other stage; score is pure and reads a memo of gold's;
# config validates metric names with score's grammar; verdict takes config's values; results
# stores comparisons; report renders what results reads back; checkout builds with boot's
# isolation; replay drives them all.
STAGE_ORDER: tuple[str, ...] = (
    "gold", "score", "config", "verdict", "results", "report", "boot", "checkout", "replay",
    "driver",
)
# The base layer one way, lowest first: each imports only those before it. The error tree
# imports nothing; text (decoding, escaping, scrubbing) imports no value; a value (values/) is
# made and read and never acts, so it imports no process primitive (process/: reading a
# user's file, signals, what a run holds on disk, optional dependencies).
BASE_ORDER: tuple[str, ...] = ("errors", "text", "values", "process")
RANK = {name: i for i, names in enumerate(LAYERS.values()) for name in names}
LAYER_OF = {name: layer for layer, names in LAYERS.items() for name in names}

MAX_LINES = 600
# Modules still over MAX_LINES, each at most its count here: the list only shrinks. An entry
# that grows fails; one that drops to MAX_LINES or below must leave the list.
TOO_LONG: dict[str, int] = {  # to be split (issue 26): the list may only shrink
}


def _top(module: str) -> str:
    """The top-level module or package a module belongs to ("" for the package root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _cycle_report(cycles: list[graph.Cycle]) -> str:
    return "\n".join([f"{len(cycles)} import cycle(s) between harness modules:", *map(str, cycles)])


def test_no_import_cycle() -> None:
    found = graph.cycles(graph.graph(graph.edges()))
    assert not found, _cycle_report(found)


def test_no_cycle_among_module_level_imports_either() -> None:
    # The runtime view: what importing a module runs at once (a subset of the test above, kept
    # apart so that a failure says which kind of cycle came back).
    module_level = [e for e in graph.edges() if e.kind == "module"]
    found = graph.cycles(graph.graph(module_level))
    assert not found, _cycle_report(found)


def test_every_module_has_a_layer() -> None:
    tops = {_top(name) for name in graph.modules()} - {""}
    assert "verdict" in tops and "cli" in tops  # the scan sees the package
    assert sorted(tops - set(LAYER_OF)) == [], "place each in LAYERS and in the architecture doc"


def test_the_layers_run_one_way() -> None:
    upward = [
        f"{edge}: {LAYER_OF[_top(edge.source)]} imports {LAYER_OF[_top(edge.target)]}"
        for edge in graph.edges()
        if _top(edge.source) and RANK[_top(edge.target)] > RANK[_top(edge.source)]
    ]
    assert upward == [], "\n".join(
        ["imports against the layers (cli > tools > stages > base):", *upward]
    )


def test_the_stages_run_one_way() -> None:
    # Every import counts: a stage that imports a later stage inside a function, or only for a
    # type, still needs it (and pulls it into every stage below).
    assert sorted(STAGE_ORDER) == sorted(LAYERS["stages"]), "each stage once in STAGE_ORDER"
    upward = _against(STAGE_ORDER)
    assert upward == [], "\n".join(
        [f"imports against the stage order ({' < '.join(STAGE_ORDER)}):", *upward]
    )


def _against(order: tuple[str, ...] | list[str]) -> list[str]:
    """Every import from a package of `order` (lowest first) to one after it."""
    rank = {name: i for i, name in enumerate(order)}
    return [
        f"{edge}: {_top(edge.source)} imports {_top(edge.target)}, above it in the order"
        for edge in graph.edges()
        if _top(edge.source) in rank
        and _top(edge.target) in rank
        and rank[_top(edge.target)] > rank[_top(edge.source)]
    ]


def test_no_cycle_between_packages() -> None:
    # The module graph may be acyclic while two packages still need each other through
    # different modules (a.x -> b.y and b.z -> a.w): fold each module into its package.
    folded = [
        graph.Edge(_top(e.source), _top(e.target), e.kind, e.line, e.path)
        for e in graph.edges()
        if _top(e.source) and _top(e.target) and _top(e.source) != _top(e.target)
    ]
    found = graph.cycles(graph.graph(folded))
    assert not found, _cycle_report(found)


def test_the_base_layer_imports_only_itself() -> None:
    # A value module that imported a stage would pull the stage into every other stage.
    below = set(LAYERS["base"])
    found = [
        str(e) for e in graph.edges() if _top(e.source) in below and _top(e.target) not in below
    ]
    assert found == []


def test_the_base_layer_runs_one_way() -> None:
    # errors < text < values < process, every import counted: no value imports a process
    # primitive, no text module a value, the error tree nothing.
    assert sorted(BASE_ORDER) == sorted(LAYERS["base"]), "each base package once in BASE_ORDER"
    upward = _against(BASE_ORDER)
    assert upward == [], "\n".join(
        [f"imports against the base order ({' < '.join(BASE_ORDER)}):", *upward]
    )


def test_the_base_packages_hold_no_loose_module_beside_them() -> None:
    # harness/ holds its packages and the error tree: a new value or primitive goes into one of
    # the base packages, not loose at the top.
    loose = sorted(
        path.stem
        for path in (graph.ROOT / graph.PACKAGE).glob("*.py")
        if path.stem not in ("__init__", *BASE_ORDER)
    )
    assert loose == [], f"place these in values/, text/ or process/: {loose}"


def test_no_module_is_too_long() -> None:
    root = graph.ROOT
    long = {
        str(path.relative_to(root)): graph.lines(path)
        for path in graph.modules().values()
        if graph.lines(path) > MAX_LINES
    }
    grown = {p: n for p, n in long.items() if n > TOO_LONG.get(p, MAX_LINES)}
    assert grown == {}, f"over {MAX_LINES} lines (or over their allowance), split them: {grown}"
    shrunk = sorted(set(TOO_LONG) - set(long))
    assert shrunk == [], f"now {MAX_LINES} lines or fewer, take them off TOO_LONG: {shrunk}"


# What replay/ may take of the boot stage: the type of what opens a socket to a service and
# the TLS context of an https one.  Nothing that checks out, builds, boots or records.
REPLAY_FROM_BOOT = {"harness.boot", "harness.boot.probe", "harness.boot.deployed"}


def test_replay_only_asks_over_http() -> None:
    """harness/replay/ sends the queries and reads the answers; the run driver (checkout,
    build, boot, rounds, records) is harness/driver/, which imports it, never the reverse."""
    driving = ("checkout", "results", "driver", "report", "verdict", "score")
    found = [
        str(e)
        for e in graph.edges()
        if e.source.startswith("harness.replay")
        and (
            _top(e.target) in driving
            or (_top(e.target) == "boot" and e.target not in REPLAY_FROM_BOOT)
        )
    ]
    assert found == []
    # and of boot.deployed only the TLS context (its `deployed` boots nothing, but is driving)
    for path in (graph.ROOT / "harness" / "replay").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "harness.boot.deployed":
                assert [a.name for a in node.names] == ["tls_context"], path


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _defined_privates(tree: ast.Module) -> set[str]:
    """The `_private` names a module defines: functions, classes, methods, module or class
    variables and `self._x` attributes."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                found.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.add(node.target.id)
        elif isinstance(node, ast.alias):
            found.add((node.asname or node.name).split(".")[0])
    return {name for name in found if _private(name)}


def private_uses(root: Path = graph.ROOT, package: str = graph.PACKAGE) -> list[str]:
    """Every use of a `_private` name of one module by another, as "path:line: what":

    - `from harness.x import _y` (relative imports too), or `from harness import _x`;
    - `m._y` where `m` names a harness module (`import harness.x as m`, `from harness import x`);
    - `obj._y` (obj not `self` or `cls`) where `_y` is defined by another harness module and
      not by this one: an object's private attribute or method used from outside its module.
    """
    known = graph.modules(root, package)
    trees = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in known.items()}
    defined = {name: _defined_privates(tree) for name, tree in trees.items()}
    found: list[str] = []
    for name, tree in trees.items():
        where = known[name].relative_to(root)
        own = defined[name]
        elsewhere = set().union(*(d for other, d in defined.items() if other != name))
        aliases: set[str] = set()  # local names bound to harness modules
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = graph.resolve(node.module or "", node.level, name, known)
                if base != package and not base.startswith(package + "."):
                    continue
                for alias in node.names:
                    if f"{base}.{alias.name}" in known:
                        aliases.add(alias.asname or alias.name)
                    if _private(alias.name):
                        found.append(f"{where}:{node.lineno}: from {base} import {alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith(package + ".") or alias.name == package:
                        aliases.add(alias.asname or alias.name.split(".")[0])
                        private = [part for part in alias.name.split(".") if _private(part)]
                        if private:
                            found.append(f"{where}:{node.lineno}: import {alias.name}")
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or not _private(node.attr):
                continue
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            text = ast.unparse(owner)
            if text.split(".")[0] in aliases and all(
                not _private(part) for part in text.split(".")
            ):
                found.append(f"{where}:{node.lineno}: {text}.{node.attr} (a module's)")
            elif node.attr in elsewhere and node.attr not in own:
                found.append(f"{where}:{node.lineno}: {text}.{node.attr} (another module's)")
    return sorted(set(found))


def test_no_private_name_is_used_across_modules() -> None:
    """A `_name` is its module's own: a name another module needs is made public (or moved)."""
    assert private_uses() == []


# --------------------------------------------------------------------------- the detector


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def test_a_private_name_used_from_another_module_is_found(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": """\
                _LIMIT = 3
                def _helper(): ...
                class Session:
                    def __init__(self):
                        self._items = []
                    def _record(self): ...
            """,
            "pkg/b.py": """\
                from pkg.a import _helper
                from . import a
                import pkg.a as other
                def f(session, mine):
                    session._record()
                    session._items = []
                    mine._own = a._LIMIT + other._LIMIT
                    return session.__class__, a.Session
            """,
            "pkg/c.py": """\
                class Own:
                    def __init__(self):
                        self._own = 1
                    def _items(self): ...
                def g(x):
                    return x._own, x._items()
            """,
        },
    )
    assert private_uses(root, "pkg") == [
        "pkg/b.py:1: from pkg.a import _helper",
        "pkg/b.py:5: session._record (another module's)",
        "pkg/b.py:6: session._items (another module's)",
        "pkg/b.py:7: a._LIMIT (a module's)",
        "pkg/b.py:7: mine._own (another module's)",
        "pkg/b.py:7: other._LIMIT (a module's)",
    ]


def _found(root: Path) -> list[list[str]]:
    cycles = graph.cycles(graph.graph(graph.edges(root, "pkg")))
    return [list(c.members) for c in cycles]


def test_a_module_level_cycle_is_found_with_its_path(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import x\n",
            "pkg/b.py": "import pkg.c\nx = 1\n",
            "pkg/c.py": "from pkg import a\n",
        },
    )
    (cycle,) = graph.cycles(graph.graph(graph.edges(root, "pkg")))
    assert cycle.members == ("pkg.a", "pkg.b", "pkg.c")
    assert [(e.source, e.target) for e in cycle.path] == [
        ("pkg.a", "pkg.b"),
        ("pkg.b", "pkg.c"),
        ("pkg.c", "pkg.a"),
    ]
    assert "pkg/c.py:1, module-level" in str(cycle)


def test_a_cycle_through_a_function_level_import_counts(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg import b\n",
            "pkg/b.py": "def f():\n    from pkg.a import g\n    return g\n",
        },
    )
    assert _found(root) == [["pkg.a", "pkg.b"]]
    (cycle,) = graph.cycles(graph.graph(graph.edges(root, "pkg")))
    assert {e.kind for e in cycle.path} == {"module", "function"}
    module_level = [e for e in graph.edges(root, "pkg") if e.kind == "module"]
    assert graph.cycles(graph.graph(module_level)) == []


def test_a_cycle_through_a_package_face_counts(tmp_path: Path) -> None:
    # pkg.sub's face re-exports pkg.sub.inner, which needs pkg.other, which imports pkg.sub.x:
    # importing pkg.other first runs pkg/sub/__init__.py, which runs pkg.sub.inner, which
    # imports pkg.other again, half made.
    root = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/sub/__init__.py": "from pkg.sub.inner import y\n",
            "pkg/sub/inner.py": "from pkg.other import z\ny = 1\n",
            "pkg/sub/x.py": "w = 1\n",
            "pkg/other.py": "from pkg.sub.x import w\nz = 1\n",
        },
    )
    assert _found(root) == [["pkg.other", "pkg.sub", "pkg.sub.inner"]]


def test_relative_imports_and_type_checking_blocks_count(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/sub/__init__.py": "",
            "pkg/sub/a.py": "from . import b\n",
            "pkg/sub/b.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..sub.a import A\n"
            ),
        },
    )
    assert _found(root) == [["pkg.sub.a", "pkg.sub.b"]]


def test_a_submodule_importing_its_own_face_is_not_a_cycle_by_itself(tmp_path: Path) -> None:
    # pkg.sub.a is only ever imported after pkg/sub/__init__.py ran; an import of a sibling is
    # no edge to the face (the face imported nothing here).
    root = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/sub/__init__.py": "",
            "pkg/sub/a.py": "from pkg.sub.b import x\n",
            "pkg/sub/b.py": "x = 1\n",
        },
    )
    assert _found(root) == []
    assert [(e.source, e.target) for e in graph.edges(root, "pkg")] == [("pkg.sub.a", "pkg.sub.b")]


@pytest.mark.parametrize("statement", ["import pkg.b", "import pkg.b as b", "from pkg import b"])
def test_every_spelling_of_an_import_is_an_edge(tmp_path: Path, statement: str) -> None:
    root = _package(
        tmp_path,
        {"pkg/__init__.py": "", "pkg/a.py": statement + "\n", "pkg/b.py": "import pkg.a\n"},
    )
    assert _found(root) == [["pkg.a", "pkg.b"]]


# --------------------------------------------------------------------------- the docs


DOCS = ("docs/architecture.md", "docs/develop.md")
_DOTTED = re.compile(r"\bharness(?:\.[a-z_][a-z0-9_]*)+")
_PATH = re.compile(r"\bharness/[a-z_/*]+(?:\.py)?")  # a glob (latency_bounds_*.py) must match
# Not modules: the config file, and the page's `harness.x` / `harness/x/` placeholder examples.
_NOT_MODULES = re.compile(r"harness(\.toml|\.x|\.x\..*|/x/.*)$")


def _named_in(text: str) -> list[str]:
    """Every harness module a page names, by the longest dotted prefix that could be one: in
    `harness.driver.runner.play_round`, `harness.driver.runner` (a function is no module)."""
    known = graph.modules()
    found = []
    for name in _DOTTED.findall(text):
        if _NOT_MODULES.match(name):
            continue
        parts = name.split(".")
        # the longest prefix that is a module; a name below a module is that module's attribute
        for end in range(len(parts), 1, -1):
            prefix = ".".join(parts[:end])
            if prefix in known:
                # below a package face only a name the face defines or imports (a module that
                # moved away is no attribute of its old package)
                face = known[prefix]
                below = parts[end] if end < len(parts) else None
                gone = (
                    below is not None
                    and face.name == "__init__.py"
                    and not re.search(rf"^(?:def|class)? ?{below}\b|import .*\b{below}\b",
                                      face.read_text(encoding="utf-8"), re.M)
                )
                found.append(f"{prefix}.{below}" if gone else prefix)
                break
        else:
            found.append(".".join(parts[:2]))  # not even the package: reported as missing
    return found


def test_the_docs_name_only_what_exists() -> None:
    known = graph.modules()
    root = graph.ROOT
    for doc in DOCS:
        text = (root / doc).read_text(encoding="utf-8")
        missing = sorted({n for n in _named_in(text) if n not in known})
        paths = [p for p in _PATH.findall(text) if not _NOT_MODULES.match(p)]
        missing += sorted({p for p in paths if not any(root.glob(p))})
        assert missing == [], f"{doc} names what harness/ no longer has: {missing}"


def test_every_package_and_loose_module_is_in_the_docs() -> None:
    tops = sorted({_top(name) for name in graph.modules()} - {""})
    for doc in DOCS:
        text = (graph.ROOT / doc).read_text(encoding="utf-8")
        absent = [t for t in tops if not re.search(rf"`{t}`|\b{t}/|\b{t}\.py|harness\.{t}\b", text)]
        assert absent == [], f"{doc} does not name these parts of harness/: {absent}"

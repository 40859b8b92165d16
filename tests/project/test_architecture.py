"""The house: no import cycle between harness modules nor between its packages, the layers and
the stages one way (STAGE_ORDER), no module too long.

The import graph is read from the source (tests/import_graph.py): module-level and
function-level imports both count (a cycle dodged by importing inside a function is still two
modules that need each other), and so do package faces (`harness/x/__init__.py`, run before any
of `harness.x`'s modules is imported from outside it). docs/architecture.md states the
layers and the rules these tests hold.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import import_graph as graph
import pytest

# Each top-level module and package of harness/, by layer, lowest first. A module may import its
# own layer and the layers below; a new package fails test_every_module_has_a_layer until it is
# placed here (and in docs/architecture.md).
LAYERS: dict[str, tuple[str, ...]] = {
    # the values that travel between stages, the error tree, and the few process-wide
    # primitives every stage uses (bounds, encodings, credential scrubbing, signals, what a run
    # holds on disk); none imports a stage
    "types": (
        "types",
        "answers",
        "costs",
        "errors",
        "limits",
        "encodings",
        "inputs",
        "urls",
        "scrub",
        "control_chars",
        "signals",
        "leftovers",
        "extras",
        "budget",
        "swing",
    ),
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
        "compare", "sweep", "gate", "matrix", "history", "bisect", "watch", "judge", "demo",
        "schemas",
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
        ["imports against the layers (cli > tools > stages > types):", *upward]
    )


def test_the_stages_run_one_way() -> None:
    # Every import counts: a stage that imports a later stage inside a function, or only for a
    # type, still needs it (and pulls it into every stage below).
    stage_rank = {name: i for i, name in enumerate(STAGE_ORDER)}
    assert sorted(STAGE_ORDER) == sorted(LAYERS["stages"]), "each stage once in STAGE_ORDER"
    upward = [
        f"{edge}: {_top(edge.source)} imports {_top(edge.target)}, a stage above it"
        for edge in graph.edges()
        if _top(edge.source) in stage_rank
        and _top(edge.target) in stage_rank
        and stage_rank[_top(edge.target)] > stage_rank[_top(edge.source)]
    ]
    assert upward == [], "\n".join(
        [f"imports against the stage order ({' < '.join(STAGE_ORDER)}):", *upward]
    )


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


def test_the_types_layer_imports_only_itself() -> None:
    # A value module that imported a stage would pull the stage into every other stage.
    below = set(LAYERS["types"])
    found = [
        str(e) for e in graph.edges() if _top(e.source) in below and _top(e.target) not in below
    ]
    assert found == []


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


# --------------------------------------------------------------------------- the detector


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


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

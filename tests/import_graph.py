"""The project's import graph, read from the source with `ast` (nothing is imported).

A node is a harness module by its dotted name (`harness/verdict/__init__.py` is the package face
`harness.verdict`). An edge `a -> b` says that running `a` imports `b`, with where it does so:

- `kind` is "module" for an import run when `a` is imported (top level, `try`, `if`, and the
  types-only `if TYPE_CHECKING:` block: a type is a dependency too), "function" for one inside a
  function or method body (deferred until called: a cycle dodged that way is still a cycle);
- `import harness.x.y` and `from harness.x.y import n` import `harness.x.y`; `from harness.x import
  y` imports `harness.x.y` when y is a submodule, else the face `harness.x`;
- importing `harness.x.y` from outside package `harness.x` first runs its face `harness.x`
  (`harness/x/__init__.py`), so that is an edge too: a face's re-exports are part of the graph.

`cycles(graph)` gives every strongly connected component with more than one module (or a module
importing itself), each as one concrete closed path through it to print.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the folder that holds the package
PACKAGE = "harness"


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    kind: str  # "module" or "function"
    line: int

    path: str  # the importing file, relative to the root

    def __str__(self) -> str:
        return f"{self.source} -> {self.target}  ({self.path}:{self.line}, {self.kind}-level)"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Path]:
    """Every module of `package` (under `root`) by dotted name."""
    return {module_name(p, root): p for p in sorted((root / package).rglob("*.py"))}


def _is_package(name: str, known: dict[str, Path]) -> bool:
    return known.get(name, Path()).name == "__init__.py"


def resolve(name: str, level: int, importer: str, known: dict[str, Path]) -> str:
    """The absolute name of a (possibly relative) `from` import's module."""
    if level == 0:
        return name
    parts = importer.split(".")
    if not _is_package(importer, known):
        parts.pop()  # a plain module's relative imports start at its package
    parts = parts[: len(parts) - (level - 1)]
    return ".".join([*parts, name] if name else parts)


def _statements(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement with "module" or "function" for when it runs."""

    def walk(node: ast.AST, kind: str) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, kind
            inner = (
                "function"
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
                else kind
            )
            yield from walk(child, inner)

    yield from walk(tree, "module")


def _targets(
    statement: ast.Import | ast.ImportFrom, importer: str, known: dict[str, Path]
) -> Iterable[str]:
    if isinstance(statement, ast.Import):
        return [alias.name for alias in statement.names]
    base = resolve(statement.module or "", statement.level, importer, known)
    found = []
    for alias in statement.names:
        sub = f"{base}.{alias.name}"
        found.append(sub if sub in known else base)
    return found


def _with_faces(target: str, importer: str, known: dict[str, Path]) -> list[str]:
    """`target` and the package faces importing it runs first (not the importer's own)."""
    parts = target.split(".")
    chain = [".".join(parts[:i]) for i in range(2, len(parts))]  # not "harness" itself
    faces = [p for p in chain if p in known and not (importer == p or importer.startswith(p + "."))]
    return [*faces, target]


def edges(root: Path = ROOT, package: str = PACKAGE) -> list[Edge]:
    """Every import between the package's modules, in file and line order (parsed once per
    process and tree: the sources do not change during a test run)."""
    return list(_edges(root, package))


@functools.cache
def _edges(root: Path, package: str) -> tuple[Edge, ...]:
    known = modules(root, package)
    found: set[Edge] = set()
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        where = str(path.relative_to(root))
        for statement, kind in _statements(tree):
            for target in _targets(statement, name, known):
                if target != package and not target.startswith(package + "."):
                    continue
                while target not in known and "." in target:  # a name, not a module
                    target = target.rsplit(".", 1)[0]
                for each in _with_faces(target, name, known):
                    if each != package and each != name:
                        found.add(Edge(name, each, kind, statement.lineno, where))
    return tuple(sorted(found, key=lambda e: (e.source, e.line, e.target, e.kind)))


def graph(all_edges: Iterable[Edge]) -> dict[str, dict[str, Edge]]:
    """source -> target -> the first edge (module-level preferred) that makes it."""
    out: dict[str, dict[str, Edge]] = {}
    for edge in all_edges:
        current = out.setdefault(edge.source, {}).get(edge.target)
        if current is None or (current.kind == "function" and edge.kind == "module"):
            out[edge.source][edge.target] = edge
    return out


def _components(adjacent: dict[str, dict[str, Edge]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []
    nodes = sorted(set(adjacent) | {t for targets in adjacent.values() for t in targets})
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(adjacent.get(root, {}))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(adjacent.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                result.append(sorted(component))
    return result


def _closed_path(start: str, members: set[str], adjacent: dict[str, dict[str, Edge]]) -> list[Edge]:
    """A shortest path from `start` back to itself inside one component (breadth first)."""
    previous: dict[str, Edge] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target, edge in sorted(adjacent.get(node, {}).items()):
                if target not in members:
                    continue
                if target == start:
                    path = [edge]
                    while path[0].source != start:
                        path.insert(0, previous[path[0].source])
                    return path
                if target not in previous:
                    previous[target] = edge
                    following.append(target)
        frontier = following
    raise AssertionError(f"{start} is in no cycle")


@dataclass(frozen=True)
class Cycle:
    members: tuple[str, ...]  # every module of the strongly connected component
    path: tuple[Edge, ...]  # one closed path through it

    def __str__(self) -> str:
        head = f"{len(self.members)} modules: {', '.join(self.members)}"
        return "\n".join([head, *(f"    {edge}" for edge in self.path)])


def cycles(adjacent: dict[str, dict[str, Edge]]) -> list[Cycle]:
    found = []
    for component in _components(adjacent):
        if len(component) == 1 and component[0] not in adjacent.get(component[0], {}):
            continue
        path = _closed_path(component[0], set(component), adjacent)
        found.append(Cycle(tuple(component), tuple(path)))
    return sorted(found, key=lambda c: c.members)


def lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())

"""The package order of harness/, drawn from its imports with every import counted.

    python scripts/import_graph.py                  # this checkout
    python scripts/import_graph.py --root ../main   # another checkout, to compare
    python scripts/import_graph.py --edges          # each package arrow with its import lines

Every `import` statement counts: at module level, inside a function, under `if TYPE_CHECKING:`,
and the package faces an import runs (tests/import_graph.py reads them with `ast`). The modules
are folded into their top-level package (`harness.verdict.stats` is `verdict`; a loose module such
as `harness.types` is its own node), and the script prints:

1. the package order drawn from the imports, lowest first: a package is listed after every
   package it imports; packages that import each other are listed together in braces, as one
   cycle;
2. the cycles between packages, each with the import lines of one closed path through it;
3. the arrows that go up: an import from a stage package to a stage above it in
   `STAGE_ORDER`, or from a layer to a layer above it in `LAYERS` (both in
   tests/project/test_architecture.py, which fails on any of them).

Exit status 0 always: the test is what fails; this prints the figures.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "project"))

import import_graph as graph
from test_architecture import LAYER_OF, RANK, STAGE_ORDER


def top(module: str) -> str:
    """The top-level package or loose module of `module` ("" for the package root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def package_edges(edges: list[graph.Edge]) -> dict[str, dict[str, list[graph.Edge]]]:
    """source package -> target package -> every import that makes the arrow."""
    out: dict[str, dict[str, list[graph.Edge]]] = defaultdict(lambda: defaultdict(list))
    seen: set[tuple[str, int, str]] = set()
    for edge in edges:
        a, b = top(edge.source), top(edge.target)
        # one import statement is one arrow's import, though it runs a face and a module
        if a and b and a != b and (edge.path, edge.line, b) not in seen:
            seen.add((edge.path, edge.line, b))
            out[a][b].append(edge)
    return out


Arrows = dict[str, dict[str, list[graph.Edge]]]


def _as_module_graph(arrows: Arrows) -> dict[str, dict[str, graph.Edge]]:
    # tests/import_graph.py's cycle finder, run on packages: one representative edge per arrow,
    # renamed to its packages so the printed path reads package to package.
    return {
        a: {b: graph.Edge(a, b, es[0].kind, es[0].line, es[0].path) for b, es in targets.items()}
        for a, targets in arrows.items()
    }


def order(nodes: set[str], arrows: dict[str, dict[str, list[graph.Edge]]]) -> list[list[str]]:
    """The packages lowest first, each cycle as one group (its members sorted)."""
    adjacent = _as_module_graph(arrows)
    groups = [sorted(c.members) for c in graph.cycles(adjacent)]
    group_of = {m: tuple(g) for g in groups for m in g}
    for node in nodes:
        group_of.setdefault(node, (node,))
    needs: dict[tuple[str, ...], set[tuple[str, ...]]] = defaultdict(set)
    for a, targets in arrows.items():
        for b in targets:
            if group_of[a] != group_of[b]:
                needs[group_of[a]].add(group_of[b])
    placed: list[list[str]] = []
    done: set[tuple[str, ...]] = set()
    remaining = set(group_of.values())
    while remaining:
        # Lowest first; among those ready, by layer (then stage order, then name), so that the
        # printed order reads like the declared one wherever the imports allow it.
        ready = [g for g in remaining if needs[g] <= done]
        ready.sort(key=lambda g: (RANK.get(g[0], -1), _stage_rank(g[0]), g))
        chosen = ready[0]
        placed.append(list(chosen))
        done.add(chosen)
        remaining.discard(chosen)
    return placed


def _stage_rank(name: str) -> int:
    return STAGE_ORDER.index(name) if name in STAGE_ORDER else -1


def upward(arrows: Arrows) -> list[tuple[str, str, list[graph.Edge]]]:
    """Each package arrow against the declared order: a layer importing a higher layer, or a
    stage importing a stage above it in STAGE_ORDER."""
    found = []
    for a, targets in sorted(arrows.items()):
        for b, edges in sorted(targets.items()):
            if a not in RANK or b not in RANK:
                continue
            if RANK[b] > RANK[a] or (
                a in STAGE_ORDER and b in STAGE_ORDER and _stage_rank(b) > _stage_rank(a)
            ):
                found.append((a, b, edges))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=graph.ROOT, help="the checkout to read")
    parser.add_argument("--edges", action="store_true", help="print every package arrow")
    args = parser.parse_args()
    root = args.root.resolve()
    edges = graph.edges(root, graph.PACKAGE)
    arrows = package_edges(edges)
    nodes = {top(m) for m in graph.modules(root)} - {""}
    kinds: dict[str, int] = defaultdict(int)
    for targets in arrows.values():
        for es in targets.values():
            for edge in es:
                kinds[edge.kind] += 1
    cycles = graph.cycles(_as_module_graph(arrows))
    stage_cycles = [c for c in cycles if set(c.members) & set(STAGE_ORDER)]
    up = upward(arrows)
    print(f"checkout: {root}")
    print(
        f"packages and loose modules: {len(nodes)}; arrows between them: "
        f"{sum(len(t) for t in arrows.values())}, made by {sum(kinds.values())} imports "
        f"({kinds['module']} module-level, {kinds['function']} inside functions)"
    )
    print(f"stage order declared (lowest first): {' < '.join(STAGE_ORDER)}")
    print(f"cycles between packages: {len(cycles)} ({len(stage_cycles)} through stage packages)")
    print(f"arrows up: {len(up)}, made by {sum(len(es) for _, _, es in up)} imports")
    print("package order drawn from the imports (lowest first; {..} = a cycle):")
    for layer in ("types", "stages", "tools", "cli"):
        groups = [g for g in order(nodes, arrows) if LAYER_OF.get(g[0]) == layer]
        shown = [g[0] if len(g) == 1 else "{" + " ".join(g) + "}" for g in groups]
        print(f"  {layer}: {' < '.join(shown)}")
    unplaced = sorted(n for n in nodes if n not in LAYER_OF)
    if unplaced:
        print(f"  in no layer: {', '.join(unplaced)}")
    for cycle in cycles:
        print(f"cycle of {len(cycle.members)} packages: {' '.join(cycle.members)}")
        print("  one closed path through it:")
        for step in cycle.path:
            where = arrows[step.source][step.target]
            print(f"    {step.source} -> {step.target}: {len(where)} imports, e.g. {where[0]}")
        inside = [
            (a, b, len(es))
            for a, targets in sorted(arrows.items())
            for b, es in sorted(targets.items())
            if a in cycle.members and b in cycle.members
        ]
        print(f"  every arrow inside it ({len(inside)}):")
        for a, b, n in inside:
            print(f"    {a} -> {b}: {n} imports")
    for a, b, es in up:
        print(f"up: {a} -> {b}: {len(es)} imports")
        for edge in es:
            print(f"    {edge}")
    if args.edges:
        for a, targets in sorted(arrows.items()):
            for b, es in sorted(targets.items()):
                print(f"arrow: {a} -> {b}: {len(es)} imports")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

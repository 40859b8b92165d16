"""The house in numbers: import cycles between harness modules, imports against the layers, and
modules over 600 lines, as tests/project/test_architecture.py counts them.

    python scripts/house.py                  # this checkout
    python scripts/house.py --root ../main   # another checkout of the project, to compare

Prints one line per figure, then each cycle (one closed path through it) and each long module.
Exit status 0 always: the test is what fails; this prints the figures.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "project"))

import import_graph as graph
from test_architecture import LAYER_OF, MAX_LINES, RANK


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=graph.ROOT, help="the checkout to measure")
    args = parser.parse_args()
    root = args.root.resolve()
    edges = graph.edges(root, graph.PACKAGE)
    cycles = graph.cycles(graph.graph(edges))
    module_level = graph.cycles(graph.graph([e for e in edges if e.kind == "module"]))
    in_cycles = {m for c in cycles for m in c.members}

    def top(module: str) -> str:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else ""

    unplaced = sorted({top(e.source) for e in edges} - set(LAYER_OF) - {""})
    upward = [
        e
        for e in edges
        if top(e.source) in RANK
        and top(e.target) in RANK
        and RANK[top(e.target)] > RANK[top(e.source)]
    ]
    long = sorted(
        ((graph.lines(p), str(p.relative_to(root))) for p in graph.modules(root).values()),
        reverse=True,
    )
    long = [(n, p) for n, p in long if n > MAX_LINES]
    total = sum(graph.lines(p) for p in graph.modules(root).values())
    print(f"checkout: {root}")
    print(
        f"modules: {len(graph.modules(root))}, lines: {total}, imports between them: {len(edges)}"
    )
    print(f"import cycles: {len(cycles)} through {len(in_cycles)} modules")
    print(f"import cycles among module-level imports alone: {len(module_level)}")
    print(f"imports against the layers (cli > tools > stages > base): {len(upward)}")
    if unplaced:
        print(f"top-level modules in no layer: {', '.join(unplaced)}")
    print(f"modules over {MAX_LINES} lines: {len(long)}")
    for cycle in cycles:
        print(f"  cycle, {cycle}")
    for edge in upward:
        print(f"  against the layers: {edge}")
    for n, path in long:
        print(f"  {n:5d} {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

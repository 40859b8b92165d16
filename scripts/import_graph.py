"""The package order of harness/, drawn from its imports with every import counted.

    python scripts/import_graph.py                  # this checkout
    python scripts/import_graph.py --root ../main   # another checkout, to compare
    python scripts/import_graph.py --edges          # each package arrow with its import lines
    python scripts/import_graph.py --walk           # the walk of `plan` from compare/measure.py

Every `import` statement counts: at module level, inside a function, under `if TYPE_CHECKING:`,
and the package faces an import runs (tests/import_graph.py reads them with `ast`). The modules
are folded into their top-level package (`harness.verdict.stats` is `verdict`; the one loose module,
`harness.errors`, is its own node), and the script prints:

1. the package order drawn from the imports, lowest first: a package is listed after every
   package it imports; packages that import each other are listed together in braces, as one
   cycle;
2. the cycles between packages, each with the import lines of one closed path through it;
3. the arrows that go up: an import from a stage package to a stage above it in
   `STAGE_ORDER`, from a base package to one above it in `BASE_ORDER` (errors < text < values <
   process), or from a layer to a layer above it in `LAYERS` (all in
   tests/project/test_architecture.py, which fails on any of them).

With --walk it prints instead the walk of `plan` from harness/compare/measure.py: the files a
reader visits following the plan the driver is handed (`RunPlan`), and how many of the steps
between them climb back up the stage order.  Read from the source with `ast`, it visits:

- the type: `RunPlan` from measure.py's import of it to its definition, through every module
  that re-exports it, then the module that defines each type named in its fields' annotations;
- the functions it is handed to: from each function of measure.py with a `plan` parameter,
  every call to a harness function or class (a class: its `__init__`) with an argument that is
  the plan or a part of it (`plan`, `plan.config.repo`, a local name bound to one, `replace(plan,
  ...)`, anything through a `.plan` attribute); the parameters that receive them are followed in
  the callee, and so, in a class whose `__init__` keeps one on `self`, is every method with the
  attributes it kept.  An argument to a parameter annotated with a class that keeps the whole
  plan (`self.plan`: a `RefSession`) is a hand-over too: the plan is read there through it.
  Calls through a value (a callback, `session.method(...)`) are not followed.

A step is one (file, file) pair, counted once, the first reason printed; it climbs back up when
it goes to a package above its own (by layer, then STAGE_ORDER).

Exit status 0 always: the test is what fails; this prints the figures.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "project"))

import import_graph as graph
from test_architecture import BASE_ORDER, LAYER_OF, RANK, STAGE_ORDER

WALK_FROM = "harness.compare.measure"


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
        ready.sort(key=lambda g: (RANK.get(g[0], -1), _base_rank(g[0]), _stage_rank(g[0]), g))
        chosen = ready[0]
        placed.append(list(chosen))
        done.add(chosen)
        remaining.discard(chosen)
    return placed


def _stage_rank(name: str) -> int:
    return STAGE_ORDER.index(name) if name in STAGE_ORDER else -1


def _base_rank(name: str) -> int:
    return BASE_ORDER.index(name) if name in BASE_ORDER else -1


def upward(arrows: Arrows) -> list[tuple[str, str, list[graph.Edge]]]:
    """Each package arrow against the declared order: a layer importing a higher layer, a stage
    importing a stage above it in STAGE_ORDER, or a base package one above it in BASE_ORDER."""
    found = []
    for a, targets in sorted(arrows.items()):
        for b, edges in sorted(targets.items()):
            if a not in RANK or b not in RANK:
                continue
            if (
                RANK[b] > RANK[a]
                or (a in STAGE_ORDER and b in STAGE_ORDER and _stage_rank(b) > _stage_rank(a))
                or (a in BASE_ORDER and b in BASE_ORDER and _base_rank(b) > _base_rank(a))
            ):
                found.append((a, b, edges))
    return found


# --------------------------------------------------------------------------- --walk


@dataclass
class Module:
    """What the walk needs of one module: its functions (`f`, `Class.method`), classes (name ->
    their methods), the names it imports (local name -> (module, name); a module: name None)."""

    name: str
    tree: ast.Module
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    classes: dict[str, list[str]] = field(default_factory=dict)
    imported: dict[str, tuple[str, str | None]] = field(default_factory=dict)


def _index(root: Path) -> dict[str, Module]:
    known = graph.modules(root)
    out: dict[str, Module] = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        mod = Module(name, tree)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                mod.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                methods = [n for n in node.body if isinstance(n, ast.FunctionDef)]
                mod.classes[node.name] = [m.name for m in methods]
                for method in methods:
                    mod.functions[f"{node.name}.{method.name}"] = method
        for node in ast.walk(tree):  # every import, wherever it runs
            if isinstance(node, ast.ImportFrom):
                base = graph.resolve(node.module or "", node.level, name, known)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    local = alias.asname or alias.name
                    mod.imported[local] = (sub, None) if sub in known else (base, alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        mod.imported[alias.asname] = (alias.name, None)
        out[name] = mod
    return out


def _defining(index: dict[str, Module], module: str, name: str, hops: list[str]) -> str | None:
    """The module that defines `name` as imported from `module`, through re-exports; `hops`
    gets every module passed through (the re-exporting ones and the defining one)."""
    for _ in range(10):
        mod = index.get(module)
        if mod is None:
            return None
        hops.append(module)
        if name in mod.functions or name in mod.classes or _assigned(mod.tree, name):
            return module
        if name not in mod.imported:
            return None
        module, original = mod.imported[name]
        if original is None:
            return None
        name = original
    return None


def _assigned(tree: ast.Module, name: str) -> bool:
    return any(
        isinstance(node, ast.Assign | ast.AnnAssign)
        and any(isinstance(t, ast.Name) and t.id == name for t in _targets(node))
        for node in tree.body
    )


def _targets(node: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return list(node.targets) if isinstance(node, ast.Assign) else [node.target]


def _pairs(node: ast.Assign | ast.AnnAssign) -> list[tuple[ast.expr, ast.expr]]:
    """(target, value) of an assignment, `a, b = x, y` element by element."""
    assert node.value is not None
    out = []
    for target in _targets(node):
        if isinstance(target, ast.Tuple):
            value = node.value
            if isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts):
                out += list(zip(target.elts, value.elts, strict=True))
            else:
                out += [(t, value) for t in target.elts]
        else:
            out.append((target, node.value))
    return out


def _chain(expr: ast.expr) -> str | None:
    """`a.b[0].c` as text when `expr` is only names, attributes and subscripts, else None."""
    node = expr
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return ast.unparse(expr) if isinstance(node, ast.Name) else None


def _holds(expr: ast.expr, holders: set[str]) -> bool:
    """Whether `expr` is the plan or a part of it: a chain from a holder, or through `.plan`."""
    text = _chain(expr)
    if text is None:  # replace(plan, ...) is the plan too
        call = expr
        return (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == "replace"
            and bool(call.args)
            and _holds(call.args[0], holders)
        )
    parts = re.split(r"[.\[]", text)
    return "plan" in parts[1:] or any(
        text == h or text.startswith((h + ".", h + "[")) for h in holders
    )


Step = tuple[str, str, str]  # (from module, to module, why: the type, or the call)


def walk_plan(root: Path, start: str = WALK_FROM) -> tuple[list[str], list[Step]]:
    """(the modules visited, in order; the steps between modules, each pair once): walked
    again until the classes found keeping the plan are all known."""
    index = _index(root)
    carriers = {"RunPlan"}
    while True:
        known = set(carriers)
        visited, steps = _walk(index, start, carriers)
        if carriers == known:
            return visited, steps


def _walk(
    index: dict[str, Module], start: str, carriers: set[str]
) -> tuple[list[str], list[Step]]:
    visited: list[str] = [start]
    steps: list[Step] = []
    seen: set[tuple[str, str, frozenset[str]]] = set()

    def visit(source: str, target: str, why: str) -> None:
        if target not in visited:
            visited.append(target)
        if source != target and all((s, t) != (source, target) for s, t, _ in steps):
            steps.append((source, target, why))

    start_mod = index[start]
    # The type: `RunPlan` as measure.py imports it, to its definition, and its fields' types.
    if "RunPlan" in start_mod.imported:
        module, name = start_mod.imported["RunPlan"]
        hops: list[str] = []
        defined = _defining(index, module, name or "RunPlan", hops)
        previous = start
        for hop in hops:
            visit(previous, hop, "the type RunPlan")
            previous = hop
        if defined is not None:
            plan_class = next(
                n
                for n in index[defined].tree.body
                if isinstance(n, ast.ClassDef) and n.name == "RunPlan"
            )
            for stmt in plan_class.body:
                if isinstance(stmt, ast.AnnAssign):
                    for name_node in ast.walk(stmt.annotation):
                        if isinstance(name_node, ast.Name):
                            where = _field_type(index, defined, name_node.id)
                            if where is not None:
                                visit(defined, where, f"the field type {name_node.id}")
    todo: list[tuple[str, str, frozenset[str]]] = [
        (start, fname, frozenset({"plan"}))
        for fname, fn in start_mod.functions.items()
        if any(a.arg == "plan" for a in fn.args.args + fn.args.kwonlyargs)
    ]
    while todo:
        module, fname, holders_in = todo.pop(0)
        if (module, fname, holders_in) in seen:
            continue
        seen.add((module, fname, holders_in))
        mod = index[module]
        fn = mod.functions[fname]
        holders = set(holders_in)
        for node in ast.walk(fn):  # local names bound to the plan or a part of it
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                for target, value in _pairs(node):
                    text = _chain(target)
                    if text is not None and _holds(value, holders):
                        holders.add(text)
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call):
                continue
            callee = _callee(index, mod, fname, node.func)
            if callee is None:
                continue
            target_module, target_fn = callee
            receiving = index[target_module].functions[target_fn]
            arguments = receiving.args.args
            if "." in target_fn and arguments and arguments[0].arg == "self":
                arguments = arguments[1:]
            params = [a.arg for a in arguments]
            # a parameter typed as the plan, or as something that keeps it (RefSession, ...)
            typed = {
                a.arg
                for a in [*arguments, *receiving.args.kwonlyargs]
                if a.annotation is not None
                and carriers & set(re.findall(r"\w+", ast.unparse(a.annotation)))
            }
            handed = [(i, None, a) for i, a in enumerate(node.args) if _holds(a, holders)]
            handed += [
                (None, k.arg, k.value) for k in node.keywords if k.arg and _holds(k.value, holders)
            ]
            got = {params[i] for i, _, _ in handed if i is not None and i < len(params)}
            got |= {k for _, k, _ in handed if k is not None}
            # What keeps the plan (sessions) is handed too; read there through its `.plan`.
            handed += [
                (i, None, a)
                for i, a in enumerate(node.args)
                if i < len(params) and params[i] in typed and not _holds(a, holders)
            ]
            handed += [
                (None, k.arg, k.value)
                for k in node.keywords
                if k.arg in typed and not _holds(k.value, holders)
            ]
            if not handed:
                continue
            shown = ", ".join(ast.unparse(a) for _, _, a in handed)
            visit(module, target_module, f"{ast.unparse(node.func)}({shown})")
            todo.append((target_module, target_fn, frozenset(got)))
            if target_fn.endswith(".__init__"):  # the object keeps it: every method holds it
                cls = target_fn.split(".")[0]
                kept = {
                    ast.unparse(target)
                    for n in ast.walk(receiving)
                    if isinstance(n, ast.Assign | ast.AnnAssign) and n.value is not None
                    for target, value in _pairs(n)
                    if ast.unparse(target).startswith("self.") and _holds(value, set(got))
                }
                if "self.plan" in kept:  # it keeps the whole plan: a session
                    carriers.add(cls)
                for method in index[target_module].classes[cls]:
                    if method != "__init__" and kept:
                        todo.append((target_module, f"{cls}.{method}", frozenset(kept)))
    return visited, steps


def _field_type(index: dict[str, Module], module: str, name: str) -> str | None:
    mod = index[module]
    if name in mod.classes or _assigned(mod.tree, name):
        return module
    if name in mod.imported:
        target, original = mod.imported[name]
        return _defining(index, target, original or name, []) if original else None
    return None


def _callee(
    index: dict[str, Module], mod: Module, caller: str, func: ast.expr
) -> tuple[str, str] | None:
    """The (module, function) a call runs, when it is a harness function or class: a class
    is its __init__."""
    module, name = None, None
    if isinstance(func, ast.Name):
        if func.id in mod.functions or func.id in mod.classes:
            module, name = mod.name, func.id
        elif func.id in mod.imported:
            target, original = mod.imported[func.id]
            if original is not None:
                hops: list[str] = []
                module, name = _defining(index, target, original, hops), original
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        if func.value.id == "self" and "." in caller:
            module, name = mod.name, f"{caller.split('.')[0]}.{func.attr}"
        elif func.value.id in mod.imported and mod.imported[func.value.id][1] is None:
            module, name = mod.imported[func.value.id][0], func.attr
    if module is None or name is None or module not in index:
        return None
    target = index[module]
    if name in target.classes:
        return (module, f"{name}.__init__") if "__init__" in target.classes[name] else None
    return (module, name) if name in target.functions else None


def climbs(steps: list[Step]) -> list[Step]:
    """The steps that go up: to a package above the one the step starts in (by layer, then
    STAGE_ORDER)."""

    def rank(module: str) -> tuple[int, int]:
        name = top(module)
        return RANK.get(name, -1), _stage_rank(name)

    return [s for s in steps if top(s[0]) != top(s[1]) and rank(s[1]) > rank(s[0])]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=graph.ROOT, help="the checkout to read")
    parser.add_argument("--edges", action="store_true", help="print every package arrow")
    parser.add_argument(
        "--walk", action="store_true", help=f"print the walk of `plan` from {WALK_FROM}"
    )
    args = parser.parse_args()
    root = args.root.resolve()
    if args.walk:
        return print_walk(root)
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
    print(f"base order declared (lowest first): {' < '.join(BASE_ORDER)}")
    print(f"stage order declared (lowest first): {' < '.join(STAGE_ORDER)}")
    print(f"cycles between packages: {len(cycles)} ({len(stage_cycles)} through stage packages)")
    print(f"arrows up: {len(up)}, made by {sum(len(es) for _, _, es in up)} imports")
    print("package order drawn from the imports (lowest first; {..} = a cycle):")
    for layer in ("base", "stages", "tools", "cli"):
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



def print_walk(root: Path) -> int:
    visited, steps = walk_plan(root)
    up = climbs(steps)
    print(f"checkout: {root}")
    print(
        f"the walk of `plan` from {WALK_FROM}: {len(visited)} files visited, {len(steps)} steps "
        f"between them, {len(up)} climbing back up the stage order"
    )
    for source, target, why in steps:
        mark = "  UP" if (source, target, why) in up else ""
        print(f"  {source} -> {target}: {why}{mark}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

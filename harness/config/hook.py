"""A user's query hook: `query.rewrite = "module:function"`, loaded once from the config's folder.

    load_hook(spec, folder) -> Hook           imported, checked callable; cached per file content
    hook_file(spec, folder) -> Path | None    where the module is (for the reuse key)
    rewritten_items(queries, rewrite, config_path) -> [(query id, text as sent)]

`module` is a dotted name under the folder holding the configuration file (the user's own tree,
never a ref's checkout, so both sides are asked the same text): `tools.fts:quote` is
`tools/fts.py` (or `tools/fts/__init__.py`) beside harness.toml, and `quote` a function from str
to str. The module is imported under a private name, with its folder first on sys.path while it
runs, so it can import its siblings; it is loaded once per process for one content of its file.
Its source file's sha256 is part of the key under which a stored run may be reused
(`harness.config.inputs`), so an edited hook never reuses runs asked with the old one; so are the
files of the modules under the same folder that its import imported in turn (a sibling helper,
a package's submodules). Modules from elsewhere (the standard library, installed packages) are
not hashed.

Every failure is a ConfigError naming the file and `query.rewrite` (exit 2, before anything is
built): no such module, an import that fails, no such function, not callable, and, on a query,
an exception or a value that is not a string (naming the query id).
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ConfigError
from harness.process.inputs import HOOK, read_input


@dataclass(frozen=True)
class Hook:
    spec: str  # "module:function" as written
    path: Path  # the module's source file
    sha256: str  # of that file's bytes
    function: Callable[[str], object]
    # The modules under the folder that importing it imported in turn (siblings, a package's
    # submodules): (source file, sha256 of its bytes), sorted; hashed into the reuse key too.
    imports: tuple[tuple[Path, str], ...] = ()


_LOADED: dict[tuple[Path, str, str], Hook] = {}


def is_hook(rewrite: str | None) -> bool:
    return bool(rewrite) and ":" in str(rewrite)


def hook_file(spec: str, folder: Path) -> Path | None:
    """The source file of `spec`'s module under `folder`, or None when there is none."""
    module = spec.partition(":")[0]
    base = folder.joinpath(*module.split("."))
    for path in (base.with_name(base.name + ".py"), base / "__init__.py"):
        if path.is_file():
            return path.resolve()
    return None


def load_hook(spec: str, folder: Path) -> Hook:
    """Import `spec` ("module:function") from `folder` once per content of its file."""
    module_name, _, attribute = spec.partition(":")
    where = f"query.rewrite = {spec!r}"
    path = hook_file(spec, folder)
    if path is None:
        relative = Path(*module_name.split("."))
        raise ConfigError(
            f"{where}: no module {module_name!r} in {folder} (looked for {relative}.py and "
            f"{relative}/__init__.py beside the configuration file)",
            hint="put the hook's module beside harness.toml, or name one of the rewrites",
        )
    try:
        source = read_input(path, HOOK, "query.rewrite")  # a FIFO named like a module: refused
    except OSError as error:
        raise ConfigError(f"{where}: cannot read {path}: {error.strerror}") from None
    digest = hashlib.sha256(source).hexdigest()
    key = (path, attribute, digest)
    if key in _LOADED:
        return _LOADED[key]
    private = f"_harness_hook_{digest[:16]}_{module_name.replace('.', '_')}"
    loader_spec = importlib.util.spec_from_file_location(private, path)
    if loader_spec is None or loader_spec.loader is None:
        raise ConfigError(f"{where}: {path} cannot be imported")
    module = importlib.util.module_from_spec(loader_spec)
    before = set(sys.modules)
    sys.path.insert(0, str(folder))
    try:
        loader_spec.loader.exec_module(module)
    except Exception as error:  # the user's module: any failure is theirs to see
        last = traceback.extract_tb(error.__traceback__)[-1:]
        at = f" ({last[0].filename}:{last[0].lineno})" if last else ""
        raise ConfigError(
            f"{where}: importing {path} failed: {type(error).__name__}: {error}{at}",
            hint="run `python -c 'import ...'` on it beside harness.toml to see the whole error",
        ) from None
    finally:
        if str(folder) in sys.path:
            sys.path.remove(str(folder))
    if not hasattr(module, attribute):
        public = sorted(n for n, v in vars(module).items() if callable(v) and n[:1] != "_")
        raise ConfigError(
            f"{where}: {path} has no attribute {attribute!r}"
            + (f" (its functions: {', '.join(public)})" if public else ""),
        )
    function = getattr(module, attribute)
    if not callable(function):
        raise ConfigError(
            f"{where}: {path}: {attribute} is {type(function).__name__}, not callable",
            hint="name a function taking the query text (str) and returning the text to send",
        )
    hook = Hook(spec, path, digest, function, _imported_under(folder, before, path))
    _LOADED[key] = hook
    return hook


def _imported_under(folder: Path, before: set[str], own: Path) -> tuple[tuple[Path, str], ...]:
    """The source files, under `folder`, of the modules imported since `before` was taken."""
    root = folder.resolve()
    found = set()
    for name in set(sys.modules) - before:
        file = getattr(sys.modules.get(name), "__file__", None)
        if not file:
            continue
        path = Path(file).resolve()
        if path != own and path.is_relative_to(root) and path.is_file():
            found.add(path)
    return tuple((p, hashlib.sha256(p.read_bytes()).hexdigest()) for p in sorted(found))


def rewritten_items(
    queries: Iterable[tuple[str, str]], rewrite: str | None, config_path: Path
) -> list[tuple[str, str]]:
    """(query id, text as sent) for each (id, text): the named rewrite or the hook applied."""
    from harness.config.rewrite import rewritten

    items = list(queries)
    if not is_hook(rewrite):
        return [(qid, rewritten(text, rewrite)) for qid, text in items]
    assert rewrite is not None
    where = f"{config_path}: query.rewrite = {rewrite!r}"
    hook = load_hook(rewrite, config_path.parent)
    out = []
    for qid, text in items:
        try:
            sent = hook.function(text)
        except Exception as error:  # the user's function: name the query it failed on
            raise ConfigError(
                f"{where} raised {type(error).__name__}: {error} on query {qid!r} "
                f"(text {text!r}); {hook.path}",
                hint="fix the hook so that it returns a string for every query of the gold set",
            ) from None
        if not isinstance(sent, str):
            raise ConfigError(
                f"{where} returned {type(sent).__name__}, not a string, on query {qid!r} "
                f"(text {text!r}); {hook.path}",
                hint="the hook must return the query text to send, as a str",
            )
        out.append((qid, sent))
    return out

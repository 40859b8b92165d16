"""Editable installs in a cached venv, pointed at the checkout that boots now.

    editable_paths(venv, worktree) -> tuple[Path, ...]   sys.path entries to put first

A build that runs `pip install -e .` writes, into the ref's venv, where the package's source is:
a `.pth` line (`/.../worktrees/<sha>-<tag>/src`: setuptools' src layouts, flit, hatch, PDM) or
an `__editable__..._finder.py` whose mapping names the package's folder (`{'pkg':
'/.../worktrees/<sha>-<tag>/pkg'}`).  That is the checkout the build ran in.  The venv is cached
per commit and reused by later runs, but each run boots from a fresh checkout (and the first is
removed), so the installed package would point at a folder that is gone, or, in an A/A run, at
the other side's checkout.

`editable_paths` finds every such source inside a checkout under harness's cache (`worktrees/`
or `snapshots/` of `cache_dir()`), takes its path relative to that checkout, and returns the
same folder in `worktree` (for a finder's package folder, the folder holding it), existing ones
only, in the order found.  The service is started with them first on PYTHONPATH, which Python
searches before site-packages' path entries and before the finders that editable installs
append to `sys.meta_path`: so the package is imported from the booting checkout's own files.
Nothing in the shared venv is rewritten.  Editable sources outside the cache (a package the
build installed from elsewhere) are left alone.
"""

from __future__ import annotations

import re
from pathlib import Path

from harness.process.leftovers import cache_dir

CHECKOUT_KINDS = ("worktrees", "snapshots")  # where harness puts the checkouts it builds in
_QUOTED = re.compile(r"""(['"])(/[^'"\n]+)\1""")  # absolute paths quoted in a finder's source


def editable_paths(venv: Path, worktree: Path) -> tuple[Path, ...]:
    """The venv's editable sources re-pointed at `worktree` (see the module docstring)."""
    roots = list(
        dict.fromkeys(
            p
            for kind in CHECKOUT_KINDS
            for p in (cache_dir() / kind, (cache_dir() / kind).resolve())
        )
    )
    found: list[Path] = []
    for site in sorted(venv.glob("lib/python*/site-packages")):
        for pth in sorted(site.glob("*.pth")):
            for line in _lines(pth):
                if not line.startswith(("#", "import ", "import\t")):
                    found += _moved(Path(line), roots, worktree, package=False)
        for finder in sorted(site.glob("__editable__*finder.py")):
            text = "\n".join(_lines(finder))
            for match in _QUOTED.finditer(text):
                found += _moved(Path(match.group(2)), roots, worktree, package=True)
    return tuple(dict.fromkeys(p for p in found if p.is_dir()))


def _lines(path: Path) -> list[str]:
    try:
        return [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    except (OSError, UnicodeDecodeError):
        return []


def _moved(source: Path, roots: list[Path], worktree: Path, *, package: bool) -> list[Path]:
    """`source` inside a cached checkout -> the same place in `worktree`; a package's folder
    (or a module file) -> the folder holding it."""
    if not source.is_absolute():
        return []
    for root in roots:
        if source.is_relative_to(root):
            parts = source.relative_to(root).parts
            if len(parts) < 1:
                return []
            inside = worktree.joinpath(*parts[1:])  # parts[0] is the checkout's own folder
            return [inside.parent if package else inside]
    return []

"""Running harness code as user nobody (setpriv), from a copy of the harness nobody can read.

    reason = nobody_unavailable()        # None, or why this machine cannot (then skip)
    lib = readable_harness(top)          # top/lib: harness, psutil, jmespath, world-readable
    done = as_nobody([python, script, ...], env=..., cwd=top)

Root runs the suite here and in CI; a promise about what a service cannot do is tested as root
and as an unprivileged user, whose Python must live outside /root (the venv's does not).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import jmespath
import psutil

import harness

NOBODY = 65534
SETPRIV = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
PATH = "/usr/local/bin:/usr/bin:/bin"


def system_python() -> str | None:
    """A Python >= 3.11 outside /root that user nobody can run (Debian's /usr/bin/python3)."""
    for name in ("python3", "python3.13", "python3.12", "python3.11"):
        found = shutil.which(name, path=PATH)
        if found is None:
            continue
        done = subprocess.run(
            [*SETPRIV, found, "-c", "import sys; assert sys.version_info >= (3, 11)"],
            capture_output=True,
            check=False,
        )
        if done.returncode == 0:
            return found
    return None


def nobody_unavailable() -> str | None:
    """Why harness code cannot be run as nobody here, or None when it can."""
    if os.geteuid() != 0:
        return "needs root to switch to user nobody (as this user, the test is unprivileged)"
    if shutil.which("setpriv") is None:
        return "setpriv (util-linux) is not installed"
    if system_python() is None:
        return "no Python >= 3.11 that user nobody may run (the venv's lives under /root)"
    return None


def readable_harness(top: Path) -> Path:
    """top/lib holding copies of the harness and the packages it needs on a boot's path, for a
    PYTHONPATH that nobody can read (this checkout and the venv may not be)."""
    top.chmod(0o755)
    lib = top / "lib"
    ignore = shutil.ignore_patterns("__pycache__")
    for package in (harness, psutil, jmespath):
        assert package.__file__ is not None
        src = Path(package.__file__).parent
        shutil.copytree(src, lib / src.name, ignore=ignore)
    return lib


def as_nobody(
    argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, timeout: float = 180.0
) -> subprocess.CompletedProcess[str]:
    """`argv` run to completion as nobody, with exactly `env`."""
    return subprocess.run(
        [*SETPRIV, *argv],
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )

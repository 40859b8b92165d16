"""Running the installed console scripts the way a user does: a subprocess, its own cwd."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def script(name: str) -> str:
    """The console script installed next to this interpreter (`harness` or `compare`)."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        raise FileNotFoundError(f"{path}: install the project first (pip install -e '.[test]')")
    return str(path)


def run_cli(
    name: str, *args: str | Path, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [script(name), *map(str, args)],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )

"""Running the installed console scripts the way a user does: a process of its own, its own cwd."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import cli_server


def script(name: str) -> str:
    """The console script installed next to this interpreter (`harness` or `compare`)."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        raise FileNotFoundError(f"{path}: install the project first (pip install -e '.[test]')")
    return str(path)


def run_cli(
    name: str, *args: str | Path, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`name` (harness or compare) run to its end, as `subprocess.run` would, in a process of
    its own forked from a server that has imported harness already (tests/cli_server.py)."""
    script(name)  # installed, or say how
    return cli_server.run(name, args, cwd=cwd, env={**os.environ, **(env or {})}, timeout=timeout)


def commands() -> list[tuple[str, argparse.ArgumentParser]]:
    """Every command of `harness` ("" for the top one, then "compare", "gold build", ...) and
    its parser, as harness.cli.parser builds them now."""
    from harness.cli.parser import build_parser

    found: list[tuple[str, argparse.ArgumentParser]] = []

    def walk(parser: argparse.ArgumentParser, name: str) -> None:
        found.append((name, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, child in action.choices.items():
                    walk(child, f"{name} {sub}".strip())

    walk(build_parser(), "")
    return found

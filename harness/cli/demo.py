"""`harness demo DIR`: the bundled example repository written out, to copy from
(`compare --demo` runs it in a throwaway copy: harness.cli.compare)."""

from __future__ import annotations

import argparse
from pathlib import Path

EXAMPLES = {"demo": "harness demo /tmp/harness-demo"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", type=Path, help="a new or empty directory")


def run(args: argparse.Namespace) -> int:
    from harness.cli.exits import EXIT_OK
    from harness.demo import materialise

    dest = materialise(args.dir)
    print(f"harness: the example repository is in {dest} (branches main and feat/x)")
    print(f"  cd {dest} && compare --baseline main --candidate feat/x")
    return EXIT_OK

"""`harness schema`: the JSON Schema of comparison.json, a run record or harness.toml."""

from __future__ import annotations

import argparse

EXAMPLES = {"schema": "harness schema comparison > comparison.schema.json"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "name",
        choices=("comparison", "run", "config"),
        help="comparison: comparison.json; run: results/runs/*.json; config: harness.toml",
    )


def run(args: argparse.Namespace) -> int:
    from harness.cli.exits import EXIT_OK
    from harness.schemas import schema_text

    print(schema_text(args.name), end="")
    return EXIT_OK

"""The `harness` command line, declared: the tree of commands, each listed with its help.

    args = parse_args(argv)     # a usage error prints the usage and exits with EXIT_USAGE (2)

`harness.cli.main` calls the command that `args.command` (and `args.gold_command`) name.  Each
command's arguments are declared by its own module, harness.cli.NAME (`add_arguments(p)`,
examples in `EXAMPLES`), and only the named command's are built: `harness --help` imports no
command module, `harness compare --help` only harness.cli.compare (and no stage).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Sequence

from harness import __version__
from harness.cli.exits import EXIT_USAGE, HELP, HELP_DEFAULT, HELP_TOP

TYPE_CHECKING = False  # typing's, without importing typing: `harness --help` loads no typing
if TYPE_CHECKING:
    from typing import Any


class _Parser(argparse.ArgumentParser):
    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse makes a formatter for each add_argument while the tree is built, and each
        # asked the terminal its width: ~300 times for one --help.  Asked once per COLUMNS.
        width = _width(os.environ.get("COLUMNS"))
        return self.formatter_class(prog=self.prog, width=width)  # type: ignore[call-arg]

    def error(self, message: str) -> None:  # type: ignore[override]
        from harness.errors import clip  # only on a usage error: `harness --help` loads none

        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {clip(message)}\n")


class _Commands(argparse._SubParsersAction):  # type: ignore[type-arg]
    """The subcommands. With `only` (a command name; "" for none), every other command's parser
    is listed with its help but built without arguments (not even -h): building all ~300
    arguments was most of `harness --help`'s own time."""

    only: str | None = None  # None: build every command

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        if self.only is None or name == self.only:
            return super().add_parser(name, **kwargs)
        return super().add_parser(name, add_help=False, **kwargs)


# Every command, in `harness --help`'s order, with its line there.  The command NAME is the
# module harness.cli.NAME (dashes as underscores): `add_arguments(p)` declares its arguments,
# `EXAMPLES` its examples, `run(args)` runs it (gold's subcommands: `check`, `build`, ...).
COMMANDS = {
    "compare": "compare two refs: quality and latency verdicts",
    "run": "run one ref in isolation and record every answer",
    "report": "re-render a saved comparison without running anything",
    "metrics": "evaluate a run file against a gold set (a trec_eval)",
    "compare-runs": "compare run files of two or more systems: the paired tests of compare, Holm "
    "across systems",
    "gold": "gold-set tools",
    "judge": "the unjudged pairs a saved verdict waits on: list, pre-label, merge, judge",
    "sweep": "set a knob from measurement: one isolated run per value",
    "matrix": "an ablation matrix: named configurations vs a reference",
    "gate": "fail when a ref drops below a committed baseline",
    "bisect": "find the commit that regressed: compares along the history",
    "watch": "measure a branch's new commits, find and confirm its steps and drifts, bisect them",
    "threshold": "top-result scores of answerable vs unanswerable queries, best cutoff",
    "history": "metrics and latency per commit over the saved results (asv's graph)",
    "twobytwo": "retrieval vs generation: a run's top-k hits against answer grades",
    "export": "a run record as a TREC run file, or its per-query results as CSV/Parquet",
    "schema": "print the JSON Schema of comparison.json, a run record or harness.toml",
    "clean": "list the cache's worktrees and builds, sizes; remove them",
    "demo": "write the bundled example repository to DIR, to copy from",
}

EXAMPLES = (  # `harness --help`'s
    "compare --demo"
    "\n  compare --baseline main --candidate feat/x --format markdown > comment.md"
    "\n  harness metrics --gold qrels.txt --run bm25.run --metrics nDCG@10,P@5,map"
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The `harness` parser: `command` names the subcommand (`gold_command` under `gold`).
    With `only`, only that command's arguments are built (the others are listed, unbuilt)."""
    import importlib

    parser = _Parser(
        prog="harness",
        description="Does a ranking branch really change a retrieval service? "
        "Quality and latency, with a verdict that refuses to cry wolf.",
    )
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    sub = parser.add_subparsers(
        dest="command", required=True, parser_class=_Parser, action=_Commands
    )
    if isinstance(sub, _Commands):
        sub.only = only
    for name, line in COMMANDS.items():
        p = sub.add_parser(name, help=line)
        if only is None or name == only:
            module = importlib.import_module(f"harness.cli.{name.replace('-', '_')}")
            module.add_arguments(p)
            _document(p, name, module.EXAMPLES)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = f"examples:\n  {EXAMPLES}\n\n{HELP_TOP}"
    return parser


def _document(parser: argparse.ArgumentParser, name: str, examples: dict[str, str]) -> None:
    """An epilog of examples and exit statuses on a command and each of its subcommands
    (argparse keeps its layout: RawDescriptionHelpFormatter)."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parts = []
    if name in examples:
        parts.append("examples:\n  " + examples[name])
    parts.append("exit status:\n  " + HELP.get(name, HELP_DEFAULT))
    parser.epilog = "\n\n".join(parts)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                _document(sub, f"{name} {sub_name}", examples)


@functools.cache
def _width(columns: str | None) -> int:
    """What argparse's HelpFormatter takes as its width (`columns`: $COLUMNS, the cache key)."""
    import shutil

    return shutil.get_terminal_size().columns - 2


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """`argv` (default sys.argv[1:]) parsed; a usage error exits with EXIT_USAGE."""
    if argv is None:
        argv = sys.argv[1:]
    if list(argv) == ["--version"]:  # what argparse prints, without building the whole tree
        print(f"harness {__version__}")
        raise SystemExit(0)
    # The command is the first word (the top level takes no option with a value): only its
    # arguments are built; an unknown word builds none and argparse names it, as before.
    parser = build_parser(only=next((a for a in argv if not a.startswith("-")), ""))
    args = parser.parse_args(argv)
    if args.command == "compare":
        from harness.cli.compare import check_sides

        check_sides(parser, args)
    if args.command == "compare-runs":
        from harness.cli.compare_runs import check_runs

        check_runs(parser, args)
    return args

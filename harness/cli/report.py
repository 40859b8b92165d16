"""`harness report`: a saved comparison rendered again (or beside another), nothing run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.cli.options import add_strict

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing for `harness --help`
if TYPE_CHECKING:
    from harness.verdict.comparison import Comparison

EXAMPLES = {"report": "harness report results/20261201T124618Z_920c2aee_e930409f --format markdown"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", type=Path, help="a results/<stamp>_<sha8>_<sha8>/ directory")
    p.add_argument(
        "--format",
        choices=("text", "markdown", "json", "html"),
        default="text",
        help="default text; html: the page (on stdout self-contained, plotly.js inlined; "
        "with --output, plotly.js is copied beside FILE and loaded from there)",
    )
    p.add_argument(
        "--output",
        type=Path,
        metavar="FILE",
        help="write the page to FILE (never overwritten) instead of stdout",
    )
    p.add_argument(
        "--redact", action="store_true", help="leave query and document text out of the output"
    )
    p.add_argument(
        "--against",
        type=Path,
        metavar="DIR",
        help="another saved comparison: both side by side, metric by metric (DIR as A, this "
        "as B), refused (naming what differs) unless both have the same evaluation definition",
    )
    add_strict(p)


def run(args: argparse.Namespace) -> int:
    from harness.cli.exits import comparison_status
    from harness.cli.output import page_to_terminal, require_html
    from harness.errors import HarnessError
    from harness.report.page import render
    from harness.results.comparisons import load_comparison

    comparison = load_comparison(args.dir)
    require_html(args.format)
    if args.output is None and page_to_terminal(args.format):
        raise HarnessError(
            "--format html writes a page of several MB: not to a terminal",
            [
                f"write it to a file: harness report {args.dir} --format html --output page.html",
                f"or redirect it (a self-contained page): harness report {args.dir} "
                "--format html > page.html",
            ],
        )
    if args.against is not None:
        from harness.report.against import render_against
        from harness.verdict.same_definition import same_definition

        other = load_comparison(args.against)
        note = same_definition(comparison, args.dir, other, args.against)
        print(f"harness: {note}", file=sys.stderr)
        # Side by side (DIR as A, OTHER as B); the exit status is DIR's, as without --against.
        page = render_against(comparison, str(args.dir), other, str(args.against), args.format)
        if args.output is None:
            print(page, end="")
        else:
            from harness.results.files import write_text_new

            write_text_new(args.output, page)
    elif args.output is None:
        print(render(comparison, args.format, redact=args.redact), end="")
    else:
        _write_page(args.output, comparison, args.format, redact=args.redact)
    return comparison_status(comparison, strict=args.strict)


def _write_page(path: Path, comparison: Comparison, fmt: str, *, redact: bool) -> None:
    """`harness report --output`: the page at `path` (never overwritten); an HTML page loads
    plotly.js from beside it, copied there once (a page on stdout has it inlined instead)."""
    from harness.report.page import render
    from harness.results.files import write_text_new

    if fmt == "html":
        from harness.report.bundle import plotly_beside
        from harness.report.html_page import render_html

        page = render_html(comparison, redact, plotly_src=plotly_beside(path.parent))
    else:
        page = render(comparison, fmt, redact=redact)
    write_text_new(path, page)
    print(f"harness: wrote {path}", file=sys.stderr)

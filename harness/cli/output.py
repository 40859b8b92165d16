"""Where a command's report goes: stdout, or a file it never overwrites unless told, and the
notes on stderr that say where it went.

    emit(args, text)                        # --output FILE (refused if it exists, unless --force)
    write_output(path, data, force=False)   # whole or not at all
    require_html(fmt); page_to_terminal(fmt); html_notes(withheld, page)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path


def emit(args: argparse.Namespace, text: str) -> None:
    """The report to --output (refused if it exists, unless --force), else to stdout."""
    if args.output is None:
        print(text, end="")
        return
    write_output(args.output, text.encode("utf-8"), force=args.force)
    print(f"harness: wrote {args.output}", file=sys.stderr)


def write_pages(out: Path, pages: Mapping[str, str], *, force: bool) -> None:
    """Pages (file name -> HTML) in the directory `out`, made if need be."""
    from harness.errors import HarnessError

    if out.exists() and not out.is_dir():
        raise HarnessError(f"--output {out}: not a directory; give a new directory for the pages")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HarnessError(
            f"--output {out}: the folder cannot be made ({exc.strerror or exc})",
            ["check the permissions of the folder above it, or name another (-o DIR)"],
        ) from None
    for name, page in pages.items():
        write_output(out / name, page.encode("utf-8"), force=force)
    index = out / "index.html"
    print(f"harness: wrote {len(pages)} pages in {out} (open {index})", file=sys.stderr)


def write_output(path: Path, data: bytes, *, force: bool) -> None:
    """`data` in the file `path` (--output), whole or not at all: written beside it, then
    renamed over it; a folder is never replaced, and a failure leaves nothing behind."""
    import contextlib
    import os
    import secrets

    from harness.errors import HarnessError, ResultsError
    from harness.results.files import write_bytes_new

    if path.is_dir():
        raise HarnessError(f"--output {path}: is a folder", ["name a file to write (-o FILE)"])
    if path.exists() and not force:
        raise HarnessError(f"{path}: already exists", ["pass --force to overwrite it"])
    beside = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        tmp = write_bytes_new(beside, data)
    except ResultsError as exc:  # it names the temp file and compare's --results
        raise HarnessError(
            f"--output {path}: cannot be written ({exc.reason or exc.message})",
            ["check the folder's permissions and free space, or name another file (-o FILE)"],
        ) from None
    try:
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise HarnessError(
            f"--output {path}: cannot be written ({exc.strerror or exc})",
            ["name another file (-o FILE)"],
        ) from None


def page_to_terminal(fmt: str) -> bool:
    """An HTML page (megabytes of it) is not written to a terminal: only redirected."""
    return fmt == "html" and sys.stdout.isatty()


def require_html(fmt: str) -> None:
    """--format html without plotly: the error before anything is measured (the report stage
    imported only for html)."""
    if fmt != "html":
        return
    from harness.errors import HarnessError
    from harness.report.page import PLOTLY_MISSING, html_available

    if not html_available():
        raise HarnessError(*PLOTLY_MISSING)


def html_notes(withheld: bool, page: Path) -> None:
    """After a compare: no report.html (plotly missing), or where the withheld page is."""
    from harness.report.page import PLOTLY_MISSING, html_available

    if not html_available():
        print(
            f"harness: note: no report.html: {PLOTLY_MISSING[0]}; {PLOTLY_MISSING[1][0]}",
            file=sys.stderr,
        )
    elif withheld:
        print(
            f"harness: the HTML page is not written to a terminal; open {page} "
            "(or redirect: > page.html)",
            file=sys.stderr,
        )


def say_read_back(cached: bool) -> None:
    """The note of a comparison read back from the cache (`harness.results.cache`)."""
    if cached:
        print(
            "harness: both runs and every setting as before: the comparison is read back "
            "from the cache",
            file=sys.stderr,
        )


@contextlib.contextmanager
def invalid_document(fmt: str) -> Iterator[None]:
    """With `--format json`, a run stopped as invalid before any comparison could be made (the
    adapter check: answers in which query.ids reads no document id; exit 3) still writes a
    document on stdout, for a CI job that parses it: the verdicts "invalid" and the reason. The
    error itself goes on to stderr and the exit status as before."""
    from harness.cli.exits import EXIT_INVALID
    from harness.errors import HarnessError

    try:
        yield
    except HarnessError as exc:
        if fmt == "json" and exc.exit_status == EXIT_INVALID:
            from harness.results.document import SCHEMA, SCHEMA_VERSION
            from harness.text.control_chars import shown

            document = {
                "schema": SCHEMA,
                "schema_version": SCHEMA_VERSION,
                "verdict": {"quality": "invalid", "latency": "invalid"},
                "valid": False,
                "invalid_reasons": [shown(exc.message), *(shown(d) for d in exc.details)],
                "complete": False,  # no comparison was made: only the verdicts and why
            }
            print(json.dumps(document, indent=2, sort_keys=True), flush=True)
        raise

"""The progress display: plain log lines off a terminal, one redrawn line on one."""

from __future__ import annotations

import io

from harness.cli.progress import Progress
from harness.types import ErrorKind, QueryResult


def feed(progress: Progress, label: str, total: int, failing: set[int]) -> None:
    progress(label, 0, total, 0, None)
    errors = 0
    for done in range(1, total + 1):
        bad = done in failing
        errors += bad
        result = QueryResult(f"q{done}", error=ErrorKind.TIMEOUT if bad else None)
        progress(label, done, total, errors, result)


def test_plain_lines_when_not_a_terminal() -> None:
    stream = io.StringIO()
    progress = Progress(stream, live=False)
    feed(progress, "baseline main (abc12345) repeat 1", 5, {2})
    lines = stream.getvalue().splitlines()
    assert lines[0] == "harness: baseline main (abc12345) repeat 1: booting, then 5 queries"
    assert lines[1].startswith("harness: baseline main (abc12345) repeat 1: done, 1 errors, ")
    assert len(lines) == 2 and "\r" not in stream.getvalue()


def test_one_live_line_with_counts_errors_and_eta_on_a_terminal() -> None:
    stream = io.StringIO()
    progress = Progress(stream, live=True)
    feed(progress, "candidate feat/x (def67890) repeat 2", 3, {3})
    text = stream.getvalue()
    last = text.rstrip("\n").split("\r\x1b[2K")[-1]
    assert last.startswith("candidate feat/x (def67890) repeat 2: 3/3 queries, 1 errors, ETA")
    assert text.endswith("\n")

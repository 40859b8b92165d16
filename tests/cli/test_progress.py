"""The progress display: plain log lines off a terminal, one live rich display on one (tested on
a real pseudo-terminal), nothing with --quiet."""

from __future__ import annotations

import io
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path
from typing import IO

import pytest
from cli_support import script

from harness.cli.progress import Progress
from harness.values.types import ErrorKind, QueryResult


def feed(progress: Progress, label: str, total: int, failing: set[int], boots: int = 1) -> None:
    for _ in range(boots):
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
    progress.planned(4)
    progress.phase("checkout", "baseline main (abc12345)")
    progress.phase("build", "baseline main (abc12345)")
    feed(progress, "round 1/2: main + feat/x", 5, {2}, boots=2)
    progress.phase("analysis", "scoring")
    lines = stream.getvalue().splitlines()
    assert lines[:3] == [
        "harness: checkout: baseline main (abc12345)",
        "harness: build: baseline main (abc12345)",
        "harness: round 1/2: main + feat/x: booting, then 5 queries",  # once for both boots
    ]
    assert lines[3].startswith("harness: round 1/2: main + feat/x: done, 1 errors, ")
    assert lines[3].endswith(", boots 2/4")
    assert lines[4] == "harness: analysis: scoring"
    assert len(lines) == 5 and "\r" not in stream.getvalue() and "\x1b" not in stream.getvalue()


def read_all(fd: int) -> bytes:
    chunks = []
    while True:
        ready, _, _ = select.select([fd], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def on_a_terminal(program: str, columns: int, stdout: IO[str] | int = subprocess.DEVNULL) -> str:
    """What `python -c program` draws on its stderr, a pseudo-terminal `columns` wide, until it
    exits (with 0)."""
    parent, child = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", program],
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=child,
        env={**os.environ, "COLUMNS": str(columns), "TERM": "xterm"},
    )
    os.close(child)
    try:
        screen = read_all(parent).decode("utf-8", "replace")
        assert proc.wait(timeout=60) == 0
    finally:
        os.close(parent)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return screen


DRIVE = """
import sys, time
from harness.cli.progress import Progress
from harness.values.types import QueryResult
p = Progress()  # stderr is the pseudo-terminal: live
assert p.live
p.planned(2)
p.phase("checkout", "baseline main (abc12345)")
p.phase("build", "baseline main (abc12345)")
for boot in (1, 2):
    p(f"repeat {boot}", 0, 3, 0, None)
    for done in (1, 2, 3):
        p(f"repeat {boot}", done, 3, 0, QueryResult(f"q{done}"))
p.phase("analysis", "scoring")
print("STATE", p._bar.tasks[0].completed, p._bar.tasks[0].total, file=sys.stdout, flush=True)
p.close()
print("REPORT", flush=True)
"""


def test_a_live_display_with_phase_boots_and_time_left_on_a_terminal(tmp_path: Path) -> None:
    out = tmp_path / "stdout"
    with out.open("w") as stdout:
        screen = on_a_terminal(DRIVE, 160, stdout)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)
    for word in ("checkout", "build", "boot", "replay", "analysis"):
        assert word in text, (word, text)
    assert "1/2" in text and "2/2" in text and "boots" in text and "left" in text
    assert "repeat 2: 3/3 queries, 0 errors" in text
    assert "\x1b[" in screen  # drawn in place, not as log lines
    assert "harness: checkout" not in text  # no plain lines on a terminal
    assert out.read_text().splitlines() == ["STATE 2.0 2", "REPORT"]


LONG_LABEL = """
import time
from harness.cli.progress import Progress
p = Progress()
p.planned(4)
label = "baseline feature/a-long-branch-name (abc12345) repeat 1 of 2, interleaved with candidate"
p(label, 0, 1000, 0, None)
time.sleep(1.1)
p(label, 500, 1000, 0, None)
p.close()
"""


@pytest.mark.parametrize("columns", [80, 140])
def test_the_live_line_keeps_elapsed_and_time_left_whole(tmp_path: Path, columns: int) -> None:
    # Issue 27: a long detail made rich squeeze the time columns to "0:0...".  Every field but
    # the detail keeps its width; the detail ends in an ellipsis; no line is wider than the screen.
    screen = on_a_terminal(LONG_LABEL, columns)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)
    # Each redraw of the line, between cursor moves; then without colours (SGR, "m").
    pieces = re.split(r"\x1b\[[0-9;?]*[A-Za-ln-z]|[\r\n]", screen)
    plain = [re.sub(r"\x1b\[[0-9;]*m", "", x).rstrip() for x in pieces]
    lines = [x for x in plain if x.startswith("replay")]
    assert lines, text
    last = lines[-1]
    assert len(last) <= columns, last
    assert re.search(r"0/4 boots \d:\d\d:\d\d elapsed, (\d:\d\d:\d\d|-:--:--) left ", last), last
    assert "0:00:01 elapsed" in text
    assert last.endswith("\u2026"), last  # the detail was cut, not the times


@pytest.mark.slow
def test_quiet_prints_no_progress(tmp_path: Path) -> None:
    # A run that fails fast (no such ref) still goes through the same set-up; --quiet must be
    # accepted by every running command and leave stderr to the error alone.
    from harness.demo import materialise

    repo = materialise(tmp_path / "demo")
    base = [script("harness"), "run", "--ref", "main", "--repeats", "1", "--config",
            str(repo / "harness.toml"), "--results", str(tmp_path / "results")]  # fmt: skip
    loud = subprocess.run(base, capture_output=True, text=True, timeout=300, check=False)
    quiet = subprocess.run([*base, "--quiet"], capture_output=True, text=True, timeout=300,
                           check=False)  # fmt: skip
    assert loud.returncode == quiet.returncode == 0, loud.stderr + quiet.stderr
    assert "harness: checkout: baseline main" in loud.stderr
    assert "harness: build: baseline main" in loud.stderr
    assert "booting, then" in loud.stderr and "harness: analysis: scoring" in loud.stderr
    progress = [line for line in quiet.stderr.splitlines() if not line.startswith(
        ("harness: run record:", "harness: warning:"))]  # fmt: skip
    assert progress == []
    assert "hit@5" in quiet.stdout


@pytest.mark.parametrize("command", ["compare", "run", "sweep", "gate"])
def test_every_running_command_takes_quiet(command: str) -> None:
    from harness.cli.parser import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    options = {o for a in sub.choices[command]._actions for o in a.option_strings}  # type: ignore[attr-defined]
    assert {"-q", "--quiet"} <= options


def test_asked_block_by_block_the_queries_are_an_upper_bound() -> None:
    # The sequential compare may stop before the gold set is used up: it says "up to".
    stream = io.StringIO()
    progress = Progress(stream, live=False)
    progress.planned(4)
    feed(progress, "rounds 1-2, asked block by block: main + feat/x", 5, set(), boots=2)
    first = stream.getvalue().splitlines()[0]
    assert first.endswith(": booting, then up to 5 queries"), first

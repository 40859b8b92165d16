"""Machine pre-labels: the user's command grades the pairs, once, all at a time.

    argv = labeller(command)                     shlex-split; HarnessError when it cannot be
    text = run_labeller(argv, pairs_jsonl, timeout_s=600)
    grades = parse_grades(text, pairs, argv)     {(query_id, doc_id): grade}

The command reads the pairs JSONL (`harness judge pairs`' rows) on stdin and prints one JSON line
per pair, `{"query_id": ..., "doc_id": ..., "grade": 0..3}`, in any order. A missing pair, a pair
not asked for, a pair twice, a line that is not such an object or a grade outside 0..3 is an
error naming the output line and what was expected: nothing is written then. The command runs in
a session of its own; on its timeout, or a Ctrl-C, its whole process group gets SIGTERM, then
SIGKILL, and is reaped before this returns (pyperf's worker discipline).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

from harness.errors import HarnessError, clip

DEFAULT_TIMEOUT_S = 600.0
GRACE_S = 2.0  # between SIGTERM and SIGKILL
MOST_SHOWN = 10  # output problems listed (the count is whole)


def labeller(command: str) -> list[str]:
    """The command's argv (shlex); HarnessError when it is empty or unclosed."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise HarnessError(
            f"--command {command!r}: cannot split it ({exc}); close the quote") from None
    if not argv:
        raise HarnessError("the labelling command is empty; pass --command \"python3 grade.py\" "
                           "or set [judge] command in harness.toml")
    return argv


def machine_name(argv: Sequence[str]) -> str:
    """A machine labeller's "by": machine:<argv[0] basename>."""
    return f"machine:{Path(argv[0]).name}"


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, SIGKILL it after GRACE_S, and reap the leader."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.communicate(timeout=GRACE_S)
            if sig == signal.SIGTERM:
                with contextlib.suppress(ProcessLookupError):  # children may linger
                    os.killpg(process.pid, signal.SIGKILL)
            return
        except subprocess.TimeoutExpired:
            continue
    process.wait()


def run_labeller(argv: Sequence[str], stdin_text: str, *,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> str:
    """Run `argv` once with `stdin_text` on stdin; its stdout. HarnessError when it cannot
    start, exits non-zero (its last stderr lines) or outlives `timeout_s` (killed, reaped)."""
    shown = shlex.join(argv)
    try:
        process = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        raise HarnessError(f"labelling command {shown!r} cannot start: {exc.strerror}",
                           ["check --command (or [judge] command): the program, on PATH or as "
                            "a path"]) from None
    try:
        out, err = process.communicate(stdin_text.encode("utf-8"), timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _stop(process)
        raise HarnessError(f"labelling command {shown!r} ran past --timeout {timeout_s:g} s; "
                           "it was stopped (its process group killed) and nothing written",
                           ["raise --timeout, or label fewer pairs at a time"]) from None
    except BaseException:  # Ctrl-C, SIGTERM: never leave the labeller running
        _stop(process)
        raise
    if process.returncode != 0:
        tail = err.decode("utf-8", "replace").strip().splitlines()[-5:]
        raise HarnessError(f"labelling command {shown!r} exited with status "
                           f"{process.returncode}; nothing written",
                           [clip(line) for line in tail])
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HarnessError(f"labelling command {shown!r} printed bytes that are not UTF-8 "
                           f"(byte {exc.start}); it prints one JSON line per pair") from None


def parse_grades(text: str, pairs: Sequence[tuple[str, str]],
                 argv: Sequence[str]) -> dict[tuple[str, str], int]:
    """The command's grades, one per asked pair; HarnessError listing every problem by output
    line (see the module docstring)."""
    expected = set(pairs)
    found: dict[tuple[str, str], int] = {}
    where: dict[tuple[str, str], int] = {}
    problems: list[str] = []
    want = 'expected {"query_id": "...", "doc_id": "...", "grade": 0..3}'
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"output line {number}: not JSON ({exc.msg}); {want}")
            continue
        if not isinstance(value, dict) or set(value) != {"query_id", "doc_id", "grade"}:
            problems.append(f"output line {number}: {clip(line, 80)}; {want}")
            continue
        query_id, doc_id, grade = value["query_id"], value["doc_id"], value["grade"]
        if not (isinstance(query_id, str) and isinstance(doc_id, str)):
            problems.append(f"output line {number}: query_id and doc_id are strings; {want}")
            continue
        pair = (query_id, doc_id)
        if type(grade) is not int or not 0 <= grade <= 3:
            problems.append(f"output line {number}: grade {json.dumps(grade)} for {pair}; "
                            "expected an integer 0..3")
        elif pair not in expected:
            problems.append(f"output line {number}: pair {pair} was not asked for; expected "
                            "only the pairs on stdin")
        elif pair in found:
            problems.append(f"output line {number}: pair {pair} graded twice (line "
                            f"{where[pair]} too); expected one line per pair")
        else:
            found[pair], where[pair] = grade, number
    missing = [pair for pair in pairs if pair not in found]
    if missing:
        shown = ", ".join(map(str, missing[:3])) + (" ..." if len(missing) > 3 else "")
        problems.append(f"{len(missing)} pair(s) not graded, e.g. {shown}; expected one line "
                        "per pair on stdin")
    if problems:
        raise HarnessError(
            f"labelling command {shlex.join(argv)!r}: {len(problems)} problem(s) in its output; "
            "nothing written",
            problems[:MOST_SHOWN] + ([f"... and {len(problems) - MOST_SHOWN} more"]
                                     if len(problems) > MOST_SHOWN else []))
    return found

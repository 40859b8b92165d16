"""A team's answer-grading file: was the final answer to each query correct.

    read_grades(path, known=None) -> Grades      GoldError listing every problem, file:line

One line per query id, in either of two forms (told apart by the first non-blank line):

- JSON Lines: `{"query_id": "q17", "correct": true}`; "correct" is true or false, no other key.
- TSV: `q17<TAB>1` (1 = correct, 0 = wrong); a first line `query_id<TAB>correct` is a header and
  skipped.

Blank lines are skipped; a query id graded twice, an empty id, or a value other than those is a
problem at its line.  With `known` (the gold set's query ids), an id the gold set does not hold is
a problem too: grades for another gold set must not be mixed in silently.  A gold query the file
does not grade is not an error: it is "not graded" in the 2x2 (`harness.verdict.twobytwo`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.errors import GoldError
from harness.gold.reading import Problems, not_utf8
from harness.process.inputs import ANSWERS, read_input

JSONL_LINE = '{"query_id": "q17", "correct": true}'
TSV_LINE = "q17<TAB>1"
_TSV_HEADER = ("query_id", "correct")
_HINT = f"one line per query: {JSONL_LINE}, or {TSV_LINE} (1 correct, 0 wrong)"


@dataclass(frozen=True)
class Grades:
    """Whether each graded query's final answer was correct, and the file it came from."""

    source: str
    correct: Mapping[str, bool]


def read_grades(path: Path, known: Collection[str] | None = None, named: str = "") -> Grades:
    """Read an answer-grading file (module docstring); raise one GoldError with every problem.
    `named`: the option that gave it (--baseline-answers), said when it is no regular file."""
    try:
        data = read_input(path, ANSWERS, named)
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise GoldError(f"{path}: answers file not found; check the path") from None
    except UnicodeDecodeError as exc:
        at = data.count(b"\n", 0, exc.start) + 1
        said = not_utf8(exc, "the answers file")
        raise GoldError(f"{path}:{at}: {said} (JSON lines or TSV, see `harness twobytwo`)"
                        ) from None
    except OSError as exc:
        raise GoldError(f"{path}: cannot read the answers file ({exc.strerror or exc}); check the "
                        "path and that this user may read it") from None
    problems = Problems()
    correct: dict[str, bool] = {}
    first_line: dict[str, int] = {}
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    jsonl = bool(lines) and lines[0][1].lstrip().startswith("{")
    for number, line in lines:
        parsed = _json_line(line) if jsonl else _tsv_line(line, number == lines[0][0])
        if parsed is None:
            continue  # the TSV header
        if isinstance(parsed, str):
            problems.add(path, f"{parsed}; {_HINT}", number)
            continue
        qid, value = parsed
        if qid in first_line:
            problems.add(path, f"query {qid!r} is graded twice (lines {first_line[qid]} and "
                         f"{number}); keep one", number, "query_id")
        elif known is not None and qid not in known:
            problems.add(path, f"query {qid!r} is not in the gold set: are these the grades of "
                         "another gold set?", number, "query_id")
        else:
            first_line[qid] = number
            correct[qid] = value
    if not lines:
        problems.add(path, f"no grades: the file is empty; {_HINT}")
    # Not the gold set's advice (`gold check` reads no answers file): the format's own.
    problems.raise_if_any(
        f"{path}: the answers file is invalid",
        hint="fix each problem above (the format: docs/reports.md, the 2x2), then run again",
    )
    return Grades(str(path), correct)


def _json_line(line: str) -> tuple[str, bool] | str:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        return f"not JSON ({exc.msg})"
    if not isinstance(value, dict):
        return "expected a JSON object"
    unknown = sorted(set(value) - {"query_id", "correct"})
    if unknown:
        return f"unknown field {unknown[0]!r}"
    qid, correct = value.get("query_id"), value.get("correct")
    if not (isinstance(qid, str) and qid):
        return "query_id is a non-empty string"
    if not isinstance(correct, bool):
        return f"correct is true or false, got {json.dumps(correct)}"
    return qid, correct


def _tsv_line(line: str, first: bool) -> tuple[str, bool] | str | None:
    cells = line.rstrip("\r\n").split("\t")
    if first and tuple(c.strip().lower() for c in cells) == _TSV_HEADER:
        return None
    if len(cells) != 2:
        return f"expected 2 tab-separated columns, got {len(cells)}"
    qid, value = cells[0].strip(), cells[1].strip()
    if not qid:
        return "the query id (first column) is empty"
    if value not in ("0", "1"):
        return f"the grade (second column) is 1 or 0, got {value!r}"
    return qid, value == "1"

"""What every gold reader shares: numbered lines, strict JSON, and a list of problems.

A reader never raises on the first fault: it records a `Problem` (path, 1-based physical line,
field, what is wrong and what to do) and carries on, so that `load_gold` can raise one `GoldError`
listing every problem of every file at once.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from harness.errors import GoldError, Problem
from harness.process.inputs import GOLD, Kind, read_input
from harness.text.encodings import SAMPLE, encoding_problem
from harness.values.types import CorpusInfo, GoldQuery

CHECK_HINT = "fix each problem above (rules: gold/README.md), then run `harness gold check`"
GRADE_RULE = "a grade is an integer >= 0 (0 = judged not relevant)"
NEGATIVE_GRADE = "; map negative grades (TREC's -1, -2 for junk) to 0"
MAX_GRADE = 2**31 - 1  # a C int, as trec_eval reads a grade: and finite as a float
LARGE_GRADE = f", at most {MAX_GRADE} (a C int, as trec_eval reads it); use a smaller scale"
_INTEGER = re.compile(r"-?[0-9]+")


def bad_grade(grade: object) -> str | None:
    """Why `grade` (as read: an int, or None when the text was no integer) is not a grade,
    or None when it is one: an integer from 0 to MAX_GRADE."""
    if type(grade) is not int:
        return GRADE_RULE
    if grade < 0:
        return GRADE_RULE + NEGATIVE_GRADE
    return GRADE_RULE + LARGE_GRADE if grade > MAX_GRADE else None


def not_utf8(exc: UnicodeDecodeError, what: str, *, in_line: bool = False) -> str:
    """The problem of text that does not decode as UTF-8: the byte, and to save `what` as
    UTF-8 (`in_line`: the byte is counted from the start of the line, not of the file)."""
    where = " of the line" if in_line else ""
    return f"not UTF-8 text (byte {exc.start}{where}); save {what} as UTF-8"


class Problems:
    """Problems found so far, in the order found; `raise_if_any` turns them into one GoldError."""

    def __init__(self) -> None:
        self.found: list[Problem] = []

    def add(self, path: Path | str, message: str, line: int | None = None,
            field: str | None = None) -> None:
        self.found.append(Problem(str(path), message, line, field))

    def __len__(self) -> int:
        return len(self.found)

    def raise_if_any(self, what: str, hint: str = CHECK_HINT) -> None:
        """GoldError listing every problem (by file, then line), `hint` after them (the gold
        set's own: fix them and run `harness gold check`)."""
        if not self.found:
            return
        count = len(self.found)
        noun = "problem" if count == 1 else "problems"
        files = {p.path: i for i, p in reversed(list(enumerate(self.found)))}
        ordered = sorted(self.found, key=lambda p: (files[p.path], p.line or 0))  # stable
        raise GoldError(f"{what}: {count} {noun}", ordered, hint=hint)


class DocRef(NamedTuple):
    """A document id a gold file mentions, and where, so a missing id can be reported there (a
    named tuple: a gold set makes one per judgement, and a tuple is built several times faster
    than a frozen dataclass)."""

    path: str
    line: int | None
    field: str
    query_id: str
    doc_id: str


@dataclass(frozen=True)
class Parsed:
    """What a reader found, before the corpus check and before anything is raised."""

    queries: tuple[GoldQuery, ...]
    refs: tuple[DocRef, ...]
    source: str
    format: str
    corpus: CorpusInfo | None = None
    header_line: int | None = None
    version: int = 1
    pooled: bool | None = None  # the native header's "judged": "pooled" True, "complete" False


def numbered_lines(
    path: Path, problems: Problems, kind: Kind = GOLD
) -> list[tuple[int, str]] | None:
    """Every non-blank physical line of a UTF-8 file as (1-based number, text without its newline).

    Only "\\n" ends a line ("\\r\\n" too, its "\\r" is dropped); a JSON string may legally hold
    U+2028, which `str.splitlines` would wrongly split on. A leading BOM is ignored. A file that is
    not UTF-8 is one problem at the line of its first bad byte, and None; so is a UTF-16 or
    UTF-32 file (at line 1, naming its encoding). A FIFO, a device, a file past `kind`'s cap or
    a Git LFS pointer is a GoldError at once (`harness.process.inputs`).
    """
    data = read_input(path, kind)
    wide = encoding_problem(data[:SAMPLE], path)
    if wide is not None:
        problems.add(path, wide, 1)
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        problems.add(path, not_utf8(exc, "the file"), line)
        return None
    found = []
    for number, raw in enumerate(text.split("\n"), start=1):
        stripped = raw.removesuffix("\r")
        if stripped.strip():
            found.append((number, stripped))
    return found


class JsonObject(dict[str, object]):
    """A JSON object that remembers the keys it saw twice (json.loads keeps the last silently)."""

    duplicates: tuple[str, ...] = ()


def _object_pairs(pairs: list[tuple[str, object]]) -> JsonObject:
    obj = JsonObject(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        duplicates = []
        for key, _ in pairs:
            if key in seen:
                duplicates.append(key)
            seen.add(key)
        obj.duplicates = tuple(duplicates)
    return obj


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


MAX_DEPTH = 100
"""Deepest nesting of arrays and objects a gold or corpus line may have: the formats need 3."""
NESTED_TOO_DEEPLY = f"nested too deeply (more than {MAX_DEPTH} levels of [ and {{)"
LONE_SURROGATE = (
    "holds a lone surrogate escape (e.g. \\ud800), which is no character and cannot be "
    "saved as UTF-8; remove it, or write the character itself"
)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _depth_over(text: str, limit: int) -> bool:
    """Whether brackets outside strings nest deeper than `limit` (a linear scan, only run on
    a line with that many opening brackets at all)."""
    depth, in_string, escaped = 0, False, False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
    return False


def has_lone_surrogate(value: object) -> bool:
    """Whether a parsed JSON value holds a string (or key) with a lone surrogate."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def loads(text: str) -> object:
    """json.loads that rejects NaN/Infinity, nesting deeper than MAX_DEPTH and lone surrogate
    escapes (each a ValueError saying so), and records duplicate keys (see JsonObject)."""
    if (text.count("[") + text.count("{") > MAX_DEPTH and _depth_over(text, MAX_DEPTH)):
        raise ValueError(NESTED_TOO_DEEPLY)  # json's C scanner would recurse until it overflows
    value = json.loads(text, object_pairs_hook=_object_pairs, parse_constant=_no_constant)
    if _SURROGATE_ESCAPE.search(text) and has_lone_surrogate(value):
        raise ValueError(LONE_SURROGATE)
    return value


def json_error(exc: ValueError) -> str:
    """A one-line description of why a line is not JSON."""
    if isinstance(exc, json.JSONDecodeError):
        return f"malformed JSON: {exc.msg} (column {exc.colno})"
    if str(exc) in (NESTED_TOO_DEEPLY, LONE_SURROGATE):
        return f"the line {exc}"
    return f"malformed JSON: {exc}"


def json_type(value: object) -> str:
    """The JSON name of a parsed value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def parse_grade(text: str) -> int | None:
    """The integer grade written in a qrels column, or None when it is not a plain integer."""
    return int(text) if _INTEGER.fullmatch(text) else None

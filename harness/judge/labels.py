"""The labels file: one judgement a line, appended as it is made; the judging page and
`harness judge label` write it, `harness judge merge` reads it.

    {"query_id": "q7", "doc_id": "d9", "grade": 2, "by": "ana", "kind": "person",
     "at": "2026-12-06T07:10:00Z", "from": "20261206T070000Z_1a2b3c4d_5e6f7a8b"}

- "grade" an integer 0..3, TREC-style: 0 not relevant, 1 relevant, 2 highly relevant, 3 perfectly
  relevant; "by" who graded (a non-blank string; a machine is "machine:<command>"), "kind"
  "person" or "machine", "at" when, ISO 8601 UTC with a trailing Z, "from" the comparison
  directory or pairs file judged.
- A later line for the same (query_id, doc_id, by) supersedes an earlier one (`latest`): a
  person who changes their mind appends, never edits.
- No other key, no key twice; blank lines are skipped; line numbers are 1-based physical lines.

    read_labels(path) -> list[Label]        GoldError listing every bad line (path:line: field)
    append_label(path, label)               one complete line, flushed and fsynced
    write_labels_new(path, labels)          all at once, atomically, never over a file
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

from harness.errors import GoldError, clip
from harness.gold.provenance import AT_RULE, KINDS, valid_at
from harness.gold.reading import JsonObject, Problems, json_error, json_type, loads, numbered_lines

GRADES = range(0, 4)
KEYS = ("query_id", "doc_id", "grade", "by", "kind", "at", "from")


@dataclass(frozen=True)
class Label:
    """One judgement of the labels file; `from_` is its "from" key (a Python keyword)."""

    query_id: str
    doc_id: str
    grade: int
    by: str
    kind: str  # "person" | "machine"
    at: str
    from_: str

    def __post_init__(self) -> None:
        if type(self.grade) is not int or self.grade not in GRADES:
            raise ValueError(f"grade is an integer 0..3, not {self.grade!r}")
        if self.kind not in KINDS:
            raise ValueError(f'kind is "person" or "machine", not {self.kind!r}')
        if not valid_at(self.at):
            raise ValueError(f"at is {AT_RULE}, not {self.at!r}")
        for name in ("query_id", "doc_id", "by", "from_"):
            if not getattr(self, name).strip():
                raise ValueError(f"{name} is a non-blank string")

    @property
    def pair(self) -> tuple[str, str]:
        return self.query_id, self.doc_id

    def to_json(self) -> dict[str, object]:
        return {"query_id": self.query_id, "doc_id": self.doc_id, "grade": self.grade,
                "by": self.by, "kind": self.kind, "at": self.at, "from": self.from_}

    def line(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False) + "\n"


def now_utc(now: datetime | None = None) -> str:
    """The "at" of a label made now: "2026-12-06T07:10:00Z"."""
    return (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _label(value: object, path: str, number: int, problems: Problems) -> Label | None:
    if not isinstance(value, JsonObject):
        problems.add(path, f"expected a JSON object (one label), got {json_type(value)}", number)
        return None
    before = len(problems)
    for key in value.duplicates:
        problems.add(path, f"key {key!r} appears twice; keep one", number, key)
    for key in value:
        if key not in KEYS:
            problems.add(path, f"unknown field {key!r}; known fields: {', '.join(KEYS)}", number,
                         key)
    for key in KEYS:
        if key not in value:
            problems.add(path, f"required field {key!r} is missing", number, key)
    for key in ("query_id", "doc_id", "by", "from"):
        text = value.get(key)
        if key in value and not (isinstance(text, str) and text.strip()):
            problems.add(path, f"{key} is a non-blank string, got {clip(json.dumps(text), 40)}",
                         number, key)
    grade = value.get("grade")
    if "grade" in value and not (type(grade) is int and grade in GRADES):
        problems.add(path, "grade is an integer 0..3 (0 not relevant .. 3 perfectly relevant), got "
                     f"{clip(json.dumps(grade), 40)}", number, "grade")
    kind = value.get("kind")
    if "kind" in value and kind not in KINDS:
        problems.add(path, f'kind is "person" or "machine", got {clip(json.dumps(kind), 40)}',
                     number, "kind")
    if "at" in value and not valid_at(value.get("at")):
        problems.add(path, f"at is {AT_RULE}, got {clip(json.dumps(value.get('at')), 40)}",
                     number, "at")
    if len(problems) != before:
        return None
    return Label(str(value["query_id"]), str(value["doc_id"]), cast(int, value["grade"]),
                 str(value["by"]), str(value["kind"]), str(value["at"]), str(value["from"]))


def read_labels(path: Path | str) -> list[Label]:
    """Every label of the file, in file order (superseded ones too: `latest` picks); GoldError
    naming each bad line and field."""
    return [label for _, label in read_numbered_labels(path)]


def read_numbered_labels(path: Path | str) -> list[tuple[int, Label]]:
    """`read_labels`, each label with its line number."""
    path = Path(path)
    if not path.exists():
        raise GoldError(f"{path}: labels file not found; check the path")
    problems = Problems()
    lines = numbered_lines(path, problems)
    found: list[tuple[int, Label]] = []
    for number, text in lines or ():
        try:
            value = loads(text)
        except ValueError as exc:
            problems.add(str(path), json_error(exc), number)
            continue
        label = _label(value, str(path), number, problems)
        if label is not None:
            found.append((number, label))
    problems.raise_if_any(f"{path}: the labels file is invalid",
                          hint="fix or delete those lines: one JSON object a line, "
                          "keys " + ", ".join(KEYS))
    return found


def latest(labels: Iterable[Label]) -> list[Label]:
    """The labels that stand: a later one for the same (query_id, doc_id, by) replaces an
    earlier one (at the place of the last)."""
    last: dict[tuple[str, str, str], Label] = {}
    for label in labels:
        key = (label.query_id, label.doc_id, label.by)
        last.pop(key, None)
        last[key] = label
    return list(last.values())


def append_label(path: Path | str, label: Label) -> None:
    """Append one complete line to the labels file (created when missing), flushed and fsynced
    before returning: a crash keeps every label acknowledged. A torn last line (a crash mid
    write, by another writer) is ended first, so the new label stands on its own line."""
    path = Path(path)
    data = label.line().encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size:
            with open(path, "rb") as handle:
                handle.seek(size - 1)
                if handle.read(1) != b"\n":
                    data = b"\n" + data
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def write_labels_new(path: Path, labels: Sequence[Label]) -> None:
    """All `labels` to a new file at `path`, atomically (never over an existing file)."""
    from harness.results.files import write_text_new

    write_text_new(path, "".join(label.line() for label in labels))

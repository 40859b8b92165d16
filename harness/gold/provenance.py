"""Who judged what: the native format's per-query "machine" and "judged_by" keys.  Pure.

    {"id": "q7", ..., "relevant": {"d1": 2, "d4": 0},
     "machine": {"d1": 1, "d9": 0},
     "judged_by": {"d1": {"by": "ana", "kind": "person", "at": "2026-12-06T07:10:00Z",
                          "from": "20261206T070000Z_1a2b3c4d_5e6f7a8b"},
                   "d9": {"by": "machine:grader", "kind": "machine", ...}}}

- "machine" {doc id: grade}: a machine's grade (an integer >= 0), kept apart: it does not score
  (what scores is "relevant"; `harness judge merge --with-machine` copies a machine grade into
  "relevant" where no person judged the pair).
- "judged_by" {doc id: {"by", "kind", "at", "from"}}: where a grade merged by `harness judge
  merge` came from: "by" who (a non-blank string), "kind" "person" or "machine", "at" when (ISO
  8601 UTC, "2026-12-06T07:10:00Z"), "from" the comparison or pairs file it was judged from.  A
  document named there is judged in "relevant" or "machine"; one judged only in "machine" has a
  machine's provenance.  Judgements older than the key have none.

Neither key enters the gold hash (`harness.gold.canonical`): the hash covers what scores.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from harness.errors import clip
from harness.gold.reading import JsonObject, Problems, bad_grade, json_type
from harness.gold.summary import GoldStats, gold_stats
from harness.values.types import GoldSet

KINDS = ("person", "machine")
_AT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z")
_JUDGED_BY_KEYS = ("by", "kind", "at", "from")
AT_RULE = 'an ISO 8601 UTC time, e.g. "2026-12-06T07:10:00Z"'


def valid_at(value: object) -> bool:
    """Whether `value` is an ISO 8601 UTC time as the labels carry it (a trailing Z)."""
    if not isinstance(value, str) or not _AT.fullmatch(value):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class JudgedBy:
    """One merged grade's provenance (JSON key "from" is `source`)."""

    by: str
    kind: str  # "person" | "machine"
    at: str
    source: str

    def to_json(self) -> dict[str, str]:
        return {"by": self.by, "kind": self.kind, "at": self.at, "from": self.source}


@dataclass(frozen=True)
class QueryLabels:
    """A query's "machine" grades and "judged_by" provenance (both empty when absent)."""

    machine: Mapping[str, int] = field(default_factory=dict)
    judged_by: Mapping[str, JudgedBy] = field(default_factory=dict)


def person_machine(relevant: Mapping[str, int], labels: QueryLabels) -> list[tuple[int, int]]:
    """(person grade, machine grade) for each document a person (by its "judged_by") and a
    machine both graded in this query."""
    return [
        (relevant[doc], grade)
        for doc, grade in sorted(labels.machine.items())
        if doc in relevant
        and (who := labels.judged_by.get(doc)) is not None
        and who.kind == "person"
    ]


def labelled_stats(gold: GoldSet, labels: Mapping[str, QueryLabels]) -> GoldStats:
    """`gold_stats` with the machine grades kept apart counted and the person-vs-machine
    agreement of the pairs both graded."""
    both = [pair for q in gold.queries if q.id in labels
            for pair in person_machine(q.relevant, labels[q.id])]
    machine = sum(len(found.machine) for found in labels.values())
    return gold_stats(gold, machine_grades=machine, both=both)


def parse_machine(value: object, path: str, number: int, problems: Problems) -> dict[str, int]:
    """"machine": {doc id: grade}, each fault a problem at machine.DOC."""
    if not isinstance(value, JsonObject):
        problems.add(path, 'machine is an object {"doc_id": grade} (a machine\'s grades, kept '
                     f"apart), got {json_type(value)}", number, "machine")
        return {}
    found: dict[str, int] = {}
    for doc in value.duplicates:
        problems.add(path, f"document {doc!r} has two machine grades; keep one", number,
                     f"machine.{doc}")
    for doc, grade in value.items():
        if not doc.strip():
            problems.add(path, "a document id has a non-blank character", number, "machine")
        elif (rule := bad_grade(grade)) is not None:
            problems.add(path, f"document {doc!r} has machine grade "
                         f"{clip(json.dumps(grade), 40)}; {rule}", number, f"machine.{doc}")
        else:
            found[doc] = int(grade)  # type: ignore[call-overload]  # bad_grade passed it
    return found


def parse_judged_by(value: object, relevant: Mapping[str, int], machine: Mapping[str, int],
                    path: str, number: int, problems: Problems) -> dict[str, JudgedBy]:
    """"judged_by": {doc id: {"by", "kind", "at", "from"}}, each fault a problem at
    judged_by.DOC[.KEY]."""
    if not isinstance(value, JsonObject):
        problems.add(path, 'judged_by is an object {"doc_id": {"by": ..., "kind": ..., "at": '
                     f'..., "from": ...}}}}, got {json_type(value)}', number, "judged_by")
        return {}
    found: dict[str, JudgedBy] = {}
    for doc in value.duplicates:
        problems.add(path, f"document {doc!r} has two provenances; keep one", number,
                     f"judged_by.{doc}")
    for doc, item in value.items():
        where = f"judged_by.{doc}"
        if not isinstance(item, JsonObject):
            problems.add(path, f"{where} is an object with by, kind, at and from, got "
                         f"{json_type(item)}", number, where)
            continue
        before = len(problems)
        for key in item.duplicates:
            problems.add(path, f"key {key!r} appears twice; keep one", number, f"{where}.{key}")
        for key in item:
            if key not in _JUDGED_BY_KEYS:
                problems.add(path, f"unknown field {key!r}; known fields: "
                             f"{', '.join(_JUDGED_BY_KEYS)}", number, f"{where}.{key}")
        for key in ("by", "from"):
            text = item.get(key)
            if not (isinstance(text, str) and text.strip()):
                problems.add(path, f"{key} is a non-blank string, got "
                             f"{clip(json.dumps(text), 40)}", number, f"{where}.{key}")
        kind = item.get("kind")
        if kind not in KINDS:
            problems.add(path, f'kind is "person" or "machine", got '
                         f"{clip(json.dumps(kind), 40)}", number, f"{where}.kind")
        if not valid_at(item.get("at")):
            problems.add(path, f"at is {AT_RULE}, got {clip(json.dumps(item.get('at')), 40)}",
                         number, f"{where}.at")
        if doc not in relevant and doc not in machine:
            problems.add(path, f"document {doc!r} is judged neither in relevant nor in machine: "
                         "provenance belongs to a grade; drop it, or add the grade", number,
                         where)
        elif doc not in relevant and kind == "person":
            problems.add(path, f"document {doc!r} has a person's provenance but only a machine "
                         "grade; a person's grade goes in relevant", number, f"{where}.kind")
        if len(problems) == before:
            found[doc] = JudgedBy(str(item["by"]), str(kind), str(item["at"]), str(item["from"]))
    return found

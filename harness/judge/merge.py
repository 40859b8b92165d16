"""`harness judge merge`: labels into a native gold set, with provenance, machines kept apart.

    result = merge_lines(lines, labels, with_machine=False, prefer=None)   pure: text in, text out
    merge_file(gold, label_files, out, ...) -> MergeResult                 read, check, write

- A person's label sets the document's grade in "relevant" and its "judged_by" provenance. Two
  persons who graded one pair differently are refused (every such pair listed) unless `prefer`
  names one of them, whose grade then stands. A person's later line supersedes their earlier one
  (`harness.judge.labels.latest`); persons who agree leave the latest provenance.
- A machine's label goes under the query's "machine" key and never scores, unless
  `with_machine`: then it also scores where no person judged the pair (no person label now, and
  no earlier judgement without a machine's provenance). Several machines on one pair: the latest.
- The file keeps its header and line order, byte for byte where nothing changed (a changed
  query is one JSON line again, its keys in their order, new keys last): `diff` shows exactly
  the queries that gained a grade. A label whose query id the gold set lacks is an error naming
  the labels file and line. The output is checked with the native reader's rules before it is
  written.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.errors import GoldError, HarnessError
from harness.gold.native import parse_native
from harness.gold.provenance import JudgedBy, QueryLabels, person_machine
from harness.gold.reading import Problems
from harness.gold.summary import Agreement, agreement
from harness.judge.labels import Label, latest, read_numbered_labels


@dataclass(frozen=True)
class MergeResult:
    """The merged file's lines (each with its line ending) and what changed."""

    lines: tuple[str, ...]
    person_added: int = 0  # a grade where there was none
    person_changed: int = 0  # a different grade than before
    machine_scored_added: int = 0  # with_machine: a machine grade that scores
    machine_scored_changed: int = 0
    machine_kept: int = 0  # machine grades stored (or updated) under "machine"
    queries_changed: int = 0
    agreement: Agreement | None = None

    def summary(self) -> str:
        parts = [f"person: {self.person_added} grade(s) added, {self.person_changed} changed",
                 f"machine: {self.machine_kept} kept apart under \"machine\" (not scored), "
                 f"{self.machine_scored_added} added and {self.machine_scored_changed} changed "
                 "in relevant (--with-machine)"]
        text = f"{'; '.join(parts)}; {self.queries_changed} quer" + (
            "y" if self.queries_changed == 1 else "ies") + " changed"
        if self.agreement is not None:
            text += "\n" + self.agreement.describe()
        return text


def _pick_person(labels: list[Label], prefer: str | None) -> Label | str:
    """The person label that stands for one pair, or why none does (a conflict)."""
    grades = {label.grade for label in labels}
    if len(grades) == 1:
        return max(labels, key=lambda label: label.at)
    chosen = [label for label in labels if label.by == prefer]
    if chosen:
        return chosen[-1]
    said = ", ".join(f"{label.by} {label.grade}" for label in labels)
    return f"query {labels[0].query_id!r}, document {labels[0].doc_id!r}: {said}"


def _split(text: str) -> list[str]:
    """Physical lines, each with its "\\n" (the last one may lack it)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return lines + ([parts[-1]] if parts[-1] else [])


def _dumps(value: dict[str, object]) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").replace("\x85", "\\u0085")


def merge_lines(text: str, labels: Iterable[Label], *, with_machine: bool = False,
                prefer: str | None = None) -> MergeResult:
    """Merge `labels` (every line of every labels file, in order) into the native gold file
    `text` (already valid: `load_gold` read it); see the module docstring."""
    standing = latest(labels)
    people: dict[tuple[str, str], list[Label]] = {}
    machines: dict[tuple[str, str], Label] = {}
    for label in standing:
        if label.kind == "person":
            people.setdefault(label.pair, []).append(label)
        elif label.pair not in machines or label.at >= machines[label.pair].at:
            machines[label.pair] = label
    person: dict[tuple[str, str], Label] = {}
    conflicts: list[str] = []
    for pair, found in people.items():
        pick = _pick_person(found, prefer)
        if isinstance(pick, str):
            conflicts.append(pick)
        else:
            person[pair] = pick
    if conflicts:
        raise HarnessError(
            f"persons disagree on {len(conflicts)} pair(s); nothing written",
            [*conflicts[:20], "settle them (a later line by the same person supersedes), or "
             "pass --prefer NAME to let one person's grade stand"])
    by_query: dict[str, list[tuple[str, str]]] = {}
    for pair in [*person, *machines]:
        if pair not in by_query.setdefault(pair[0], []):
            by_query[pair[0]].append(pair)
    counts = dict.fromkeys(("pa", "pc", "ma", "mc", "mk", "q"), 0)
    out: list[str] = []
    both: list[tuple[int, int]] = []
    for raw in _split(text):
        body = raw.rstrip("\n").rstrip("\r")
        ending = raw[len(body):]
        bom = "\ufeff" if body.startswith("\ufeff") else ""
        value = json.loads(body[len(bom):]) if body.strip() else None
        if not isinstance(value, dict) or "format" in value or "version" in value:
            out.append(raw)
            continue
        query_id = value["id"]
        changed = _merge_query(value, by_query.get(query_id, []), person, machines,
                               with_machine, counts)
        relevant = value["relevant"] if isinstance(value["relevant"], dict) else {}
        labels_now = QueryLabels(
            value.get("machine", {}),
            {d: _who(w) for d, w in value.get("judged_by", {}).items()})
        both += person_machine(relevant, labels_now)
        counts["q"] += changed
        out.append(bom + _dumps(value) + ending if changed else raw)
    return MergeResult(tuple(out), counts["pa"], counts["pc"], counts["ma"], counts["mc"],
                       counts["mk"], counts["q"], agreement(both) if both else None)


def _who(value: dict[str, str]) -> JudgedBy:
    return JudgedBy(value["by"], value["kind"], value["at"], value["from"])


def _provenance(label: Label) -> dict[str, str]:
    return {"by": label.by, "kind": label.kind, "at": label.at, "from": label.from_}


def _grades(value: object) -> dict[str, int]:
    """"relevant" (an object, or the list shorthand: grade 1 each) or "machine" as a dict."""
    if isinstance(value, dict):
        return {str(doc): int(grade) for doc, grade in value.items()}
    return dict.fromkeys(map(str, value), 1) if isinstance(value, list) else {}


def _merge_query(value: dict[str, object], pairs: Sequence[tuple[str, str]],
                 person: dict[tuple[str, str], Label], machines: dict[tuple[str, str], Label],
                 with_machine: bool, counts: dict[str, int]) -> bool:
    """Apply this query's labels to its JSON object in place; whether it changed."""
    if not pairs:
        return False
    before = json.dumps(value, sort_keys=True)
    old = value["relevant"]
    relevant = _grades(old)
    machine = _grades(value.get("machine", {}))
    judged_by: dict[str, dict[str, str]] = dict(value.get("judged_by", {}))  # type: ignore[call-overload]
    for pair in pairs:
        doc = pair[1]
        if pair in person:
            label = person[pair]
            counts["pa" if doc not in relevant else "pc"] += relevant.get(doc) != label.grade
            relevant[doc] = label.grade
            judged_by[doc] = _provenance(label)
        if pair in machines:
            label = machines[pair]
            counts["mk"] += machine.get(doc) != label.grade
            machine[doc] = label.grade
            earlier = judged_by.get(doc, {}).get("kind")
            by_person = pair in person or (doc in relevant and earlier != "machine")
            if with_machine and not by_person:
                counts["ma" if doc not in relevant else "mc"] += relevant.get(doc) != label.grade
                relevant[doc] = label.grade
                judged_by[doc] = _provenance(label)
            elif doc not in relevant:
                judged_by[doc] = _provenance(label)
    if relevant != _grades(old):
        value["relevant"] = relevant
    if machine:
        value["machine"] = machine
    if judged_by:
        value["judged_by"] = judged_by
    return json.dumps(value, sort_keys=True) != before


def merge_file(gold: Path, label_files: Sequence[Path], out: Path, *, with_machine: bool = False,
               prefer: str | None = None, force: bool = False) -> MergeResult:
    """Read the native gold set and the labels files, merge, check and write `out` (atomically;
    an existing `out`, GOLD included, only with `force`)."""
    from harness.gold import load_gold
    from harness.gold.native import replace_text
    from harness.results.files import write_text_new

    loaded = load_gold(gold)
    if loaded.format != "native":
        raise GoldError(f"{gold}: a {loaded.format} gold set; merge writes the native format: "
                        f"convert it first (harness gold convert {gold} --to native --out FILE)")
    if out.exists() and not force:
        same = out.resolve() == gold.resolve()
        raise HarnessError(f"{out}: already exists" + (" (it is GOLD)" if same else "")
                           + "; choose another --out, or pass --force to replace it")
    labels: list[Label] = []
    problems = Problems()
    for path in label_files:
        for number, label in read_numbered_labels(path):
            if label.query_id not in loaded.by_id:
                problems.add(str(path), f"query id {label.query_id!r} is not in the gold set "
                             f"{gold}; fix the id, or drop the line", number, "query_id")
            labels.append(label)
    problems.raise_if_any(f"{len(problems)} label(s) for queries the gold set lacks",
                          hint="nothing written")
    text = gold.read_bytes().decode("utf-8")
    result = merge_lines(text, labels, with_machine=with_machine, prefer=prefer)
    merged = "".join(result.lines)
    check = Problems()
    numbered = [(i, line.rstrip("\n").rstrip("\r").lstrip("\ufeff"))
                for i, line in enumerate(_split(merged), start=1)]
    parse_native([(i, line) for i, line in numbered if line.strip()], str(out), check)
    check.raise_if_any(f"{out}: refusing to write an invalid gold set (lines as they would be)")
    if force:
        replace_text(out, merged)
    else:
        write_text_new(out, merged)
    return result

"""harness judge merge: person grades score with provenance, machine grades kept apart (or
scoring only where no person judged, --with-machine), the hash covers only grades, the file
diffs only where grades came in; Cohen's kappa against statsmodels; gold stats shows it."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import numpy as np
import pytest
from cli_support import run_cli

from harness.errors import HarnessError
from harness.gold import load_gold
from harness.gold.native import read_native_labels
from harness.gold.summary import agreement, cohen_kappa
from harness.judge.labels import Label
from harness.judge.merge import merge_file

GOLD = (
    '{"format": "harness-gold", "version": 1, "judged": "pooled"}\n'
    '{"id": "q1", "query": "first", "relevant": {"a1": 1, "j1": 0}}\n'
    '{"query": "second", "id": "q2", "relevant": ["a2"], "slice": "s"}\n'
    "\n"
    '{"id": "q3", "query": "third", "relevant": {"a3": 2}}\n'
)
AT = "2026-12-06T07:10:00Z"


def _labels(path: Path, *rows: tuple[str, str, int, str, str]) -> Path:
    text = "".join(
        Label(q, d, g, by, kind, AT, "cmp").line() for q, d, g, by, kind in rows)
    path.write_text(text, encoding="utf-8")
    return path


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    gold = tmp_path / "gold.jsonl"
    gold.write_text(GOLD, encoding="utf-8")
    labels = _labels(tmp_path / "labels.jsonl",
                     ("q1", "n1", 2, "ana", "person"),
                     ("q1", "n1", 2, "machine:g", "machine"),
                     ("q1", "n2", 1, "machine:g", "machine"),
                     ("q3", "a3", 3, "ana", "person"))
    return gold, labels


def test_person_grades_score_with_provenance_and_machines_stay_apart(tmp_path: Path) -> None:
    gold, labels = _setup(tmp_path)
    out = tmp_path / "new.jsonl"
    result = merge_file(gold, [labels], out)
    assert (result.person_added, result.person_changed, result.machine_kept) == (1, 1, 2)
    merged = load_gold(out)
    assert merged.by_id["q1"].relevant == {"a1": 1, "j1": 0, "n1": 2}  # n2: machine, apart
    assert merged.by_id["q3"].relevant == {"a3": 3}
    found = read_native_labels(out)
    assert dict(found["q1"].machine) == {"n1": 2, "n2": 1}
    assert found["q1"].judged_by["n1"].kind == "person"
    assert found["q1"].judged_by["n1"].by == "ana"
    assert found["q1"].judged_by["n2"].kind == "machine"
    assert found["q3"].judged_by["a3"].to_json() == {"by": "ana", "kind": "person", "at": AT,
                                                     "from": "cmp"}
    assert "a1" not in found["q1"].judged_by  # older judgements carry no provenance


def test_with_machine_scores_only_where_no_person_judged(tmp_path: Path) -> None:
    gold, labels = _setup(tmp_path)
    extra = _labels(tmp_path / "more.jsonl", ("q1", "a1", 0, "machine:g", "machine"))
    out = tmp_path / "new.jsonl"
    merge_file(gold, [labels, extra], out, with_machine=True)
    q1 = load_gold(out).by_id["q1"]
    # n2 only a machine judged: it scores; n1 a person judged: the person's; a1 an earlier
    # judgement (no machine provenance): kept.
    assert q1.relevant == {"a1": 1, "j1": 0, "n1": 2, "n2": 1}
    assert read_native_labels(out)["q1"].judged_by["n2"].kind == "machine"


def test_the_hash_covers_grades_not_provenance_nor_machine(tmp_path: Path) -> None:
    gold, _ = _setup(tmp_path)
    before = load_gold(gold).hash
    machine_only = _labels(tmp_path / "m.jsonl", ("q1", "n9", 3, "machine:g", "machine"))
    merge_file(gold, [machine_only], tmp_path / "m-out.jsonl")
    assert load_gold(tmp_path / "m-out.jsonl").hash == before
    same_grade = _labels(tmp_path / "p.jsonl", ("q1", "a1", 1, "ana", "person"))
    merge_file(gold, [same_grade], tmp_path / "p-out.jsonl")
    assert "judged_by" in (tmp_path / "p-out.jsonl").read_text(encoding="utf-8")
    assert load_gold(tmp_path / "p-out.jsonl").hash == before  # provenance only
    new_grade = _labels(tmp_path / "g.jsonl", ("q1", "n9", 0, "ana", "person"))
    merge_file(gold, [new_grade], tmp_path / "g-out.jsonl")
    assert load_gold(tmp_path / "g-out.jsonl").hash != before


def test_the_output_differs_from_the_input_only_on_changed_queries(tmp_path: Path) -> None:
    gold, labels = _setup(tmp_path)
    out = tmp_path / "new.jsonl"
    merge_file(gold, [labels], out)
    old = GOLD.splitlines(keepends=True)
    new = out.read_text(encoding="utf-8").splitlines(keepends=True)
    changed = [line for line in difflib.unified_diff(old, new, n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert [c[0] + json.loads(c[1:])["id"] for c in changed] == ["-q1", "+q1", "-q3", "+q3"]
    assert len(new) == len(old) and new[0] == old[0] and new[2:4] == old[2:4]
    # key order kept, new keys last
    assert list(json.loads(new[1])) == ["id", "query", "relevant", "machine", "judged_by"]


def test_persons_who_disagree_are_refused_unless_one_is_preferred(tmp_path: Path) -> None:
    gold, _ = _setup(tmp_path)
    labels = _labels(tmp_path / "l.jsonl", ("q1", "n1", 2, "ana", "person"),
                     ("q1", "n1", 0, "bo", "person"), ("q3", "x", 1, "bo", "person"))
    out = tmp_path / "new.jsonl"
    with pytest.raises(HarnessError, match="persons disagree on 1 pair") as caught:
        merge_file(gold, [labels], out)
    assert "query 'q1', document 'n1': ana 2, bo 0" in caught.value.details
    assert not out.exists()
    merge_file(gold, [labels], out, prefer="bo")
    assert load_gold(out).by_id["q1"].relevant["n1"] == 0


def test_a_label_for_an_unknown_query_names_file_and_line(tmp_path: Path) -> None:
    gold, _ = _setup(tmp_path)
    labels = _labels(tmp_path / "l.jsonl", ("q1", "n1", 2, "ana", "person"),
                     ("q7", "n1", 2, "ana", "person"))
    with pytest.raises(HarnessError) as caught:
        merge_file(gold, [labels], tmp_path / "new.jsonl")
    assert f"{labels}:2: query_id: query id 'q7' is not in the gold set" in str(
        caught.value.details[0])


def test_the_cli_never_overwrites_without_force_and_reports_agreement(tmp_path: Path) -> None:
    gold, _ = _setup(tmp_path)
    done = run_cli("harness", "judge", "merge", "gold.jsonl", "labels.jsonl", "--out",
                   "gold.jsonl", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("harness: error: gold.jsonl: already exists (it is GOLD)")
    assert gold.read_text(encoding="utf-8") == GOLD
    done = run_cli("harness", "judge", "merge", "gold.jsonl", "labels.jsonl", "--out",
                   "gold.jsonl", "--force", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "person: 1 grade(s) added, 1 changed" in done.stderr
    assert "person vs machine on 1 pair" in done.stderr
    stats = run_cli("harness", "gold", "stats", "gold.jsonl", cwd=tmp_path)
    assert "machine grades kept apart (not scored): 2" in stats.stdout
    assert "person vs machine on 1 pair" in stats.stdout


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('"machine": {"d": -1}', "machine.d"),
        ('"judged_by": {"a1": {"by": "x", "kind": "robot", "at": "2026-12-06T07:10:00Z", '
         '"from": "c"}}', "judged_by.a1.kind"),
        ('"judged_by": {"zz": {"by": "x", "kind": "person", "at": "2026-12-06T07:10:00Z", '
         '"from": "c"}}', "judged_by.zz"),
    ],
)
def test_bad_new_keys_are_named_by_line_and_field(tmp_path: Path, line: str, field: str) -> None:
    gold = tmp_path / "g.jsonl"
    gold.write_text(f'{{"id": "q1", "query": "x", "relevant": {{"a1": 1}}, {line}}}\n',
                    encoding="utf-8")
    done = run_cli("harness", "gold", "stats", gold, cwd=tmp_path)
    assert done.returncode == 2
    assert f"g.jsonl:1: {field}:" in done.stderr


# --------------------------------------------------------------------------- kappa


def _table(a: list[int], b: list[int], size: int = 4) -> np.ndarray:
    table = np.zeros((size, size))
    for x, y in zip(a, b, strict=True):
        table[x, y] += 1
    return table


def test_kappa_matches_statsmodels() -> None:
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    rng = np.random.default_rng(7)
    for _ in range(50):
        a = rng.integers(0, 4, 40).tolist()
        b = [min(3, max(0, x + int(rng.integers(-1, 2)))) for x in a]
        table = _table(a, b)
        assert cohen_kappa(a, b, weights="quadratic", categories=(0, 3)) == pytest.approx(
            inter_rater.cohens_kappa(table, wt="quadratic").kappa, abs=1e-12)
        assert cohen_kappa(a, b, categories=(0, 3)) == pytest.approx(
            inter_rater.cohens_kappa(table).kappa, abs=1e-12)


def test_kappa_by_hand() -> None:
    # Perfect agreement is 1; one category throughout is undefined; binary by hand:
    # a = 1100, b = 1000: p_o = 3/4, p_e = (2/4)(1/4) + (2/4)(3/4) = 1/2, kappa = 1/2.
    assert cohen_kappa([0, 1, 2, 3], [0, 1, 2, 3], weights="quadratic") == pytest.approx(1.0)
    assert cohen_kappa([1, 1], [1, 1]) is None
    assert cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx(0.5)
    found = agreement([(2, 2), (0, 1), (3, 3), (1, 0)])
    assert (found.pairs, found.same) == (4, 2)
    assert found.kappa_relevant == pytest.approx(cohen_kappa([1, 0, 1, 1], [1, 1, 1, 0]))

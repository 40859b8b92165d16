"""harness judge pairs and label: the decisive unjudged pairs of a saved comparison, in order,
as JSONL and CSV; machine labels from a command, refused whole on a bad line, killed on timeout;
the labels file format the judging page shares."""

from __future__ import annotations

import csv
import io
import json
import sys
import time
from pathlib import Path

import psutil
import pytest
from cli_support import run_cli
from judge_support import CORPUS, saved_comparison

from harness.errors import HarnessError
from harness.judge.labels import Label, append_label, latest, read_labels
from harness.judge.machine import parse_grades, run_labeller

EXPECTED_ORDER = [("q1", "n1"), ("q1", "n2"), ("q2", "m2"), ("q2", "m3"), ("q3", "u1")]


def _rows(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines()]


def test_pairs_come_most_decisive_first_as_jsonl(tmp_path: Path) -> None:
    directory, _ = saved_comparison(tmp_path)
    (tmp_path / "corpus.jsonl").write_text(CORPUS, encoding="utf-8")
    done = run_cli("harness", "judge", "pairs", directory, "--corpus", "corpus.jsonl",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = _rows(done.stdout)
    # The flipped query's reach pairs first (q1: the candidate misses, the baseline hits), then
    # the other reach pairs, then the unjudged document above a first relevant one; no --all.
    assert [(r["query_id"], r["doc_id"]) for r in rows] == EXPECTED_ORDER
    first = rows[0]
    assert first == {
        "order": 1, "query_id": "q1", "query": "question q1", "doc_id": "n1", "title": "T n1",
        "text": "text of n1, with a comma", "baseline_rank": None, "candidate_rank": 2,
        "why": "could turn the candidate's miss at hit@3 into a hit (hit@3 differs between the "
        "sides here)", "comparison": directory.name,
    }
    assert rows[2]["why"] == "could turn the baseline's miss at hit@3 into a hit"
    assert rows[4]["why"].startswith("ranked above the baseline's first relevant")
    assert [r["order"] for r in rows] == [1, 2, 3, 4, 5]
    assert done.stderr.strip() == "harness: 5 pairs on 3 queries (4 could each move hit@3)"


def test_all_adds_every_other_unjudged_document_once(tmp_path: Path) -> None:
    directory, _ = saved_comparison(tmp_path)
    done = run_cli("harness", "judge", "pairs", directory, "--all", cwd=tmp_path)
    rows = _rows(done.stdout)
    pairs = [(r["query_id"], r["doc_id"]) for r in rows]
    assert pairs[:5] == EXPECTED_ORDER
    assert sorted(pairs[5:]) == sorted([("q1", "x1"), ("q1", "x2"), ("q2", "m1"), ("q3", "u2"),
                                        ("q3", "u5"), ("q4", "v1"), ("q4", "v2")])
    assert len(set(pairs)) == len(pairs)
    assert "no --corpus" in done.stderr and rows[0]["title"] == rows[0]["text"] == ""


def test_csv_output_has_the_same_rows(tmp_path: Path) -> None:
    directory, _ = saved_comparison(tmp_path)
    (tmp_path / "corpus.jsonl").write_text(CORPUS, encoding="utf-8")
    done = run_cli("harness", "judge", "pairs", directory, "--corpus", "corpus.jsonl", "--out",
                   "pairs.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    raw = (tmp_path / "pairs.csv").read_bytes()
    assert b"\r\n" in raw  # RFC 4180 line ends
    table = list(csv.DictReader(io.StringIO(raw.decode("utf-8"), newline="")))
    assert [(r["query_id"], r["doc_id"]) for r in table] == EXPECTED_ORDER
    assert table[0]["text"] == "text of n1, with a comma" and table[0]["baseline_rank"] == ""


def test_an_existing_out_is_never_overwritten(tmp_path: Path) -> None:
    directory, _ = saved_comparison(tmp_path)
    (tmp_path / "pairs.jsonl").write_text("mine\n", encoding="utf-8")
    done = run_cli("harness", "judge", "pairs", directory, "--out", "pairs.jsonl", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("harness: error: pairs.jsonl: already exists")
    assert "Traceback" not in done.stderr
    assert (tmp_path / "pairs.jsonl").read_text(encoding="utf-8") == "mine\n"


def test_a_gold_set_judged_since_is_refused(tmp_path: Path) -> None:
    directory, gold = saved_comparison(tmp_path)
    text = gold.read_text(encoding="utf-8").replace('"a4": 1', '"a4": 1, "v1": 0')
    changed = tmp_path / "changed.jsonl"
    changed.write_text(text, encoding="utf-8")
    done = run_cli("harness", "judge", "pairs", directory, "--gold", changed, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    first = done.stderr.splitlines()[0]
    assert "judged since? run compare again" in first and "Traceback" not in done.stderr
    # The same file as the comparison's: accepted.
    assert run_cli("harness", "judge", "pairs", directory, "--gold", gold,
                   cwd=tmp_path).returncode == 0


# --------------------------------------------------------------------------- labels


def _label(**kw: object) -> Label:
    base: dict[str, object] = {"query_id": "q1", "doc_id": "n1", "grade": 2, "by": "ana",
                               "kind": "person", "at": "2026-12-06T07:10:00Z", "from_": "c"}
    return Label(**(base | kw))  # type: ignore[arg-type]


def test_labels_round_trip_and_a_later_line_supersedes(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    append_label(path, _label())
    append_label(path, _label(grade=0, at="2026-12-06T07:11:00Z"))
    append_label(path, _label(by="bo", grade=1))
    lines = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {"query_id": "q1", "doc_id": "n1", "grade": 2, "by": "ana",
                                    "kind": "person", "at": "2026-12-06T07:10:00Z", "from": "c"}
    labels = read_labels(path)
    assert len(labels) == 3
    assert [(x.by, x.grade) for x in latest(labels)] == [("ana", 0), ("bo", 1)]


def test_a_torn_last_line_does_not_swallow_the_next_label(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text('{"query_id": "q1"', encoding="utf-8")
    append_label(path, _label())
    assert path.read_text(encoding="utf-8").splitlines()[1] == _label().line().strip()


def test_bad_label_lines_are_named_with_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    good = _label().line()
    bad = json.dumps(_label().to_json() | {"grade": 4, "at": "yesterday"})
    path.write_text(good + "\n" + bad + "\nnot json\n", encoding="utf-8")
    with pytest.raises(HarnessError) as caught:
        read_labels(path)
    text = "\n".join(caught.value.details)
    assert f"{path}:3: grade: grade is an integer 0..3" in text
    assert f"{path}:3: at: at is an ISO 8601 UTC time" in text
    assert f"{path}:4:" in text


# --------------------------------------------------------------------------- label command

GRADER = """
import json, sys
for line in sys.stdin:
    row = json.loads(line)
    grade = 2 if row["doc_id"].startswith("n") else 0
    print(json.dumps({"query_id": row["query_id"], "doc_id": row["doc_id"], "grade": grade}))
"""


def _pairs_file(tmp_path: Path) -> Path:
    directory, _ = saved_comparison(tmp_path)
    assert run_cli("harness", "judge", "pairs", directory, "--out", "pairs.jsonl",
                   cwd=tmp_path).returncode == 0
    return tmp_path / "pairs.jsonl"


def test_label_writes_machine_labels(tmp_path: Path) -> None:
    _pairs_file(tmp_path)
    (tmp_path / "grade.py").write_text(GRADER, encoding="utf-8")
    done = run_cli("harness", "judge", "label", "pairs.jsonl", "--out", "machine.jsonl",
                   "--command", f"{sys.executable} grade.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    labels = read_labels(tmp_path / "machine.jsonl")
    assert [(x.query_id, x.doc_id, x.grade) for x in labels] == [
        ("q1", "n1", 2), ("q1", "n2", 2), ("q2", "m2", 0), ("q2", "m3", 0), ("q3", "u1", 0)]
    assert {x.kind for x in labels} == {"machine"}
    assert {x.by for x in labels} == {f"machine:{Path(sys.executable).name}"}
    saved = [d.name for d in (tmp_path / "results").iterdir() if d.is_dir()]
    assert {x.from_ for x in labels} == set(saved) and len(saved) == 1


def test_the_command_comes_from_harness_toml(tmp_path: Path) -> None:
    _pairs_file(tmp_path)
    (tmp_path / "grade.py").write_text(GRADER, encoding="utf-8")
    (tmp_path / "harness.toml").write_text(
        f'[judge]\ncommand = "{sys.executable} grade.py"\n', encoding="utf-8")
    done = run_cli("harness", "judge", "label", "pairs.jsonl", "--out", "m.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(read_labels(tmp_path / "m.jsonl")) == 5
    (tmp_path / "harness.toml").write_text('[judge]\ncommand = "\'unclosed"\n', encoding="utf-8")
    done = run_cli("harness", "judge", "label", "pairs.jsonl", "--out", "n.jsonl", cwd=tmp_path)
    assert done.returncode == 2 and "judge.command" in done.stderr
    assert not (tmp_path / "n.jsonl").exists()


@pytest.mark.parametrize(
    ("output", "said"),
    [
        ('{"query_id": "q1", "doc_id": "n1", "grade": 5}', "output line 1: grade 5"),
        ("oops", "output line 1: not JSON"),
        ('{"query_id": "q9", "doc_id": "zz", "grade": 1}', "was not asked for"),
        ("", "1 pair(s) not graded"),
    ],
)
def test_a_bad_output_line_is_named_and_nothing_written(output: str, said: str) -> None:
    with pytest.raises(HarnessError) as caught:
        parse_grades(output + "\n", [("q1", "n1")], ["grader"])
    assert any(said in line for line in caught.value.details), caught.value.details


def test_a_bad_line_through_the_cli_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    _pairs_file(tmp_path)
    (tmp_path / "bad.py").write_text("print('{\"query_id\": 1}')\n", encoding="utf-8")
    done = run_cli("harness", "judge", "label", "pairs.jsonl", "--out", "m.jsonl", "--command",
                   f"{sys.executable} bad.py", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("harness: error: labelling command")
    assert "output line 1" in done.stderr
    assert not (tmp_path / "m.jsonl").exists()


def _gone(pid: int) -> bool:
    """Dead: no such process, or a zombie (dead, waiting to be reaped: an orphan is reparented
    to the nearest subreaper, which may be this test process when an earlier test in it set
    one, as harness's process code does)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = (
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
        "time.sleep(60)\n"
    )
    started = time.monotonic()
    with pytest.raises(HarnessError, match="ran past --timeout 1 s"):
        run_labeller([sys.executable, "-c", script], "", timeout_s=1)
    assert time.monotonic() - started < 10
    leader, child = map(int, pids.read_text().split())
    deadline = time.monotonic() + 5
    while not (_gone(leader) and _gone(child)) and time.monotonic() < deadline:
        time.sleep(0.05)  # the orphaned child is reaped by init
    assert _gone(leader) and _gone(child)


def test_page_arguments_parse() -> None:
    from harness.cli.parser import parse_args

    args = parse_args(["judge", "page", "p.jsonl", "--labels", "l.jsonl", "--by", "ana",
                       "--port", "0"])
    assert (args.judge_command, args.pairs, args.labels, args.by, args.port) == (
        "page", Path("p.jsonl"), Path("l.jsonl"), "ana", 0)

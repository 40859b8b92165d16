"""The retrieval/generation 2x2: every cell populated by hand, both answers-file forms, errors,
the movement matrix, the CLI and its section in a compare report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import run_cli

from harness.errors import GoldError
from harness.gold import write_native
from harness.gold.grades import read_grades
from harness.report.twobytwo import render_twobytwo
from harness.results.records import save_run
from harness.values.types import ErrorKind, GoldQuery, GoldSet, QueryResult, RefRun, Repeat
from harness.verdict.twobytwo import Cell, movement, two_by_two

QUERIES = (
    *(GoldQuery(f"q{i}", f"question number {i}", relevant={f"d{i}": 1}) for i in range(1, 9)),
    GoldQuery("u1", "nothing answers this"),
)
GOLD = GoldSet(QUERIES, "mem", "native", "g" * 64)

# Rank of the query's relevant document in each of the two repeats (None: not returned).
RANKS = {
    "q1": (1, 1), "q2": (2, 1), "q3": (7, 7), "q4": (5, 5), "q5": (None, None),
    "q6": (1, 1), "q7": (1, 1), "q8": (1, None),  # q8: retrieved in 1 of 2 repeats, a tie
}


def ranking(qid: str, rank: int | None) -> tuple[str, ...]:
    ids = [f"junk{j}" for j in range(10)]
    if rank is not None:
        ids[rank - 1] = f"d{qid[1:]}"
    return tuple(ids)


def make_run(ranks=RANKS, sha: str = "a" * 40) -> RefRun:
    def answer(rep: int, q: GoldQuery) -> QueryResult:
        if q.id == "q7" and rep == 1:
            return QueryResult(q.id, error=ErrorKind.TIMEOUT, latency_ns=1)
        if q.id == "u1":
            return QueryResult(q.id, ("junk0",), latency_ns=1)
        return QueryResult(q.id, ranking(q.id, ranks[q.id][rep]), latency_ns=1)

    reps = tuple(Repeat(r, tuple(answer(r, q) for q in QUERIES)) for r in range(2))
    return RefRun("main", sha, "c" * 64, GOLD.hash, None, "0.test", {}, reps,
                  query_config={"limit": 10})


CORRECT = {"q1": True, "q2": True, "q3": False, "q4": False, "q5": True, "q7": True,
           "q8": True, "u1": False}  # q6 not graded


def test_every_cell_by_hand() -> None:
    table = two_by_two(GOLD, make_run(), CORRECT, 5)
    # q1, q2: relevant at rank <= 5 in both repeats, graded correct.
    assert table.cell(Cell.RETRIEVED_CORRECT).query_ids == ("q1", "q2")
    # q3: rank 7, outside the top 5, and wrong: retrieval failure.
    assert table.cell(Cell.RETRIEVAL_FAILURE).query_ids == ("q3",)
    # q4: rank 5, inside the top 5, yet wrong: generation failure.
    assert table.cell(Cell.GENERATION_FAILURE).query_ids == ("q4",)
    # q5 never returned; q8 hit in 1 of 2 repeats (a tie counts as not retrieved): both correct.
    assert table.cell(Cell.OWN_KNOWLEDGE).query_ids == ("q5", "q8")
    assert table.n == 6
    assert table.not_graded == ("q6",)
    assert table.not_analysed == ("q7", "u1")  # q7 errored in a repeat; u1 is unanswerable
    # At k = 7, q3's document counts as retrieved: a generation failure.
    assert two_by_two(GOLD, make_run(), CORRECT, 7).cell(Cell.GENERATION_FAILURE).query_ids == (
        "q3", "q4"
    )


def write_jsonl(path: Path, grades: dict[str, bool]) -> Path:
    path.write_text("".join(json.dumps({"query_id": q, "correct": c}) + "\n"
                            for q, c in grades.items()))
    return path


def write_tsv(path: Path, grades: dict[str, bool], header: bool = True) -> Path:
    lines = ["query_id\tcorrect"] if header else []
    path.write_text("\n".join(lines + [f"{q}\t{int(c)}" for q, c in grades.items()]) + "\n")
    return path


def test_jsonl_and_tsv_read_the_same(tmp_path: Path) -> None:
    known = {q.id for q in QUERIES}
    a = read_grades(write_jsonl(tmp_path / "a.jsonl", CORRECT), known)
    b = read_grades(write_tsv(tmp_path / "a.tsv", CORRECT), known)
    c = read_grades(write_tsv(tmp_path / "b.tsv", CORRECT, header=False), known)
    assert a.correct == b.correct == c.correct == CORRECT


@pytest.mark.parametrize(
    ("text", "where", "words"),
    [
        ('{"query_id": "q1", "correct": true}\n{"query_id": "q1", "correct": false}\n',
         ":2: query_id", "graded twice"),
        ('{"query_id": "zz", "correct": true}\n', ":1: query_id", "not in the gold set"),
        ('{"query_id": "q1", "correct": "yes"}\n', ":1:", "correct is true or false"),
        ('{"query_id": "q1", "ok": true}\n', ":1:", "unknown field 'ok'"),
        ("q1\t1\nq2\tyes\n", ":2:", "is 1 or 0"),
        ("q1 1\n", ":1:", "2 tab-separated columns"),
        ("\n", "", "empty"),
    ],
)
def test_bad_answers_files_name_the_line(tmp_path: Path, text: str, where: str,
                                         words: str) -> None:
    path = tmp_path / "answers"
    path.write_text(text)
    with pytest.raises(GoldError) as raised:
        read_grades(path, {q.id for q in QUERIES})
    detail = "\n".join(raised.value.details)
    assert f"{path}{where}" in detail and words in detail


def test_movement_counts_every_pair_of_cells() -> None:
    before = two_by_two(GOLD, make_run(), CORRECT, 5)
    # The candidate retrieves q3 at rank 1 (still wrong: now a generation failure) and loses q1.
    after_ranks = {**RANKS, "q3": (1, 1), "q1": (None, None)}
    after = two_by_two(GOLD, make_run(after_ranks), CORRECT, 5)
    moved = movement(before, after)
    assert moved.move(Cell.RETRIEVAL_FAILURE, Cell.GENERATION_FAILURE).query_ids == ("q3",)
    assert moved.move(Cell.RETRIEVED_CORRECT, Cell.OWN_KNOWLEDGE).query_ids == ("q1",)
    assert moved.move(Cell.RETRIEVED_CORRECT, Cell.RETRIEVED_CORRECT).query_ids == ("q2",)
    assert len(moved.moves) == 16
    assert sum(len(m.query_ids) for m in moved.moves) == before.n


def test_render_lists_counts_and_ids() -> None:
    table = two_by_two(GOLD, make_run(), CORRECT, 5)
    text = render_twobytwo(table, "text", run="main (aaaaaaaa)")
    assert "retrieval failure" in text and "q5 q8" in text
    document = json.loads(render_twobytwo(table, "json"))
    cells = {c["cell"]: c["query_ids"] for c in document["cells"]}
    assert cells["retrieved, wrong"] == ["q4"] and document["not_graded"] == ["q6"]
    assert "| retrieved " in render_twobytwo(table, "markdown")


def test_the_cli_reads_a_record_and_an_answers_file(tmp_path: Path) -> None:
    write_native(QUERIES, tmp_path / "gold.jsonl")
    from harness.gold import load_gold

    gold = load_gold(tmp_path / "gold.jsonl")
    run = make_run()
    record = save_run(tmp_path / "results", RefRun(**{**run.__dict__, "gold_hash": gold.hash}))
    answers = write_tsv(tmp_path / "answers.tsv", CORRECT)
    done = run_cli("harness", "twobytwo", "--run", record, "--answers", answers, "--gold",
                   tmp_path / "gold.jsonl", "--k", "5", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "6 queries graded and analysed" in done.stdout
    bad = write_jsonl(tmp_path / "bad.jsonl", {"nope": True})
    done = run_cli("harness", "twobytwo", "--run", record, "--answers", bad, "--gold",
                   tmp_path / "gold.jsonl", cwd=tmp_path)
    assert done.returncode == 2 and "not in the gold set" in done.stderr
    assert "Traceback" not in done.stderr

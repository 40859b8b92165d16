"""`harness gold ...` through the installed CLI: exit statuses and that compare fails fast."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import run_cli
from e2e_support import build_sandbox, config_text

ROOT = Path(__file__).resolve().parents[2]
GOLD, CORPUS = ROOT / "gold" / "example.jsonl", ROOT / "gold" / "example-corpus.jsonl"


def test_check_passes_the_bundled_example(tmp_path: Path) -> None:
    done = run_cli(
        "harness", "gold", "check", GOLD, "--corpus", CORPUS, "--format", "json", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ok"] is True


def test_check_exits_2_on_a_dangling_id_naming_query_and_line(tmp_path: Path) -> None:
    lines = GOLD.read_text().splitlines()
    row = json.loads(lines[1])
    row["relevant"] = {"no-such-doc": 1}
    lines[1] = json.dumps(row)
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(lines) + "\n")
    done = run_cli("harness", "gold", "check", broken, "--corpus", CORPUS, cwd=tmp_path)
    assert done.returncode == 2
    assert "no-such-doc" in done.stdout + done.stderr
    assert row["id"] in done.stdout + done.stderr


def test_build_then_check_then_convert_round_trip(tmp_path: Path) -> None:
    out = tmp_path / "built.jsonl"
    build = ("harness", "gold", "build", "--corpus", CORPUS, "--out", out, "--exact-rare", "3")
    done = run_cli(*build, "--nonsense", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (
        run_cli("harness", "gold", "check", out, "--corpus", CORPUS, cwd=tmp_path).returncode == 0
    )
    again = run_cli(*build, cwd=tmp_path)
    assert again.returncode == 2 and "exists" in again.stderr  # never overwritten unasked
    trec = tmp_path / "trec"
    done = run_cli("harness", "gold", "convert", out, "--to", "trec", "--out", trec, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "warning" in done.stderr  # nonsense rows cannot live in qrels: it says so


def test_stats_json(tmp_path: Path) -> None:
    done = run_cli("harness", "gold", "stats", GOLD, "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["queries"] == 20


@pytest.mark.parametrize("repeated", [False, True], ids=["dangling-id", "dangling-and-repeated"])
def test_compare_fails_fast_on_a_bad_gold_set(tmp_path: Path, repeated: bool) -> None:
    # A dangling document id (a finding of the check: CheckReport.raise_if_errors), and with it a
    # repeated query id (the file cannot even be read: load_gold raises). Either way compare exits
    # 2 naming every problem, before any ref is checked out, built or booted.
    sandbox = build_sandbox(tmp_path / "s", {"other": {"bury": ["q01"]}})
    lines = (sandbox.repo / "gold" / "gold.jsonl").read_text().splitlines()
    row = json.loads(lines[3])
    row["relevant"] = {"no-such-doc": 1}
    lines[3] = json.dumps(row)
    if repeated:
        lines.append(lines[5])
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(lines) + "\n")
    config = tmp_path / "harness.toml"
    text = config_text(gold=str(broken), boot_counter=sandbox.boot_counter)
    corpus = sandbox.repo / "data" / "corpus.jsonl"
    config.write_text(text.replace("[gold]\n", f"[gold]\ncorpus = {json.dumps(str(corpus))}\n"))
    done = sandbox.harness(
        "compare", "--baseline", "main", "--candidate", "other", "--fresh", config=config
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("harness: error:"), done.stderr
    assert "Traceback" not in done.stderr
    assert "no-such-doc" in done.stderr and row["id"] in done.stderr
    if repeated:
        assert json.loads(lines[5])["id"] in done.stderr
    assert done.stdout == ""
    assert sandbox.boots() == 0  # nothing booted
    assert sandbox.worktrees() == []
    # No worktree, snapshot or build was ever made (the gold set itself, sound but for its
    # dangling ids, may be in the gold cache: harness.gold.memo).
    assert [p for p in sandbox.cache.iterdir() if p.name != "gold"] == []
    # nothing measured, nothing saved (the results directory, checked writable first, may exist)
    assert not sandbox.results.exists() or not any(sandbox.results.iterdir())
    assert sandbox.leftovers() == []


def test_convert_says_how_many_queries_it_wrote_and_records_the_corpus(tmp_path: Path) -> None:
    gold = [json.loads(line) for line in GOLD.read_text().splitlines()[1:]]
    judged = sum(1 for row in gold if row["relevant"])
    assert judged < len(gold), "the example holds queries without any judgement"
    done = run_cli("harness", "gold", "convert", GOLD, "--to", "trec", "--out", "t", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"harness: wrote {judged} queries as trec to t" in done.stderr  # not {len(gold)}
    # TREC qrels hold no corpus; converting back with --corpus records its sha256 again.
    done = run_cli(
        "harness", "gold", "convert", "t/qrels.txt", "--queries", "t/topics.jsonl",
        "--corpus", CORPUS, "--to", "native", "--out", "back.jsonl", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"harness: wrote {judged} queries as native to back.jsonl" in done.stderr
    header = json.loads((tmp_path / "back.jsonl").read_text().splitlines()[0])
    from harness.gold import file_sha256

    assert header["corpus"]["sha256"] == file_sha256(CORPUS)
    done = run_cli(
        "harness", "gold", "check", "back.jsonl", "--corpus", CORPUS, "--format", "json",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "records no corpus sha256" not in done.stdout


def _flat_beir_folder(folder: Path, queries: int) -> Path:
    """A BEIR folder as public collections ship it: a flat qrels.tsv beside queries.jsonl."""
    folder.mkdir()
    rows = [{"_id": f"q{n}", "text": f"question {n}"} for n in range(queries)]
    (folder / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    qrels = ["query-id\tcorpus-id\tscore", *(f"q{n}\td{n}\t1" for n in range(queries))]
    (folder / "qrels.tsv").write_text("\n".join(qrels) + "\n")
    return folder


def test_a_beir_qrels_tsv_given_as_trec_qrels_is_one_error_naming_the_folder(
    tmp_path: Path,
) -> None:
    beir = _flat_beir_folder(tmp_path / "beir", 340)
    out = tmp_path / "gold.jsonl"
    done = run_cli(
        "harness", "gold", "convert", beir / "qrels.tsv", "--queries", beir / "queries.jsonl",
        "--to", "native", "--out", out, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    problems = [line for line in done.stderr.splitlines() if line.startswith("  ")]
    assert len(problems) == 1, done.stderr
    assert "this is a BEIR qrels file" in problems[0]
    assert f"give the BEIR folder that holds it instead ({beir}," in problems[0]
    # what it suggests works as written
    done = run_cli("harness", "gold", "convert", beir, "--to", "native", "--out", out, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(out.read_text().splitlines()) == 341  # the header and 340 queries


def test_three_columns_without_the_header_are_one_problem_suggesting_beir(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{n}\td{n}\t1\n" for n in range(40)))
    done = run_cli("harness", "metrics", "--gold", qrels, "--run", qrels, cwd=tmp_path)
    assert done.returncode == 2
    problems = [line for line in done.stderr.splitlines() if line.startswith("  ")]
    assert problems == [
        f"  {qrels}:1: expected 4 whitespace-separated columns `qid iteration docid relevance`, "
        "got 3 (and on 39 more lines: 2, 3, 4, 5, 6, ...); 3 columns are BEIR's `query-id "
        "corpus-id score`: give the BEIR folder (queries.jsonl with qrels.tsv or "
        "qrels/<split>.tsv) instead"
    ]

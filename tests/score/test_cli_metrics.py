"""`harness metrics`, run as a user runs it: numbers equal the metrics engine's, errors exit 2."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path

import pytest
from cli_support import run_cli

from harness.gold import load_gold
from harness.score.evaluation import evaluate
from harness.score.metrics import parse_metrics
from harness.score.runfile import load_run

ROOT = Path(__file__).resolve().parents[2]
GOLD, RUN = ROOT / "gold" / "example.jsonl", ROOT / "gold" / "example-run.jsonl"
METRICS = "hit@5,recall@10,mrr@10,ndcg@10,p@5"


def metrics(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`harness metrics --gold GOLD --run RUN *args`, run in `cwd`."""
    return run_cli("harness", "metrics", "--gold", GOLD, "--run", RUN, *args, cwd=cwd)


def test_json_output_equals_the_engine_per_query_and_per_slice(tmp_path: Path) -> None:
    done = metrics(tmp_path, "--metrics", METRICS, "--format", "json", "--per-query")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    gold = load_gold(GOLD)
    assert document["gold"]["sha256"] == gold.hash  # every output names the gold set it used
    expected = evaluate(gold, load_run(RUN).rankings, parse_metrics(METRICS))
    assert document["aggregate"] == pytest.approx(dict(expected.aggregate), abs=1e-12)
    assert set(document["slices"]) == set(expected.slices)
    for name, score in expected.slices.items():
        assert document["slices"][name]["n"] == score.n
    assert set(document["per_query"]) == set(expected.query_ids)
    for qid, values in expected.per_query.items():
        assert document["per_query"][qid] == pytest.approx(dict(values), abs=1e-12)


def test_table_lists_overall_then_every_slice_with_n(tmp_path: Path) -> None:
    done = metrics(tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:3] == ["scope", "n", "hit@5"]
    gold = load_gold(GOLD)
    for name in gold.slices:
        assert any(line.startswith(f"slice {name}") for line in lines), name


def test_csv_has_one_row_per_scope_and_metric(tmp_path: Path) -> None:
    done = metrics(tmp_path, "--metrics", "hit@5", "--format", "csv")
    assert done.returncode == 0, done.stderr
    rows = list(csv.reader(io.StringIO(done.stdout)))
    assert len(rows) > 1 and any("hit@5" in row for row in rows[1:])


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--gold", "missing.jsonl", "--run", str(RUN)], "missing.jsonl"),
        (["--gold", str(GOLD), "--run", "missing.run"], "missing.run"),
        (["--gold", str(GOLD), "--run", str(RUN), "--metrics", "ndgc@10"], "unknown metric"),
    ],
)
def test_bad_input_exits_2_naming_what(tmp_path: Path, args: list[str], needle: str) -> None:
    done = run_cli("harness", "metrics", *args, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("harness: error:") and needle in done.stderr
    assert done.stdout == ""


def test_malformed_run_line_is_named_with_its_line(tmp_path: Path) -> None:
    run = tmp_path / "bad.run"
    run.write_text("q1 Q0 kb-01 1 2.5 tag\nq2 Q0 kb-02 1 not-a-score tag\n")
    done = run_cli("harness", "metrics", "--gold", GOLD, "--run", run, cwd=tmp_path)
    assert done.returncode == 2
    assert f"{run}:2" in done.stderr


def test_a_run_naming_no_gold_query_is_an_error_not_zeros(tmp_path: Path) -> None:
    run = tmp_path / "other.jsonl"
    run.write_text('{"id": "not-a-gold-query", "ranking": ["kb-01"]}\n')
    done = run_cli("harness", "metrics", "--gold", GOLD, "--run", run, cwd=tmp_path)
    assert done.returncode == 2
    assert "names none of the" in done.stderr


def test_trec_qrels_score_without_a_topics_file_as_trec_eval_does(tmp_path: Path) -> None:
    # `trec_eval qrels run`: the judgements and the run are all that scoring reads.
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\nq2 0 d4 1\nq3 0 d9 1\n")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d2 1 9.0 t\nq1 Q0 d1 2 8.0 t\nq2 Q0 d4 1 5.0 t\nq2 Q0 d3 2 4.0 t\n")
    done = run_cli(
        "harness", "metrics", "--gold", qrels, "--run", run,
        "--metrics", "RR@10,P_1,map,nDCG", "--format", "json", "--per-query", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert set(document["aggregate"]) == {"RR@10", "P_1", "map", "nDCG"}  # as given
    assert document["per_query"]["q1"]["RR@10"] == 0.5
    assert document["per_query"]["q2"]["P_1"] == 1.0
    assert document["per_query"]["q3"]["map"] == 0.0  # judged, missing from the run: 0 (-c)
    assert document["aggregate"]["RR@10"] == pytest.approx((0.5 + 1 + 0) / 3)


def test_a_gold_set_without_slices_prints_the_overall_row_once(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq2 0 d3 1\n")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 9.0 t\nq2 Q0 d4 1 5.0 t\n")
    done = run_cli("harness", "metrics", "--gold", qrels, "--run", run, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    table = done.stdout.split("\n\n")[0].splitlines()[2:]
    assert [line.split()[0] for line in table] == ["all"], done.stdout

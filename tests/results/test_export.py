"""`harness export`: a run record as a TREC run file trec_eval reads back in the same order, and
per-query tables through pandas; bad input exits 2."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import pytrec_eval
from cli_support import run_cli
from records_support import record

from harness.errors import HarnessError, NotComparableError, ResultsError
from harness.results.export import per_query_frame, to_table, to_trec, trec_lines
from harness.results.records import save_run
from harness.score.evaluation import evaluate
from harness.score.metrics import parse_metrics
from harness.score.runfile import parse_run
from harness.values.types import ErrorKind, GoldQuery, GoldSet, QueryResult

GOLD = GoldSet(
    (
        GoldQuery("q1", "one", "a", {"d1": 1, "d2": 2}),
        GoldQuery("q2", "two", "b", {"d3": 1}),
        GoldQuery("q3", "none", "b", {}),
    ),
    source="<test>",
    format="native",
    hash="g" * 64,
)


def test_missing_scores_are_filled_to_keep_the_services_order_and_duplicates_dropped() -> None:
    lines = trec_lines(QueryResult("q1", ("d9", "d1", "d9", "d2"), status=200), "t")
    assert lines == ["q1 Q0 d9 1 3.0 t", "q1 Q0 d1 2 2.0 t", "q1 Q0 d2 3 1.0 t"]


def test_service_scores_are_kept_and_ties_sorted_as_trec_eval_sorts_them() -> None:
    answer = QueryResult("q1", ("a", "c", "b"), scores=(2.5, 1.0, 1.0), status=200)
    # Tied scores: trec_eval orders them by docid descending, so c before b, whatever was sent.
    assert trec_lines(answer, "t") == ["q1 Q0 a 1 2.5 t", "q1 Q0 c 2 1.0 t", "q1 Q0 b 3 1.0 t"]
    nan = QueryResult("q1", ("a", "b"), scores=(float("nan"), 1.0), status=200)
    assert trec_lines(nan, "t") == ["q1 Q0 a 1 2.0 t", "q1 Q0 b 2 1.0 t"]  # filled whole


def test_a_failed_query_has_no_lines_and_scores_0_as_trec_eval_c() -> None:
    assert trec_lines(QueryResult("q1", error=ErrorKind.TIMEOUT), "t") == []


def test_the_run_file_reads_back_and_trec_eval_scores_what_harness_scores() -> None:
    run = record(
        QueryResult("q1", ("d5", "d2", "d1"), scores=(0.9, 0.5, 0.1), status=200),
        QueryResult("q2", ("d3", "d3", "d8"), status=200),
        QueryResult("q3", ("d1",), status=200),
    )
    text = to_trec(run)
    assert all(line.endswith(" harness-feat/x_y-01234567") for line in text.splitlines())
    back = parse_run(text)
    assert back.rankings == {"q1": ("d5", "d2", "d1"), "q2": ("d3", "d8"), "q3": ("d1",)}
    qrels = {q.id: dict(q.relevant) for q in GOLD.queries if q.relevant}
    scored = {q: {d: float(s) for d, s in zip(r, back.scores[q], strict=True)}  # type: ignore[index]
              for q, r in back.rankings.items()}  # fmt: skip
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map"}).evaluate(scored)
    ours = evaluate(GOLD, back.rankings, parse_metrics("ndcg_cut_10,map"))
    for qid in ours.query_ids:
        assert ours.per_query[qid]["ndcg_cut_10"] == pytest.approx(expected[qid]["ndcg_cut_10"])
        assert ours.per_query[qid]["map"] == pytest.approx(expected[qid]["map"])


def test_ids_with_whitespace_and_unknown_repeats_are_errors() -> None:
    with pytest.raises(ResultsError, match="whitespace"):
        to_trec(record(QueryResult("q1", ("a b",), status=200)))
    with pytest.raises(ResultsError, match="--repeat 7: the record holds repeats 0, 1"):
        to_trec(record(QueryResult("q1", ("a",), status=200)), 7)


def test_per_query_table_has_a_row_per_repeat_and_query_with_metrics() -> None:
    import pandas as pd  # here, not at collection: every xdist worker collects every file

    run = record(
        QueryResult("q1", ("d2", "d1"), status=200, latency_ns=1_500_000),
        QueryResult("q2", (), error=ErrorKind.TIMEOUT, latency_ns=10),
        QueryResult("q3", ("d1",), status=200),
    )
    frame = per_query_frame(run, GOLD, parse_metrics("hit@1,nDCG@10"))
    assert len(frame) == 6 and list(frame["repeat"]) == [0, 0, 0, 1, 1, 1]
    first = frame.iloc[0]
    assert (first["query_id"], first["slice"], first["latency_ms"]) == ("q1", "a", 1.5)
    assert first["hit@1"] == 1.0 and first["nDCG@10"] == 1.0
    assert pd.isna(frame.iloc[1]["hit@1"]) and frame.iloc[1]["error"] == "timeout"
    assert pd.isna(frame.iloc[2]["nDCG@10"])  # unanswerable: no quality score
    other = GoldSet(GOLD.queries, "<other>", "native", "h" * 64)
    with pytest.raises(NotComparableError, match="measured on gold set"):
        per_query_frame(run, other, ())


def test_parquet_without_pyarrow_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd  # here, not at collection: every xdist worker collects every file

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
    with pytest.raises(HarnessError, match="needs pyarrow") as info:
        to_table(pd.DataFrame({"a": [1]}), "parquet")
    assert "install retrieval-harness[arrow]" in str(info.value)


def test_cli_exports_trec_csv_and_parquet(tmp_path: Path) -> None:
    import pandas as pd  # here, not at collection: every xdist worker collects every file

    pytest.importorskip("pyarrow", reason="the parquet extra (pyarrow) is not installed")
    run = record(QueryResult("q1", ("d2", "d1"), status=200), QueryResult("q2", ("d3",)))
    path = save_run(tmp_path / "results", run)
    done = run_cli("harness", "export", path, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "q1 Q0 d2 1 2.0 harness-feat/x_y-01234567"
    done = run_cli("harness", "export", path, "--format", "csv", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("ref,sha,repeat,query_id,status")
    out = tmp_path / "q.parquet"
    done = run_cli("harness", "export", path, "--format", "parquet", "--output", out, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert list(pd.read_parquet(out)["query_id"]) == ["q1", "q2", "q1", "q2"]
    again = run_cli("harness", "export", path, "--format", "parquet", "--output", out, cwd=tmp_path)
    assert again.returncode == 2 and "already exists" in again.stderr and "--force" in again.stderr
    done = run_cli("harness", "export", path, "--format", "parquet", cwd=tmp_path)
    assert done.returncode == 2 and "pass --output FILE" in done.stderr
    done = run_cli("harness", "export", tmp_path / "nope.json", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr

"""The golden report files hold numbers that matter (hit rates, McNemar's b and c and p, Holm's
adjusted p, the latency ratio of each round and over rounds). `HARNESS_REGEN=1` rewrites those
files from the code under test, so here the numbers in the files are held against references
that are not that code: pytrec_eval for the hit rates, scipy's exact binomial test for
McNemar's p, statsmodels' Holm for the adjusted p, scipy's trimmed mean of per-query log
ratios for each round's latency ratio. The JSON file's numbers are checked in full; the text and
Markdown files', as a reviewer reads them (headline hit lines, Holm's line, the latency ratio),
rounded as the report rounds. The inputs are the synthetic runs test_report.py builds (built
here by the same compare_support functions), never its outputs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import pytrec_eval
from compare_support import buried, make_gold, make_run, ranks, regressed_candidate
from oracles import multipletests
from oracles import scipy_stats as stats

from harness.values.types import GoldSet, RefRun

EXPECTED = Path(__file__).resolve().parents[1] / "data" / "report"


def regressed_inputs() -> tuple[GoldSet, RefRun, RefRun, set[str]]:
    """test_report.regressed's runs, and the queries its analysis leaves out (q33 errored)."""
    gold = make_gold()
    base = make_run(gold, ranks(buried(1, 2)))
    return gold, base, regressed_candidate(gold), {"q33"}


def _success(gold: GoldSet, run: RefRun, k: int, ids: list[str]) -> dict[str, float]:
    """success@k per query by pytrec_eval (trec_eval's success_k), first repeat's rankings."""
    qrels = {q.id: dict(q.relevant) for q in gold.queries if q.id in ids}
    ranked = {
        r.query_id: {doc: float(100 - i) for i, doc in enumerate(r.ids)}
        for r in run.repeats[0].results
        if r.query_id in ids
    }
    found = pytrec_eval.RelevanceEvaluator(qrels, {f"success.{k}"}).evaluate(ranked)
    return {qid: found.get(qid, {}).get(f"success_{k}", 0.0) for qid in ids}


def _row(document: dict[str, Any], metric: str) -> dict[str, Any]:
    (row,) = [r for r in document["overall"]["rows"] if r["metric"] == metric]
    return row


def _hit_oracle() -> dict[int, dict[str, Any]]:
    """Per k, the hit row computed without the code under test: the rates by pytrec_eval, the
    discordant counts from them, McNemar's p by scipy, Holm's adjusted p by statsmodels."""
    gold, base, cand, left_out = regressed_inputs()
    ids = [q.id for q in gold.queries if q.answerable and q.id not in left_out]
    rows: dict[int, dict[str, Any]] = {}
    for k in (5, 10):
        b_hits, c_hits = _success(gold, base, k, ids), _success(gold, cand, k, ids)
        lost = sum(1 for q in ids if b_hits[q] and not c_hits[q])
        won = sum(1 for q in ids if c_hits[q] and not b_hits[q])
        rows[k] = {
            "n": len(ids),
            "baseline": float(np.mean([b_hits[q] for q in ids])),
            "candidate": float(np.mean([c_hits[q] for q in ids])),
            "b": lost,
            "c": won,
            # McNemar's exact test: the discordant pairs, binomial(b + c, 1/2), two-sided.
            "p": stats.binomtest(won, lost + won, 0.5).pvalue,
        }
    holm = multipletests([rows[5]["p"], rows[10]["p"]], method="holm")[1]
    for k, adjusted in zip((5, 10), holm, strict=True):
        rows[k]["p_adjusted"] = float(adjusted)
    return rows


def test_the_regressed_files_hit_rows_match_pytrec_eval_scipy_and_statsmodels() -> None:
    document = json.loads((EXPECTED / "regressed.json").read_text(encoding="utf-8"))
    for k, want in _hit_oracle().items():
        row = _row(document, f"hit@{k}")
        assert row["n"] == want["n"]
        assert row["baseline"] == pytest.approx(want["baseline"], abs=1e-12)
        assert row["candidate"] == pytest.approx(want["candidate"], abs=1e-12)
        test = row["hit"]["test"]
        assert (test["b"], test["c"]) == (want["b"], want["c"])
        assert test["p"] == pytest.approx(want["p"], rel=1e-9) and row["p"] == test["p"]
        assert row["p_adjusted"] == pytest.approx(want["p_adjusted"], rel=1e-9)


@pytest.mark.parametrize("name", ["regressed.txt", "regressed.md", "regressed-redacted.md"])
def test_the_regressed_text_files_print_the_reference_numbers(name: str) -> None:
    # The files a reviewer reads: each headline line as the references give it, rounded as the
    # report rounds (3 places for a rate, 2 significant digits for a p, 2 places for a ratio).
    text = (EXPECTED / name).read_text(encoding="utf-8")
    rows = _hit_oracle()
    for k, want in rows.items():
        line = (
            f"hit@{k}: {want['baseline']:.3f} -> {want['candidate']:.3f} "
            f"({want['c'] - want['b']:+d} queries, b={want['b']} c={want['c']}, "
            f"McNemar exact p={want['p']:.2g}): regressed"
        )
        assert line in text, f"{name}: no line {line!r}"
    holm = (
        f"Holm across the 2 headline tests: hit@5 p={rows[5]['p_adjusted']:.2g}, "
        f"hit@10 p={rows[10]['p_adjusted']:.2g}"
    )
    assert holm in text, f"{name}: no line {holm!r}"
    _, base, cand, left_out = regressed_inputs()
    rounds = _paired_rounds(base, cand, left_out)
    ratio = math.exp(np.mean(np.log(rounds)))
    # The mean's level: what the tail rows leave of alpha 0.05 (harness.verdict.latency_rule).
    assert f"{ratio:.2f}x slower (96.5% CI" in text, f"{name}: not {ratio:.2f}x slower"


def _paired_rounds(base: RefRun, cand: RefRun, left_out: set[str]) -> list[float]:
    """Each round's ratio: exp(scipy trim_mean(log(c_i / b_i), 0.2)) over the queries both
    sides answered (harness.verdict.latency_rule's definition, computed without it)."""
    ratios = []
    for b_rep, c_rep in zip(base.repeats, cand.repeats, strict=True):
        b = {r.query_id: r.latency_ns for r in b_rep.results if r.error is None}
        c = {r.query_id: r.latency_ns for r in c_rep.results if r.error is None}
        ids = [q for q in b if q in c and q not in left_out]
        logs = np.log(np.array([c[q] for q in ids], float) / np.array([b[q] for q in ids], float))
        ratios.append(math.exp(stats.trim_mean(logs, 0.2)))
    return ratios


def test_the_regressed_files_latency_ratio_is_the_paired_trimmed_mean() -> None:
    _, base, cand, left_out = regressed_inputs()
    latency = json.loads((EXPECTED / "regressed.json").read_text(encoding="utf-8"))["latency"]
    expected = _paired_rounds(base, cand, left_out)
    assert latency["test"]["rounds"] == pytest.approx(expected, rel=1e-12)
    assert latency["test"]["ratio"] == pytest.approx(math.exp(np.mean(np.log(expected))), rel=1e-12)
    assert latency["n_paired"] == len(base.repeats[0].results) - len(left_out)
    # Not the ratio of the two sides' medians: the file would say otherwise if it were.
    b_all = [r.latency_ns for rep in base.repeats for r in rep.results]
    c_all = [r.latency_ns for rep in cand.repeats for r in rep.results if r.error is None]
    assert abs(latency["test"]["ratio"] - np.median(c_all) / np.median(b_all)) > 1e-3

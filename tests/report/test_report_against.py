"""`harness report DIR --against OTHER` shows both comparisons side by side (issue 27, item 5):
each metric's baseline -> candidate, change, p and verdict in both, and whether they agree; and
two names of one metric asked together are refused (exit 2), not merged into one column."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import run_cli
from compare_support import FAST, buried, candidate, make_gold, make_run, ranks

from harness.report.against import render_against
from harness.report.saved import save_comparison
from harness.verdict.decide import compare


def _saved(tmp_path: Path, name: str, cand_rank: object) -> tuple[Path, object]:
    gold = make_gold()
    base, cand = make_run(gold, ranks()), candidate(gold, cand_rank)  # type: ignore[arg-type]
    comparison = compare(gold, base, cand, FAST)
    return save_comparison(tmp_path / name, comparison, (base, cand)), comparison


def test_the_two_comparisons_are_shown_side_by_side(tmp_path: Path) -> None:
    same, a = _saved(tmp_path, "same", ranks())
    worse, b = _saved(tmp_path, "worse", ranks(buried(*range(1, 21))))
    done = run_cli("harness", "report", same, "--against", worse, cwd=tmp_path)
    assert done.returncode == 0, done.stderr  # DIR's own exit status: no regression in it
    out = done.stdout
    assert f"A: {same}: main" in out and f"B: {worse}: main" in out
    hit5 = next(line for line in out.splitlines() if line.startswith("hit@5 "))
    # A: nothing moved; B: 20 of 80 answers buried, McNemar exact b=20 c=0 -> p = 2 * 0.5**20.
    assert "1.000 -> 1.000 (+0.000, p = 1.000): no measurable difference" in hit5
    assert "1.000 -> 0.750 (-0.250" in hit5 and "regressed" in hit5 and "DIFFER" in hit5
    b_row = b.overall.row("hit@5")  # type: ignore[attr-defined]
    assert b_row is not None and abs(b_row.p - 2 * 0.5**20) < 1e-12
    verdicts = next(line for line in out.splitlines() if line.startswith("quality verdict"))
    assert "no measurable difference" in verdicts and "regressed" in verdicts
    document = json.loads(render_against(a, "A", b, "B", "json"))  # type: ignore[arg-type]
    assert document["a"]["rows"]["hit@5"]["verdict"] == "no measurable difference"
    assert document["b"]["rows"]["hit@5"]["verdict"] == "regressed"
    assert document["agree"]["hit@5"] is False
    markdown = run_cli(
        "harness", "report", same, "--against", worse, "--format", "markdown", cwd=tmp_path
    )
    assert markdown.returncode == 0 and "| hit@5 " in markdown.stdout


def test_two_names_of_one_metric_are_refused_with_exit_2(tmp_path: Path) -> None:
    gold_dir = Path(__file__).resolve().parents[2] / "gold"
    done = run_cli(
        "harness",
        "metrics",
        "--gold",
        gold_dir / "example.jsonl",
        "--run",
        gold_dir / "example-run.jsonl",
        "--metrics",
        "nDCG@10,ndcg_cut_10",
        cwd=tmp_path,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "nDCG@10 and ndcg_cut_10 are two names of one metric (ndcg@10)" in done.stderr

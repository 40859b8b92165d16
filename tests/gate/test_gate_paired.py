"""harness gate decides as compare decides (issue 27, item 5): each row by compare's paired test
on the per-query values the baseline file now holds, Holm-adjusted as compare adjusts, so a
change compare calls "no measurable difference" does not fail the gate unless --max-drop says
so; a regression compare calls one still fails, and so does a slice that falls to zero.

The oracle is compare itself (`harness.verdict.decide.compare`) on the same two runs: the gate's
p is compare's p for the same metric."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from cli_support import run_cli
from e2e_support import build_sandbox, query_ids

from harness.gate.baseline_file import baseline_from_dict, baseline_to_dict, baseline_to_text
from harness.gate.measure import measure
from harness.gate.render import render_gate
from harness.gate.rule import Outcome, Statistics, check
from harness.values.types import GoldQuery, GoldSet, QueryResult, RefRun, Repeat
from harness.verdict.comparison import CompareSettings
from harness.verdict.decide import compare

N = 40
GOLD = GoldSet(
    queries=tuple(
        GoldQuery(
            f"q{i:02d}",
            f"query {i}",
            slice="rare" if i < 2 else "common",
            relevant={f"d{i:02d}": 1},
        )
        for i in range(N)
    ),
    source="gold.jsonl",
    format="native",
    hash="g" * 64,
)
SLICES = {q.id: q.slice for q in GOLD.queries}


def run(missed: Sequence[int] = (), repeats: int = 1, sha: str = "c") -> RefRun:
    """A deterministic service: every query's document first, except `missed` (not returned)."""
    reps = tuple(
        Repeat(
            r,
            tuple(
                QueryResult(
                    q.id,
                    ids=() if i in missed else (f"d{i:02d}", "x"),
                    status=200,
                    latency_ns=1000,
                )
                for i, q in enumerate(GOLD.queries)
            ),
        )
        for r in range(repeats)
    )
    return RefRun("main", sha * 40, "x", "g" * 64, None, "0", {}, reps)


METRICS = ["recall@10"]


def gate(before: RefRun, after: RefRun, **statistics: object) -> object:
    recorded = measure(GOLD, before, METRICS).baseline
    assert recorded is not None
    stats = Statistics(slice_of=SLICES, **statistics)  # type: ignore[arg-type]
    return check(recorded, measure(GOLD, after, METRICS), statistics=stats)


def test_a_two_query_change_compare_calls_no_difference_passes() -> None:
    before, after = run(), run(missed=(5, 6))
    result = gate(before, after)
    assert result.outcome is Outcome.PASS, render_gate(result, "text")
    (overall,) = [r for r in result.rows if r.scope == "overall"]
    assert overall.status == "ok"
    # The oracle: compare on the same two runs makes no call on recall@10, p = 0.5 (two queries
    # moved, both down: the exact sign-flip p is 2/2**2 = 0.5); on this small gold set its
    # equivalence interval reaches past the band, so the row reads "inconclusive".
    row = compare(GOLD, before, after, CompareSettings(k=(10,), gate_on=("recall@10",)))
    recall = row.overall.row("recall@10")
    assert recall is not None and str(recall.verdict) == "inconclusive"
    assert overall.p == pytest.approx(recall.p) == pytest.approx(0.5)
    # The noise rule (no statistics: what the gate did before) failed this very change.
    recorded = measure(GOLD, before, METRICS).baseline
    assert recorded is not None
    assert check(recorded, measure(GOLD, after, METRICS)).outcome is Outcome.FAIL


def test_a_regression_compare_calls_one_fails() -> None:
    result = gate(run(), run(missed=range(10, 30)))
    assert result.outcome is Outcome.FAIL
    overall = next(r for r in result.rows if r.scope == "overall")
    assert overall.status == "regressed" and overall.failed and overall.p is not None
    assert overall.p < 0.05
    assert "compare's paired test" in render_gate(result, "text")


def test_max_drop_fails_a_change_the_test_cannot_tell() -> None:
    result = gate(run(), run(missed=(5, 6)), max_drop=0.01)
    assert result.outcome is Outcome.FAIL
    overall = next(r for r in result.rows if r.scope == "overall")
    assert overall.status == "dropped" and overall.tolerance == 0.01
    assert gate(run(), run(missed=(5, 6)), max_drop=0.10).outcome is Outcome.PASS


def test_a_slice_that_falls_to_zero_still_fails() -> None:
    result = gate(run(), run(missed=(0, 1)))  # both "rare" queries: 1.0 -> 0.0
    assert result.outcome is Outcome.FAIL
    rare = next(r for r in result.rows if r.scope == "rare")
    assert rare.status == "fell to zero"


def test_repeats_are_inside_the_test() -> None:
    # Three repeats each: the hit rates over repeats are what the test reads, as in compare.
    before, after = run(repeats=3), run(missed=range(10, 30), repeats=3)
    result = gate(before, after)
    overall = next(r for r in result.rows if r.scope == "overall")
    assert overall.status == "regressed"


def test_the_file_keeps_per_query_values_one_line_each_and_reads_them_back() -> None:
    recorded = measure(GOLD, run(), METRICS).baseline
    assert recorded is not None
    text = baseline_to_text(recorded)
    assert '    "recall@10 q05": 1.0,' in text.splitlines()
    again = baseline_from_dict(baseline_to_dict(recorded), "b.json")
    assert again.per_query == recorded.per_query


def test_an_old_file_without_per_query_values_keeps_the_noise_rule_and_says_so() -> None:
    recorded = measure(GOLD, run(), METRICS).baseline
    assert recorded is not None
    document = baseline_to_dict(recorded)
    del document["per_query"]
    old = baseline_from_dict(document, "b.json")
    result = check(old, measure(GOLD, run(missed=(5, 6)), METRICS), statistics=Statistics())
    assert result.outcome is Outcome.FAIL  # the noise rule, as that file was written for
    assert any(
        "--update-baseline to decide with compare's paired test" in d for d in result.details
    )


# --------------------------------------------------------------------------- the real CLI


@pytest.mark.slow
def test_the_cli_gate_passes_a_two_query_change_unless_max_drop_says_so(tmp_path: Path) -> None:
    sandbox = build_sandbox(tmp_path / "s", {"bury2": {"bury": query_ids(1, 2)}}, repeats=1)
    baseline = tmp_path / "baseline.json"
    done = sandbox.harness(
        "gate", "--ref", "main", "--baseline-file", str(baseline), "--update-baseline", "-q"
    )
    assert done.returncode == 0, done.stderr
    assert '"recall@10 q01": 1.0' in baseline.read_text()
    done = sandbox.harness("gate", "--ref", "bury2", "--baseline-file", str(baseline), "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no row fell below the baseline (compare's paired test at alpha = 0.05)" in done.stdout
    assert "ok (p = 0.5" in done.stdout  # two queries moved, both down: 2 / 2**2
    done = sandbox.harness(
        "gate", "--ref", "bury2", "--baseline-file", str(baseline), "--max-drop", "0.01", "-q"
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "DROPPED" in done.stdout
    assert sandbox.leftovers() == [] and sandbox.worktrees() == []


def test_max_drop_out_of_range_is_exit_2(tmp_path: Path) -> None:
    done = run_cli(
        "harness",
        "gate",
        "--ref",
        "main",
        "--baseline-file",
        "b.json",
        "--max-drop",
        "2",
        cwd=tmp_path,
    )
    assert (
        done.returncode == 2 and "--max-drop 2.0: must be at least 0 and at most 1" in done.stderr
    )


def test_a_regression_in_one_of_many_slices_fails_as_compare_calls_it() -> None:
    # A continuous metric's p is resampled (not enumerated: 20 queries move), and Holm then
    # multiplies it by the slices' count: resampled only until p < alpha (~0.004 at 10,000
    # draws), 21 slices made it 0.08 and this regression passed the gate. Now resampled until it
    # is settled against alpha / 21 too, as compare does.
    queries = [
        GoldQuery(f"e{i:02d}", f"e {i}", slice="entity", relevant={f"d{i:02d}": 1})
        for i in range(20)
    ] + [
        GoldQuery(f"s{i:02d}", f"s {i}", slice=f"small{i // 2}", relevant={f"x{i:02d}": 1})
        for i in range(40)
    ]
    gold = GoldSet(tuple(queries), "gold.jsonl", "native", "h" * 64)

    def side(worse: bool) -> RefRun:
        results = []
        for q in gold.queries:
            (doc,) = q.relevant
            rank = 2 + int(q.id[1:]) % 3 if worse and q.slice == "entity" else 1
            ids = (*["y1", "y2", "y3"][: rank - 1], doc, "z")
            results.append(QueryResult(q.id, ids=ids, status=200, latency_ns=1000))
        return RefRun("main", "c" * 40, "x", "h" * 64, None, "0", {}, (Repeat(0, tuple(results)),))

    slices = {q.id: q.slice for q in gold.queries}
    recorded = measure(gold, side(False), ["mrr@10"]).baseline
    assert recorded is not None
    result = check(
        recorded, measure(gold, side(True), ["mrr@10"]), statistics=Statistics(slice_of=slices)
    )
    entity = next(r for r in result.rows if r.scope == "entity")
    assert entity.status == "regressed", render_gate(result, "text")
    assert result.outcome is Outcome.FAIL
    assert entity.p is not None and entity.p < 0.05  # Holm-adjusted across the 21 slices


def test_no_rule_is_named_where_none_decided() -> None:
    # --update-baseline and "not comparable" apply no rule: they named the old noise rule.
    from harness.gate.rule import update

    now = measure(GOLD, run(), METRICS)
    assert "rule:" not in render_gate(update(None, now), "text")
    from dataclasses import replace

    recorded = now.baseline
    assert recorded is not None
    other = replace(recorded, gold_hash="z" * 64)  # recorded on another gold set
    refused = check(other, now, statistics=Statistics(slice_of=SLICES))
    assert refused.outcome is Outcome.NOT_COMPARABLE
    assert "rule:" not in render_gate(refused, "text")
    decided = gate(run(), run())
    assert "rule: a row fails when compare's paired test" in render_gate(decided, "text")

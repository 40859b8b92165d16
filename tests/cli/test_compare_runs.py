"""`harness compare-runs`: run files of several systems, each compared with the first.

Real run files in tmp_path, the CLI as a subprocess (exit statuses, bad input), and the pure
`compare_systems` (Holm across systems, against statsmodels' Holm); its means against
pytrec_eval (through ir_measures) and its randomization p against scipy's permutation test.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from cli_support import run_cli
from oracles import scipy_stats

from harness.gold import load_gold
from harness.score.runfile import load_run
from harness.values.types import Verdict
from harness.verdict.comparison import CompareSettings
from harness.verdict.systems import NO_LATENCY, SystemRun, compare_systems

N = 60  # queries: q00 .. q59, each with one relevant document d00 .. d59


def _gold(tmp_path: Path, n: int = N) -> Path:
    path = tmp_path / "gold.jsonl"
    rows = [
        {"id": f"q{i:02d}", "query": f"question {i}", "relevant": {f"d{i:02d}": 1}}
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _ranking(i: int, rank: int | None) -> list[str]:
    """Ten documents for query i with its relevant one at `rank` (None: not returned)."""
    others = [f"x{i:02d}-{j}" for j in range(10)]
    if rank is None:
        return others
    return [*others[: rank - 1], f"d{i:02d}", *others[rank - 1 : 9]]


def _trec(path: Path, ranks: Mapping[int, int | None], n: int = N, tag: str = "sys") -> Path:
    """A TREC run: query i's relevant document at ranks[i] (default rank 1)."""
    lines = []
    for i in range(n):
        for pos, doc in enumerate(_ranking(i, ranks.get(i, 1)), start=1):
            lines.append(f"q{i:02d} Q0 {doc} {pos} {100 - pos} {tag}\n")
    path.write_text("".join(lines))
    return path


def _compare_runs(tmp_path: Path, *args: str | Path) -> tuple[int, str, str]:
    done = run_cli("harness", "compare-runs", *args, cwd=tmp_path)
    assert "Traceback" not in done.stderr
    return done.returncode, done.stdout, done.stderr


# --------------------------------------------------------------------------- exit statuses


def test_an_identical_candidate_is_no_difference_and_says_runs_have_no_latency(
    tmp_path: Path,
) -> None:
    gold = _gold(tmp_path)
    base = _trec(tmp_path / "base.run", {i: 3 for i in range(0, N, 2)})
    same = _trec(tmp_path / "same.run", {i: 3 for i in range(0, N, 2)}, tag="other")
    status, out, err = _compare_runs(tmp_path, base, same, "--gold", gold, "--k", "5")
    assert status == 0, err
    assert "quality: no measurable difference" in out or "quality: inconclusive" in out
    assert NO_LATENCY in out
    assert "latency: not compared: runs from files: no repeats, no latency" in out


def test_a_regressed_candidate_exits_1_and_its_flips_name_each_query(tmp_path: Path) -> None:
    gold = _gold(tmp_path)
    base = _trec(tmp_path / "base.run", {})
    lost = {i: None for i in range(20)} | {20: 7}  # 20 queries lose their hit, one falls to 7
    worse = _trec(tmp_path / "worse.run", lost)
    status, out, _ = _compare_runs(
        tmp_path, base, worse, "--gold", gold, "--k", "5", "--format", "json"
    )
    assert status == 1
    doc = json.loads(out)
    (comparison,) = doc["comparisons"]
    assert comparison["verdict"]["quality"] == "regressed"
    assert comparison["latency"]["not_compared"] == NO_LATENCY
    (flips,) = comparison["flips"]
    assert flips["metric"] == "hit@5"
    by_query = {f["query_id"]: f for f in flips["flips"]}
    assert set(by_query) == {f"q{i:02d}" for i in range(21)}
    assert by_query["q20"]["rank_before"] == 1 and by_query["q20"]["rank_after"] == 7
    assert by_query["q00"]["rank_after"] is None
    assert all(f["direction"] == "newly missed" for f in flips["flips"])


def test_strict_turns_an_inconclusive_quality_into_exit_4(tmp_path: Path) -> None:
    gold = _gold(tmp_path, n=8)  # 8 queries cannot see a change of 0.10
    base = _trec(tmp_path / "base.run", {}, n=8)
    same = _trec(tmp_path / "same.run", {}, n=8)
    status, out, _ = _compare_runs(tmp_path, base, same, "--gold", gold)
    assert status == 0
    assert "quality: inconclusive" in out
    status, _, _ = _compare_runs(tmp_path, base, same, "--gold", gold, "--strict")
    assert status == 4


def test_a_run_that_returned_nothing_judged_is_invalid_exit_3_over_a_regression(
    tmp_path: Path,
) -> None:
    gold = _gold(tmp_path)
    base = _trec(tmp_path / "base.run", {})
    worse = _trec(tmp_path / "worse.run", {i: None for i in range(30)})
    foreign = tmp_path / "foreign.run"
    foreign.write_text("".join(f"q{i:02d} Q0 zz{i} 1 1.0 t\n" for i in range(N)))
    status, out, _ = _compare_runs(tmp_path, base, worse, "--gold", gold)
    assert status == 1
    status, out, _ = _compare_runs(tmp_path, base, worse, foreign, "--gold", gold)
    assert status == 3  # invalid beats regressed, as in harness compare
    assert "INVALID" in out
    assert "worse.run: regressed" in out
    # Said in the summary, where it is read first, and in a run file's terms: no query.ids to
    # check, no boots to repeat; its headline rows are not tested, so never "regressed".
    summary = out.partition("harness: ")[0]
    assert "foreign.run: invalid: candidate " in summary
    assert "see the reasons above" not in summary
    assert "check the run file's docid column" in out and "query.ids" not in out
    assert "--repeats" not in out and "variation between boots" not in out
    foreign_rows = [line for line in summary.splitlines() if "foreign.run  hit@" in line]
    assert len(foreign_rows) == 2 and all(r.endswith("invalid: not tested") for r in foreign_rows)


def test_markdown_and_html_reports(tmp_path: Path) -> None:
    gold = _gold(tmp_path)
    base = _trec(tmp_path / "base.run", {})
    a = _trec(tmp_path / "a.run", {i: None for i in range(3)})
    b = _trec(tmp_path / "b.run", {i: None for i in range(30)})
    status, out, _ = _compare_runs(tmp_path, base, a, b, "--gold", gold, "--format", "markdown")
    assert status == 1
    assert out.startswith("## harness compare-runs: 2 candidates against")
    assert "Headline tests, Holm across systems and cutoffs" in out
    pages = tmp_path / "pages"
    status, _, err = _compare_runs(
        tmp_path, base, a, b, "--gold", gold, "--format", "html", "--output", pages
    )
    assert status == 1, err
    assert sorted(p.name for p in pages.iterdir()) == ["01-a.html", "02-b.html", "index.html"]
    assert 'href="02-b.html"' in (pages / "index.html").read_text()
    status, _, err = _compare_runs(tmp_path, base, a, b, "--gold", gold, "--format", "html")
    assert status == 2 and "--output DIR" in err


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("content", "needles"),
    [
        ("q00 Q0 d00 1 2.0 t\nq01 Q0 d01 1 t\n", (":2: columns: expected 6 columns, found 5",)),
        (
            "q00 Q0 d00 1 2.0 t\nq01 Q0 d01 1 2.0 t\nnope Q0 d01 1 2.0 t\n",
            (":3: id: query nope is not in the gold set", "drop those lines"),
        ),
        ("", ("has no results", "write one line per result")),
        ("\n\n", ("has no results",)),
    ],
    ids=["column-count", "unknown-query", "empty", "blank"],
)
def test_bad_run_files_exit_2_naming_file_and_line(
    tmp_path: Path, content: str, needles: Sequence[str]
) -> None:
    gold = _gold(tmp_path)
    base = _trec(tmp_path / "base.run", {})
    bad = tmp_path / "bad.run"
    bad.write_text(content)
    status, out, err = _compare_runs(tmp_path, base, bad, "--gold", gold)
    assert status == 2
    assert out == ""
    assert err.startswith("harness: error: ")
    assert str(bad) in err
    for needle in needles:
        assert needle in err


def test_missing_run_files_are_all_named(tmp_path: Path) -> None:
    gold = _gold(tmp_path)
    base = _trec(tmp_path / "base.run", {})
    status, _, err = _compare_runs(tmp_path, base, "a.run", "b.run", "--gold", gold)
    assert status == 2
    assert "run files not found: a.run, b.run" in err


def test_one_run_is_a_usage_error(tmp_path: Path) -> None:
    gold = _gold(tmp_path)
    base = _trec(tmp_path / "base.run", {})
    status, _, err = _compare_runs(tmp_path, base, "--gold", gold)
    assert status == 2
    assert "needs a baseline and at least one candidate" in err


def test_a_missing_gold_file_names_it_and_exits_2(tmp_path: Path) -> None:
    base = _trec(tmp_path / "base.run", {})
    missing = tmp_path / "nope.jsonl"
    status, out, err = _compare_runs(tmp_path, base, base, "--gold", missing)
    assert (status, out) == (2, "")  # was a FileNotFoundError traceback
    assert err == f"harness: error: {missing}: gold set not found; check the path (--gold)\n"


def test_a_native_run_with_an_unknown_query_names_its_line(tmp_path: Path) -> None:
    gold = _gold(tmp_path)
    base = _trec(tmp_path / "base.run", {})
    native = tmp_path / "native.jsonl"
    native.write_text('{"id": "q00", "ranking": ["d00"]}\n{"id": "q99", "ranking": ["d00"]}\n')
    status, _, err = _compare_runs(tmp_path, base, native, "--gold", gold)
    assert status == 2
    assert f"{native}:2: id: query q99 is not in the gold set" in err


# --------------------------------------------------------------------------- Holm across systems


def _system(path: Path) -> SystemRun:
    run = load_run(path)
    return SystemRun(str(path), run.sha256, run.rankings, run.scores)


def test_holm_runs_across_every_candidates_headline_tests(tmp_path: Path) -> None:
    """A candidate losing 7 hits at both cutoffs (McNemar exact p = 2 / 2**7 each) is regressed
    on its own (Holm over its 2 tests: p 0.031), and not beside two unchanged candidates (Holm
    over 6 tests: 0.094): statsmodels' Holm over the same six p-values is the oracle."""
    from statsmodels.stats.multitest import multipletests

    gold = load_gold(_gold(tmp_path))
    base = _system(_trec(tmp_path / "base.run", {}))
    worse = _system(_trec(tmp_path / "worse.run", {i: None for i in range(7)}))
    same = [_system(_trec(tmp_path / f"same{j}.run", {})) for j in range(2)]
    settings = CompareSettings(k=(5, 10))

    alone = compare_systems(gold, [base, worse], settings)
    assert alone.family == 2
    assert alone.comparisons[0].verdict_quality is Verdict.REGRESSED

    together = compare_systems(gold, [base, worse, *same], settings)
    assert together.family == 6
    rows = [
        r for c in together.comparisons for r in c.overall.rows if r.metric in ("hit@5", "hit@10")
    ]
    raw = [r.p for r in rows]
    assert raw[:2] == pytest.approx([2 / 2**7] * 2)
    expected = multipletests(raw, method="holm")[1]
    assert [r.p_adjusted for r in rows] == pytest.approx(list(expected))
    first = together.comparisons[0]
    assert first.verdict_quality is not Verdict.REGRESSED
    assert first.overall.row("hit@5").note == (  # type: ignore[union-attr]
        "not significant after Holm across the 6 headline tests of 3 systems"
    )


def test_a_query_missing_from_a_run_scores_zero_and_is_named(tmp_path: Path) -> None:
    gold = load_gold(_gold(tmp_path))
    base = _system(_trec(tmp_path / "base.run", {}))
    short = tmp_path / "short.run"
    short.write_text(
        "".join(
            line
            for line in _trec(tmp_path / "full.run", {}).read_text().splitlines(keepends=True)
            if not line.startswith("q59 ")
        )
    )
    (comparison,) = compare_systems(gold, [base, _system(short)], CompareSettings()).comparisons
    hit = comparison.overall.row("hit@5")
    assert hit is not None and hit.candidate == pytest.approx((N - 1) / N)
    assert any("no line for 1 of the 60 gold queries (q59)" in w for w in comparison.warnings)


# --------------------------------------------------------------------------- the oracles


def test_means_and_p_values_agree_with_pytrec_eval_and_scipy(tmp_path: Path) -> None:
    """The same three runs through ir_measures (pytrec_eval: trec_eval's own code) for every
    mean (to 1e-9), and scipy's permutation test for the p of ndcg@10 (one sample of per-query
    deltas, `permutation_type="samples"`: each delta's sign flipped, |mean| as the statistic,
    as ours and ranx's Fisher test do), within resampling error. (Against ranx itself, the peer
    compare-runs stands in for, on real runs: the SciFact case of test_bench_scripts.py, whose
    numba compile costs a fresh machine about 45 s of CPU a process.)"""
    import numpy as np

    ir_measures = pytest.importorskip("ir_measures", reason="the test extra has ir_measures")
    gold_path = _gold(tmp_path)
    gold = load_gold(gold_path)
    paths = [
        _trec(tmp_path / "base.run", {i: 1 + i % 4 for i in range(N)}),
        _trec(tmp_path / "a.run", {i: 1 + (i + 1) % 5 for i in range(N)}),
        _trec(tmp_path / "b.run", {i: (None if i % 3 == 0 else 1 + i % 3) for i in range(N)}),
    ]
    systems = [_system(p) for p in paths]
    found = compare_systems(gold, systems, CompareSettings(k=(5, 10), seed=1))
    qrels = {q.id: dict(q.relevant) for q in gold.queries}
    measures = {
        "hit@5": ir_measures.Success @ 5,
        "mrr@10": ir_measures.RR @ 10,
        "ndcg@10": ir_measures.nDCG @ 10,
        "recall@10": ir_measures.R @ 10,
        "p@5": ir_measures.P @ 5,
    }
    per_query: list[dict[str, float]] = []  # ndcg@10 of each query, per run
    means: list[dict[str, float]] = []
    for path in paths:
        scores: dict[str, dict[str, float]] = {}
        for line in path.read_text().splitlines():
            qid, _, doc, _, score, _ = line.split()
            scores.setdefault(qid, {})[doc] = float(score)
        aggregate = ir_measures.calc_aggregate(list(measures.values()), qrels, scores)
        means.append({ours: aggregate[m] for ours, m in measures.items()})
        ndcg = ir_measures.iter_calc([measures["ndcg@10"]], qrels, scores)
        per_query.append({m.query_id: m.value for m in ndcg})
    assert len(found.comparisons) == 2
    for c, expected, ndcg in zip(found.comparisons, means[1:], per_query[1:], strict=True):
        for name, value in expected.items():
            row = c.overall.row(name)
            assert row is not None
            assert row.baseline == pytest.approx(means[0][name], abs=1e-9)
            assert row.candidate == pytest.approx(value, abs=1e-9)
        deltas = np.array([ndcg[q.id] - per_query[0][q.id] for q in gold.queries])
        p_scipy = scipy_stats.permutation_test(
            (deltas,),
            lambda d, axis: np.abs(np.mean(d, axis=axis)),
            permutation_type="samples",
            alternative="greater",
            vectorized=True,
            n_resamples=20_000,
            random_state=np.random.default_rng(0),
        ).pvalue
        p_ours = c.overall.row("ndcg@10").p  # type: ignore[union-attr]
        # Ours is settled from at least 1,000 draws: its binomial error there, 4 of them.
        err = 4 * (max(p_scipy, 1e-3) * (1 - min(p_scipy, 0.999)) / 1000) ** 0.5
        assert abs(p_ours - p_scipy) <= err + 2e-3, (c.header.candidate.ref, p_ours, p_scipy)


def test_a_resampled_regression_stays_called_across_many_candidates(tmp_path: Path) -> None:
    # mrr@10 falls for 30 queries (their hit stays in the top 5): its p is resampled, and Holm
    # across 20 candidates x 3 headline tests multiplies it by up to 60. Resampled only until
    # settled against alpha / 3 (it stopped at p = 0.0010), every candidate's regression was
    # "not significant after Holm" (0.060); now each p is settled against alpha / 60.
    gold = _gold(tmp_path)
    base = _trec(tmp_path / "base.run", {})
    moved = {i: 2 for i in range(30)}
    worse = [_trec(tmp_path / f"w{j}.run", moved, tag=f"w{j}") for j in range(20)]
    status, out, err = _compare_runs(
        tmp_path, base, *worse, "--gold", gold, "--gate-on", "mrr@10", "--format", "json"
    )
    assert status == 1, err
    document = json.loads(out)
    for comparison in document["comparisons"]:
        assert comparison["verdict"]["quality"] == "regressed", comparison["quality_reason"]

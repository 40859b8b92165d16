"""Non-inferiority margins (issue 41, part 2): `compare --non-inferior`, `harness gate
--non-inferior`, `[gate] non_inferior`.  The rule against oracles (statsmodels' one-sided t test,
the published Tango interval), the sequential claim read at the stop, the exit statuses (a margin
not shown is never a pass), the reports, the gate's rows, the option and the config with bad
input."""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import cli_server
import numpy as np
import pytest
from compare_support import FAST, buried, make_gold, make_run, ranks, run_pair
from config_support import config_with
from oracles import tango_reference

from harness.cli.exits import (
    EXIT_INCONCLUSIVE,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_REGRESSED,
    comparison_status,
    exit_status,
    gate_status,
)
from harness.compare.settings import with_margins
from harness.config import load_config
from harness.config.margins import margin_problems, parse_margins
from harness.errors import ConfigError
from harness.gate.measure import measure
from harness.gate.paired import gate_margins
from harness.gate.render import render_gate
from harness.gate.rows import GateRow
from harness.gate.rule import GateResult, Outcome, Statistics, check
from harness.report.page import render
from harness.results.document import comparison_from_dict, comparison_to_dict
from harness.values.types import FloorRow, Verdict
from harness.verdict.asked import compare_asked, headline_values, plan_for
from harness.verdict.comparison import CompareSettings, Comparison
from harness.verdict.equivalence import TANGO
from harness.verdict.noninferiority import (
    SEQUENCE,
    Claim,
    MarginRow,
    assemble,
    decide_margins,
    interval_of,
    judge,
)
from harness.verdict.quality_sequential import SequentialPlan, decide, query_order

# --------------------------------------------------------------------------- the rule


def test_the_claim_reads_the_lower_bound_for_not_worse_and_the_upper_for_worse() -> None:
    assert judge(-0.019, 0.03, 0.02) is Claim.NOT_WORSE
    assert judge(-0.021, 0.03, 0.02) is Claim.NOT_SHOWN  # reaches past -margin: not shown
    assert judge(-0.09, -0.021, 0.02) is Claim.WORSE  # wholly below -margin
    assert judge(-0.09, -0.019, 0.02) is Claim.NOT_SHOWN  # straddles -margin
    with pytest.raises(ValueError, match="margin must be > 0"):
        judge(0.0, 0.1, 0.0)


def _symmetric(rng: np.random.Generator, n: int, mean: float, sd: float) -> np.ndarray:
    """Deltas whose sample skewness is exactly 0 (each value mirrored about `mean`), so the
    skewness correction moves nothing and the bound is the t bound alone."""
    half = rng.normal(0.0, sd, n // 2)
    return np.clip(np.concatenate([mean + half, mean - half]), -1.0, 1.0)


@pytest.mark.parametrize("seed", range(12))
def test_not_worse_is_statsmodels_one_sided_t_test_at_alpha(seed: int) -> None:
    # The oracle: statsmodels' one-sample t test of H0 mean <= -margin against "larger" (one
    # half of a TOST): rejected at alpha exactly when the 1 - 2 alpha interval's lower bound
    # lies above -margin.
    from statsmodels.stats.weightstats import DescrStatsW

    rng = np.random.default_rng(seed)
    d = _symmetric(rng, 200, rng.uniform(-0.06, 0.02), 0.2)
    iv = interval_of(d, 0.05)
    stats = DescrStatsW(d)
    low, high = stats.tconfint_mean(alpha=0.10)
    assert (iv.low, iv.high) == pytest.approx((low, high), abs=1e-9)
    for margin in (0.01, 0.02, 0.05):
        _, p, _ = stats.ttest_mean(-margin, alternative="larger")
        assert (judge(iv.low, iv.high, margin) is Claim.NOT_WORSE) == (p < 0.05), (margin, p)


def test_a_left_skewed_loss_gets_a_more_cautious_lower_bound_never_a_bolder_one() -> None:
    # Most queries unchanged, some lost, a few won (and some fractional: rates over repeats):
    # the t bound undercovers on the side of the losses; the correction only lowers it.
    from statsmodels.stats.weightstats import DescrStatsW

    d = np.array([0.0] * 250 + [-1.0] * 30 + [1.0] * 8 + [-0.4, 0.2] * 6)
    iv = interval_of(d, 0.05)
    low, high = DescrStatsW(d).tconfint_mean(alpha=0.10)
    assert iv.low < low - 1e-4 and iv.high == pytest.approx(high)
    assert "skewness-corrected" in iv.method
    mirrored = interval_of(-d, 0.05)
    assert mirrored.high == pytest.approx(-iv.low) and mirrored.low == pytest.approx(-high)


@pytest.mark.parametrize(("b", "c", "n"), [(0, 0, 300), (12, 3, 300), (4, 9, 120), (20, 0, 80)])
def test_deterministic_deltas_read_tangos_interval(b: int, c: int, n: int) -> None:
    d = np.array([-1.0] * b + [1.0] * c + [0.0] * (n - b - c))
    iv = interval_of(d, 0.05)
    assert iv.method == TANGO
    # tango_reference takes the two-sided level: the 90% interval is the one-sided 5% bound.
    assert (iv.low, iv.high) == pytest.approx(tango_reference(b, c, n, 0.10), abs=1e-6)


def test_identical_answers_show_not_worse_from_few_queries() -> None:
    z2 = 1.6448536269514722**2
    iv = interval_of(np.zeros(300), 0.05)
    assert iv.low == pytest.approx(-z2 / (300 + z2), abs=1e-9)  # 0.009: the Tango end
    assert judge(iv.low, iv.high, 0.02) is Claim.NOT_WORSE


def test_the_overall_claim_is_the_worst_and_a_metric_outside_the_margins_can_fail_it() -> None:
    def row(metric: str, claim: Claim) -> MarginRow:
        return MarginRow(metric, 0.02, 0.0, -0.01, 0.01, 0.9, "t", claim)

    ok, unshown, worse = Claim.NOT_WORSE, Claim.NOT_SHOWN, Claim.WORSE
    assert assemble([row("a", ok), row("b", ok)], 0.05, (), ()).claim is ok
    assert assemble([row("a", ok), row("b", unshown)], 0.05, (), ()).claim is unshown
    assert assemble([row("a", unshown), row("b", worse)], 0.05, (), ()).claim is worse
    assert assemble([], 0.05, (), ()).claim is unshown  # nothing shown is not a pass
    outside = assemble([row("a", ok)], 0.05, ("hit@10",), ("hit@10",))
    assert outside.claim is ok and outside.fails
    assert "hit@10, without a margin, regressed" in outside.said
    # A margin whose metric has no interval (no query analysed) is not shown.
    empty = decide_margins({"hit@5": 0.02}, {}, 0.05, ["hit@5"], {})
    assert empty.rows[0].claim is unshown and empty.claim is unshown


# --------------------------------------------------------------------------- settings, syntax


def test_one_margin_is_every_headline_metrics_and_a_table_adds_its_metrics_to_the_headline() -> (
    None
):
    every = with_margins(CompareSettings(), 0.02)
    assert every.non_inferior == (("hit@5", 0.02), ("hit@10", 0.02)) and every.gate_on == ()
    table = with_margins(CompareSettings(), {"ndcg@10": 0.02, "Success@5": 0.03})
    assert table.gate_on == ("ndcg@10",)  # joins the headline, as --gate-on would
    assert table.decisive() == ["hit@5", "hit@10", "ndcg@10"]
    assert table.non_inferior == (("hit@5", 0.03), ("ndcg@10", 0.02))  # Success@5 is hit@5
    assert with_margins(CompareSettings(), None) == CompareSettings()


def test_the_command_lines_margins_parse_or_say_what_is_wrong() -> None:
    assert parse_margins("0.02") == 0.02
    assert parse_margins(" ndcg@10=0.02, hit@5 = 0.03") == {"ndcg@10": 0.02, "hit@5": 0.03}
    for bad, said in [
        ("abc", "expected a margin such as 0.02"),
        ("0", "a margin must be a number in (0, 1]"),
        ("1.5", "a margin must be a number in (0, 1]"),
        ("nan", "a margin must be a number in (0, 1]"),
        ("ndgc@10=0.02", "unknown metric 'ndgc@10'"),
        ("ndcg@10=x", "expected a number after '='"),
        ("=0.02", "a pair needs a metric name"),
    ]:
        with pytest.raises(ValueError, match=said.replace("(", r"\(").replace("]", r"\]")):
            parse_margins(bad)
    assert margin_problems(0.02) == [] and margin_problems({"hit@5": 1}) == []
    assert margin_problems({})[0][1].startswith("is an empty table")


def test_the_config_reads_one_margin_or_a_table_and_nothing_by_default(tmp_path: Path) -> None:
    assert load_config(config_with(tmp_path, "")).gate.non_inferior is None
    margin = load_config(config_with(tmp_path, "[gate]\nnon_inferior = 0.02\n")).gate.non_inferior
    assert margin == 0.02
    table = '[gate]\nnon_inferior = {"ndcg@10" = 0.02, "hit@5" = 0.03}\n'
    assert dict(load_config(config_with(tmp_path, table)).gate.non_inferior or {}) == {
        "ndcg@10": 0.02,
        "hit@5": 0.03,
    }


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ('"0.02"', "gate.non_inferior: expected a margin (0.02) or a table"),
        ("0", "gate.non_inferior: a margin must be a number in (0, 1]"),
        ("true", "gate.non_inferior: expected a margin"),
        ('{"ndgc@10" = 0.02}', "gate.non_inferior.ndgc@10: unknown metric 'ndgc@10'"),
        ('{"ndcg@10" = 2}', "gate.non_inferior.ndcg@10: a margin must be a number in (0, 1]"),
        ("{}", "gate.non_inferior: is an empty table"),
    ],
)
def test_a_bad_config_margin_names_its_field(tmp_path: Path, value: str, said: str) -> None:
    path = config_with(tmp_path, f"[gate]\nnon_inferior = {value}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert any(said in str(p) for p in caught.value.problems), caught.value.problems


@pytest.mark.parametrize(
    "command",
    [
        ["compare", "--baseline", "a", "--candidate", "b"],
        ["gate", "--ref", "a", "--baseline-file", "b.json"],
    ],
)
@pytest.mark.parametrize("value", ["abc", "0", "ndgc@10=0.02"])
def test_a_bad_option_exits_2_naming_it(tmp_path: Path, command: list[str], value: str) -> None:
    done = cli_server.run(
        "-m harness.cli.main", [*command, "--non-inferior", value], cwd=tmp_path,
        env=os.environ, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "argument --non-inferior:" in done.stderr and done.stdout == ""


# --------------------------------------------------------------------------- compare, fixed


def _compare(cand: dict[str, int | None], margin: float) -> Comparison:
    return run_pair(ranks(cand), s=with_margins(FAST, margin))


def test_compare_says_not_worse_worse_or_not_shown_and_exits_0_1_or_4() -> None:
    same = _compare({}, 0.05)  # 74 identical answerable queries: Tango rules out 0.035
    assert same.noninferiority is not None and same.noninferiority.claim is Claim.NOT_WORSE
    assert comparison_status(same) == EXIT_OK
    lost = _compare(buried(*range(10, 22)), 0.05)  # 12 of 74 lost: -0.16
    assert lost.noninferiority is not None and lost.noninferiority.claim is Claim.WORSE
    assert comparison_status(lost) == EXIT_REGRESSED
    few = _compare(buried(10, 11, 12), 0.05)  # -0.04: its interval reaches past -0.05
    assert few.noninferiority is not None and few.noninferiority.claim is Claim.NOT_SHOWN
    assert comparison_status(few) == EXIT_INCONCLUSIVE  # fails closed: never a pass
    # Without margins the same compare is not a failure: the difference test's exit.
    plain = run_pair(ranks(buried(10, 11, 12)))
    assert plain.noninferiority is None and comparison_status(plain) == EXIT_OK


def test_a_change_the_test_calls_inside_the_margin_passes_and_outside_rules_still_fail() -> None:
    lost = _compare(buried(*range(10, 22)), 0.5)  # -0.16, "regressed", inside a margin of 0.5
    assert lost.verdict_quality is Verdict.REGRESSED
    assert lost.noninferiority is not None and lost.noninferiority.claim is Claim.NOT_WORSE
    assert comparison_status(lost) == EXIT_OK
    assert exit_status(lost.verdicts) == EXIT_REGRESSED  # the difference gate would fail it
    slower = replace(lost, verdict_latency=Verdict.REGRESSED)
    assert comparison_status(slower) == EXIT_REGRESSED
    floored = replace(lost, floors=(FloorRow("overall", "mrr@10", "at least", 0.9, 0.5, 7, False),))
    assert comparison_status(floored) == EXIT_REGRESSED
    invalid = replace(lost, verdict_quality=Verdict.INVALID, verdict_latency=Verdict.INVALID)
    assert comparison_status(invalid) == EXIT_INVALID
    asked_nothing_shown = replace(lost, noninferiority=None)  # margins asked, no claim made
    assert comparison_status(asked_nothing_shown) == EXIT_INCONCLUSIVE


def test_a_headline_metric_without_a_margin_keeps_the_difference_rule() -> None:
    lost = run_pair(ranks(buried(*range(10, 22))), s=with_margins(FAST, {"mrr@10": 0.9}))
    ni = lost.noninferiority
    assert ni is not None and ni.claim is Claim.NOT_WORSE
    assert ni.unmargined == ("hit@5", "hit@10") and set(ni.regressed) == {"hit@5", "hit@10"}
    assert comparison_status(lost) == EXIT_REGRESSED


def test_every_format_carries_the_line_and_the_document_reads_back() -> None:
    few = _compare(buried(10, 11, 12), 0.05)
    ni = few.noninferiority
    assert ni is not None
    line = "non-inferiority: could not show not worse"
    assert line in render(few, "text") and line in render(few, "markdown")
    html = render(few, "html")
    assert "non-inferiority" in html and "could not show not worse" in html
    document = json.loads(render(few, "json"))
    assert document["noninferiority"]["claim"] == "could not show not worse"
    assert document["settings"]["non_inferior"] == [["hit@5", 0.05], ["hit@10", 0.05]]
    rows = {r["metric"]: r for r in document["noninferiority"]["rows"]}
    assert rows["hit@10"]["low"] < -0.05 < rows["hit@10"]["high"]
    assert comparison_from_dict(comparison_to_dict(few)) == few
    # No margin asked for: the document is what it was before margins existed.
    plain = comparison_to_dict(run_pair(ranks()))
    assert "noninferiority" not in plain and "non_inferior" not in plain["settings"]
    assert "non-inferiority" not in render(run_pair(ranks()), "text")


# --------------------------------------------------------------------------- sequential


def test_the_stop_rule_stops_once_every_margin_is_decided_and_only_with_margins() -> None:
    zeros = {"hit@5": np.zeros(600), "hit@10": np.zeros(600)}
    plan = SequentialPlan(metrics=("hit@5", "hit@10"), total=600)
    assert decide(zeros, plan).verdict is None  # no margins: an A/A never stops early
    held = replace(plan, margins=(("hit@5", 0.05), ("hit@10", 0.05)))
    result = decide(zeros, held)
    assert result.verdict is Verdict.INCONCLUSIVE and result.stopped_at < 600
    assert "every non-inferiority margin was decided" in result.reason
    assert all(m.lower >= -0.05 - 1e-9 for m in result.metrics)
    # One margin still open keeps asking.
    open_ = replace(plan, margins=(("hit@5", 0.05), ("hit@10", 0.001)))
    assert decide(zeros, open_).verdict is None


def _asked(cand: dict[str, int | None], margin: float, repeats: int = 1) -> Comparison:
    """A sequential compare as the runner makes it: stopped where the rule decided."""
    gold = make_gold(300, unanswerable=0)
    settings = with_margins(replace(FAST, min_effect=0.05), margin)
    base = make_run(gold, ranks(), repeats=repeats)
    cand_run = make_run(gold, ranks(cand), ref="feat/x", sha="2" * 40, repeats=repeats)
    order = query_order([q.id for q in gold.queries], settings.seed)
    plan = plan_for(gold, settings, first=20)
    values = headline_values(gold, [base.repeats, cand_run.repeats], order, settings)
    deltas = {m: c.mean(axis=0) - b.mean(axis=0) for m, (b, c) in values.items()}
    stop = decide(deltas, plan, values)
    keep = set(order[: stop.stopped_at if stop.verdict is not None else len(order)])

    def cut(run: object) -> object:
        reps = tuple(
            replace(r, results=tuple(x for x in r.results if x.query_id in keep))
            for r in run.repeats  # type: ignore[attr-defined]
        )
        return replace(run, repeats=reps)  # type: ignore[type-var]

    return compare_asked(gold, cut(base), cut(cand_run), settings, order)  # type: ignore[arg-type]


def test_a_stop_reads_the_confidence_sequences_and_the_end_the_interval_at_what_was_left() -> None:
    stopped = _asked({}, 0.05)  # identical: decided at a look, before the gold set's end
    assert stopped.sequential is not None and stopped.sequential.asked < 300
    ni = stopped.noninferiority
    assert ni is not None and ni.claim is Claim.NOT_WORSE
    assert all(r.method == SEQUENCE for r in ni.rows)
    level = stopped.sequential.result.level
    assert all(r.confidence == level for r in ni.rows)
    looks = {m.metric: m for m in stopped.sequential.result.metrics}
    assert all(r.low == looks[r.metric].lower for r in ni.rows)  # the sequence's own bound
    assert stopped.verdict_quality is Verdict.INCONCLUSIVE
    assert comparison_status(stopped) == EXIT_OK
    # A margin too tight to decide early: the whole gold set, then the fixed interval at
    # alpha - alpha_s (a 95% interval, never the 90% one the whole alpha would give).
    whole = _asked({}, 0.011)
    assert whole.sequential is not None and whole.sequential.asked == 300
    ni = whole.noninferiority
    assert ni is not None and all(r.method == TANGO for r in ni.rows)
    assert all(r.confidence == pytest.approx(0.95) for r in ni.rows)
    z2 = 1.959963984540054**2
    assert ni.rows[0].low == pytest.approx(-z2 / (300 + z2), abs=1e-9)
    assert ni.claim is Claim.NOT_SHOWN  # 0.0126 > 0.011: not shown at what the looks left
    assert comparison_status(whole) == EXIT_INCONCLUSIVE


# --------------------------------------------------------------------------- harness gate


def _gate(
    after_missed: range | tuple[int, ...], margins: dict[str, float], **more: object
) -> GateResult:
    from test_gate_paired import GOLD, SLICES, run

    recorded = measure(GOLD, run(), ["recall@10"]).baseline
    assert recorded is not None
    stats = Statistics(slice_of=SLICES, margins=margins, **more)  # type: ignore[arg-type]
    return check(recorded, measure(GOLD, run(missed=after_missed), ["recall@10"]), statistics=stats)


def _overall(result: GateResult) -> GateRow:
    return next(r for r in result.rows if r.scope == "overall")


def test_a_gate_row_passes_only_when_shown_not_worse() -> None:
    same = _gate((), {"recall@10": 0.1})  # 40 identical queries: Tango rules out 0.063
    assert same.outcome is Outcome.PASS and gate_status(same.outcome) == EXIT_OK
    row = _overall(same)
    assert row.status == "not worse" and not row.failed and row.margin == 0.1
    z2 = 1.6448536269514722**2  # b = c = 0: Tango's end is z^2 / (n + z^2)
    assert row.low is not None and row.low == pytest.approx(-z2 / (40 + z2), abs=1e-6)
    text = render_gate(same, "text")
    assert "not worse (margin -0.1; 90% CI" in text and "one-sided interval" in text

    few = _gate((5, 6), {"recall@10": 0.1})  # -0.05: its interval reaches past -0.1
    assert _overall(few).status == "not shown within margin" and _overall(few).failed
    assert few.outcome is Outcome.NOT_SHOWN and gate_status(few.outcome) == EXIT_INCONCLUSIVE
    assert "NOT SHOWN WITHIN MARGIN" in render_gate(few, "text")
    assert "this is not a pass" in few.reason

    lost = _gate(range(10, 30), {"recall@10": 0.1})  # -0.5
    assert _overall(lost).status == "worse than margin"
    assert lost.outcome is Outcome.FAIL and gate_status(lost.outcome) == EXIT_REGRESSED
    document = json.loads(render_gate(lost, "json"))
    row_doc = next(r for r in document["rows"] if r["scope"] == "overall")
    assert row_doc["margin"] == 0.1 and row_doc["high"] < -0.1 and row_doc["failed"]


def test_a_gates_slices_keep_the_difference_rules_and_strict_shows_nothing() -> None:
    # Both "rare" queries lost: the overall row is not worse than 0.1, the slice fell to zero.
    fell = _gate((0, 1), {"recall@10": 0.5})
    assert _overall(fell).status == "not worse"
    assert next(r for r in fell.rows if r.scope == "rare").status == "fell to zero"
    assert fell.outcome is Outcome.FAIL
    # Without compare's paired rows (here --strict's noise rule) no margin can be shown.
    from test_gate_paired import GOLD, run

    recorded = measure(GOLD, run(), ["recall@10"]).baseline
    assert recorded is not None
    strict = check(
        recorded,
        measure(GOLD, run(), ["recall@10"]),
        strict=True,
        statistics=Statistics(margins={"recall@10": 0.1}),
    )
    assert strict.outcome is Outcome.NOT_SHOWN and "not a pass" in strict.reason


def test_the_gates_margins_cover_the_gated_metrics() -> None:
    assert gate_margins(0.02, ["mrr@10", "recall@10"]) == (
        {"mrr@10": 0.02, "recall@10": 0.02},
        [],
    )
    assert gate_margins({"Success@10": 0.03, "ndcg@10": 0.02}, ["hit@10", "mrr@10"]) == (
        {"hit@10": 0.03},
        ["ndcg@10"],
    )
    assert gate_margins(None, ["mrr@10"]) == ({}, [])


# --------------------------------------------------------------------------- the real CLI


def _harness(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return cli_server.run("-m harness.cli.main", args, cwd=repo, env=os.environ, timeout=1200)


@pytest.mark.slow
def test_compare_report_and_gate_exit_by_the_margins_on_the_demo(tmp_path: Path) -> None:
    from harness.demo import materialise

    repo = materialise(tmp_path / "demo")
    results = str(tmp_path / "results")
    quick = ("--repeats", "2", "--latency-budget", "2", "-q", "--results", results)
    same = _harness(repo, "compare", "--baseline", "main", "--candidate", "main",
                    "--non-inferior", "0.05", "--format", "json", *quick)  # fmt: skip
    assert same.returncode == 0, same.stderr
    document = json.loads(same.stdout)
    assert document["noninferiority"]["claim"] == "not worse"
    # The config's margins, overridden by the option: feat/x loses hit@5 on some queries.
    config = repo / "harness.toml"
    config.write_text(config.read_text() + '\n[gate]\nnon_inferior = {"hit@5" = 0.5}\n')
    loose = _harness(repo, "compare", "--baseline", "main", "--candidate", "feat/x", *quick)
    assert loose.returncode == 0, loose.stderr  # hit@5 within 0.5; hit@10 without a margin
    assert "non-inferiority: not worse: hit@5" in loose.stdout
    tight = _harness(repo, "compare", "--baseline", "main", "--candidate", "feat/x",
                     "--non-inferior", "0.01", *quick)  # fmt: skip
    assert tight.returncode in (1, 4), tight.stderr  # never a pass
    assert "non-inferiority: " in tight.stdout and "non-inferiority: not worse" not in tight.stdout
    saved = tight.stderr.split("harness: results saved in ")[1].split("\n")[0].strip()
    again = _harness(repo, "report", saved)
    assert again.returncode == tight.returncode  # the saved comparison keeps its margins
    # harness gate: the config's table names hit@5, which is not gated (mrr@10, recall@10).
    baseline = str(tmp_path / "baseline.json")
    gate = ("gate", "--baseline-file", baseline, "--repeats", "1", "-q", "--results", results)
    recorded = _harness(repo, *gate, "--ref", "main", "--update-baseline")
    assert recorded.returncode == 0, recorded.stderr
    held = _harness(repo, *gate, "--ref", "main", "--non-inferior", "0.05")
    assert held.returncode == 0, held.stdout + held.stderr
    assert "every margin shown not worse" in held.stdout
    assert re.search(r"^overall\s+mrr@10\s.*\snot worse \(margin -0\.05; ", held.stdout, re.M)
    noted = _harness(repo, *gate, "--ref", "main")
    assert "non_inferior names hit@5, which is not gated here" in noted.stderr

"""harness gate: measuring a run (values and noise worked by hand), the rule (every status and
outcome), the byte-stable baseline file (Hypothesis round trips), and the real CLI on the knob
service (tests/knob_support.py): pass, fail on a drop, not comparable, --update-baseline
byte-stable."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from e2e_support import Sandbox, config_text
from hypothesis import given
from hypothesis import strategies as st
from knob_support import assert_clean, knob_gold_lines, knob_sandbox
from purity import impurities, loaded_by

from harness.errors import ResultsError
from harness.gate.baseline_file import (
    baseline_from_dict,
    baseline_to_text,
    read_baseline,
    read_baseline_or_none,
    write_baseline,
)
from harness.gate.measure import Baseline, Measured, ScopeValues, measure
from harness.gate.render import render_gate
from harness.gate.rule import Outcome, check, conclude, gated_metrics, update
from harness.values.types import (
    ErrorKind,
    GoldQuery,
    GoldSet,
    QueryResult,
    RefRun,
    Repeat,
    RunFailure,
)

# --------------------------------------------------------------------------- measuring

GOLD = GoldSet(
    queries=(
        GoldQuery("a1", "first", slice="a", relevant={"d1": 1}),
        GoldQuery("a2", "second", slice="a", relevant={"d2": 1}),
        GoldQuery("b1", "third", slice="b", relevant={"d3": 1}),
        GoldQuery("n1", "nothing", slice="none", relevant={}),
    ),
    source="gold.jsonl",
    format="native",
    hash="g" * 64,
)


def _repeat(index: int, answers: Mapping[str, Sequence[str]], **kw: object) -> Repeat:
    results = tuple(
        QueryResult(qid, ids=tuple(ids), status=200, latency_ns=1000)
        for qid, ids in answers.items()
    )
    return Repeat(index, results, **kw)  # type: ignore[arg-type]


def _run(*repeats: Repeat, gold_hash: str = "g" * 64) -> RefRun:
    return RefRun(
        ref="main",
        sha="c" * 40,
        config_hash="x",
        gold_hash=gold_hash,
        corpus_hash=None,
        tool_version="0",
        host={},
        repeats=repeats,
    )


def test_values_are_means_over_repeats_and_noise_their_range() -> None:
    # Repeat 1: a1 at rank 1, a2 at rank 2, b1 at rank 1. Repeat 2: a2 not returned.
    first = _repeat(0, {"a1": ["d1"], "a2": ["x", "d2"], "b1": ["d3"], "n1": []})
    second = _repeat(1, {"a1": ["d1"], "a2": ["x"], "b1": ["d3"], "n1": ["x"]})
    measured = measure(GOLD, _run(first, second), ["mrr@10", "recall@10"])
    b = measured.baseline
    assert b is not None and measured.invalid == ()
    mrr_1, mrr_2 = (1 + 1 / 2 + 1) / 3, (1 + 0 + 1) / 3
    assert b.overall.n == 3
    assert b.overall.values["mrr@10"] == round((mrr_1 + mrr_2) / 2, 6)
    assert b.overall.noise["mrr@10"] == round(mrr_1 - mrr_2, 6)
    assert b.overall.values["recall@10"] == round((1 + 2 / 3) / 2, 6)
    assert b.slices["a"].values["mrr@10"] == round(((1 + 1 / 2) / 2 + 1 / 2) / 2, 6)
    assert b.slices["a"].noise["recall@10"] == 0.5
    assert b.slices["b"].noise == {"mrr@10": 0.0, "recall@10": 0.0}
    assert set(b.slices) == {"a", "b"}  # "none" has no answerable query: not a scope
    assert b.repeats == 2 and b.sha == "c" * 40 and b.gold_queries == 4


def test_an_errored_query_is_left_out_within_max_errors_and_invalid_beyond() -> None:
    answers = {"a1": ["d1"], "a2": ["d2"], "n1": []}
    bad = QueryResult("b1", error=ErrorKind.TIMEOUT, detail="read timeout")
    rep = Repeat(0, (*_repeat(0, answers).results, bad))
    allowed = measure(GOLD, _run(rep), ["mrr@10"], max_errors=1)
    assert allowed.baseline is not None
    assert "b" not in allowed.baseline.slices  # its only query errored: the slice vanishes
    assert any("within max_errors" in w for w in allowed.warnings)
    refused = measure(GOLD, _run(rep), ["mrr@10"], max_errors=0)
    assert refused.baseline is None
    assert any("exceed max_errors = 0" in r for r in refused.invalid)


def test_the_words_for_errored_answers_and_failed_repeats_are_compares_without_examples() -> None:
    answers = {"a1": ["d1"], "a2": ["d2"], "n1": []}
    bad = QueryResult("b1", error=ErrorKind.TIMEOUT, detail="read timeout")
    boot = Repeat(1, (), failure=RunFailure("boot", "exited at boot"), log_path="logs/2.log")
    measured = measure(GOLD, _run(Repeat(0, (*_repeat(0, answers).results, bad)), boot), ["p@5"])
    label = f"main ({'c' * 8})"
    assert measured.invalid == (
        f"{label}: repeat 2 failed at boot: exited at boot; see logs/2.log",
        f"{label}: 1 errored answer (timeout 1) exceed max_errors = 0; see the service log, "
        "or raise compare.max_errors; timeout: raise query.timeout if the service is only slow, "
        "else see its log",
    )


def test_a_failed_repeat_makes_the_run_invalid_but_a_teardown_warning_does_not() -> None:
    answers = {"a1": ["d1"], "a2": ["d2"], "b1": ["d3"], "n1": []}
    boot = Repeat(1, (), failure=RunFailure("boot", "exited at boot with status 3"))
    measured = measure(GOLD, _run(_repeat(0, answers), boot), ["mrr@10"])
    assert measured.baseline is None
    assert any("repeat 2 failed at boot" in r for r in measured.invalid)
    teardown = _repeat(1, answers, failure=RunFailure("teardown", "pid 7 survived"))
    assert measure(GOLD, _run(_repeat(0, answers), teardown), ["mrr@10"]).baseline is not None


# --------------------------------------------------------------------------- the rule


def _baseline(
    values: Mapping[str, Mapping[str, float]],
    noise: float = 0.0,
    gold_hash: str = "g" * 64,
) -> Baseline:
    """Scopes by name ("overall" and slices) -> metric -> value; one noise for every entry."""
    scopes = {name: ScopeValues(4, dict(v), {m: noise for m in v}) for name, v in values.items()}
    metrics = tuple(next(iter(values.values())))
    return Baseline(
        gold_hash=gold_hash,
        gold_queries=10,
        metrics=metrics,
        sha="b" * 40,
        repeats=3,
        overall=scopes.pop("overall"),
        slices=scopes,
    )


BEFORE = {"overall": {"mrr@10": 0.8}, "a": {"mrr@10": 0.9}, "b": {"mrr@10": 0.5}}


def _now(values: Mapping[str, Mapping[str, float]], noise: float = 0.0) -> Measured:
    return Measured(_baseline(values, noise), ref="feat/x")


def _status(result_rows: Sequence[object]) -> dict[str, str]:
    return {f"{r.scope}:{r.metric}": r.status for r in result_rows}  # type: ignore[attr-defined]


def test_a_drop_inside_the_noise_passes_and_beyond_it_fails() -> None:
    recorded = _baseline(BEFORE, noise=0.05)
    inside = check(recorded, _now({**BEFORE, "a": {"mrr@10": 0.9 - 0.05}}))
    assert inside.outcome is Outcome.PASS
    assert _status(inside.rows)["a:mrr@10"] == "ok"
    beyond = check(recorded, _now({**BEFORE, "a": {"mrr@10": 0.9 - 0.06}}))
    assert beyond.outcome is Outcome.FAIL
    assert [(r.scope, r.status) for r in beyond.failing] == [("a", "dropped")]
    assert beyond.failing[0].change == -0.06 and beyond.failing[0].tolerance == 0.05


def test_the_tolerance_is_the_larger_noise_of_then_and_now() -> None:
    recorded = _baseline(BEFORE, noise=0.0)
    dropped = {**BEFORE, "overall": {"mrr@10": 0.8 - 0.1}}
    assert check(recorded, _now(dropped, noise=0.1)).outcome is Outcome.PASS
    assert check(recorded, _now(dropped, noise=0.09)).outcome is Outcome.FAIL


def test_strict_has_zero_tolerance() -> None:
    recorded = _baseline(BEFORE, noise=0.2)
    tiny = _now({**BEFORE, "b": {"mrr@10": 0.5 - 0.000001}}, noise=0.2)
    assert check(recorded, tiny).outcome is Outcome.PASS
    strict = check(recorded, tiny, strict=True)
    assert strict.outcome is Outcome.FAIL and strict.failing[0].tolerance == 0.0


def test_a_slice_that_falls_to_zero_or_vanishes_fails_whatever_the_noise() -> None:
    recorded = _baseline(BEFORE, noise=1.0)
    zero = check(recorded, _now({**BEFORE, "b": {"mrr@10": 0.0}}, noise=1.0))
    assert zero.outcome is Outcome.FAIL
    assert _status(zero.rows)["b:mrr@10"] == "fell to zero"
    gone = {k: v for k, v in BEFORE.items() if k != "b"}
    vanished = check(recorded, _now(gone, noise=1.0))
    assert vanished.outcome is Outcome.FAIL
    assert _status(vanished.rows)["b:mrr@10"] == "vanished"


def test_improvements_and_new_slices_pass() -> None:
    recorded = _baseline(BEFORE)
    better = check(recorded, _now({**BEFORE, "a": {"mrr@10": 1.0}, "c": {"mrr@10": 0.1}}))
    assert better.outcome is Outcome.PASS
    assert _status(better.rows) == {
        "overall:mrr@10": "ok",
        "a:mrr@10": "improved",
        "b:mrr@10": "ok",
        "c:mrr@10": "new",
    }
    assert "--update-baseline records them" in better.reason


def test_another_gold_set_is_not_comparable_never_a_pass() -> None:
    recorded = _baseline(BEFORE)
    other = Measured(_baseline(BEFORE, gold_hash="h" * 64), ref="feat/x")
    result = check(recorded, other)
    assert result.outcome is Outcome.NOT_COMPARABLE and result.rows == ()
    assert "not a pass" in result.reason and "gggggggggggg" in result.reason
    text = render_gate(result, "text")
    assert text.startswith("gate: NOT COMPARABLE: the gold set changed")


def test_a_metric_the_baseline_lacks_is_not_comparable() -> None:
    result = check(_baseline(BEFORE), _now(BEFORE), metrics=["ndcg@10"])
    assert result.outcome is Outcome.NOT_COMPARABLE
    assert "--update-baseline --metrics ndcg@10" in result.details[0]


def test_an_invalid_run_is_invalid_never_a_pass() -> None:
    result = check(_baseline(BEFORE), Measured(None, ("boot failed",), ref="feat/x"))
    assert result.outcome is Outcome.INVALID and result.details == ("boot failed",)
    assert update(_baseline(BEFORE), Measured(None, ("boot failed",))).outcome is Outcome.INVALID


def test_update_shows_before_and_after_and_hides_numbers_from_another_gold_set() -> None:
    recorded = _baseline(BEFORE)
    result = update(recorded, _now({**BEFORE, "a": {"mrr@10": 0.7}}))
    assert result.outcome is Outcome.UPDATED
    assert _status(result.rows)["a:mrr@10"] == "dropped"
    other = update(_baseline(BEFORE, gold_hash="h" * 64), _now(BEFORE))
    assert {r.status for r in other.rows} == {"new"}
    assert any("gold set changed" in d for d in other.details)
    assert {r.status for r in update(None, _now(BEFORE)).rows} == {"new"}


@given(
    st.dictionaries(
        st.sampled_from(["overall", "a", "b", "c"]),
        st.floats(0, 1, allow_nan=False),
        min_size=1,
    ).filter(lambda d: "overall" in d),
    st.floats(0, 0.5, allow_nan=False),
)
def test_the_same_numbers_always_pass_and_any_drop_beyond_noise_fails(
    values: dict[str, float], noise: float
) -> None:
    table = {k: {"mrr@10": round(v, 6)} for k, v in values.items()}
    recorded = _baseline(table, noise=round(noise, 6))
    assert check(recorded, _now(table, noise=round(noise, 6))).outcome is Outcome.PASS
    drop = round(noise, 6) + 0.001
    lowered = {k: {"mrr@10": max(0.0, v["mrr@10"] - drop)} for k, v in table.items()}
    outcome = check(recorded, _now(lowered, noise=round(noise, 6))).outcome
    # Every non-zero row either drops by more than the noise or falls to zero; a zero row stays.
    anything = any(v["mrr@10"] > 0 for v in table.values())
    assert outcome is (Outcome.FAIL if anything else Outcome.PASS)


def test_markdown_escapes_what_a_user_named() -> None:
    recorded = _baseline({"overall": {"mrr@10": 0.8}, "a|b_c": {"mrr@10": 0.5}})
    now = _now({"overall": {"mrr@10": 0.8}, "a|b_c": {"mrr@10": 0.1}})
    markdown = render_gate(check(recorded, now), "markdown")
    assert markdown.startswith("## gate: FAIL: 1 row fell below the baseline")
    assert "| a\\|b\\_c " in markdown


def test_the_rule_imports_no_stage_that_runs_anything() -> None:
    loaded = loaded_by("harness.gate.rule")["harness.gate.rule"]
    for stage in ("runner", "service", "worktree", "client", "build", "processes", "results"):
        assert f"harness.{stage}" not in loaded


def test_all_but_the_baseline_file_is_pure() -> None:
    pure = ("harness.gate", "harness.gate.measure", "harness.gate.rule", "harness.gate.render")
    found = impurities(*pure, "harness.gate.baseline_file")
    assert {module: found[module] for module in pure} == {module: [] for module in pure}
    assert "os" in found["harness.gate.baseline_file"]  # the check sees what is not pure


def test_the_gated_metrics_are_those_chosen_else_the_baselines_else_the_defaults() -> None:
    recorded = _baseline({"overall": {"p@5": 0.5}})
    assert gated_metrics(["ndcg@10"], recorded) == ("ndcg@10",)
    assert gated_metrics(None, recorded) == ("p@5",)
    assert gated_metrics(None, None) == ("mrr@10", "recall@10")


def test_conclude_updates_when_asked_or_when_there_is_no_baseline_and_checks_otherwise() -> None:
    recorded, dropped = _baseline(BEFORE), _now({**BEFORE, "b": {"mrr@10": 0.1}})
    assert conclude(recorded, dropped).outcome is Outcome.FAIL
    assert conclude(recorded, dropped) == check(recorded, dropped)
    assert conclude(recorded, dropped, update_baseline=True) == update(recorded, dropped)
    assert conclude(None, dropped) == update(None, dropped)
    assert conclude(None, dropped).outcome is Outcome.UPDATED


# --------------------------------------------------------------------------- the file

scope_values = st.builds(
    ScopeValues,
    st.integers(0, 500),
    st.fixed_dictionaries({"mrr@10": st.floats(0, 1), "recall@10": st.floats(0, 1)}),
    st.fixed_dictionaries({"mrr@10": st.floats(0, 1), "recall@10": st.floats(0, 1)}),
)
baselines = st.builds(
    Baseline,
    st.from_regex(r"[0-9a-f]{64}", fullmatch=True),
    st.integers(1, 1000),
    st.just(("mrr@10", "recall@10")),
    st.from_regex(r"[0-9a-f]{40}", fullmatch=True),
    st.integers(1, 10),
    scope_values,
    # any slice name a gold set may have ("overall" is reserved: harness.gold refuses it)
    st.dictionaries(
        st.text(min_size=1, max_size=8).filter(lambda t: t != "overall"), scope_values, max_size=4
    ),
)


@given(baselines)
def test_the_file_is_byte_stable_and_reads_back(b: Baseline) -> None:
    text = baseline_to_text(b)
    again = baseline_from_dict(json.loads(text), "baseline.json")
    assert baseline_to_text(again) == text  # what is read back writes the same bytes
    assert again.metrics == b.metrics and again.gold_hash == b.gold_hash
    assert set(again.slices) == set(b.slices)
    for name in again.scopes:
        scope, original = again.scope(name), b.scope(name)
        assert scope is not None and original is not None
        for m in b.metrics:
            assert abs(scope.values[m] - original.values[m]) <= 5e-7  # rounded to 6 decimals


def test_the_file_has_sorted_keys_six_decimals_and_one_line_per_number() -> None:
    b = _baseline(
        {"overall": {"mrr@10": 2 / 3}, "z": {"mrr@10": 0.5}, "a": {"mrr@10": 1 / 7}}, noise=0.25
    )
    text = baseline_to_text(b)
    document = json.loads(text)
    assert list(document) == sorted(document)
    assert set(document) == {"gold", "measured", "metrics", "rows", "schema", "schema_version"}
    assert list(document["rows"]) == ["overall mrr@10", "slice a mrr@10", "slice z mrr@10"]
    assert document["rows"]["overall mrr@10"] == {"n": 4, "noise": 0.25, "value": 0.666667}
    # A number that moves is a one-line diff naming its scope and metric.
    assert '    "slice a mrr@10": {"n": 4, "noise": 0.25, "value": 0.142857},\n' in text
    moved = baseline_to_text(
        _baseline(
            {"overall": {"mrr@10": 2 / 3}, "z": {"mrr@10": 0.5}, "a": {"mrr@10": 0.2}}, noise=0.25
        )
    )
    changed = [
        (old, new)
        for old, new in zip(text.splitlines(), moved.splitlines(), strict=True)
        if old != new
    ]
    assert changed == [
        (
            '    "slice a mrr@10": {"n": 4, "noise": 0.25, "value": 0.142857},',
            '    "slice a mrr@10": {"n": 4, "noise": 0.25, "value": 0.2},',
        )
    ]


def test_write_baseline_replaces_the_file_only_when_the_bytes_change(tmp_path: Path) -> None:
    path = tmp_path / "ci" / "baseline.json"
    b = _baseline(BEFORE)
    assert write_baseline(path, b) is True
    first = path.read_bytes()
    assert write_baseline(path, b) is False
    assert path.read_bytes() == first
    assert read_baseline(path) == b
    assert write_baseline(path, replace(b, sha="d" * 40)) is True
    assert [p.name for p in path.parent.iterdir()] == ["baseline.json"]  # no temp file left


def test_no_file_is_no_baseline_only_where_one_is_about_to_be_written(tmp_path: Path) -> None:
    assert read_baseline_or_none(tmp_path / "absent.json") is None
    path = tmp_path / "baseline.json"
    write_baseline(path, _baseline(BEFORE))
    assert read_baseline_or_none(path) == _baseline(BEFORE)
    path.write_text("[]\n")
    with pytest.raises(ResultsError, match="expected a JSON object"):
        read_baseline_or_none(path)  # a file that is there but wrong is never "no baseline"


def test_a_bad_baseline_file_says_where_and_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match="no baseline file") as missing:
        read_baseline(tmp_path / "absent.json")
    assert "--update-baseline" in str(missing.value)
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "schema": \n}\n')
    with pytest.raises(ResultsError, match=r"broken.json:3: not JSON"):
        read_baseline(broken)
    document = json.loads(baseline_to_text(_baseline(BEFORE)))
    del document["rows"]["slice a mrr@10"]["value"]
    with pytest.raises(ResultsError, match=r"rows\.slice a mrr@10\.value: expected a number"):
        baseline_from_dict(document, "b.json")
    del document["rows"]["slice a mrr@10"]
    document["rows"]["slice a recall@10"] = {"n": 4, "noise": 0, "value": 1}
    with pytest.raises(ResultsError, match="no row 'slice a mrr@10'"):
        baseline_from_dict(document, "b.json")
    with pytest.raises(ResultsError, match="not a harness baseline"):
        baseline_from_dict({"schema": "harness-run"}, "b.json")


# --------------------------------------------------------------------------- the real CLI


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    # "worse" sinks every rare query's answer out of the top 10, as a ranking change might.
    box = knob_sandbox(tmp_path_factory.mktemp("gate"), {"worse": {"SINK": 20}})
    yield box
    assert_clean(box)


def _gate(box: Sandbox, *args: str) -> subprocess.CompletedProcess[str]:
    return box.harness("gate", "--baseline-file", str(box.root / "ci" / "baseline.json"), *args)


@pytest.mark.slow
def test_gate_cli_records_passes_fails_and_rewrites_byte_stably(sandbox: Sandbox) -> None:
    path = sandbox.root / "ci" / "baseline.json"
    absent = _gate(sandbox, "--ref", "main")
    assert absent.returncode == 2 and "no baseline file" in absent.stderr

    created = _gate(sandbox, "--ref", "main", "--update-baseline", "--repeats", "2")
    assert created.returncode == 0, created.stderr
    assert f"baseline {path} rewritten" in created.stderr
    first = path.read_bytes()
    document = json.loads(first)
    assert document["metrics"] == ["mrr@10", "recall@10"]
    assert {key.split()[1] for key in document["rows"] if key.startswith("slice ")} == {
        "common",
        "rare",
    }
    assert document["measured"]["repeats"] == 2

    again = _gate(sandbox, "--ref", "main", "--update-baseline", "--repeats", "2")
    assert again.returncode == 0, again.stderr
    assert "unchanged (the same bytes)" in again.stderr
    assert path.read_bytes() == first

    passed = _gate(sandbox, "--ref", "main")
    assert passed.returncode == 0, passed.stderr
    assert passed.stdout.startswith("gate: PASS")
    assert "Failing rows" not in passed.stdout

    failed = _gate(sandbox, "--ref", "worse", "--format", "json")
    assert failed.returncode == 1, failed.stderr
    result = json.loads(failed.stdout)
    assert result["outcome"] == "fail"
    failing = {(r["scope"], r["metric"]): r for r in result["rows"] if r["failed"]}
    assert ("rare", "mrr@10") in failing and ("overall", "recall@10") in failing
    assert failing["rare", "mrr@10"]["status"] == "fell to zero"
    assert all(r["change"] < 0 for r in failing.values())
    assert ("common", "mrr@10") not in failing
    text = _gate(sandbox, "--ref", "worse")
    assert text.returncode == 1
    assert "Failing rows" in text.stdout and "FELL TO ZERO" in text.stdout

    # Accepting the change: the file's diff is the before/after table, and then it passes.
    accepted = _gate(sandbox, "--ref", "worse", "--update-baseline")
    assert accepted.returncode == 0, accepted.stderr
    assert "Before -> after" in accepted.stdout
    assert path.read_bytes() != first
    assert _gate(sandbox, "--ref", "worse").returncode == 0
    assert _gate(sandbox, "--ref", "main").returncode == 0  # better than the baseline: passes


@pytest.mark.slow
def test_gate_cli_another_gold_set_is_not_comparable(sandbox: Sandbox) -> None:
    path = sandbox.root / "ci" / "other.json"
    assert _gate_file(sandbox, path, "--ref", "main", "--update-baseline").returncode == 0
    gold = sandbox.root / "gold-changed.jsonl"
    gold.write_text("\n".join(knob_gold_lines(extra_unanswerable=1)) + "\n")
    config = sandbox.root / "changed.toml"
    config.write_text(config_text(gold=str(gold), repeats=1))
    done = _gate_file(
        sandbox, path, "--ref", "main", "--config", str(config), "--repo", str(sandbox.repo)
    )
    assert done.returncode == 3, done.stderr
    assert done.stdout.startswith("gate: NOT COMPARABLE")
    assert "not a pass" in done.stdout


def _gate_file(box: Sandbox, path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return box.harness("gate", "--baseline-file", str(path), *args)

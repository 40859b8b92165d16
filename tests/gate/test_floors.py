"""Absolute floors ([gate.floors]): the config (located errors), the pure check on hand-built
runs (pass, fail, per slice, a ceiling for a lower-is-better rate, unset), what they do to a gate
result, a comparison and the exit status, and the real CLI (gate and compare) on the knob
service."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import cli_server
import pytest
from compare_support import make_gold, ranks, run_pair
from config_support import MINIMAL, config_with
from e2e_support import Sandbox, config_text
from knob_support import assert_clean, knob_sandbox

from harness.cli.exits import EXIT_INVALID, EXIT_OK, EXIT_REGRESSED, exit_status
from harness.config import load_config
from harness.errors import ConfigError
from harness.gate.floors import Floor, check_floors, floors_from, unknown_slices
from harness.gate.rule import GateResult, Outcome, with_floors
from harness.report.page import render
from harness.results.document import comparison_from_dict, comparison_to_dict
from harness.score.metrics import lower_is_better
from harness.values.types import FloorRow, GoldQuery, GoldSet, QueryResult, RefRun, Repeat, Verdict

GOLD = GoldSet(
    queries=(
        GoldQuery("a1", "first", slice="a", relevant={"d1": 1}),
        GoldQuery("a2", "second", slice="a", relevant={"d2": 1}),
        GoldQuery("b1", "third", slice="b", relevant={"d3": 1}),
        GoldQuery("n1", "nothing", slice="none", relevant={}),
        GoldQuery("n2", "nothing either", slice="none", relevant={}),
    ),
    source="gold.jsonl",
    format="native",
    hash="g" * 64,
)


def _run(*answers: Mapping[str, Sequence[str]]) -> RefRun:
    repeats = tuple(
        Repeat(i, tuple(QueryResult(q, tuple(ids), status=200) for q, ids in a.items()))
        for i, a in enumerate(answers)
    )
    return RefRun("main", "c" * 40, "x", "g" * 64, None, "0", {}, repeats)


# a1 at rank 1, a2 at rank 2, b1 missed; n1 returns something, n2 nothing.
ANSWERS = {"a1": ["d1"], "a2": ["x", "d2"], "b1": ["x"], "n1": ["x"], "n2": []}


def _rows(floors: Sequence[Floor], run: RefRun | None = None) -> dict[tuple[str, str], FloorRow]:
    return {(r.scope, r.metric): r for r in check_floors(floors, GOLD, run or _run(ANSWERS))}


# --------------------------------------------------------------------------- the pure check


def test_an_overall_floor_passes_at_or_above_and_fails_below() -> None:
    mrr = (1 + 1 / 2 + 0) / 3  # a1 rank 1, a2 rank 2, b1 missed
    rows = _rows(floors_from({"mrr@10": round(mrr, 6), "hit@1": 0.5}, {}))
    assert rows["overall", "mrr@10"].value == pytest.approx(mrr)
    assert rows["overall", "mrr@10"].passed and rows["overall", "mrr@10"].n == 3
    assert rows["overall", "mrr@10"].bound == "at least"
    assert rows["overall", "hit@1"].value == pytest.approx(1 / 3)
    assert not rows["overall", "hit@1"].passed


def test_per_slice_floors_use_the_slices_queries() -> None:
    rows = _rows(floors_from({}, {"a": {"mrr@10": 0.75}, "b": {"mrr@10": 0.1}}))
    assert (
        rows["a", "mrr@10"].value == pytest.approx((1 + 1 / 2) / 2) and rows["a", "mrr@10"].n == 2
    )
    assert rows["a", "mrr@10"].passed
    assert rows["b", "mrr@10"].value == 0.0 and not rows["b", "mrr@10"].passed


def test_no_answer_false_positives_have_a_ceiling() -> None:
    assert lower_is_better("no_answer_fp") and not lower_is_better("ndcg@10")
    rows = _rows(floors_from({"no_answer_fp": 0.5}, {"none": {"no_answer_fp": 0.49}}))
    overall, by_slice = rows["overall", "no_answer_fp"], rows["none", "no_answer_fp"]
    assert overall.bound == "at most" and overall.value == 0.5 and overall.n == 2  # 1 of 2
    assert overall.passed and not by_slice.passed
    # Means over repeats: the second repeat answers nothing to either.
    quiet = _run(ANSWERS, {**ANSWERS, "n1": []})
    assert (
        _rows(floors_from({"no_answer_fp": 0.25}, {}), quiet)["overall", "no_answer_fp"].value
        == 0.25
    )


def test_a_floor_that_cannot_be_measured_fails() -> None:
    rows = _rows(floors_from({}, {"none": {"mrr@10": 0.0}, "a": {"no_answer_fp": 1.0}}))
    assert rows["none", "mrr@10"].value is None and not rows["none", "mrr@10"].passed
    assert rows["a", "no_answer_fp"].value is None and not rows["a", "no_answer_fp"].passed
    errored = _run({**ANSWERS, "a1": []})
    broken = replace(
        errored,
        repeats=(
            replace(errored.repeats[0], results=(QueryResult("a1", status=500, error=None),)),
        ),
    )
    assert not _rows(floors_from({"mrr@10": 0.0}, {}), broken)["overall", "mrr@10"].passed


def test_unset_floors_check_nothing() -> None:
    assert check_floors(floors_from({}, {}), GOLD, _run(ANSWERS)) == ()
    assert unknown_slices(floors_from({}, {"a": {"mrr@10": 0.5}, "zz": {"mrr@10": 0.5}}), GOLD) == [
        "zz"
    ]


def test_a_floor_not_met_turns_a_gate_pass_into_a_fail_only() -> None:
    failed = FloorRow("overall", "mrr@10", "at least", 0.9, 0.5, 3, False)
    ok = replace(failed, value=0.95, passed=True)
    passing = GateResult(Outcome.PASS, "no row fell", (), False)
    assert with_floors(passing, [ok]).outcome is Outcome.PASS
    result = with_floors(passing, [ok, failed])
    assert result.outcome is Outcome.FAIL and result.reason == "1 floor of [gate.floors] not met"
    assert result.floors == (ok, failed)
    for outcome in (Outcome.UPDATED, Outcome.INVALID, Outcome.NOT_COMPARABLE):
        assert with_floors(replace(passing, outcome=outcome), [failed]).outcome is outcome


def test_a_comparison_carries_its_floors_through_the_document_and_the_exit_status() -> None:
    comparison = run_pair(ranks())
    assert exit_status(comparison.verdicts, floors_failed=comparison.floors_failed) == EXIT_OK
    failed = FloorRow("rare", "mrr@10", "at least", 0.9, 0.5, 10, False)
    with_floor = replace(comparison, floors=(failed,))
    assert with_floor.floors_failed
    assert exit_status(with_floor.verdicts, floors_failed=True) == EXIT_REGRESSED
    assert exit_status((Verdict.INVALID, Verdict.NOT_COMPARED), floors_failed=True) == EXIT_INVALID
    assert comparison_from_dict(comparison_to_dict(with_floor)) == with_floor
    text = render(with_floor, "text")
    assert "Floors of [gate.floors] on the candidate: 1 of 1 not met" in text
    assert "FAILED: rare mrr@10 0.500 (n=10), at least 0.9" in text
    assert "Floors" not in render(comparison, "text")  # off unless set
    old = comparison_to_dict(comparison)
    assert "floors" not in old  # unset: the document is as it was before floors existed
    assert comparison_from_dict(old) == comparison
    assert make_gold().slices  # the synthetic gold set has slices to floor


# --------------------------------------------------------------------------- the config

def test_floors_are_read_overall_and_per_slice(tmp_path: Path) -> None:
    path = config_with(
        tmp_path,
        '[gate.floors]\n"mrr@10" = 0.78\n"ndcg@10" = 0.75\nno_answer_fp = 0.34\n'
        '[gate.floors.slice.entity]\n"mrr@10" = 1\n',
    )
    gate = load_config(path).gate
    assert dict(gate.floors) == {"mrr@10": 0.78, "ndcg@10": 0.75, "no_answer_fp": 0.34}
    assert {k: dict(v) for k, v in gate.slice_floors.items()} == {"entity": {"mrr@10": 1}}


def test_floors_are_off_by_default(tmp_path: Path) -> None:
    gate = load_config(config_with(tmp_path, "")).gate
    assert not gate.floors and not gate.slice_floors


def test_floor_errors_are_located(tmp_path: Path) -> None:
    path = config_with(
        tmp_path,
        '[gate.floors]\n"MRR@10" = 0.78\n"ndcg@10" = 1.5\nrecall = 0.5\n'
        '[gate.floors.slice.entity]\n"hit@5" = "high"\n[gate]\nfloor = 1\n',
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    found = sorted(str(p).replace(str(path), "H") for p in caught.value.problems)
    at = MINIMAL.count("\n")  # the lines above the test's own: the floors start at line at + 1
    expected = [
        f"H:{at + 2}: gate.floors.MRR@10: unknown metric 'MRR@10' (did you mean mrr@10?); "
        "known metrics: ",
        f"H:{at + 3}: gate.floors.ndcg@10: must be a number from 0 to 1, not 1.5",
        f"H:{at + 4}: gate.floors.recall: unknown metric 'recall'; known metrics: ",
        f"H:{at + 6}: gate.floors.slice.entity.hit@5: must be a number from 0 to 1, not 'high'",
        f"H:{at + 8}: gate.floor: unknown key 'floor' in [gate]; did you mean 'floors'?",
    ]
    assert len(found) == len(expected), found
    for line, want in zip(found, expected, strict=True):
        assert line.startswith(want), (line, want)
    assert all(
        line.endswith("or no_answer_fp (lower is better)")
        for line in found
        if "unknown metric" in line
    )


# --------------------------------------------------------------------------- the real CLI

FLOORS = '\n[gate.floors]\n"mrr@10" = 0.9\n\n[gate.floors.slice.rare]\n"mrr@10" = 0.9\n'


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    box = knob_sandbox(tmp_path_factory.mktemp("floors"), {"worse": {"SINK": 20}})
    yield box
    assert_clean(box)


def _floored(box: Sandbox, name: str, extra: str) -> Path:
    path = box.root / name
    text = config_text(gold=str(box.repo / "gold" / "gold.jsonl"), repeats=1) + extra
    path.write_text(text)
    return path


def _harness(box: Sandbox, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return box.harness(*args, "--repo", str(box.repo), config=config)


@pytest.mark.slow
def test_compare_fails_when_the_candidate_is_below_a_floor(sandbox: Sandbox) -> None:
    config = _floored(sandbox, "floors.toml", FLOORS)
    same = _harness(sandbox, config, "compare", "--baseline", "main", "--candidate", "main")
    assert same.returncode == 0, same.stderr
    assert "Floors of [gate.floors] on the candidate: all met" in same.stdout
    worse = _harness(
        sandbox, config, "compare", "--baseline", "main", "--candidate", "worse", "--format", "json"
    )
    assert worse.returncode == 1, worse.stderr
    floors = {(f["scope"], f["metric"]): f for f in json.loads(worse.stdout)["floors"]}
    assert not floors["rare", "mrr@10"]["passed"] and floors["rare", "mrr@10"]["value"] == 0
    assert floors["rare", "mrr@10"]["n"] == 12 and floors["overall", "mrr@10"]["n"] == 24


@pytest.mark.slow
def test_a_sequential_compare_measures_its_floors_over_the_queries_it_asked(
    tmp_path: Path,
) -> None:
    # The default compare asks block by block and records only what it asked: when it stopped
    # early (the demo's, after 180 of 210), its floors were each "not measured (n=0)", and so
    # failed, whatever the service: every compare of a repository with a floor exited 1.

    from harness.demo import materialise

    repo = materialise(tmp_path / "demo")
    config = repo / "harness.toml"
    config.write_text(config.read_text() + '\n[gate.floors]\n"mrr@10" = 0.01\n')
    done = cli_server.run(
        "-m harness.cli.main",
        ["compare", "--baseline", "main", "--candidate", "feat/x", "--repeats", "2",
         "--latency-budget", "2", "-q", "--format", "json", "--results", str(tmp_path / "results")],
        cwd=repo, env=os.environ, timeout=600,
    )  # fmt: skip
    document = json.loads(done.stdout)
    asked, total = document["sequential"]["asked"], document["sequential"]["total"]
    assert asked < total, (asked, total)  # it stopped early: the case that broke
    (floor,) = document["floors"]
    assert floor["passed"] and floor["value"] is not None, floor
    assert 0 < floor["n"] <= asked


@pytest.mark.slow
def test_gate_fails_on_a_floor_even_when_no_row_dropped(sandbox: Sandbox) -> None:
    baseline = str(sandbox.root / "base.json")
    plain = _floored(sandbox, "plain.toml", "")
    recorded = _harness(
        sandbox, plain, "gate", "--ref", "worse", "--baseline-file", baseline, "--update-baseline"
    )
    assert recorded.returncode == 0, recorded.stderr
    assert (
        _harness(sandbox, plain, "gate", "--ref", "worse", "--baseline-file", baseline).returncode
        == 0
    )
    config = _floored(sandbox, "floors.toml", FLOORS)
    done = _harness(sandbox, config, "gate", "--ref", "worse", "--baseline-file", baseline)
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("gate: FAIL: 2 floors of [gate.floors] not met")
    assert "FAILED: rare mrr@10 0.000 (n=12), at least 0.9" in done.stdout


@pytest.mark.slow
def test_a_floor_on_an_unknown_slice_is_refused_before_anything_runs(sandbox: Sandbox) -> None:
    boots = sandbox.boots()
    config = _floored(sandbox, "typo.toml", '\n[gate.floors.slice.rair]\n"mrr@10" = 0.9\n')
    done = _harness(sandbox, config, "compare", "--baseline", "main", "--candidate", "worse")
    assert done.returncode == 2
    assert "gate.floors.slice.rair: the gold set has no slice 'rair'" in done.stderr
    assert sandbox.boots() == boots

"""Latency rounds past compare.repeats, end to end: the real CLI in a subprocess on the fixture
service (tests/e2e_support.py, compare.repeats = 2 there).

- an A/A goes on past the 2 quality rounds, stops by --latency-budget at the latest, and quality
  is scored on the first 2 rounds only (the other rounds latency-only);
- a 30 ms-slower candidate is decided slower at the first look: no round past compare.repeats.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from e2e_support import Sandbox, build_sandbox

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    return build_sandbox(tmp_path_factory.mktemp("rounds-e2e") / "s", {"slow": {"slow_ms": 30}})


def _compare(sandbox: Sandbox, candidate: str, results: Path, *extra: str) -> dict[str, Any]:
    done = sandbox.harness(
        "compare",
        "--baseline",
        "main",
        "--candidate",
        candidate,
        "--format",
        "json",
        *extra,
        results=results,
    )
    assert done.returncode in (0, 1), done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def test_an_aa_goes_on_past_repeats_up_to_the_budget(sandbox: Sandbox, tmp_path: Path) -> None:
    doc = _compare(sandbox, "main", tmp_path, "--latency-budget", "4")
    test = doc["latency"]["test"]
    # Whether an A/A is called is the rule's error rate, measured by simulation
    # (tests/verdict/test_latency_rule.py, scripts/latency_calibration.py): a machine's load
    # can make one call here, so this test checks the rounds, not the verdict.
    assert test["budget"] == 4
    # Its first look is at the 2 quality rounds: two nearly equal round ratios can settle an A/A
    # there (seen on a quiet machine: 0.9996 and 1.0011); otherwise it goes on, to the budget.
    assert 2 <= len(test["rounds"]) <= 4
    if len(test["rounds"]) == 2:
        assert test["stop"].startswith("decided after")
    assert test["stop"].startswith(("decided after", "the budget of 4 rounds is spent"))
    assert doc["header"]["baseline"]["usable_repeats"] == 2  # quality: the 2 quality rounds


def test_a_30_ms_slower_candidate_is_decided_at_the_first_look(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    doc = _compare(sandbox, "slow", tmp_path, "--latency-budget", "6")
    test = doc["latency"]["test"]
    assert doc["verdict"]["latency"] == "regressed"
    # At the first look (2 rounds) when the rounds agree; a loaded machine's wider round spread
    # can need the next look: never the budget.
    rounds = len(test["rounds"])
    assert rounds <= 3 and test["stop"] == f"decided after {rounds} rounds (budget 6)"

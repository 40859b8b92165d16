"""compare --rate end to end: a branch that serializes its searches (a global lock held 20 ms:
at most 50 answers a second) is fine at 10/s and collapses at 80/s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from e2e_support import Sandbox, build_sandbox

pytestmark = pytest.mark.slow

# p99 < 500 ms: the serialized candidate's queue at 80/s holds seconds of work by the end of a
# round, while a service that keeps up answers in milliseconds, even on a machine the rest of
# the suite loads (at 100 ms an A/A of main missed it there: a machine's claim, not the code's).
RATE = ("--rate", "10,80", "--slo", "p99<500ms", "--rate-duration", "4s", "--rate-rounds", "3",
        "--format", "json", "--repeats", "2", "--no-sequential")


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    return build_sandbox(tmp_path_factory.mktemp("load-e2e") / "s", {"lock": {"serialize_ms": 20}})


def _load(sandbox: Sandbox, candidate: str, results: Path) -> dict[str, object]:
    done = sandbox.harness("compare", "--baseline", "main", "--candidate", candidate, *RATE,
                           results=results)
    assert done.returncode in (0, 1), done.stderr
    load = json.loads(done.stdout)["load"]
    assert isinstance(load, dict)
    return load


def test_a_serialized_candidate_misses_the_slo_at_80_per_second_only(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    load = _load(sandbox, "lock", tmp_path / "r")
    rates = {r["rate"]: r for r in load["rates"]}  # type: ignore[attr-defined]
    assert rates[80.0]["verdict"] == "regressed"
    assert load["candidate_sustains"] == 10.0 and load["baseline_sustains"] == 80.0
    assert "candidate misses the SLO (p99<500ms) from 80/s" in load["slo_words"][1]  # type: ignore[index]
    assert load["verdict"] == "regressed"


def test_a_ref_against_itself_under_load_is_not_called(sandbox: Sandbox, tmp_path: Path) -> None:
    load = _load(sandbox, "main", tmp_path / "r")
    assert load["verdict"] not in ("regressed", "improved")
    assert load["candidate_sustains"] == 80.0

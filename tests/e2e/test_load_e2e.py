"""compare --rate end to end: a branch that serializes its searches (a global lock held 20 ms:
at most 50 answers a second) is fine at 10/s and collapses at 80/s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from e2e_support import Sandbox, build_sandbox

pytestmark = pytest.mark.slow

# p99 < 500 ms: the serialized candidate's queue at 80/s holds about a second of work by the end
# of a 2 s round (30 more requests a second than its 50 answers: 60 waiting, 1.2 s). Whether
# main itself meets it at 80/s is the machine's claim, not the code's: on a 2-core machine the
# rest of the suite saturates, main missed it (p99 < 100 ms, then < 500 ms, in 2 of 6 runs).
# So only the candidate's collapse and the A/A's silence are asserted.
RATE = ("--rate", "10,80", "--slo", "p99<500ms", "--rate-duration", "2s", "--rate-rounds", "3",
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
    said = load["slo_words"]
    assert load["candidate_sustains"] == 10.0, said
    assert load["baseline_sustains"] in (10.0, 80.0), said  # 80.0 unless the machine is saturated
    assert "candidate misses the SLO (p99<500ms) from 80/s" in said[1]  # type: ignore[index]
    assert load["verdict"] == "regressed"


def test_a_ref_against_itself_under_load_is_not_called(sandbox: Sandbox, tmp_path: Path) -> None:
    load = _load(sandbox, "main", tmp_path / "r")
    assert load["verdict"] not in ("regressed", "improved"), load["rates"]
    assert len(load["slo_words"]) == 2  # each side's highest rate within the SLO, said

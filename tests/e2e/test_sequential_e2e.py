"""compare --sequential against the real fixture service (tests/e2e_support.py): the queries go
block by block to the R rounds' services, the compare stops once the headline is decided, and
every report says how many queries it asked.

The arithmetic: 80 queries, blocks of 10 (`default_block(80)`), no look before 20 queries.
`bury40` loses the answer of q01..q40, half the gold set: after 20 queries in a random order about
10 are lost on the candidate and none gained, a discordant-pairs e-value of about 180 (b = 10,
c = 0), past the 80 that Holm at alpha_s = 0.025 over the 2 headline tests asks for, so the
compare stops at a block end well before 80.  An A/A asks until its sequence lies inside +/-0.1
or the gold set is used up, never more than 80.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from e2e_support import GOLD_SIZE, Sandbox, build_sandbox, query_ids, record_document

pytestmark = pytest.mark.slow

LINE = re.compile(r"stopped after (\d+) of 80 queries \((\d+)% of the queries not asked\)")


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    return build_sandbox(
        tmp_path_factory.mktemp("sequential-e2e") / "s", {"bury40": {"bury": query_ids(1, 40)}}
    )


def _main_against_bury40(
    sandbox: Sandbox, *flags: str, results: Path
) -> subprocess.CompletedProcess[str]:
    """`harness compare --baseline main --candidate bury40 *flags --quiet`."""
    args = ("compare", "--baseline", "main", "--candidate", "bury40", *flags, "--quiet")
    return sandbox.harness(*args, results=results)


def _records(results: Path) -> list[dict[str, object]]:
    return [record_document(p) for p in sorted((results / "runs").glob("*.json"))]


def test_a_clear_regression_stops_early_and_says_so(sandbox: Sandbox, tmp_path: Path) -> None:
    results = tmp_path / "results"
    done = _main_against_bury40(
        sandbox, "--sequential", "--latency-budget", "4", "--format", "json", results=results
    )
    assert done.returncode == 1, done.stderr  # regressed
    document = json.loads(done.stdout)
    assert document["verdict"]["quality"] == "regressed"
    seq = document["sequential"]
    asked = seq["asked"]
    assert 20 <= asked < GOLD_SIZE and asked % 10 == 0
    match = LINE.fullmatch(seq["said"])
    assert match is not None and int(match.group(1)) == asked
    assert int(match.group(2)) == round(100 * (1 - asked / GOLD_SIZE))
    # Every round of both sides, latency-only rounds too, answered the queries asked, no more.
    for record in _records(results):
        for rep in record["repeats"]:  # type: ignore[attr-defined]
            assert len(rep["results"]) == asked
    # The Markdown report of the same comparison carries the line too.
    (saved,) = results.glob("*/report.md")
    assert seq["said"] in saved.read_text()
    assert sandbox.leftovers() == []
    assert sandbox.worktrees() == []


def test_text_report_names_the_queries_asked(sandbox: Sandbox, tmp_path: Path) -> None:
    done = _main_against_bury40(sandbox, "--sequential", results=tmp_path / "results")
    assert done.returncode == 1, done.stderr
    match = LINE.search(done.stdout)
    assert match is not None, done.stdout
    assert "sequential: stopped after" in done.stdout


def test_without_the_flag_the_whole_gold_set_is_asked(sandbox: Sandbox, tmp_path: Path) -> None:
    results = tmp_path / "results"
    done = _main_against_bury40(
        sandbox, "--no-sequential", "--format", "json", results=results
    )
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["sequential"] is None
    for record in _records(results):
        for rep in record["repeats"]:  # type: ignore[attr-defined]
            assert len(rep["results"]) == GOLD_SIZE

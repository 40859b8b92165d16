"""`harness compare` end to end: the real CLI in a subprocess, comparing branches of a throwaway
git repository that differ only in the fixture service's behaviour.json (tests/e2e_support.py).

Every expectation is arithmetic on the fixture: 80 queries, each with one relevant document that
a healthy service ranks first; `bury` on n queries moves exactly those n answers out of the top 10,
so hit@5 and hit@10 both go from 80/80 to (80 - n)/80 with b = n, c = 0. The McNemar floor with
no drift is 6 queries (the smallest swing with an exact two-sided p < 0.05: 2 * 0.5**6 = 0.031,
while 2 * 0.5**5 = 0.0625). Each test writes to its own results directory unless reuse is the
point; the repository is shared by the module (the harness only reads it).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from e2e_support import GOLD_SIZE, Sandbox, build_sandbox, git, query_ids
from records_support import SAVED_FILES

pytestmark = pytest.mark.slow

BURIED = query_ids(1, 12)
FEW = query_ids(41, 43)
ERRORING = query_ids(5, 7)
BRANCHES: dict[str, dict[str, object]] = {
    "bury12": {"bury": BURIED},
    "bury3": {"bury": FEW},
    "random": {"random_miss": 0.2},
    "random_twin": {"random_miss": 0.2},
    "empty30": {"random_empty": 0.3},
    "writes": {"write_checkout": True},
    "slow": {"slow_ms": 30},
    "errors": {"error_on": ERRORING},
    "exits": {"exit_at_boot": 3},
    "crawl": {"slow_ms": 500},
}
NO_DIFFERENCE = "no measurable difference"
INTERRUPT_DEADLINE_S = 60.0  # for the service's first search, then for the harness to exit
STAMPED = re.compile(r"\d{8}T\d{6}Z_(?P<b>[0-9a-f]{8})_(?P<c>[0-9a-f]{8})(-\d+)?")


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    return build_sandbox(tmp_path_factory.mktemp("compare-e2e") / "s", BRANCHES)


def sha(sandbox: Sandbox, ref: str) -> str:
    return git(sandbox.repo, "rev-parse", ref).strip()


def compare(
    sandbox: Sandbox, baseline: str, candidate: str, results: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    return sandbox.harness(
        "compare", "--baseline", baseline, "--candidate", candidate, *extra, results=results
    )


def saved_dirs(results: Path) -> list[Path]:
    return sorted(p for p in results.iterdir() if STAMPED.fullmatch(p.name))


def saved(results: Path) -> dict[str, Any]:
    """comparison.json of the only comparison saved under `results`."""
    (directory,) = saved_dirs(results)
    document: dict[str, Any] = json.loads((directory / "comparison.json").read_text())
    return document


def flipped(comparison: dict[str, Any]) -> dict[str, list[str]]:
    return {f["metric"]: [x["query_id"] for x in f["flips"]] for f in comparison["flips"]}


def hit_row(comparison: dict[str, Any], metric: str = "hit@5") -> dict[str, Any]:
    row: dict[str, Any] = next(r for r in comparison["overall"]["rows"] if r["metric"] == metric)
    return row


def assert_nothing_left(sandbox: Sandbox, results: Path) -> None:
    assert sandbox.leftovers(sandbox.run_ids(results)) == []
    assert sandbox.worktrees() == []


# --------------------------------------------------------------------------- quality


def test_burying_12_answers_is_a_regression_naming_the_12(sandbox: Sandbox, tmp_path: Path) -> None:
    done = compare(sandbox, "main", "bury12", tmp_path)

    assert done.returncode == 1, done.stderr
    assert "quality: regressed: hit@5, hit@10 regressed" in done.stdout
    after = f"{(GOLD_SIZE - 12) / GOLD_SIZE:.3f}"  # 68/80 = 0.850
    assert f"hit@5: 1.000 -> {after} (-12 queries, b=12 c=0, McNemar exact p=0.00049)" in (
        done.stdout
    )  # p = 2 * 0.5**12 = 0.000488
    assert "Flips at hit@5: 12 queries" in done.stdout
    comparison = saved(tmp_path)
    assert flipped(comparison) == {"hit@5": BURIED, "hit@10": BURIED}
    assert comparison["verdict"]["quality"] == "regressed"
    assert_nothing_left(sandbox, tmp_path)


def test_fixing_12_buried_answers_is_an_improvement(sandbox: Sandbox, tmp_path: Path) -> None:
    done = compare(sandbox, "bury12", "main", tmp_path)

    assert done.returncode == 0, done.stderr
    assert "quality: improved: hit@5, hit@10 improved, none regressed" in done.stdout
    assert "hit@5: 0.850 -> 1.000 (+12 queries, b=0 c=12" in done.stdout
    assert flipped(saved(tmp_path)) == {"hit@5": BURIED, "hit@10": BURIED}


def test_three_buried_answers_are_not_called(sandbox: Sandbox, tmp_path: Path) -> None:
    done = compare(sandbox, "main", "bury3", tmp_path, "--min-effect", "0.15")

    assert done.returncode == 0, done.stderr
    assert f"quality: {NO_DIFFERENCE}" in done.stdout
    # b=3, c=0: McNemar exact p = 2 * 0.5**3 = 0.25, and 80 queries could have seen 0.15.
    assert "hit@5: 1.000 -> 0.963 (-3 queries, b=3 c=0, McNemar exact p=0.25)" in done.stdout
    comparison = saved(tmp_path)
    assert comparison["verdict"]["quality"] == NO_DIFFERENCE
    assert flipped(comparison) == {"hit@5": FEW, "hit@10": FEW}  # still listed, not called


def test_what_the_gold_set_cannot_see_is_inconclusive_and_strict_fails_it(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    # 80 queries, 3 lost: not a call (McNemar p = 0.25), and Tango's 90% interval of -3/80,
    # [-0.090, -0.004], reaches past the default band of 0.05: the data cannot rule it out.
    calm = ("--latency-tolerance", "0.9")  # latency is not what this test is about
    done = compare(sandbox, "main", "bury3", tmp_path / "a", *calm)
    assert done.returncode == 0, done.stderr
    assert "quality: inconclusive: hit@5: no change larger than 0.090 either way" in done.stdout
    strict = compare(sandbox, "main", "bury3", tmp_path / "b", "--strict", *calm)
    assert strict.returncode == 4, strict.stderr


def test_a_ref_against_itself_shows_no_difference_at_all(sandbox: Sandbox, tmp_path: Path) -> None:
    boots = sandbox.boots()
    # --latency-budget 2: exactly compare.repeats' 2 rounds (no latency-only rounds past them).
    # --min-effect 0.12: 80 identical answers see 0.111 at 80% power (0.10 is out of reach).
    done = compare(
        sandbox, "main", "main", tmp_path, "--format", "json", "--latency-budget", "2",
        "--min-effect", "0.12",
    )

    assert done.returncode == 0, done.stderr
    assert sandbox.boots() == boots + 4  # both sides measured: 2 rounds x 2 services
    comparison = json.loads(done.stdout)
    # Two rounds of a ref against itself: never a call, and never one record read twice.
    assert comparison["verdict"]["quality"] == NO_DIFFERENCE
    assert comparison["verdict"]["latency"] in (NO_DIFFERENCE, "inconclusive")
    assert comparison["latency"]["test"] is not None
    assert len(comparison["latency"]["test"]["rounds"]) == 2
    row = hit_row(comparison)
    assert (row["hit"]["test"]["b"], row["hit"]["test"]["c"]) == (0, 0)
    assert flipped(comparison) == {"hit@5": [], "hit@10": []}
    header = comparison["header"]
    assert header["baseline"]["sha"] == header["candidate"]["sha"] == sha(sandbox, "main")
    assert header["baseline"]["record_path"] != header["candidate"]["record_path"]
    assert not header["baseline"]["reused"] and not header["candidate"]["reused"]

    # Again, with both records stored: an A/A is measured afresh, never one record twice.
    again = compare(sandbox, "main", "main", tmp_path, "--format", "json", "--latency-budget", "2")
    assert again.returncode == 0, again.stderr
    assert sandbox.boots() == boots + 8
    assert json.loads(again.stdout)["verdict"]["latency"] != "not compared"


def test_random_misses_are_regressed_and_their_drift_excuses_nothing(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    # A candidate losing its answer in 20% of searches is worse, however much it drifts.
    done = compare(sandbox, "main", "random", tmp_path, "--format", "json")

    assert done.returncode == 1, done.stderr
    comparison = json.loads(done.stdout)
    assert comparison["verdict"]["quality"] == "regressed"
    for metric in ("hit@5", "hit@10"):
        detail = hit_row(comparison, metric)["hit"]
        # With 2 boots each missing a query with p = 0.2, about 80 * 2 * 0.2 * 0.8 = 25.6
        # queries differ between boots; at most 5 would happen with p < 1e-6.
        assert detail["drift_baseline"] == 0
        assert detail["drift_candidate"] > 5
        assert detail["test"]["exact"] == "exact sign-flip"
    assert comparison["findings"][0].startswith("candidate unstable: ")


def test_a_candidate_answering_nothing_to_30_percent_at_random_is_regressed(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    done = compare(sandbox, "main", "empty30", tmp_path)

    assert done.returncode == 1, done.stderr
    assert "quality: regressed: hit@5, hit@10 regressed" in done.stdout
    assert "finding: candidate unstable: " in done.stdout


def test_two_branches_with_the_same_random_behaviour_are_not_different(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    # Both lose 20% of answers at random: an A/A in distribution.  At alpha 0.001 the chance
    # that this test fails by bad luck is below 0.1% (the test is exact).
    done = compare(
        sandbox, "random", "random_twin", tmp_path, "--alpha", "0.001", "--format", "json"
    )

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["verdict"]["quality"] in (NO_DIFFERENCE, "inconclusive")


def test_ids_from_the_wrong_field_are_invalid_never_zeros(sandbox: Sandbox, tmp_path: Path) -> None:
    config = sandbox.write_config("wrong-ids.toml")
    # The scores as strings: a list of strings, none of them a document id.
    config.write_text(
        config.read_text().replace('"results[].id"', '"results[].to_string(score)"')
    )
    done = sandbox.harness(
        "compare", "--baseline", "main", "--candidate", "bury3", results=tmp_path, config=config
    )

    # Found in the baseline's first answers now (tests/driver/test_adapter_check.py): exit 3 before
    # anything is scored, never a comparison of zeros.
    assert done.returncode == 3, done.stderr
    assert "none of the" in done.stderr and "query.ids" in done.stderr, done.stderr
    assert "stopped after the first boot" in done.stderr


def test_a_cutoff_above_the_query_limit_is_a_configuration_error(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    done = compare(sandbox, "main", "bury3", tmp_path, "--k", "20")

    assert done.returncode == 2, done.stderr
    assert "--k: cutoff 20 is above query.limit = 10 of the baseline" in done.stderr
    assert "Traceback" not in done.stderr
    assert sandbox.worktrees() == []


def test_a_service_writing_into_its_checkout_makes_the_run_invalid(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    done = compare(sandbox, "main", "writes", tmp_path, "--repeats", "1")

    assert done.returncode == 3, done.stderr
    assert "the service changed its own checkout during the boot (added state.txt)" in done.stdout
    assert "failed at checkout" not in done.stdout  # the checkout did not fail: the service wrote
    assert "write state under its HOME or its data copy" in done.stdout


# --------------------------------------------------------------------------- latency


def test_a_30_ms_per_query_candidate_is_a_latency_regression(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    done = compare(sandbox, "main", "slow", tmp_path, "--min-effect", "0.12")  # 80 queries

    assert done.returncode == 1, done.stderr
    assert f"quality: {NO_DIFFERENCE}" in done.stdout
    # A 30 ms sleep against 5 ms: (30 + x) / (5 + x) is still 2x with x = 20 ms of overhead.
    match = re.search(r"^latency: regressed: (\d+\.\d\d)x slower", done.stdout, re.MULTILINE)
    assert match is not None, done.stdout
    assert float(match[1]) > 2
    assert saved(tmp_path)["verdict"] == {"quality": NO_DIFFERENCE, "latency": "regressed"}


# --------------------------------------------------------------------------- invalid runs


def test_an_erroring_candidate_makes_the_comparison_invalid(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    done = compare(sandbox, "main", "errors", tmp_path)

    assert done.returncode == 3, done.stderr
    assert "quality: invalid" in done.stdout and "latency: invalid" in done.stdout
    # 3 queries answered 500 in each of 2 repeats.
    assert "6 errored answers (http_status 6 (HTTP 500: 6); e.g. q05, q06, q07)" in done.stdout
    assert saved(tmp_path)["valid"] is False
    assert_nothing_left(sandbox, tmp_path)


def test_asked_block_by_block_errored_answers_end_the_run_before_latency_rounds(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    # Errored answers past max_errors made the run invalid: the sequential design went on
    # with latency-only rounds all the same (a service timing out waited out five more).
    before = sandbox.boots()
    done = compare(
        sandbox, "main", "errors", tmp_path, "--sequential", "--latency-budget", "8",
        "--seed", "3",
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "quality: invalid" in done.stdout
    assert sandbox.boots() - before == 4  # the 2 quality rounds' boots; no latency round


def test_a_candidate_exiting_at_boot_makes_it_invalid_and_leaves_nothing(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    before = sandbox.boots()
    done = compare(sandbox, "main", "exits", tmp_path)

    assert done.returncode == 3, done.stderr
    assert "quality: invalid" in done.stdout
    short = sha(sandbox, "exits")[:8]
    assert (
        f"candidate exits ({short}): repeat 1 failed at boot: "
        "service exited at boot with status 3"
    ) in done.stdout
    # Every later boot would fail the same way: the run ends with the round that failed (the
    # main side's boot of it the only other), not after every round's boot has failed too.
    assert "repeat 2 failed" not in done.stdout
    assert sandbox.boots() - before <= 2
    # Why, from the service's own log, as `harness run` says it: not only a log path.
    assert "| svc: told to exit at boot (behaviour.json: exit_at_boot)" in done.stderr
    assert saved(tmp_path)["verdict"] == {"quality": "invalid", "latency": "invalid"}
    assert_nothing_left(sandbox, tmp_path)


def test_asked_block_by_block_a_failed_boot_boots_no_later_round(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    # --sequential boots every round's services before it asks: it stops booting at the round
    # whose boot failed (there, round 1: its two boots), not after 2R boots.
    before = sandbox.boots()
    done = compare(sandbox, "main", "exits", tmp_path, "--sequential", "--repeats", "3")
    assert done.returncode == 3, done.stderr
    assert "repeat 1 failed at boot" in done.stdout and "repeat 2 failed" not in done.stdout
    assert sandbox.boots() - before <= 2
    # Not "asked all N queries: the rule did not decide": nothing was asked, nothing decided.
    assert "sequential: the run is invalid after 0 of " in done.stdout
    assert "asked all" not in done.stdout
    assert_nothing_left(sandbox, tmp_path)


# --------------------------------------------------------------------------- results and reuse


def test_results_are_saved_rerendered_and_reused_only_on_request(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    first = compare(sandbox, "main", "bury12", tmp_path)
    assert first.returncode == 1, first.stderr
    (directory,) = saved_dirs(tmp_path)
    match = STAMPED.fullmatch(directory.name)
    assert match is not None
    assert (match["b"], match["c"]) == (sha(sandbox, "main")[:8], sha(sandbox, "bury12")[:8])
    assert sorted(p.name for p in directory.iterdir()) == SAVED_FILES
    comparison = json.loads((directory / "comparison.json").read_text())
    assert comparison["schema_version"] == 2
    assert comparison["verdict"]["quality"] == "regressed"
    assert set(comparison["verdict"]) == {"quality", "latency"}
    for side, ref in (("baseline", "main"), ("candidate", "bury12")):
        record = json.loads((directory / f"{side}.json").read_text())
        assert (record["ref"], record["sha"]) == (ref, sha(sandbox, ref))
    assert f"harness: results saved in {directory}" in first.stderr

    rendered = sandbox.harness("report", str(directory), "--format", "markdown")
    assert rendered.returncode == 1, rendered.stderr  # the same verdicts, the same status
    assert rendered.stdout == (directory / "report.md").read_text()

    boots = sandbox.boots()
    reused = compare(sandbox, "main", "bury12", tmp_path, "--reuse-runs")
    assert reused.returncode == 1, reused.stderr
    assert sandbox.boots() == boots  # no service was booted
    assert "baseline reused from" in reused.stdout and "candidate reused from" in reused.stdout
    assert len(saved_dirs(tmp_path)) == 2  # a new comparison, never an overwrite
    # A stored run serves quality, never latency: numbers from different times are not a pair.
    assert (
        "latency: not compared: the baseline and candidate are stored runs (reused: --reuse-runs)"
        in reused.stdout
    )
    assert "compare without --reuse-runs" in reused.stdout
    again = saved_dirs(tmp_path)[-1] / "comparison.json"
    document = json.loads(again.read_text())
    assert document["verdict"]["latency"] == "not compared"
    assert any("latency not compared" in w and "--reuse-runs" in w for w in document["warnings"])

    # The same compare without the flag (or with --fresh, its old name) measures both again.
    for extra in ((), ("--fresh",)):
        before = sandbox.boots()
        fresh = compare(sandbox, "main", "bury12", tmp_path, *extra, "--latency-budget", "2")
        assert fresh.returncode == 1, fresh.stderr
        assert sandbox.boots() == before + 4  # 2 refs x 2 repeats (a budget of 2: no more rounds)
        assert "reused from" not in fresh.stdout
        assert "latency: not compared" not in fresh.stdout
    assert_nothing_left(sandbox, tmp_path)


def test_a_plain_recompare_measures_the_stored_baseline_again(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """Issue 24, item 3: a stored baseline record no longer silences latency; skipping the
    measurement is `--reuse-runs`, and the report names that flag as the reason."""
    first = compare(sandbox, "main", "bury3", tmp_path)
    assert first.returncode == 0, first.stderr
    boots = sandbox.boots()
    reused = compare(sandbox, "main", "slow", tmp_path, "--reuse-runs", "--format", "markdown")
    assert reused.returncode == 0, reused.stderr  # not compared fails nothing
    assert sandbox.boots() == boots + 2  # the candidate only, on its own
    assert "baseline reused from" in reused.stdout
    assert (
        "**latency: not compared**: the baseline is a stored run (reused: --reuse-runs)"
        in reused.stdout
    )

    boots = sandbox.boots()
    later = compare(sandbox, "main", "slow", tmp_path, "--seed", "77", "--latency-budget", "2")
    assert later.returncode == 1, later.stderr  # a 30 ms slower candidate: latency regressed
    assert sandbox.boots() == boots + 4  # the stored baseline booted again beside the candidate
    assert "reused from" not in later.stdout
    assert re.search(r"^latency: regressed: \d+\.\d\dx slower", later.stdout, re.MULTILINE)
    baseline, candidate = (
        json.loads((saved_dirs(tmp_path)[-1] / f"{side}.json").read_text())
        for side in ("baseline", "candidate")
    )
    assert baseline["pair_id"] is not None and baseline["pair_id"] == candidate["pair_id"]
    # --seed drew the order within pairs (item 4): recorded, and shown with its effect.
    assert baseline["order_seed"] == candidate["order_seed"] == 77
    document = json.loads((saved_dirs(tmp_path)[-1] / "comparison.json").read_text())
    assert document["latency"]["order_seed"] == 77
    assert document["latency"]["order_effect"]["pairs"] > 0
    assert "order within pairs: the second of a pair is" in later.stdout
    assert_nothing_left(sandbox, tmp_path)


def test_json_output_parses_and_markdown_has_a_table(sandbox: Sandbox, tmp_path: Path) -> None:
    as_json = compare(sandbox, "main", "bury3", tmp_path, "--format", "json")
    as_markdown = compare(sandbox, "main", "bury3", tmp_path, "--format", "markdown")

    assert (as_json.returncode, as_markdown.returncode) == (0, 0), as_markdown.stderr
    document = json.loads(as_json.stdout)
    assert document["schema_version"] == 2 and document["valid"] is True
    assert document["header"]["gold"]["n"] == GOLD_SIZE
    lines = as_markdown.stdout.splitlines()
    assert lines[0].startswith("## harness: main (")
    assert "| metric" in as_markdown.stdout
    assert any(re.fullmatch(r"\|[-:| ]+\|", line) for line in lines)  # a table's rule row
    assert "|" not in as_json.stdout.splitlines()[0]


# --------------------------------------------------------------------------- Ctrl-C


def wait_for_first_search(results: Path, proc: subprocess.Popen[str]) -> None:
    """Until a service log under `results` says it answered its first search."""
    deadline = time.monotonic() + INTERRUPT_DEADLINE_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the harness ended before it was interrupted"
        for log in (results / "logs").glob("*.log"):
            if "svc: first search" in log.read_text(errors="replace"):
                return
        time.sleep(0.05)
    raise AssertionError("no service answered a search in time")


def test_ctrl_c_exits_130_and_leaves_nothing_running(sandbox: Sandbox, tmp_path: Path) -> None:
    # The baseline boots first and takes 500 ms a query (40 s a repeat): the interrupt lands
    # while it is being queried.
    proc = sandbox.start_harness(
        "compare", "--baseline", "crawl", "--candidate", "main", results=tmp_path
    )
    try:
        wait_for_first_search(tmp_path, proc)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=INTERRUPT_DEADLINE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()

    assert proc.returncode == 130, stderr
    assert "harness: interrupted; every service and worktree was torn down" in stderr
    assert stdout == ""
    assert saved_dirs(tmp_path) == []  # no comparison of a run cut short
    assert sandbox.run_ids(tmp_path)  # a service had booted ...
    assert_nothing_left(sandbox, tmp_path)  # ... and is gone, with its worktrees

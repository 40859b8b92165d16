"""A round given up on a stalled service (`query.max_consecutive_failures`), through the real
CLI against two canned deployments on 127.0.0.1 (`compare --baseline-url --candidate-url`: no
checkout, no build, no boot): the round stops after N timeouts in a row on one side, no later
round runs, a progress line says so, and the verdict is invalid (exit 3) naming the key; a
service that fails now and then, never N times in a row, is measured to the end."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import cli_server
import pytest
from canned_support import STALL, Start, canned_services, ok, requests_seen

from harness.config import load_config
from harness.driver.plan import Asked
from harness.driver.runner import RunPlan, run_deployed
from harness.gold import check_files
from harness.values.types import ErrorKind, RunFailure

GOLD_SIZE = 8


@pytest.fixture
def canned() -> Iterator[Start]:
    yield from canned_services()


def write_config(tmp_path: Path, timeout: float = 0.05) -> Path:
    """An 8-query gold set and a harness.toml for two deployments: 2 rounds, no warm-up,
    `timeout` seconds per query, query.max_consecutive_failures = 3."""
    header = {"format": "harness-gold", "version": 1}
    rows = [{"id": f"q{i}", "query": f"topic {i}", "relevant": {"a": 1}} for i in range(GOLD_SIZE)]
    (tmp_path / "gold.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (header, *rows)))
    config = tmp_path / "harness.toml"
    config.write_text(
        "[query]\n"
        'path = "/search"\n'
        'params = { q = "{query}" }\n'
        'ids = "results[].id"\n'
        f"timeout = {timeout}\n"
        "warmup = 0\n"
        "max_consecutive_failures = 3\n"
        "\n[gold]\n"
        'path = "gold.jsonl"\n'
        "\n[compare]\n"
        "repeats = 2\n"
    )
    return config


def compare(
    tmp_path: Path, baseline: str, candidate: str, *extra: str, timeout: float = 0.05
) -> subprocess.CompletedProcess[str]:
    """`harness compare` of two deployments (`write_config`); plain progress on stderr."""
    config = write_config(tmp_path, timeout)
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "TMPDIR": str(tmp_path),
        "HARNESS_CACHE_DIR": str(tmp_path / "cache"),
        "LC_ALL": "C.UTF-8",
    }
    argv = ["compare", "--config", str(config)]
    argv += ["--baseline-url", baseline, "--candidate-url", candidate]
    argv += ["--results", str(tmp_path / "results"), *extra]
    return cli_server.run("-m harness.cli.main", argv, cwd=tmp_path, env=env, timeout=300)


@pytest.mark.parametrize(
    ("concurrency", "stalls"), [("1", "candidate"), ("2", "candidate"), ("2", "baseline")]
)
def test_a_stalled_side_stops_the_round_and_the_run_is_invalid(
    canned: Start, tmp_path: Path, concurrency: str, stalls: str
) -> None:
    """At concurrency 1 the rounds are time-paired (pairs.paired_round); at 2 each side
    replays on its own (RefSession.run_repeat, the client's thread pool), the baseline first
    in the first round."""
    good, stalled = tmp_path / "good.count", tmp_path / "stalled.count"
    urls = {
        "good": canned(ok().hex(), "--count", str(good)),
        "stalled": canned(STALL.hex(), "--count", str(stalled)),
    }
    order = ("good", "stalled") if stalls == "candidate" else ("stalled", "good")
    done = compare(tmp_path, urls[order[0]], urls[order[1]], "--concurrency", concurrency)
    said = done.stdout + done.stderr
    assert done.returncode == 3, said[-3000:]
    assert "Traceback" not in said
    # Told as it happened, on the progress stream: the round, the side, why, and the key.
    stops = [line for line in done.stderr.splitlines() if "stopped, the run is invalid" in line]
    assert len(stops) == 1, done.stderr
    assert stops[0].startswith("harness: ") and stalls in stops[0]
    assert "stopped at query.max_consecutive_failures = 3" in stops[0]
    # The verdict names it too; the other side's repeat, when the stop cut it short, failed
    # with it (its unasked queries are not counted as its errors).
    assert done.stdout.startswith("harness: ") and "\nINVALID: " in done.stdout
    assert "query.max_consecutive_failures = 3" in done.stdout, done.stdout[-3000:]
    cut = f"the round was stopped when {stalls} http://127.0.0.1:"
    assert (cut in done.stdout) == (concurrency == "1" or stalls == "baseline"), done.stdout
    assert "errored answers (missing" not in done.stdout, done.stdout
    if concurrency == "1":
        # Three queries reached the stalled service, in the first round only: no second round.
        assert requests_seen(stalled) == 3
        assert requests_seen(good) == 3  # the same queries, paired
    elif stalls == "candidate":  # the queries already in flight on the other connection end
        assert 3 <= requests_seen(stalled) < GOLD_SIZE
        assert requests_seen(good) == GOLD_SIZE  # its own repeat, before: one round only
    else:  # the baseline's repeat stopped; the candidate's of that round was never asked
        assert 3 <= requests_seen(stalled) < GOLD_SIZE
        assert requests_seen(good) == 0


def test_a_side_failing_now_and_then_is_measured_to_the_end(canned: Start, tmp_path: Path) -> None:
    good, flaky = tmp_path / "good.count", tmp_path / "flaky.count"
    baseline = canned(ok().hex(), "--count", str(good))
    # answers, stalls, stalls, answers, ...: two failures in a row at most, never three
    candidate = canned(ok().hex(), STALL.hex(), STALL.hex(), "--count", str(flaky))
    # the 2 quality rounds; 0.25 s a query: an answer slower than that between two stalls (a
    # busy machine) would make three failures in a row
    done = compare(tmp_path, baseline, candidate, "--latency-budget", "2", timeout=0.25)
    said = done.stdout + done.stderr
    assert "stopped, the run is invalid" not in said
    assert "max_consecutive_failures" not in said
    # Every query of both rounds was asked; the errors still make the verdict invalid
    # (compare.max_errors = 0), as errored answers always have.
    assert requests_seen(flaky) == requests_seen(good) == 2 * GOLD_SIZE
    assert done.returncode == 3 and "timeout" in done.stdout, said[-3000:]


def test_deployments_are_never_said_to_boot(canned: Start, tmp_path: Path) -> None:
    # Nothing boots in URL mode: neither the progress lines nor the report may say it does.
    baseline = canned(ok().hex(), "--count", str(tmp_path / "a.count"))
    candidate = canned(ok().hex(), "--count", str(tmp_path / "b.count"))
    # A query timeout of seconds, not 50 ms: at load 4 one slow answer made the verdict invalid.
    done = compare(tmp_path, baseline, candidate, "--latency-budget", "2", timeout=5.0)
    assert done.returncode in (0, 1), (done.stdout + done.stderr)[-3000:]
    assert "boot" not in done.stderr.lower(), done.stderr
    assert any(line.endswith(f" {GOLD_SIZE} queries") for line in done.stderr.splitlines())
    assert "(each asking both)" in done.stdout and "booting" not in done.stdout, done.stdout


class _Notes:
    """An Observer that keeps what it is told."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    def planned(self, boots: int) -> None:
        pass

    def phase(self, name: str, detail: str) -> None:
        pass

    def asking(self, label: str) -> None:
        pass

    def note(self, message: str) -> None:
        self.notes.append(message)


def test_in_process_the_stalled_side_and_its_partner_record_the_stop(
    canned: Start, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner itself (where scripts/mutate.py sees it): run_deployed, time-paired rounds."""
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))  # its live-run state
    good, stalled = tmp_path / "good.count", tmp_path / "stalled.count"
    baseline = canned(ok().hex(), "--count", str(good))
    candidate = canned(STALL.hex(), "--count", str(stalled))
    config = load_config(write_config(tmp_path), deployed=True)
    gold, report = check_files(config.gold)
    report.raise_if_errors()
    observer = _Notes()
    plan = RunPlan(config, Asked.of(gold), None, tmp_path / "results", observer=observer)
    base, cand = run_deployed(plan, baseline, candidate, repeats=2)
    assert [rep.index for rep in cand.repeats] == [0] == [rep.index for rep in base.repeats]
    (stalled_rep,), (cut_rep,) = cand.repeats, base.repeats
    assert stalled_rep.failure is not None and stalled_rep.failure.stage == "replay"
    assert "stopped at query.max_consecutive_failures = 3" in stalled_rep.failure.message
    assert [r.error for r in stalled_rep.results] == [ErrorKind.TIMEOUT] * 3
    assert cut_rep.failure == RunFailure(
        "replay",
        f"the round was stopped when candidate {candidate} failed too many queries in a row",
    )
    assert [r.ids for r in cut_rep.results] == [("a", "b")] * 3
    (note,) = observer.notes
    assert note.startswith(f"round 1/2: baseline {baseline}") and "stopped, the run" in note
    assert requests_seen(stalled) == requests_seen(good) == 3

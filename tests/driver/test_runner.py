"""harness.driver.runner in-process, on the real fixture service: what a RefSession measures and
writes (the record's fields, the logs, the timings), how a build or boot failure is recorded, and
what the progress callback is told. The CLI tests drive the same code in a subprocess, where a
mutation tool (scripts/mutate.py) cannot see it; these run it in the test process.
"""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from e2e_support import GOLD_SIZE, Sandbox, build_sandbox, config_text, git

from harness import __version__
from harness.boot.processes import TeardownReport
from harness.config import load_config, side_hash
from harness.driver.runner import RefSession, RunPlan, run_pair, run_plan, run_ref
from harness.gold import check_files
from harness.replay.client import Stopped
from harness.results.records import host_fingerprint, load_run
from harness.values.types import ErrorKind, QueryResult, Repeat, RunFailure


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    return build_sandbox(
        tmp_path_factory.mktemp("runner") / "s",
        {"bury3": {"bury": ["q01", "q02", "q03"]}, "dead": {"exit_at_boot": 3}},
    )


@pytest.fixture
def isolated(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    """The test process set up as the CLI tests set up the harness's: the sandbox's cache, home
    and temporary directory, no git configuration of the caller's."""
    for name, value in sandbox.env().items():
        if name != "PATH":
            monkeypatch.setenv(name, value)
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    yield sandbox
    assert sandbox.leftovers() == []
    assert sandbox.worktrees() == []


Call = tuple[str, int, int, int, QueryResult | None]


def plan(sandbox: Sandbox, results: Path, calls: list[Call], **config: object) -> RunPlan:
    path = results.parent / "harness.toml"
    text = config_text(gold=str(sandbox.repo / "gold" / "gold.jsonl"), **config)  # type: ignore[arg-type]
    corpus = sandbox.repo / "data" / "corpus.jsonl"
    path.write_text(text.replace("[gold]\n", f'[gold]\ncorpus = "{corpus}"\n'))
    loaded = load_config(path, repo=sandbox.repo)
    gold, report = check_files(loaded.gold, loaded.corpus)
    report.raise_if_errors()
    assert gold.corpus is not None
    return run_plan(loaded, gold, results, progress=lambda *args: calls.append(args))


def sha(sandbox: Sandbox, ref: str) -> str:
    return git(sandbox.repo, "rev-parse", ref, home=sandbox.home).strip()


@pytest.mark.slow
def test_a_pair_measured_in_process_records_every_field(isolated: Sandbox, tmp_path: Path) -> None:
    calls: list[Call] = []
    p = plan(isolated, tmp_path / "results", calls)
    baseline, candidate = run_pair(p, "main", "bury3", repeats=2)
    for run, ref, side in ((baseline, "main", "baseline"), (candidate, "bury3", "candidate")):
        assert (run.ref, run.sha) == (ref, sha(isolated, ref))
        assert run.config_hash == side_hash(p.config.side(side))
        assert (run.gold_hash, run.corpus_hash) == (p.asked.gold_hash, p.corpus_hash)
        assert run.tool_version == __version__ and run.host == host_fingerprint()
        assert run.build_failure is None and run.build_cached is None  # nothing to build
        assert run.failures == () and not run.reused
        assert run.query_config == {
            "method": "GET",
            "path": "/search",
            "params": {"q": "{query}", "k": "{limit}"},
            "json": None,
            "ids": "results[].id",
            "scores": "results[].score",
            "texts": None,
            "limit": 10,
            "timeout": p.config.side(side).query.timeout,
            "max_bytes": 10_000_000,
            "rewrite": None,
            "select": None,
            "id_pattern": None,
            "id_field": None,
        }
        assert [rep.index for rep in run.repeats] == [0, 1]
        for rep in run.repeats:
            assert rep.teardown_confirmed and rep.failure is None and rep.errors == 0
            assert set(rep.timings_s) == {"boot", "queries", "teardown"}
            assert all(v > 0 for v in rep.timings_s.values())
            assert [r.query_id for r in rep.results] == [qid for qid, _ in p.asked.items]
            assert len(rep.results) == GOLD_SIZE
            assert rep.log_path is not None
            log = Path(rep.log_path)
            assert log.parent == p.results_dir / "logs"
            assert re.fullmatch(
                rf"\d{{8}}T\d{{6}}Z_{run.sha[:8]}_{side}_r{rep.index}\.log", log.name
            )
            assert "svc: listening" in log.read_text()
        # The record on disk is this run, field for field.
        assert run.record_path is not None
        record = Path(run.record_path)
        assert record.parent == p.results_dir / "runs"
        assert load_run(record) == replace(run, record_path=str(record))
    for run, missed in ((baseline, set()), (candidate, {"q01", "q02", "q03"})):
        for rep in run.repeats:  # qNN's answer is dNN, first unless buried
            assert {
                r.query_id for r in rep.results if r.ids[:1] != (f"d{r.query_id[1:]}",)
            } == missed

    # Progress, round by round (time-paired: both sides booted, then each query to both): one
    # "booting" call per side, then one per query, with the running error count.
    pair = f"baseline main ({baseline.sha[:8]}) + candidate bury3 ({candidate.sha[:8]})"
    labels = [c[0] for c in calls if c[4] is None]
    assert labels == [f"round {r}/2: {pair}" for r in (1, 1, 2, 2)]
    first = [c for c in calls if c[0] == labels[0]]
    assert first[:2] == [(labels[0], 0, GOLD_SIZE, 0, None)] * 2
    assert [c[1] for c in first[2:]] == list(range(1, GOLD_SIZE + 1))
    assert all(c[2] == GOLD_SIZE and c[3] == 0 for c in first[2:])


def test_a_service_that_exits_at_boot_is_a_failed_repeat(isolated: Sandbox, tmp_path: Path) -> None:
    p = plan(isolated, tmp_path / "results", [])
    run = run_ref(p, "candidate", "dead", repeats=2)
    # Its second boot would fail the same way: the run ends with the first (one boot, not two).
    assert [rep.failure.stage if rep.failure else None for rep in run.repeats] == ["boot"]
    assert all(rep.results == () for rep in run.repeats)
    assert "exited at boot with status 3" in run.failures[0].message
    assert all(rep.teardown_confirmed for rep in run.repeats)
    assert load_run(Path(str(run.record_path))).failures == run.failures


def test_a_failed_build_is_recorded_and_boots_nothing(isolated: Sandbox, tmp_path: Path) -> None:
    p = plan(isolated, tmp_path / "results", [], build="echo broken build >&2; exit 4")
    before = isolated.boots()
    run = run_ref(p, "baseline", "main", repeats=2)
    assert isolated.boots() == before
    assert run.build_failure is not None and run.build_failure.stage == "build"
    assert "exited with status 4" in run.build_failure.message
    assert [rep.failure for rep in run.repeats] == [run.build_failure] * 2
    assert all(rep.results == () and rep.log_path is None for rep in run.repeats)
    assert load_run(Path(str(run.record_path))).build_failure == run.build_failure


def test_a_session_removes_its_worktree_unless_kept(isolated: Sandbox, tmp_path: Path) -> None:
    p = plan(isolated, tmp_path / "results", [])
    with RefSession(p, "baseline", "main") as session:
        assert session.worktree is not None and session.worktree.is_dir()
        tree = session.worktree
        assert (tree / "svc.py").is_file()
    assert not tree.exists()
    kept = replace(p, keep=True)
    with RefSession(kept, "baseline", "main") as session:
        tree = Path(str(session.worktree))
    assert tree.is_dir()
    git(isolated.repo, "worktree", "remove", "--force", str(tree), home=isolated.home)
    git(isolated.repo, "worktree", "prune", home=isolated.home)


@pytest.mark.slow
def test_run_ref_always_measures_and_run_pair_reuses_only_when_asked(
    isolated: Sandbox, tmp_path: Path
) -> None:
    p = plan(isolated, tmp_path / "results", [])
    first = run_ref(p, "baseline", "main", repeats=1)
    again = run_ref(p, "baseline", "main", repeats=1)  # `harness run`: the ref as it is now
    assert not first.reused and not again.reused and again.record_path != first.record_path
    # A clean record of exactly these inputs exists, but an A/A is always measured afresh
    # (issue 12: one stored record compared with itself measures nothing).
    base, cand = run_pair(p, "main", "main", repeats=1)
    assert not base.reused and not cand.reused
    base, cand = run_pair(p, "main", "main", repeats=1, reuse=True)
    assert not base.reused and not cand.reused
    # Two refs: measured together again by default (issue 24: latency is then compared), a
    # stored record reused for both sides only when asked (compare --reuse-runs).
    first_pair = run_pair(p, "main", "bury3", repeats=1)
    again_pair = run_pair(p, "main", "bury3", repeats=1)
    assert not any(run.reused for run in (*first_pair, *again_pair))
    assert again_pair[0].pair_id is not None and again_pair[0].pair_id == again_pair[1].pair_id
    stored = run_pair(p, "main", "bury3", repeats=1, reuse=True)
    assert all(run.reused and run.pair_id is not None for run in stored)


# --------------------------------------------------------------------------- what a repeat records
# The service and the replay stood in for, to reach outcomes a healthy fixture never has.


class FakeService:
    """running_service's context as run_repeat uses it: entered, then its teardown report."""

    sandbox = "plain"

    def __init__(self, teardown: TeardownReport | None) -> None:
        self.report = teardown
        self.teardown: TeardownReport | None = None

    def __enter__(self) -> SimpleNamespace:
        return SimpleNamespace(
            url="http://127.0.0.1:9", boot_seconds=0.25, open_socket=None, sandbox="plain"
        )

    def __exit__(self, *exc: object) -> None:
        self.teardown = self.report


def _replay_with_errors(url: str, query: object, items: Any, **kw: Any) -> tuple[QueryResult, ...]:
    results = []
    for done, (qid, _text) in enumerate(items, start=1):
        failed = qid in ("q02", "q04")
        result = (
            QueryResult(qid, error=ErrorKind.TIMEOUT, detail="no answer", latency_ns=5)
            if failed
            else QueryResult(qid, ids=("d01",), status=200, latency_ns=5)
        )
        results.append(result)
        kw["on_result"](done, len(items), result)
    return tuple(results)


def _repeat(
    isolated: Sandbox,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    teardown: TeardownReport | None,
    calls: list[Call] | None = None,
) -> Repeat:
    import harness.driver.session as runner  # where RefSession boots and replays

    p = plan(isolated, tmp_path / "results", calls if calls is not None else [])
    monkeypatch.setattr(runner, "running_service", lambda *a, **kw: FakeService(teardown))
    monkeypatch.setattr(runner, "replay", _replay_with_errors)
    with RefSession(p, "candidate", "main") as session:
        return session.run_repeat(0)


def _report(**changes: Any) -> TeardownReport:
    base = TeardownReport(confirmed=True, killed_pids=(1,), used_sigkill=False, seconds=0.5)
    return replace(base, **changes)


def test_a_service_that_died_while_queried_is_a_crashed_repeat(
    isolated: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rep = _repeat(isolated, tmp_path, monkeypatch, _report(died_before_teardown=True))
    assert rep.failure == RunFailure("crashed", "the service exited while being queried")
    assert len(rep.results) == GOLD_SIZE  # what it answered is kept, and the repeat is invalid


def _stalled_replay(url: str, query: object, items: Any, **kw: Any) -> tuple[QueryResult, ...]:
    failed = QueryResult("q01", error=ErrorKind.CONNECTION, detail="refused", latency_ns=5)
    kw["on_result"](1, len(items), failed)
    raise Stopped("1 queries in a row failed (connection; the last: refused)", (failed,))


@pytest.mark.parametrize("died", [False, True], ids=["stalled", "died"])
def test_a_stopped_repeat_keeps_its_answers_and_a_crash_is_said_first(
    isolated: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, died: bool
) -> None:
    import harness.driver.session as runner  # where RefSession boots and replays

    p = plan(isolated, tmp_path / "results", [])
    service = FakeService(_report(died_before_teardown=died))
    monkeypatch.setattr(runner, "running_service", lambda *a, **kw: service)
    monkeypatch.setattr(runner, "replay", _stalled_replay)
    with RefSession(p, "candidate", "main") as session:
        rep = session.run_repeat(0)
        assert session.stopped  # no later round
    assert service.teardown is not None  # torn down as after any replay
    assert [r.query_id for r in rep.results] == ["q01"] and "queries" in rep.timings_s
    stop = "1 queries in a row failed (connection; the last: refused)"
    assert rep.failure == (
        RunFailure("crashed", f"the service exited while being queried; {stop}")
        if died
        else RunFailure("replay", stop)
    )


def test_an_unconfirmed_teardown_is_recorded_as_such(
    isolated: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rep = _repeat(isolated, tmp_path, monkeypatch, _report(confirmed=False, survivors=(7,)))
    assert rep.teardown_confirmed is False and rep.failure is None
    assert rep.timings_s["teardown"] == 0.5 and rep.timings_s["boot"] == 0.25
    (tmp_path / "b").mkdir()
    assert not _repeat(isolated, tmp_path / "b", monkeypatch, None).teardown_confirmed


def test_progress_counts_the_errors_so_far(
    isolated: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Call] = []
    rep = _repeat(isolated, tmp_path, monkeypatch, _report(), calls)
    assert rep.errors == 2 and rep.failure is None
    assert [c[3] for c in calls[:6]] == [0, 0, 1, 1, 2, 2]  # booting, q01, q02 (error), ...
    assert calls[-1][1:4] == (GOLD_SIZE, GOLD_SIZE, 2)


def test_a_boot_failure_keeps_the_log_tail_and_timings_are_spans(
    isolated: Sandbox, tmp_path: Path
) -> None:
    p = plan(isolated, tmp_path / "results", [])
    started = time.perf_counter()
    dead = run_ref(p, "candidate", "dead", repeats=1)
    (failure,) = dead.failures
    assert any("told to exit at boot" in line for line in failure.log_tail)
    ok = run_ref(p, "baseline", "main", repeats=1)
    elapsed = time.perf_counter() - started
    (rep,) = ok.repeats
    assert 0 < rep.timings_s["queries"] < elapsed and 0 < rep.timings_s["boot"] < elapsed

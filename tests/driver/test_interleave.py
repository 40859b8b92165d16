"""harness.driver.runner.run_interleaved: repeats go round by round, the boot order alternating
(baseline r1, candidate r1, candidate r2, baseline r2, ...), so that machine drift hits both refs
alike, and a reusable record boots nothing.  At concurrency 1 a round is time-paired
(`paired_round`: both booted, every query to both back to back); the recording sessions below
run at concurrency 2, where each session's `run_repeat` is called in turn, and the real compare
reads the paired rounds' boots back from the services' logs.

Two views of the same promise: recording sessions (every call in order, no processes), and a real
`compare` on the fixture service whose boots are read back from its own logs (which pid booted for
which side and repeat, in the order the boots happened: no clock involved).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import cast

import pytest
from e2e_support import Sandbox, build_sandbox
from records_support import clean_run

from harness import __version__
from harness.config import CompareConfig, QueryConfig, ServiceConfig, SideConfig
from harness.driver.runner import RefSession, run_interleaved
from harness.results.records import save_run
from harness.values.types import RefRun, Repeat


@dataclass(frozen=True)
class FakeAsked:
    gold_hash: str
    items: tuple[tuple[str, str], ...] = (("q1", "one"), ("q2", "two"))  # test_reuse's answers


@dataclass(frozen=True)
class FakeConfig:
    compare: CompareConfig = field(default_factory=CompareConfig)


@dataclass(frozen=True)
class FakePlan:
    results_dir: Path
    asked: FakeAsked
    corpus_hash: str | None
    concurrency: int = 1
    config: FakeConfig = field(default_factory=FakeConfig)
    observer: None = None  # told nothing here (the progress tests cover it)
    ray: str | None = None  # rounds here, never on Ray


FAKE_SIDE = SideConfig(ServiceConfig(start="svc {port}", ready="/health"), QueryConfig("/s", "ids"))


@dataclass
class RecordingSession:
    """What run_interleaved uses of a RefSession, each call appended to a shared journal."""

    name: str
    plan: FakePlan
    journal: list[str]
    sha: str
    config_hash: str
    repeats: list[Repeat] = field(default_factory=list)
    inputs_hash: str | None = None
    pair_id: str | None = None
    order_seed: int | None = None
    stopped: bool = False  # a round stopped for failures in a row (never, here)
    failed: bool = False  # a repeat failed (never, here)

    @property
    def ref(self) -> str:  # the ref as asked for (a reused record is named by it)
        return self.name
    url: str | None = None  # a RefSession of a running deployment has one
    side: SideConfig = FAKE_SIDE

    def __enter__(self) -> RecordingSession:
        self.journal.append(f"enter {self.name}")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.journal.append(f"exit {self.name}")

    def run_repeat(self, index: int) -> Repeat:
        self.journal.append(f"{self.name} r{index + 1}")
        rep = Repeat(index=index, results=())
        self.repeats.append(rep)
        return rep

    def finish(self) -> RefRun:
        self.journal.append(f"finish {self.name}")
        return clean_run(ref=self.name, sha=self.sha, repeats=tuple(self.repeats))


def sessions(
    tmp_path: Path, names: list[str], corpus_hash: str | None = "d" * 64, concurrency: int = 1
) -> tuple[list[RefSession], list[str]]:
    journal: list[str] = []
    plan = FakePlan(tmp_path / "results", FakeAsked("g" * 64), corpus_hash, concurrency)
    made = [
        RecordingSession(name, plan, journal, sha=f"{i + 1}" * 40, config_hash="c" * 64)
        for i, name in enumerate(names)
    ]
    return cast(list[RefSession], made), journal


# Three rounds of two refs: the boot order alternates, each round starting with the side that
# went second in the round before.
ALTERNATING = [
    "baseline r1",
    "candidate r1",
    "candidate r2",
    "baseline r2",
    "baseline r3",
    "candidate r3",
]


def test_two_refs_alternate_repeat_by_repeat(tmp_path: Path) -> None:
    refs, journal = sessions(tmp_path, ["baseline", "candidate"], concurrency=2)
    runs = run_interleaved(refs, repeats=3)
    assert journal == [
        "enter baseline",
        "enter candidate",
        *ALTERNATING,
        "finish baseline",
        "finish candidate",
        "exit candidate",
        "exit baseline",
    ]
    assert [r.ref for r in runs] == ["baseline", "candidate"]
    assert [[rep.index for rep in r.repeats] for r in runs] == [[0, 1, 2], [0, 1, 2]]


def test_a_sweep_of_three_goes_round_by_round(tmp_path: Path) -> None:
    refs, journal = sessions(tmp_path, ["a", "b", "c"], concurrency=2)
    run_interleaved(refs, repeats=2)
    rounds = [line for line in journal if re.fullmatch(r"\w r\d", line)]
    assert rounds == ["a r1", "b r1", "c r1", "c r2", "b r2", "a r2"]


def test_a_reusable_record_is_reused_and_its_ref_boots_nothing(tmp_path: Path) -> None:
    refs, journal = sessions(tmp_path, ["baseline", "candidate"])
    # A clean record of exactly the baseline's inputs, with more repeats than asked.
    three = clean_run(sha="1" * 40)
    three = clean_run(sha="1" * 40, repeats=(*three.repeats, *three.repeats[:1]))
    assert three.tool_version == __version__
    save_run(tmp_path / "results", three)
    baseline, candidate = run_interleaved(refs, repeats=2)
    assert baseline.reused and not candidate.reused
    assert len(baseline.repeats) == 2  # cut to what was asked
    # Named by the ref asked for now, not the record's ("main" there; bisect names it by sha).
    assert three.ref == "main" and baseline.ref == "baseline"
    assert journal == [
        "enter candidate",
        "candidate r1",
        "candidate r2",
        "finish candidate",
        "exit candidate",
    ]


def test_fresh_measures_again_even_with_a_reusable_record(tmp_path: Path) -> None:
    refs, journal = sessions(tmp_path, ["baseline", "candidate"], concurrency=2)
    save_run(tmp_path / "results", clean_run(sha="1" * 40, concurrency=2))
    baseline, _ = run_interleaved(refs, repeats=2, fresh=True)
    assert not baseline.reused
    assert "baseline r1" in journal and "baseline r2" in journal


def test_the_runner_looks_records_up_by_the_plans_corpus(tmp_path: Path) -> None:
    # The record matches in everything but the corpus of this invocation: measured again.
    refs, journal = sessions(
        tmp_path, ["baseline", "candidate"], corpus_hash="e" * 64, concurrency=2
    )
    save_run(tmp_path / "results", clean_run(sha="1" * 40, concurrency=2))
    baseline, _ = run_interleaved(refs, repeats=2)
    assert not baseline.reused and "baseline r1" in journal


# --------------------------------------------------------------------------- real services

LOG_NAME = re.compile(r"_(baseline|candidate)_r(\d+)\.log$")


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    return build_sandbox(tmp_path_factory.mktemp("interleave") / "s", {}, repeats=3)


@pytest.mark.slow
def test_a_real_compare_boots_baseline_and_candidate_in_turn(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    # main against itself: the exit status is exactly 0, and both sides' boots are told apart by
    # the side named in each log.
    done = sandbox.harness(
        "compare", "--baseline", "main", "--candidate", "main", "--fresh", results=results
    )
    assert done.returncode == 0, done.stderr
    # Each boot's log names its side and repeat and says its pid; boots.log has the pids in the
    # order the services booted.
    booted_as = {}
    for log in (results / "logs").glob("*.log"):
        m = LOG_NAME.search(log.name)
        pid = re.search(r"^svc: pid (\d+)$", log.read_text(), re.MULTILINE)
        if m and pid:
            booted_as[pid.group(1)] = f"{m.group(1)} r{int(m.group(2)) + 1}"
    order = [booted_as[pid] for pid in sandbox.boot_counter.read_text().split()]
    assert order == ALTERNATING
    assert sandbox.leftovers(sandbox.run_ids(results)) == []

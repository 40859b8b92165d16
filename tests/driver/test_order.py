"""No order bias within time-paired rounds (issue 24, item 4).

- `harness.replay.order.pair_orders`: in every round exactly floor(n/2) queries go
  baseline-first (an odd n's extra one alternating by round), equal for equal seeds, different
  for different ones (pure).
- The runner, in process on the real fixture service: the order the requests really reached
  the two services (journalled at `Channel.send`) is balanced in every round, is what the run
  records say (`positions`, `order_seed`, on disk too), differs between compares without a seed
  and repeats with one.
- `harness.verdict.order_effect.order_effect` on synthetic data with a known order effect.
"""

from __future__ import annotations

import itertools
import math
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from e2e_support import GOLD_SIZE, Sandbox, build_sandbox, config_text

from harness.config import load_config
from harness.driver import plan as plan_module
from harness.driver import runner
from harness.driver.adapter_check import probe_count
from harness.driver.plan import Asked
from harness.driver.runner import RunPlan, run_pair
from harness.gold import check_files
from harness.replay import client
from harness.replay.order import in_rotation, pair_orders
from harness.replay.request import Requests
from harness.results.records import load_run
from harness.values.types import RefRun
from harness.verdict.order_effect import order_effect, order_words

# --------------------------------------------------------------------------- the assignment


@pytest.mark.parametrize("n", [0, 1, 2, 7, 80, 85])
def test_every_round_sends_exactly_half_baseline_first(n: int) -> None:
    extra_first = []
    for index in range(6):
        rotations = pair_orders(n, 2, seed=99, index=index)
        assert len(rotations) == n
        first = rotations.count(0)
        assert first in (n // 2, n - n // 2)
        extra_first.append(first - n // 2)
    # An odd n: the one left over goes to each side in turn, round by round.
    assert extra_first == ([1, 0] * 3 if n % 2 else [0] * 6)


def test_three_sides_each_go_first_equally_often() -> None:
    rotations = pair_orders(31, 3, seed=5, index=2)
    assert sorted(rotations.count(j) for j in range(3)) == [10, 10, 11]
    assert in_rotation(["a", "b", "c"], 1) == ["b", "c", "a"]


def test_the_same_seed_gives_the_same_order_and_another_seed_another() -> None:
    assert pair_orders(80, 2, 1, 0) == pair_orders(80, 2, 1, 0)
    assert pair_orders(80, 2, 1, 0) != pair_orders(80, 2, 2, 0)
    assert pair_orders(80, 2, 1, 0) != pair_orders(80, 2, 1, 1)  # a fresh shuffle per round


# --------------------------------------------------------------------------- the runner


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    return build_sandbox(tmp_path_factory.mktemp("order") / "s", {"bury3": {"bury": ["q01"]}})


@pytest.fixture
def isolated(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    for name, value in sandbox.env().items():
        if name != "PATH":
            monkeypatch.setenv(name, value)
    monkeypatch.setattr(tempfile, "tempdir", None)
    yield sandbox
    assert sandbox.leftovers() == []
    assert sandbox.worktrees() == []


def _plan(sandbox: Sandbox, results: Path, seed: int | None, warmup: int = 0) -> RunPlan:
    results.parent.mkdir(parents=True, exist_ok=True)
    path = results.parent / "harness.toml"
    text = config_text(gold=str(sandbox.repo / "gold" / "gold.jsonl"), repeats=2)
    path.write_text(text.replace("limit = 10\n", f"limit = 10\nwarmup = {warmup}\n"))
    loaded = load_config(path, repo=sandbox.repo)
    gold, report = check_files(loaded.gold, loaded.corpus)
    report.raise_if_errors()
    return RunPlan(
        config=loaded, asked=Asked.of(gold), corpus_hash=None, results_dir=results, order_seed=seed
    )


Sent = list[tuple[str, str]]  # (side, query id) in the order the requests were sent


@pytest.fixture
def journal(monkeypatch: pytest.MonkeyPatch) -> Sent:
    """Every timed send of the round, by side: a Channel's side is told by the Requests object
    it was made with (one per session here: the sessions' sharing of equal ones is turned off,
    which changes no byte sent), matched to the session when it is made."""
    sent: Sent = []
    monkeypatch.setattr(
        plan_module.SharedReading,
        "of",
        lambda reading, query, items: (Requests(query, items), client.AnswerCache(query)),
    )
    sides: dict[int, str] = {}
    real_init, real_send = client.Channel.__init__, client.Channel.send
    real_session = runner.RefSession.__init__

    def session_init(self: runner.RefSession, plan: RunPlan, side: str, *a: Any, **k: Any) -> None:
        real_session(self, plan, side, *a, **k)
        sides[id(self.requests)] = side

    def init(self: client.Channel, *a: Any, **k: Any) -> None:
        real_init(self, *a, **k)
        self._journal_side = sides[id(k["requests"])]  # type: ignore[attr-defined]

    def send(self: client.Channel, query_id: str, text: str) -> client.Sent:
        sent.append((self._journal_side, query_id))  # type: ignore[attr-defined]
        return real_send(self, query_id, text)

    monkeypatch.setattr(runner.RefSession, "__init__", session_init)
    monkeypatch.setattr(client.Channel, "__init__", init)
    monkeypatch.setattr(client.Channel, "send", send)
    return sent


def _firsts(sent: Sent) -> list[list[bool]]:
    """Per round, per query in gold order, whether the baseline's request went first."""
    assert len(sent) % (2 * GOLD_SIZE) == 0
    rounds = []
    for start in range(0, len(sent), 2 * GOLD_SIZE):
        pairs = sent[start : start + 2 * GOLD_SIZE]
        firsts = []
        for (one, q1), (two, q2) in zip(pairs[::2], pairs[1::2], strict=True):
            assert q1 == q2 and {one, two} == {"baseline", "candidate"}
            firsts.append(one == "baseline")
        rounds.append(firsts)
    return rounds


def _recorded(run: RefRun) -> list[list[bool]]:
    return [[p == 0 for p in rep.positions] for rep in run.repeats]


@pytest.mark.slow
def test_the_order_sent_is_balanced_recorded_and_fresh_per_compare(
    isolated: Sandbox, tmp_path: Path, journal: Sent
) -> None:
    orders, seeds = [], []
    for n in range(2):
        plan = _plan(isolated, tmp_path / f"r{n}" / "results", seed=None)
        baseline, candidate = run_pair(plan, "main", "bury3", repeats=2)
        sent = _firsts(journal)
        journal.clear()
        assert len(sent) == 2
        for firsts in sent:  # exactly half of the 80 queries baseline-first, in every round
            assert firsts.count(True) == GOLD_SIZE // 2
        # What reached the services is what the records say, on disk as in memory.
        assert _recorded(baseline) == sent
        assert _recorded(candidate) == [[not f for f in firsts] for firsts in sent]
        assert baseline.order_seed is not None and baseline.order_seed == candidate.order_seed
        stored = load_run(Path(str(baseline.record_path)))
        assert stored.order_seed == baseline.order_seed and _recorded(stored) == sent
        orders.append(sent)
        seeds.append(baseline.order_seed)
    # No seed given: each compare draws its own order (2^-80 odds of a false failure).
    assert seeds[0] != seeds[1] and orders[0] != orders[1]


@pytest.mark.slow
def test_a_given_seed_sends_the_same_order_again(
    isolated: Sandbox, tmp_path: Path, journal: Sent
) -> None:
    orders = []
    for n in range(2):
        plan = _plan(isolated, tmp_path / f"r{n}" / "results", seed=424242)
        baseline, _ = run_pair(plan, "main", "bury3", repeats=2)
        assert baseline.order_seed == 424242
        orders.append(_firsts(journal))
        journal.clear()
    assert orders[0] == orders[1]
    assert orders[0][0] != orders[0][1]  # still a fresh shuffle per round


@pytest.mark.slow
def test_the_warm_up_goes_in_pairs_the_first_side_alternating(
    isolated: Sandbox, tmp_path: Path, journal: Sent
) -> None:
    """Warm-up i goes to both sides back to back, the side first alternating, so both end their
    warm-up together right before the clock (sent one side after the other, the side warmed
    last was always the same one: a side bias in every round, scripts/latency_noise.py)."""
    warmup = 5
    plan = _plan(isolated, tmp_path / "results", seed=7, warmup=warmup)
    run_pair(plan, "main", "bury3", repeats=2)
    # Round 1: each side's adapter probe (3 answers, right after its boot), then the warm-up in
    # pairs in full; round 2 (no probe): its warm-up, then its timed queries.
    probes = 2 * probe_count(plan.config.side("baseline").query, range(GOLD_SIZE))
    assert [side for side, _ in journal[:probes]] == ["baseline"] * 3 + ["candidate"] * 3
    rounds = [
        journal[probes : probes + 2 * warmup],
        journal[-2 * GOLD_SIZE - 2 * warmup : -2 * GOLD_SIZE],
    ]
    assert len(journal) == probes + 2 * (2 * warmup + 2 * GOLD_SIZE)
    for warm in rounds:
        pairs = list(zip(warm[::2], warm[1::2], strict=True))
        assert all({one[0], two[0]} == {"baseline", "candidate"} for one, two in pairs)
        firsts = [one[0] for one, _ in pairs]
        assert all(a != b for a, b in itertools.pairwise(firsts))
    # An odd warm-up: its very last request is the other side's in the next round.
    assert rounds[0][-1][0] != rounds[1][-1][0]


# --------------------------------------------------------------------------- the estimate


def _synthetic(
    effect: float, rounds: int, n: int, seed: int
) -> list[tuple[list[float], list[bool]]]:
    """Per round, log(c/b) of n pairs: a round's own shift (boots), a per-query spread, noise,
    and +log(effect) when the candidate was second (baseline first), -log(effect) otherwise."""
    rng = np.random.default_rng(seed)
    o = math.log(effect)
    out = []
    query = rng.normal(0, 0.05, n)
    for index in range(rounds):
        delta = rng.normal(0.1, 0.05)  # the candidate 10% slower, give or take a boot
        first = [r == 0 for r in pair_orders(n, 2, seed, index)]
        d = [delta + query[i] + (o if first[i] else -o) + rng.normal(0, 0.1) for i in range(n)]
        out.append((d, first))
    return out


def test_a_known_order_effect_is_recovered_within_its_interval() -> None:
    covered = 0
    for seed in range(40):
        est = order_effect(_synthetic(1.043, rounds=3, n=200, seed=seed))
        assert est is not None and est.pairs == 600 and est.rounds == 3
        assert abs(est.ratio - 1.043) < 0.02
        covered += est.low <= 1.043 <= est.high
    assert covered >= 34  # a 95% interval: 38 of 40 expected, 34 allows for chance


def test_no_order_effect_reads_as_about_none_and_the_words_say_which_way() -> None:
    est = order_effect(_synthetic(1.0, rounds=4, n=300, seed=7))
    assert est is not None and est.low < 1 < est.high
    faster = order_effect(_synthetic(0.95, rounds=3, n=300, seed=8))
    assert faster is not None and faster.high < 1
    assert order_words(faster).startswith("the second of a pair is 5.")
    assert "faster than the first" in order_words(faster)


def test_the_estimate_by_hand_on_one_tiny_round() -> None:
    # baseline-first d: 1, 3 (mean 2, var 2); candidate-first: 0, 2 (mean 1, var 2)
    est = order_effect([([1.0, 0.0, 3.0, 2.0], [True, False, True, False])])
    assert est is not None
    assert math.isclose(math.log(est.ratio), 0.5)
    half = 1.959963984540054 * math.sqrt((2 / 2 + 2 / 2) / 4)
    assert math.isclose(math.log(est.high), 0.5 + half)


def test_rounds_too_small_to_estimate_give_none() -> None:
    assert order_effect([]) is None
    assert order_effect([([0.1, 0.2], [True, False])]) is None

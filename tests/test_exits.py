"""harness.cli.exits: every outcome a command can reach has its status, and they are the documented
ones (0 ok, 1 regressed, 2 usage or gold error, 3 invalid, 128 + N on signal N)."""

from __future__ import annotations

import signal

from harness.cli.exits import (
    EXIT_INVALID,
    EXIT_OK,
    EXIT_REGRESSED,
    check_status,
    exit_status,
    gate_status,
    signal_status,
    valid_status,
)
from harness.gate.rule import Outcome
from harness.types import Verdict


def test_every_gate_outcome_has_its_status_and_only_a_pass_or_an_update_is_zero() -> None:
    assert {outcome: gate_status(outcome) for outcome in Outcome} == {
        Outcome.PASS: 0,
        Outcome.UPDATED: 0,
        Outcome.FAIL: 1,
        Outcome.NOT_COMPARABLE: 3,
        Outcome.INVALID: 3,
    }


def test_run_sweep_and_gold_check_statuses() -> None:
    assert (valid_status(True), valid_status(False)) == (0, 3)
    assert (check_status(True), check_status(False)) == (0, 2)


def test_a_signal_is_128_plus_its_number() -> None:
    assert signal_status(signal.SIGINT) == 130
    assert signal_status(signal.SIGTERM) == 128 + 15


def test_an_inconclusive_or_not_compared_latency_fails_nothing() -> None:
    for latency in (Verdict.INCONCLUSIVE, Verdict.NOT_COMPARED):
        assert exit_status([Verdict.NO_DIFFERENCE, latency]) == EXIT_OK
        assert exit_status([Verdict.REGRESSED, latency]) == EXIT_REGRESSED
        assert exit_status([Verdict.INVALID, latency]) == EXIT_INVALID

"""harness.cli.exits: every outcome a command can reach has its status, and they are the documented
ones (0 ok, 1 regressed, 2 usage or gold error, 3 invalid, 128 + N on signal N)."""

from __future__ import annotations

import argparse
import signal

from cli_support import commands

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
from harness.values.types import Verdict


def test_every_gate_outcome_has_its_status_and_only_a_pass_or_an_update_is_zero() -> None:
    assert {outcome: gate_status(outcome) for outcome in Outcome} == {
        Outcome.PASS: 0,
        Outcome.UPDATED: 0,
        Outcome.FAIL: 1,
        Outcome.NOT_COMPARABLE: 3,
        Outcome.INVALID: 3,
        Outcome.NOT_SHOWN: 4,  # --non-inferior: a margin not shown fails closed
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


def test_every_option_of_every_command_has_help_text() -> None:
    missing = [
        f"harness {name}: {action.option_strings or action.dest}"
        for name, parser in commands()
        for action in parser._actions
        if not action.help and not isinstance(action, argparse._SubParsersAction)
    ]
    assert missing == []


def test_every_command_help_shows_its_exit_statuses_and_examples() -> None:
    for name, parser in commands():
        text = parser.format_help()
        assert "exit status:" in text, name
        if name not in ("gold", "judge"):
            assert "examples:" in text, name
    compare = dict(commands())["compare"].format_help()
    floor = "\n  1 quality or latency regressed, or the candidate misses a [gate.floors] floor\n"
    assert floor in compare  # the layout is kept, and a missed floor is among the reasons for 1
    assert "\n  3 invalid:" in compare
    gate = dict(commands())["gate"].format_help()
    fell = "1 a row fell below the baseline (or its margin), or a [gate.floors] floor is not met"
    assert f"\n  {fell}\n" in gate
    assert "\n  4 with --non-inferior: a row not shown within its margin (never a pass)" in gate
    unshown = "4 with --strict: quality inconclusive; with --non-inferior: a margin not shown"
    assert unshown in compare
    assert "1 regressed or below a floor" in dict(commands())[""].format_help()

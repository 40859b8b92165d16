"""compare --reuse-runs (issue 24, item 3): reuse is a choice, refused where it contradicts
another option. What it does end to end is in tests/compare/test_compare_e2e.py
(`test_a_plain_recompare_measures_the_stored_baseline_again`,
`test_results_are_saved_rerendered_and_reused_only_on_request`)."""

from __future__ import annotations

import pytest

from harness.cli import parser as cli_parser


def test_reuse_is_off_unless_asked() -> None:
    args = cli_parser.parse_args(["compare", "--baseline", "main", "--candidate", "x"])
    assert args.reuse_runs is False
    args = cli_parser.parse_args(
        ["compare", "--baseline", "main", "--candidate", "x", "--reuse-runs"]
    )
    assert args.reuse_runs is True


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["--baseline", "main", "--candidate", "x", "--reuse-runs", "--fresh"],
            "--reuse-runs and --fresh contradict each other",
        ),
        (
            ["--baseline-url", "http://127.0.0.1:1", "--candidate-url", "http://127.0.0.1:2",
             "--reuse-runs"],
            "--reuse-runs: a deployment is never reused",
        ),
    ],
)  # fmt: skip
def test_reuse_runs_is_refused_where_it_contradicts(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli_parser.parse_args(["compare", *argv])
    assert exited.value.code == 2
    assert said in capsys.readouterr().err

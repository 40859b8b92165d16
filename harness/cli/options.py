"""The arguments several commands share, declared once (`harness.cli.parser` builds the tree).

    add_run_options(p)      --config --repo --repeats --results --concurrency --keep -q
    add_side(p)             --side: whose per-side overrides apply (run, gate, sweep, matrix)
    add_record_side(p)      --side: which record of a comparison directory
    add_gold_source(p)      --gold --config --repo: a gold set, given or the config's
    add_strict(p)  add_ray(p)  add_runs_against_a_reference(p) (sweep and matrix)
    latency_budget          --latency-budget's type: a bad value is a usage error
"""

from __future__ import annotations

import argparse
from pathlib import Path

FORMAT = "output format (default text: the terminal report)"


def latency_budget(text: str) -> str:
    """--latency-budget's value, checked here so a bad one is a usage error (exit 2)."""
    from harness.verdict.latency_rule import parse_budget

    try:
        parse_budget(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        type=Path,
        help="harness.toml (default: ./harness.toml or [tool.harness] in ./pyproject.toml)",
    )
    p.add_argument(
        "--repo", type=Path, help="the git repository (default: the one holding the config)"
    )
    p.add_argument(
        "--repeats", type=int, help="rounds, each booting every ref (default: compare.repeats)"
    )
    p.add_argument("--results", default="results", help="where records go (default: ./results)")
    p.add_argument(
        "--concurrency",
        type=int,
        default=1,
        help="queries in flight (default 1: latency fidelity; above 1: throughput, no latency "
        "verdict)",
    )
    p.add_argument("--keep", action="store_true", help="keep the worktrees and print where")
    p.add_argument(
        "-q", "--quiet", action="store_true", help="no progress on stderr (the report is unchanged)"
    )


def add_record_side(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--side",
        choices=("baseline", "candidate"),
        default="candidate",
        help="in a comparison directory, which side's record (default candidate)",
    )


def add_gold_source(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gold", type=Path, help="the gold set (default: the config's)")
    p.add_argument("--config", type=Path, help="harness.toml (default: discovered in the cwd)")
    p.add_argument("--repo", type=Path, help="the git repository (default: the config's)")


def add_side(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--side",
        choices=("baseline", "candidate"),
        default="baseline",
        help="which side's per-side overrides apply (default baseline)",
    )


def add_strict(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--strict", action="store_true", help="exit 4 when the quality verdict is inconclusive"
    )


def _margins(text: str) -> object:
    from harness.config.margins import parse_margins

    try:
        return parse_margins(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_non_inferior(p: argparse.ArgumentParser, what: str = "headline metric") -> None:
    p.add_argument(
        "--non-inferior",
        type=_margins,
        metavar="MARGIN",
        help=f"a non-inferiority gate: pass only when every {what} is shown not worse than the "
        "baseline by more than MARGIN (0.02; or METRIC=MARGIN,... per metric), by its one-sided "
        "interval; shown worse exits 1, not shown exits 4 (default: [gate] non_inferior, off)",
    )


def add_ray(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ray",
        metavar="auto|ADDRESS",
        help="run each round as a Ray task (the [ray] extra): auto finds a running cluster or "
        "starts a local one; ADDRESS is a cluster's (host:port, ray://...)",
    )


def add_seed(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--seed",
        type=int,
        help="seed of the bootstrap and randomization tests, and of the order within pairs",
    )


def add_format(p: argparse.ArgumentParser, saved: str = "") -> None:
    """--format text|markdown|json (`saved`: what the help adds, e.g. the files written)."""
    p.add_argument(
        "--format",
        choices=("text", "markdown", "json"),
        default="text",
        help=f"{FORMAT}; markdown; json{saved}",
    )


def add_runs_against_a_reference(p: argparse.ArgumentParser, formats: str) -> None:
    """What sweep and matrix share: one ref measured in several settings, each against one
    (`formats`: --format's help)."""
    add_side(p)
    add_run_options(p)
    p.add_argument("--fresh", action="store_true", help="never reuse earlier run records")
    p.add_argument(
        "--redact",
        action="store_true",
        help="no query text in the saved comparisons; records keep no error details",
    )
    add_ray(p)
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text", help=formats)
    p.add_argument("--alpha", type=float, help="significance level (default compare.alpha)")
    p.add_argument("--max-errors", type=int, help="errored queries tolerated (default 0)")
    add_seed(p)


def add_compare_step_options(p: argparse.ArgumentParser, what: str, saved: str) -> None:
    """The options of a command made of compares (bisect's steps, watch's confirming compares):
    compare's run options and the statistics' settings; `what` names each compare in the
    help, `saved` what its reports save."""
    add_run_options(p)
    p.add_argument(
        "--latency-budget",
        type=latency_budget,
        metavar="N|TIME",
        help=f"{what}'s most latency rounds or their time (default compare.latency_budget)",
    )
    add_format(p, saved)
    p.add_argument("--k", type=int, action="append", help="cutoff (repeatable; default compare.k)")
    p.add_argument("--alpha", type=float, help="significance level (default compare.alpha)")
    p.add_argument(
        "--min-effect", type=float, help="the band of 'no measurable difference' (default 0.05)"
    )
    p.add_argument(
        "--latency-tolerance", type=float, help="latency ratio band counted as no change"
    )
    p.add_argument("--max-errors", type=int, help="errored queries tolerated (default 0)")
    add_seed(p)

"""What every command that runs a ref shares: its arguments made a RunPlan and CompareSettings.

    plan, gold, settings = load_plan(args)   # config (with the options' overrides) and gold,
                                             # checked; the driver's narrow plan made of them
    run = run_ref(plan, args)          # args.ref alone, args.repeats times
    specs = metric_specs(args.metrics) # --metrics, a usage error naming the option

Every input is checked here, before anything is built or booted: the config, the gold set
(as `harness gold check` checks it), the cutoffs against query.limit, --ray, the URLs, and that
the results directory can be written.
"""

from __future__ import annotations

import argparse

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing for `harness --help`
if TYPE_CHECKING:
    from harness.driver.runner import RemoteRounds, RunPlan
    from harness.score.metrics import MetricSpec
    from harness.values.types import GoldSet, RefRun
    from harness.verdict.comparison import CompareSettings


def load_plan(args: argparse.Namespace) -> tuple[RunPlan, GoldSet, CompareSettings]:
    """Load config and gold (failing fast, before anything is built): the driver's RunPlan made
    of them (`harness.driver.plan.run_plan`, the one place), the gold set (the caller scores
    with it) and the comparison's settings."""
    from dataclasses import replace
    from pathlib import Path

    from harness.config import load_config

    deployed = bool(getattr(args, "baseline_url", None))
    if deployed:
        from harness.boot.deployed import check_url

        args.baseline_url = check_url(args.baseline_url, "--baseline-url")
        args.candidate_url = check_url(args.candidate_url, "--candidate-url")
    ray = getattr(args, "ray", None)
    remote_rounds = _check_ray(ray, deployed) if ray is not None else None
    config = load_config(args.config, repo=args.repo, deployed=deployed)
    # The stages only once the config is read: a refused config costs no import of them.
    from harness.cli.progress import Progress
    from harness.compare.settings import check_cutoffs, context_metrics
    from harness.driver.runner import run_plan
    from harness.gold import check_files
    from harness.results.files import check_writable
    from harness.verdict.comparison import CompareSettings

    overrides: dict[str, object] = {
        name: getattr(args, name)
        for name in (
            "alpha", "min_effect", "latency_tolerance", "latency_budget", "max_errors", "seed",
            "sequential",
        )
        if getattr(args, name, None) is not None
    }
    if getattr(args, "k", None):
        overrides["k"] = tuple(args.k)
    config = replace(config, compare=replace(config.compare, **overrides))  # type: ignore[arg-type]
    gates = getattr(args, "gate_on", None) or ()
    check_cutoffs(config, gates, from_cli=bool(getattr(args, "k", None)))
    # The same checks as `harness gold check`, before anything is built or booted.
    gold, report = check_files(config.gold, config.corpus, alpha=config.compare.alpha)
    report.raise_if_errors()
    # A run that cannot save what it measured must not measure; checked (and the directory
    # made) only once every input is valid, so a refused run leaves no empty results behind.
    results_dir = check_writable(Path(args.results).resolve())
    progress = None if args.quiet else Progress(deployed=deployed)
    plan = run_plan(
        config,
        gold,
        results_dir,
        concurrency=args.concurrency,
        keep=args.keep,
        redact=bool(getattr(args, "redact", False)),
        progress=progress,
        observer=progress,
        ray=ray,
        remote_rounds=remote_rounds,
        order_seed=getattr(args, "seed", None),  # else each compare draws its pairs' order
    )
    sides = (args.side,) if getattr(args, "side", None) else ("baseline", "candidate")
    settings = CompareSettings.from_config(
        config.compare,
        gate_on=gates,
        query_differences=config.differences(),
        context=context_metrics(config, gold, sides, gates),
    )
    if hasattr(args, "non_inferior"):  # compare and gate: --non-inferior, else [gate]'s
        from harness.compare.settings import with_margins

        chosen = args.non_inferior if args.non_inferior is not None else config.gate.non_inferior
        settings = with_margins(settings, chosen)
        check_cutoffs(config, settings.gate_on, from_cli=bool(getattr(args, "k", None)))
    return plan, gold, settings


def _check_ray(address: str, deployed: bool) -> RemoteRounds:
    """--ray: Ray importable and an address given, before anything is read or built; what plays
    the rounds on it."""
    from harness.driver.remote import require_ray, run_rounds
    from harness.errors import HarnessError

    if deployed:
        raise HarnessError(
            "--ray measures refs; deployments (--baseline-url) are measured from this machine",
            ["leave out --ray, or compare refs with --baseline and --candidate"],
        )
    if not address.strip():
        raise HarnessError("--ray: give auto or a cluster address, e.g. --ray auto")
    require_ray()
    return run_rounds


def repeats(args: argparse.Namespace, plan: RunPlan) -> int:
    """--repeats, else compare.repeats."""
    return int(args.repeats or plan.config.compare.repeats)


def run_ref(plan: RunPlan, args: argparse.Namespace) -> RefRun:
    """`args.ref` run on its own, `args.repeats` times (default compare.repeats)."""
    from harness.driver.runner import run_ref as run
    from harness.process.signals import signals_unwind

    with signals_unwind():
        return run(plan, args.side, args.ref, repeats=repeats(args, plan))


def phase(plan: RunPlan, name: str, detail: str) -> None:
    if plan.observer is not None:
        plan.observer.phase(name, detail)


def close(plan: RunPlan) -> None:
    """End the live progress display, if any, before a report goes to the terminal."""
    end = getattr(plan.observer, "close", None)
    if end is not None:
        end()


def metric_specs(text: str, option: str = "--metrics") -> tuple[MetricSpec, ...]:
    """The metrics `text` names; a HarnessError naming `option` (the one it came by)."""
    from harness.errors import HarnessError
    from harness.score.metrics import parse_metrics

    try:
        return parse_metrics(text)
    except ValueError as exc:
        raise HarnessError(f"{option}: {exc}") from None

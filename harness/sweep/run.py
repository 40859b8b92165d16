"""Running a sweep and saving it: the I/O of `harness sweep`, on the variants' engine
(`harness.variants.run`).

    run_sweep(plan, side, ref, points, repeats=3, fresh=False) -> tuple[RefRun, ...]
    save_sweep(results_dir, sweep, comparisons) -> Path

A point is a variant named by its label, run under the plan as it is, its values pinned on
`side`'s service.env (as `with_point` does to a config), so each value has its own config hash,
run record and reusable measurements.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from harness.config import HarnessConfig
from harness.driver.runner import RunPlan
from harness.sweep.params import Param, Point, label
from harness.sweep.render import render_sweep, sweep_to_dict
from harness.sweep.summary import Sweep
from harness.values.types import RefRun
from harness.variants.run import Variant, run_variants, save_variants
from harness.verdict.comparison import Comparison


def overridden_pins(config: HarnessConfig, side: str, params: Sequence[Param]) -> tuple[str, ...]:
    """The swept names that the config already pins in `side`'s service.env."""
    return tuple(p.name for p in params if p.name in config.side(side).service.env)


def with_point(config: HarnessConfig, side: str, point: Point) -> HarnessConfig:
    """`config` with the point's values pinned in `side`'s service.env (overriding any pin)."""
    chosen = config.side(side)
    service = replace(chosen.service, env={**chosen.service.env, **dict(point)})
    changed = replace(chosen, service=service)
    if side == "baseline":
        return replace(config, baseline=changed)
    return replace(config, candidate=changed)


def run_sweep(
    plan: RunPlan,
    side: str,
    ref: str,
    points: Sequence[Point],
    *,
    repeats: int,
    fresh: bool = False,
) -> tuple[RefRun, ...]:
    """One RefRun per point, in order: a session each, repeats interleaved across the points.

    A point whose record already exists for exactly these inputs (its env pin is part of the
    config hash) is reused unless `fresh`. Each record's `ref` is "REF [NAME=value]".
    """
    variants = [Variant(label(point), plan, dict(point)) for point in points]
    return run_variants(side, ref, variants, repeats=repeats, fresh=fresh)


def save_sweep(
    results_dir: Path,
    sweep: Sweep,
    comparisons: Mapping[str, Comparison],
    *,
    redact: bool = False,
) -> Path:
    """Write results_dir/sweep_<UTC stamp>/ (suffixed -2, -3, ... if taken) holding sweep.json,
    report.md and vs_<value>.json, each value's comparison with the reference, which
    `harness report PATH` renders in full; with `redact`, those hold no query text. Return the
    directory."""
    document, report = sweep_to_dict(sweep), render_sweep(sweep, "markdown")
    return save_variants(results_dir, "sweep", document, report, comparisons, redact=redact)

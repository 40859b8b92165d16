"""Running a sweep and saving it: the I/O of `harness sweep`.

    run_sweep(plan, side, ref, points, repeats=3, fresh=False) -> tuple[RefRun, ...]
    save_sweep(results_dir, sweep, comparisons) -> Path

A point reaches the service as environment pins on `side`'s service.env (`with_point`), so
each value has its own config hash, run record and reusable measurements; the sessions of all
points run with their repeats interleaved (`harness.driver.runner.run_interleaved`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from harness.config import HarnessConfig
from harness.driver.runner import RefSession, RunPlan, SharedReading, run_interleaved
from harness.results.document import comparison_to_dict
from harness.results.files import new_directory, utc_stamp, write_json_new, write_text_new
from harness.sweep.params import Param, Point, label
from harness.sweep.render import render_sweep, sweep_to_dict
from harness.sweep.summary import Sweep
from harness.types import RefRun
from harness.verdict.comparison import Comparison

SWEEP_FILE = "sweep.json"
REPORT_FILE = "report.md"


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
    reading = SharedReading()
    sessions = [
        RefSession(
            plan,
            side,
            ref,
            label=f"{ref} [{label(point)}]",  # names the value in progress lines and records
            pins=dict(point),  # over the side's and the ref's settings, last
            reading=reading,
        )
        for point in points
    ]
    return run_interleaved(sessions, repeats=repeats, fresh=fresh)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=,-]+", "-", text).strip("-")[:80] or "value"


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
    directory = new_directory(results_dir, f"sweep_{utc_stamp()}")
    write_json_new(directory / SWEEP_FILE, sweep_to_dict(sweep))
    write_text_new(directory / REPORT_FILE, render_sweep(sweep, "markdown"))
    for name, comparison in comparisons.items():
        document = comparison_to_dict(comparison, redact=redact)
        write_json_new(directory / f"vs_{slug(name)}.json", document)
    return directory

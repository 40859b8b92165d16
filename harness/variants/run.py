"""Running the variants and saving what they gave: the I/O of `harness sweep` and `harness
matrix`.

    run_variants(side, ref, variants, repeats=3, fresh=False) -> tuple[RefRun, ...]
    save_variants(results_dir, kind, document, report, comparisons) -> Path

A variant runs under its own plan (the ref's config with any overrides applied, by its front
end) with its env pins set last, over the side's and the ref's settings; the sessions of all
variants run with their repeats interleaved (`harness.driver.runner.run_interleaved`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.driver.runner import RefSession, RunPlan, SharedReading, run_interleaved
from harness.results.document import comparison_to_dict
from harness.results.files import new_directory, utc_stamp, write_json_new, write_text_new
from harness.values.types import RefRun
from harness.verdict.comparison import Comparison

REPORT_FILE = "report.md"


@dataclass(frozen=True)
class Variant:
    """One row to run: its name (in tables, files and run records), the plan it runs under and
    the env pins set on the side's service, last."""

    name: str
    plan: RunPlan
    pins: Mapping[str, str]


def run_variants(
    side: str, ref: str, variants: Sequence[Variant], *, repeats: int, fresh: bool = False
) -> tuple[RefRun, ...]:
    """One RefRun per variant, in order: a session each, repeats interleaved across them.

    A variant whose record already exists for exactly these inputs (its pins and overrides are
    part of the config hash) is reused unless `fresh`. Each record's `ref` is "REF [NAME]".
    """
    reading = SharedReading()  # the requests encoded once, each distinct answer read once
    sessions = [
        RefSession(
            v.plan,
            side,
            ref,
            label=f"{ref} [{v.name}]",  # names the variant in progress lines and records
            pins=dict(v.pins),  # over the side's and the ref's settings, last
            reading=reading,
        )
        for v in variants
    ]
    return run_interleaved(sessions, repeats=repeats, fresh=fresh)


def slug(text: str) -> str:
    """A variant's name as a file name's part: "SINK=1" stays, other characters become "-"."""
    return re.sub(r"[^A-Za-z0-9._=,-]+", "-", text).strip("-")[:80] or "value"


def save_variants(
    results_dir: Path,
    kind: str,
    document: Mapping[str, Any],
    report: str,
    comparisons: Mapping[str, Comparison],
    *,
    redact: bool = False,
) -> Path:
    """Write results_dir/<kind>_<UTC stamp>/ (suffixed -2, -3, ... if taken) holding
    <kind>.json (`document`), report.md (`report`) and vs_<name>.json, each variant's comparison
    with the reference, which `harness report PATH` renders in full; with `redact`, those hold
    no query text. Return the directory."""
    directory = new_directory(results_dir, f"{kind}_{utc_stamp()}")
    write_json_new(directory / f"{kind}.json", document)
    write_text_new(directory / REPORT_FILE, report)
    for name, comparison in comparisons.items():
        write_json_new(
            directory / f"vs_{slug(name)}.json", comparison_to_dict(comparison, redact=redact)
        )
    return directory

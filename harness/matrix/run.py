"""Running a matrix and saving it: the I/O of `harness matrix`.

    run_matrix(plan, side, ref, matrix, repeats=3, fresh=False) -> tuple[RefRun, ...]
    save_matrix(results_dir, result, comparisons) -> Path

Each configuration is the side's config with its overrides and env pins applied
(`harness.matrix.spec.apply_entry`; a matching `[ref."PATTERN"]` table applies over its
service/query overrides, and its env pins come last, as a sweep's), so each has its own config
hash, run record and reusable measurements; the sessions of all configurations run with their
repeats interleaved (`harness.driver.runner.run_interleaved`), as a sweep's values do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from harness.driver.runner import RefSession, RunPlan, SharedReading, run_interleaved
from harness.matrix.render import matrix_to_dict, render_matrix
from harness.matrix.spec import apply_entry
from harness.matrix.summary import MatrixResult
from harness.matrix.values import Matrix
from harness.results.document import comparison_to_dict
from harness.results.files import new_directory, utc_stamp, write_json_new, write_text_new
from harness.sweep.run import slug
from harness.types import RefRun
from harness.verdict.comparison import Comparison

MATRIX_FILE = "matrix.json"
REPORT_FILE = "report.md"


def plans(plan: RunPlan, side: str, matrix: Matrix) -> list[RunPlan]:
    """One plan per configuration, in matrix order; ConfigError before anything runs when a
    configuration cannot be booted as written."""
    return [
        replace(plan, config=apply_entry(plan.config, side, entry, matrix.source))
        for entry in matrix.entries
    ]


def run_matrix(
    plan: RunPlan, side: str, ref: str, matrix: Matrix, *, repeats: int, fresh: bool = False
) -> tuple[RefRun, ...]:
    """One RefRun per configuration, in order; each record's `ref` is "REF [NAME]"."""
    reading = SharedReading()
    sessions = [
        # env pins last, over any [ref."PATTERN"] table, as a sweep's values are
        RefSession(
            p, side, ref, label=f"{ref} [{entry.name}]", pins=dict(entry.env), reading=reading
        )
        for p, entry in zip(plans(plan, side, matrix), matrix.entries, strict=True)
    ]
    return run_interleaved(sessions, repeats=repeats, fresh=fresh)


def save_matrix(
    results_dir: Path,
    result: MatrixResult,
    comparisons: Mapping[str, Comparison],
    *,
    redact: bool = False,
) -> Path:
    """Write results_dir/matrix_<UTC stamp>/ (suffixed -2, -3, ... if taken) holding
    matrix.json, report.md and vs_<name>.json, each configuration's comparison with the
    reference (`harness report PATH` renders it in full); with `redact`, those hold no query
    text. Return the directory."""
    directory = new_directory(results_dir, f"matrix_{utc_stamp()}")
    write_json_new(directory / MATRIX_FILE, matrix_to_dict(result))
    write_text_new(directory / REPORT_FILE, render_matrix(result, "markdown"))
    for name, comparison in comparisons.items():
        document = comparison_to_dict(comparison, redact=redact)
        write_json_new(directory / f"vs_{slug(name)}.json", document)
    return directory

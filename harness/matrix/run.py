"""Running a matrix and saving it: the I/O of `harness matrix`, on the variants' engine
(`harness.variants.run`).

    run_matrix(plan, side, ref, matrix, repeats=3, fresh=False) -> tuple[RefRun, ...]
    save_matrix(results_dir, result, comparisons) -> Path

Each configuration is a variant named by its name, run under the side's config with its
overrides and env pins applied (`harness.matrix.spec.apply_entry`; a matching `[ref."PATTERN"]`
table applies over its service/query overrides, and its env pins come last, as a sweep's), so
each has its own config hash, run record and reusable measurements.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from harness.driver.runner import RunPlan
from harness.matrix.render import matrix_to_dict, render_matrix
from harness.matrix.spec import apply_entry
from harness.matrix.summary import MatrixResult
from harness.matrix.values import Matrix
from harness.values.types import RefRun
from harness.variants.run import Variant, run_variants, save_variants
from harness.verdict.comparison import Comparison


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
    variants = [
        # env pins last, over any [ref."PATTERN"] table, as a sweep's values are
        Variant(entry.name, p, entry.env)
        for p, entry in zip(plans(plan, side, matrix), matrix.entries, strict=True)
    ]
    return run_variants(side, ref, variants, repeats=repeats, fresh=fresh)


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
    document, report = matrix_to_dict(result), render_matrix(result, "markdown")
    return save_variants(results_dir, "matrix", document, report, comparisons, redact=redact)

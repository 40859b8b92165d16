"""What every test in harness.verdict shares: aligned paired arrays, bootstrap resample indices in
bounded chunks, percentile intervals, and the argument checks (a broken contract is a ValueError:
a bug in the caller, not user input)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from harness.values.swing import check_alpha as check_alpha
from harness.values.swing import check_count as check_count

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]

# Resampled values held in memory at once: bounds the (chunk x queries) index matrices.
CHUNK_ELEMENTS = 1 << 21


def aligned(baseline: npt.ArrayLike, candidate: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
    base = np.asarray(baseline, dtype=np.float64)
    cand = np.asarray(candidate, dtype=np.float64)
    if base.ndim != 1 or base.shape != cand.shape or base.size == 0:
        raise ValueError(
            "baseline and candidate must be non-empty 1-D arrays aligned by query, "
            f"got shapes {base.shape} and {cand.shape}"
        )
    if not (np.isfinite(base).all() and np.isfinite(cand).all()):
        raise ValueError("baseline and candidate must be finite (a failed query is not a score)")
    return base, cand


def paired_deltas(baseline: npt.ArrayLike, candidate: npt.ArrayLike) -> FloatArray:
    base, cand = aligned(baseline, candidate)
    return cand - base


def chunk_sizes(total: int, width: int) -> list[int]:
    rows = max(1, CHUNK_ELEMENTS // max(width, 1))
    return [min(rows, total - start) for start in range(0, total, rows)]


def resample_indices(
    rng: np.random.Generator, n: int, resamples: int
) -> Iterator[npt.NDArray[np.int64]]:
    # Lazily, one chunk at a time: 10k resamples of 1000 queries would be 80 MB of indices.
    for rows in chunk_sizes(resamples, n):
        yield rng.integers(0, n, size=(rows, n))


def percentile_interval(values: FloatArray, confidence: float) -> tuple[float, float]:
    tail = 100 * (1 - confidence) / 2
    lo, hi = np.percentile(values, [tail, 100 - tail], method="linear")
    return float(lo), float(hi)


def check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), not {confidence}")


def check_resamples(resamples: int) -> None:
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, not {resamples}")

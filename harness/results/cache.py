"""The comparison cache: a comparison computed once is read back, not recomputed.

    comparison = cached_compare(results_dir, gold, baseline, candidate, settings,
                                compute, corpus_hash=...)

`compute` makes the comparison when no entry holds it: the caller hands down the verdict stage's
`compare` (results stores a comparison, it never decides one).

Key (`comparison_key`): sha256 of both run records (each record's JSON header, which names the
sha256 of its answers file, with the repeats and the reuse and pairing marks the comparison
used; a run never written to a file is hashed from the record it would be), every
CompareSettings field, the gold set's and corpus's hashes and the harness version. So a
re-compare of two reused runs with the same settings reads no answer and does no statistics at
all; any change to a record, a setting (alpha, seed, k, gate_on, resamples, ...), the gold
set, the corpus or the harness recomputes. Entries live in `results_dir/cache/comparisons/`,
one `<key>.json` each (the comparison as `harness.results.document` writes it, never redacted:
redaction happens when a report is rendered), written atomically, never overwritten. An entry
is byte for byte the comparison.json `save_comparison` writes (`comparisons.comparison_bytes`):
the comparison is encoded once, for both, and an entry read back is saved as it was read, not
decoded and encoded again. An entry that cannot be read (another schema, a damaged file) is
ignored and recomputed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from harness import __version__
from harness.errors import ResultsError
from harness.results.comparisons import comparison_bytes, remember_bytes
from harness.results.document import comparison_from_dict
from harness.results.files import read_json_bytes, write_bytes_new
from harness.results.records import encode_run
from harness.values.types import GoldSet, RefRun
from harness.verdict.comparison import CompareSettings, Comparison

CACHE_DIR = Path("cache") / "comparisons"
ENTRY = 2  # 2: the entry is comparison.json's bytes (1: compact JSON)


def _run_digest(run: RefRun) -> str:
    marks = {"repeats": len(run.repeats), "reused": run.reused, "pair_id": run.pair_id}
    digest = hashlib.sha256(json.dumps(marks, sort_keys=True).encode())
    path = Path(run.record_path) if run.record_path else None
    if path is not None and path.is_file():
        with path.open("rb") as f:
            digest.update(hashlib.file_digest(f, "sha256").digest())
        digest.update(run.sha.encode() + run.config_hash.encode())
    else:
        # Never saved: its record as it would be written (the header names the answers' sha256).
        digest.update(json.dumps(encode_run(run)[0], sort_keys=True, default=str).encode())
    return digest.hexdigest()


def comparison_key(
    gold: GoldSet,
    baseline: RefRun,
    candidate: RefRun,
    settings: CompareSettings,
    corpus_hash: str | None,
) -> str:
    """The cache key of comparing these two runs on this gold set with these settings."""
    parts = {
        "baseline": _run_digest(baseline),
        "candidate": _run_digest(candidate),
        "settings": asdict(settings),
        "gold": gold.hash,
        "corpus": corpus_hash,
        "version": __version__,
        "entry": ENTRY,
    }
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def cached_compare(
    results_dir: Path,
    gold: GoldSet,
    baseline: RefRun,
    candidate: RefRun,
    settings: CompareSettings,
    compute: Callable[[], Comparison],
    *,
    corpus_hash: str | None = None,
    use: bool = True,
) -> tuple[Comparison, bool]:
    """(the comparison, whether it came from the cache): `compute()` unless an entry for exactly
    these inputs exists; a new result is stored for next time (a full disk only skips that).
    `use=False` (a --redact compare: an entry holds query texts and error details) neither reads
    nor writes the cache."""
    if not use:
        return compute(), False
    key = comparison_key(gold, baseline, candidate, settings, corpus_hash)
    path = results_dir / CACHE_DIR / f"{key}.json"
    if path.is_file():
        try:
            document, data = read_json_bytes(path)
            found = comparison_from_dict(document, str(path))
        except ResultsError:
            pass  # another schema or a damaged entry: recompute
        else:
            remember_bytes(found, data)
            return found, True
    comparison = compute()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_new(path, comparison_bytes(comparison))
    except (OSError, ResultsError):
        pass  # the cache is an optimisation: the comparison itself is saved elsewhere
    return comparison, False

"""The evaluation-definition hash: one sha256 over everything that defines a measurement.

Pure: no I/O.  A definition has named parts, each the sha256 of the canonical JSON (sorted keys,
no spaces, UTF-8) of its value, and one overall hash, the sha256 of the canonical JSON of
{part name: part hash}:

    gold     the gold set's content hash (`harness.gold.canonical`: queries, judgements, spans)
    corpus   the corpus sha256 (null when the gold set names none)
    query    how each gold query is asked and read: the query settings (`[query]`) of each side,
             keys left unset (null) dropped, so a record made before a key existed still matches
    k        the cutoffs, sorted
    metrics  the metric registry's version (`metrics.METRICS_VERSION`), the metric names
             measured and rel_level
    config   the configuration: each side's effective config hash and the settings that decide
             the verdict (alpha, min_effect, tolerances, seed, resamples, gate_on)

Two artifacts measure the same thing only when the parts that matter to them are equal
(`differing`): a comparison against a comparison, all of them; a gate baseline file against a
new run, every part but `config` (the service's configuration is what a gate judges) and the
metric names (the gate names its own); a reused record, the parts a run records.  What differs
is named in words ("the gold set differs").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence

# The values live in harness.values.types (a RefRun carries one); re-exported for the stages that
# make and compare them.
from harness.values.types import Definition as Definition
from harness.values.types import DefinitionPart as DefinitionPart

PARTS = ("gold", "corpus", "query", "k", "metrics", "config")
WORDS = {
    "gold": "the gold set differs",
    "corpus": "the corpus differs",
    "query": "the query settings differ",
    "k": "k differs",
    "metrics": "the metric definitions differ",
    "config": "the configuration differs",
}


def _canonical(names: Sequence[str]) -> list[str]:
    """Metric names as the registry spells them (`nDCG@10` and `ndcg_cut_10` are `ndcg@10`), so
    two spellings of one measurement define the same thing; an unknown name is kept as is."""
    from harness.score.metrics import parse_metric

    found = []
    for name in names:
        try:
            found.append(parse_metric(name).canonical)
        except ValueError:
            found.append(name)
    return found


def _metrics_version() -> str:
    # Imported on use: the metric registry brings numpy, which `harness --help` must not load
    # (tests/score/test_fast_paths.py).
    from harness.score.metrics import METRICS_VERSION

    return METRICS_VERSION


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _set_keys(query: Mapping[str, object]) -> dict[str, object]:
    return {k: v for k, v in query.items() if v is not None}


def definition(
    *,
    gold: str,
    corpus: str | None,
    query: Mapping[str, Mapping[str, object]],
    k: Iterable[int],
    metrics: Sequence[str] = (),
    rel_level: int = 1,
    config: Mapping[str, object] | None = None,
) -> Definition:
    """The definition of one measurement (module docstring); `query` maps each side measured
    ("baseline", "candidate", or the one side of a run) to its query settings."""
    values = {
        "gold": gold,
        "corpus": corpus,
        "query": {side: _set_keys(q) for side, q in query.items()},
        "k": sorted(set(k)),
        "metrics": {
            "version": _metrics_version(),
            "names": _canonical(metrics),
            "rel_level": rel_level,
        },
        "config": dict(config or {}),
    }
    parts = tuple(DefinitionPart(name, _digest(values[name])) for name in PARTS)
    return Definition(_digest({p.name: p.sha256 for p in parts}), parts)


def definition_from_dict(value: object) -> Definition | None:
    """A definition read back from a record or file; None when absent (written before it)."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or not isinstance(value.get("parts"), Mapping):
        raise ValueError("definition: expected {\"sha256\": ..., \"parts\": {...}}")
    parts = value["parts"]
    return Definition(
        str(value["sha256"]),
        tuple(DefinitionPart(str(name), str(parts[name])) for name in PARTS if name in parts),
    )


def differing(a: Definition, b: Definition, parts: Iterable[str] = PARTS) -> list[str]:
    """The parts (among `parts`) whose hashes differ, in words ("the gold set differs")."""
    return [WORDS[name] for name in parts if a.part(name) != b.part(name)]

"""A run measured for the gate: per scope (overall, each slice with an answerable query) and per
gated metric, the mean over usable repeats and the noise (max - min of the repeat means).
Pure; `harness.gate` states every rule. The usable repeats and the errored answers are those of
`harness.verdict.validity`, as in a comparison.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from harness.score.definition import Definition, definition
from harness.score.evaluation import evaluate, returned_texts
from harness.score.metrics import parse_metric
from harness.values.types import OVERALL, GoldSet, RefRun
from harness.verdict import validity

DIGITS = 6


def rounded(x: float) -> float:
    """`x` to DIGITS decimals, the precision of every number the gate compares and writes."""
    # + 0.0 turns -0.0 into 0.0, so that the same number always prints the same.
    return round(float(x), DIGITS) + 0.0


# --------------------------------------------------------------------------- values


@dataclass(frozen=True)
class ScopeValues:
    """One scope: n answerable queries analysed, and per metric its value and noise."""

    n: int
    values: Mapping[str, float]
    noise: Mapping[str, float]


@dataclass(frozen=True)
class Baseline:
    """What a baseline file holds (and what a fresh measurement produces)."""

    gold_hash: str
    gold_queries: int
    metrics: tuple[str, ...]
    sha: str
    repeats: int
    overall: ScopeValues
    slices: Mapping[str, ScopeValues]
    # The gate's evaluation definition (`gate_definition`); None in files written before it.
    definition: Definition | None = None
    # metric -> query id -> its value, the mean over usable repeats, for every analysed
    # answerable query: what compare's paired tests read (`harness.gate.paired`). Empty in
    # files written before it (the gate then applies the noise rule).
    per_query: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def scope(self, name: str) -> ScopeValues | None:
        return self.overall if name == OVERALL else self.slices.get(name)

    @property
    def scopes(self) -> tuple[str, ...]:
        return (OVERALL, *sorted(self.slices))


@dataclass(frozen=True)
class Measured:
    """A run measured for the gate: a Baseline when the run is valid, else the reasons."""

    baseline: Baseline | None
    invalid: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    ref: str = ""


# --------------------------------------------------------------------------- measuring


def _validity(gold: GoldSet, run: RefRun, max_errors: int) -> tuple[list[str], list[str]]:
    label = f"{run.ref} ({run.sha[:8]})"
    invalid = validity.run_failures(label, run)
    too_many, warnings = validity.errored_problems(gold, run, label, max_errors, examples=False)
    invalid += too_many
    if run.gold_hash != gold.hash:
        invalid.append(
            f"{label} was measured against gold {run.gold_hash[:12]}, not the gold set given "
            f"({gold.hash[:12]}); run it again"
        )
    return invalid, warnings


def _scope(
    per_repeat: Sequence[Mapping[str, float]], n: int, metrics: Sequence[str]
) -> ScopeValues:
    values = {m: rounded(sum(r[m] for r in per_repeat) / len(per_repeat)) for m in metrics}
    noise = {
        m: rounded(max(r[m] for r in per_repeat) - min(r[m] for r in per_repeat)) for m in metrics
    }
    return ScopeValues(n, values, noise)


def gate_definition(gold: GoldSet, run: RefRun) -> Definition:
    """What a gate's numbers depend on besides the service: the gold set, the corpus, the query
    settings and the metric version (the gated names are checked by the rule itself; the
    service's configuration is what the gate judges, so it is left out)."""
    return definition(
        gold=gold.hash,
        corpus=gold.corpus.sha256 if gold.corpus else run.corpus_hash,
        query={"run": run.query_config},
        k=(),
    )


def measure(gold: GoldSet, run: RefRun, metrics: Sequence[str], *, max_errors: int = 0) -> Measured:
    """Score `run` for the gate (`harness.gate` states how); metrics are canonical names."""
    specs = tuple(parse_metric(m) for m in metrics)
    names = tuple(str(s) for s in specs)
    invalid, warnings = _validity(gold, run, max_errors)
    usable = [validity.by_query(rep) for rep in validity.usable(run)]
    if invalid or not usable:
        return Measured(None, tuple(invalid), tuple(warnings), run.ref)
    analysed = tuple(q for q in gold.queries if all(q.id in a and a[q.id].ok for a in usable))
    subset = replace(gold, queries=analysed)
    evaluations = [
        evaluate(
            subset,
            {qid: r.ids for qid, r in a.items() if r.ok},
            specs,
            texts=returned_texts(a) if any(s.needs_texts for s in specs) else None,
        )
        for a in usable
    ]
    if not evaluations[0].n:
        reason = f"{run.ref} ({run.sha[:8]}): no answerable query was answered: nothing to gate"
        return Measured(None, (reason,), tuple(warnings), run.ref)
    overall = _scope([ev.aggregate for ev in evaluations], evaluations[0].n, names)
    slices = {
        name: _scope([ev.slices[name].values for ev in evaluations], score.n, names)
        for name, score in evaluations[0].slices.items()
        if score.n
    }
    ids = evaluations[0].query_ids
    per_query = {
        name: {
            qid: rounded(sum(float(ev.columns[name][i]) for ev in evaluations) / len(evaluations))
            for i, qid in enumerate(ids)
        }
        for name in names
    }
    baseline = Baseline(
        gold_hash=gold.hash,
        gold_queries=len(gold),
        metrics=names,
        sha=run.sha,
        repeats=len(usable),
        overall=overall,
        slices=slices,
        definition=gate_definition(gold, run),
        per_query=per_query,
    )
    return Measured(baseline, (), tuple(warnings), run.ref)

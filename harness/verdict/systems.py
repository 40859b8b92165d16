"""Run files of several systems, each compared with the first (`harness compare-runs`). Pure.

    compare_systems(gold, [baseline, candidate, ...], settings) -> Systems

Each system is a ranking per query (a TREC or native run file, read by `harness.score.runfile`)
made into a RefRun of one repeat, nothing timed, and compared with the baseline by
`compare.compare`: the same paired tests as `harness compare` (one repeat per side is a
deterministic pair, so hit@k is McNemar's exact test; mrr, ndcg, recall and p the sign-flip
randomization test with a paired bootstrap interval, both seeded), Holm across slices, the flip
list, and every check of the inputs (a run that returned nothing, ids no judgement knows).

Then one family: the headline tests of every candidate (hit@k at each cutoff and every gate_on
metric, for each system against the baseline) are Holm-adjusted together, so a call holds only
when its p adjusted across systems x cutoffs is below alpha (`compare.rejudge`).  A comparison
that is invalid makes no call and is not in the family.

A gold query that a run file has no line for is an empty ranking: it scores 0 on every metric,
as `trec_eval -c` scores it, and a warning names how many.  A run file carries neither repeats
nor timings: latency is never compared, and the report says so (NO_LATENCY).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from harness import __version__
from harness.values.answers import Answers, ranked_columns
from harness.values.types import GoldSet, RefRun, Repeat, Verdict
from harness.verdict import stats
from harness.verdict.comparison import CompareSettings, Comparison
from harness.verdict.decide import compare, headline_rows, rejudge

NO_LATENCY = "runs from files: no repeats, no latency"
_SHOWN_IDS = 5


@dataclass(frozen=True)
class SystemRun:
    """One system's rankings as its run file gave them: `name` is how reports call it (the
    path as given), `sha256` the file's content hash (its identity in the header)."""

    name: str
    sha256: str
    rankings: Mapping[str, Sequence[str]]
    scores: Mapping[str, Sequence[float]] | None = None


@dataclass(frozen=True)
class Systems:
    """Every candidate's Comparison with the baseline, in the order given, after Holm across
    the family of every candidate's headline tests (`family` of them)."""

    baseline: str
    comparisons: tuple[Comparison, ...]
    family: int
    settings: CompareSettings

    @property
    def candidates(self) -> tuple[str, ...]:
        return tuple(c.header.candidate.ref for c in self.comparisons)


def as_ref_run(system: SystemRun, gold: GoldSet) -> RefRun:
    """`system` as a RefRun of one repeat: an answer to every gold query (empty where the run has
    no line for it), untimed; never paired for latency (no pair_id). The answers' columns are
    built from the rankings flattened (by the run's own reader where it has one: `flat`), not
    from a QueryResult per query."""
    ids = [q.id for q in gold.queries]
    docs, sizes = _flat(system.rankings, ids)
    scores = system.scores or {}
    scored = [qid in scores for qid in ids]
    values, score_sizes = _flat(scores, ids)
    results = Answers(ranked_columns(ids, docs, sizes, values, score_sizes, scored))
    return RefRun(
        ref=system.name,
        sha=system.sha256,
        config_hash="",
        gold_hash=gold.hash,
        corpus_hash=None,
        tool_version=__version__,
        host={},
        repeats=(Repeat(0, results),),
    )


def _flat(ranked: Mapping[str, Sequence[Any]], ids: Sequence[str]) -> tuple[Any, list[int]]:
    """Each query's values in `ranked` (none for a query it lacks), flattened in the order of
    `ids`, and how many each has: the reader's own `flat` when it has one (a run read
    column-wise: `harness.score.columns.Ranked`, `harness.score.arrowrun.ArrowRanked`)."""
    flat = getattr(ranked, "flat", None)
    if flat is not None:
        found: tuple[Any, list[int]] = flat(ids)
        return found
    rows = [ranked.get(qid, ()) for qid in ids]
    return [v for row in rows for v in row], [len(row) for row in rows]


def _absent(system: SystemRun, gold: GoldSet, side: str) -> list[str]:
    missing = [q.id for q in gold.queries if q.id not in system.rankings]
    if not missing:
        return []
    shown = ", ".join(missing[:_SHOWN_IDS]) + (", ..." if len(missing) > _SHOWN_IDS else "")
    return [
        f"{side} {system.name}: no line for {len(missing)} of the {len(gold)} gold queries "
        f"({shown}): each scores 0, as trec_eval -c scores it"
    ]


_IDS_ADVICE = "check query.ids: it must pick the document id field of each result"
_RUN_IDS = (
    "check the run file's docid column: it must hold the corpus's document ids (the gold set's), "
    "not row numbers or another collection's ids"
)


def _from_files(comparison: Comparison, absent: Sequence[str]) -> Comparison:
    """The comparison as run files allow: latency not compared because there is none to compare
    (said once, in plain words, instead of the advice for live runs), and absent queries named."""
    kept = tuple(w for w in comparison.warnings if not w.startswith("latency not compared"))
    latency = replace(comparison.latency, words=NO_LATENCY, not_compared=NO_LATENCY)
    return replace(
        comparison,
        # A run file has no query.ids to check, nor boots to repeat: said in its own terms.
        invalid_reasons=tuple(r.replace(_IDS_ADVICE, _RUN_IDS) for r in comparison.invalid_reasons),
        boots=None,
        warnings=(*absent, *kept),
        latency=latency,
        verdict_latency=Verdict.NOT_COMPARED
        if comparison.verdict_latency is not Verdict.INVALID
        else Verdict.INVALID,
        latency_reason=NO_LATENCY if comparison.valid else comparison.latency_reason,
    )


def compare_systems(
    gold: GoldSet,
    systems: Sequence[SystemRun],
    settings: CompareSettings,
    corpus_ids: frozenset[str] | None = None,
) -> Systems:
    """Each system after the first compared with the first over `gold` (see the module
    docstring), Holm across every candidate's headline tests; `corpus_ids`, when given, the ids
    a returned id must be one of (`compare.compare`)."""
    if len(systems) < 2:
        raise ValueError("compare_systems needs a baseline and at least one candidate")
    baseline, *candidates = systems
    base = as_ref_run(baseline, gold)
    base_absent = _absent(baseline, gold, "baseline")
    found = [
        _from_files(
            compare(
                gold,
                base,
                as_ref_run(cand, gold),
                settings,
                corpus_ids,
                comparisons=len(candidates),
            ),
            base_absent + _absent(cand, gold, "candidate"),
        )
        for cand in candidates
    ]
    found, family = judged_together(found, "systems")
    return Systems(
        baseline=baseline.name,
        comparisons=tuple(found),
        family=family,
        settings=settings,
    )


def judged_together(comparisons: Sequence[Comparison], what: str) -> tuple[list[Comparison], int]:
    """Several comparisons against one reference (systems, a sweep's values, a matrix's
    configurations; each made with `compare(..., comparisons=len(...))`), their headline tests
    Holm-adjusted as one family, so that a call holds across all of them (`compare.rejudge`):
    with 39 equally good values, some are "regressed" by chance at alpha each. The comparisons
    rejudged (an invalid one makes no call and is not in the family) and the family's size."""
    found = list(comparisons)
    tests = [(i, row) for i, c in enumerate(found) if c.valid for row in headline_rows(c)]
    adjusted = stats.holm([row.p for _, row in tests])
    per_comparison: list[dict[str, float]] = [{} for _ in found]
    for (i, row), adj in zip(tests, adjusted, strict=True):
        per_comparison[i][row.metric] = adj
    judged = sum(1 for c in found if c.valid)
    family = f"the {len(tests)} headline tests of {judged} {what}"
    if judged > 1:
        found = [rejudge(c, adj, family) for c, adj in zip(found, per_comparison, strict=True)]
    return found, len(tests)

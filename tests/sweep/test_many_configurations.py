"""Many configurations against one reference: `harness sweep` and `harness matrix` call a change
only when it holds across all of them (Holm over every configuration's headline tests, as
compare-runs does across systems), not whenever one configuration's own test is under alpha.

As a user met it: 39 equally good values of a knob against the first, each tested at alpha on
its own: 13 were "regressed" and the sweep named its reference the best. Here each of 39
configurations moves a different 8 of 120 queries' relevant document from rank 1 to rank 3:
mrr@10's exact sign-flip p is 2 / 2**8 = 0.0078 for each on its own (called regressed), far
from what holds across 39 configurations x 3 headline tests."""

from __future__ import annotations

from harness.matrix.summary import summarise as summarise_matrix
from harness.matrix.values import Entry, Matrix
from harness.sweep.summary import summarise as summarise_sweep
from harness.values.types import GoldQuery, GoldSet, QueryResult, RefRun, Repeat, Verdict
from harness.verdict.comparison import CompareSettings

N = 120
VALUES = 40
MOVED = 8
GOLD = GoldSet(
    tuple(GoldQuery(f"q{i:03d}", f"query {i}", relevant={f"d{i}": 1}) for i in range(N)),
    "gold.jsonl",
    "native",
    "e" * 64,
)
SETTINGS = CompareSettings(resamples=2000)
CALLED = (Verdict.IMPROVED, Verdict.REGRESSED)


def _run(value: int) -> RefRun:
    """Value 0 answers every query's document first; value v > 0 puts it third for 8 queries."""
    moved = set(range(value * 3, value * 3 + MOVED)) if value else set()
    results = tuple(
        QueryResult(
            q.id,
            ids=("x1", "x2", f"d{i}", "x3") if i in moved else (f"d{i}", "x1", "x2", "x3"),
            status=200,
            latency_ns=1_000_000,
        )
        for i, q in enumerate(GOLD.queries)
    )
    return RefRun(
        f"main [J=t{value}]", "a" * 40, f"c{value}", GOLD.hash, None, "0", {},
        (Repeat(0, results),),
    )  # fmt: skip


RUNS = [_run(v) for v in range(VALUES)]


def test_each_configuration_alone_would_be_called() -> None:
    # The case the tests below guard: without the family, every one of them is "regressed".
    from harness.verdict.decide import compare

    settings = CompareSettings(resamples=2000, gate_on=("mrr@10",))
    alone = compare(GOLD, RUNS[0], RUNS[1], settings)
    assert alone.verdict_quality is Verdict.REGRESSED


def test_a_sweep_calls_no_value_its_family_does_not_hold() -> None:
    points = [(("J", f"t{v}"),) for v in range(VALUES)]
    _, comparisons = summarise_sweep(GOLD, points, RUNS, 0, ("mrr@10",), SETTINGS)
    called = [name for name, c in comparisons.items() if c.verdict_quality in CALLED]
    assert called == [], called
    notes = {r.note for c in comparisons.values() for r in c.overall.rows if r.note}
    assert "not significant after Holm across the 117 headline tests of 39 values" in notes


def test_a_matrix_gives_no_verdict_its_family_does_not_hold() -> None:
    entries = tuple(Entry(f"t{v}", env={"J": f"t{v}"}) for v in range(VALUES))
    matrix = Matrix("m.toml", "t0", entries, ("mrr@10",), ())
    result, _ = summarise_matrix(GOLD, matrix, RUNS, ("mrr@10",), SETTINGS)
    verdicts = {r.name: r.quality for r in result.table.rows if not r.reference}
    assert not [n for n, q in verdicts.items() if q in ("improved", "regressed")], verdicts

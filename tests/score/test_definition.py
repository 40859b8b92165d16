"""The evaluation-definition hash: its parts, the part named when two differ, old artifacts still
readable, and where it is enforced (gate baseline files, report --against, reuse)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from cli_support import run_cli
from compare_support import FAST, candidate, make_gold, make_run, ranks
from records_v1 import run_to_dict_v1

from harness.errors import NotComparableError
from harness.gate.baseline_file import baseline_from_dict, baseline_to_dict
from harness.gate.measure import gate_definition, measure
from harness.gate.rule import Outcome, check
from harness.report.saved import save_comparison
from harness.results.records import run_from_dict
from harness.score.definition import PARTS, definition, definition_from_dict, differing
from harness.score.metrics import METRICS_VERSION
from harness.verdict.decide import compare
from harness.verdict.same_definition import same_definition

BASE = dict(gold="g" * 64, corpus=None, query={"run": {"path": "/search", "texts": None}},
            k=(5, 10), metrics=("hit@5",), config={"side": "c" * 64})


def test_each_part_is_hashed_and_a_difference_is_named() -> None:
    a = definition(**BASE)
    assert [p.name for p in a.parts] == list(PARTS) and len(a.sha256) == 64
    assert definition(**BASE) == a  # deterministic
    assert definition(**{**BASE, "k": (10, 5, 5)}) == a  # k is a set of cutoffs
    # A key left unset is dropped: a record made before query.texts existed still matches.
    assert definition(**{**BASE, "query": {"run": {"path": "/search"}}}) == a
    changes = {
        "gold": ("gold", "h" * 64, "the gold set differs"),
        "k": ("k", (5,), "k differs"),
        "metrics": ("metrics", ("hit@5", "ndcg@10"), "the metric definitions differ"),
        "config": ("config", {"side": "d" * 64}, "the configuration differs"),
        "query": ("query", {"run": {"path": "/other"}}, "the query settings differ"),
        "corpus": ("corpus", "e" * 64, "the corpus differs"),
    }
    for key, value, words in changes.values():
        b = definition(**{**BASE, key: value})
        assert b.sha256 != a.sha256 and differing(a, b) == [words]
    assert definition_from_dict(a.to_dict()) == a
    assert definition_from_dict(None) is None
    # The metric registry's version is inside the metrics part.
    assert definition(**BASE).part("metrics") == definition(**BASE).part("metrics")
    assert METRICS_VERSION


def test_old_records_without_a_definition_stay_readable() -> None:
    gold = make_gold()
    record = run_to_dict_v1(make_run(gold, ranks()))
    record.pop("definition")
    assert run_from_dict(record).definition is None


def test_a_gate_baseline_with_another_definition_is_not_comparable() -> None:
    gold = make_gold()
    run = make_run(gold, ranks())
    measured = measure(gold, run, ["hit@5"])
    assert measured.baseline is not None
    assert measured.baseline.definition == gate_definition(gold, run)
    recorded = baseline_from_dict(baseline_to_dict(measured.baseline), "file")
    assert check(recorded, measured).outcome is Outcome.PASS
    asked_otherwise = replace(run, query_config={"path": "/v2/search"})
    result = check(recorded, measure(gold, asked_otherwise, ["hit@5"]))
    assert result.outcome is Outcome.NOT_COMPARABLE
    assert "the query settings differ" in result.reason
    # A baseline file written before definitions existed is still read and compared.
    old = baseline_to_dict(measured.baseline)
    old.pop("definition")
    assert check(baseline_from_dict(old, "old"), measured).outcome is Outcome.PASS


def _saved(tmp_path: Path, name: str, settings=FAST) -> Path:
    gold = make_gold()
    base, cand = make_run(gold, ranks()), candidate(gold, ranks())
    comparison = compare(gold, base, cand, settings)
    return save_comparison(tmp_path / name, comparison, (base, cand))


def test_report_against_names_the_part_that_differs(tmp_path: Path) -> None:
    one = _saved(tmp_path, "one")
    same = _saved(tmp_path, "same")
    other_k = _saved(tmp_path, "other", replace(FAST, k=(5,)))
    done = run_cli("harness", "report", one, "--against", same, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "same evaluation definition" in done.stderr
    assert "evaluation definition: sha256 " in done.stdout
    done = run_cli("harness", "report", one, "--against", other_k, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "k differs" in done.stderr and "the metric definitions differ" in done.stderr
    assert "the gold set differs" not in done.stderr


def test_a_comparison_saved_before_definitions_is_refused_by_name() -> None:
    gold = make_gold()
    c = compare(gold, make_run(gold, ranks()), candidate(gold, ranks()), FAST)
    old = replace(c, header=replace(c.header, definition=None))
    with pytest.raises(NotComparableError, match="before evaluation definitions"):
        same_definition(c, "new", old, "old")


def test_two_spellings_of_one_metric_define_the_same_measurement() -> None:
    from harness.score.definition import definition

    def of(*names: str) -> object:
        return definition(gold="g", corpus=None, query={"run": {}}, k=[10], metrics=names)

    assert of("nDCG@10", "P_5") == of("ndcg@10", "p@5")
    assert of("ndcg@10") != of("mrr@10")

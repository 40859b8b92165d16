"""Issue 39, part 3: the gold format tells an unanswerable query from one nobody has answered yet.

A native gold file says it with a query's "answerable" key or the header's "judged" ("pooled":
a query judged only 0 is answerable, its answer not found yet; "complete": it is unanswerable).
Without either, every query keeps the meaning it always had (some grade >= 1 is answerable) and
the hash it always had; `gold check` warns where a file holds both kinds of query without a
relevant document and says of neither which it is. An answerable query with nothing relevant
judged scores 0 on every quality metric and counts in hit@k's n; the no-answer rate keeps to
the unanswerable queries.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from cli_support import run_cli
from compare_support import FAST, candidate, make_gold, make_run, ranks
from conftest import ROOT

from harness.errors import GoldError
from harness.gold import canonical_form, check_files, convert, load_gold, write_native
from harness.gold.check import check_gold
from harness.gold.render import render_check
from harness.gold.summary import gold_stats
from harness.score.evaluation import evaluate, evaluate_runs
from harness.values.types import GoldQuery, GoldSet
from harness.verdict.decide import compare

OLD = ROOT / "tests" / "fixtures" / "answerable" / "old.jsonl"
# The hash of OLD computed by the code before the "answerable" key existed (commit 279a2db):
# a file without the key and the "judged" header must keep it.
OLD_HASH = "000ae27e27316112c99b4afd8fe5120286471d0417acf305bbacff09c2840e13"
# gold/example.jsonl's, as gold/README.md's `gold stats` excerpt prints it.
EXAMPLE_HASH = "1ee8cb9e2a481e7f9efc905a65d5d6c9e152e79bf5bd299327bcbaddf7d981c9"
# In OLD: a1, a2 have a grade >= 1; p1..p3 are judged only 0; u1, u2 have no judgement at all.
JUDGED_ONLY_0 = ("p1", "p2", "p3")
METRICS = ["hit@5", "recall@5", "p@5", "mrr@10", "ndcg@10", "ndcg_burges@10", "ap", "bpref"]


def _lines() -> list[str]:
    return OLD.read_text(encoding="utf-8").splitlines()


def _variant(tmp_path: Path, header: Mapping[str, object] | None = None,
             keys: Mapping[str, bool] | None = None, name: str = "gold.jsonl") -> Path:
    """OLD with `header` keys added to its header and `keys` as each named query's
    "answerable"; every other byte as it is."""
    out = []
    for line in _lines():
        if line.strip():
            value = json.loads(line)
            if "format" in value:
                value.update(header or {})
            elif value["id"] in (keys or {}):
                value["answerable"] = (keys or {})[value["id"]]
            line = json.dumps(value)
        out.append(line)
    path = tmp_path / name
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def _flags(gold: GoldSet) -> dict[str, bool]:
    return {q.id: q.answerable for q in gold.queries}


# --------------------------------------------------------------------------- old files


def test_a_file_without_the_key_keeps_its_hash_and_its_meaning(tmp_path: Path) -> None:
    gold = load_gold(OLD)
    assert gold.hash == OLD_HASH
    assert load_gold(ROOT / "gold" / "example.jsonl").hash == EXAMPLE_HASH
    assert _flags(gold) == {"a1": True, "a2": True, "p1": False, "p2": False, "p3": False,
                            "u1": False, "u2": False}
    assert all(q.declared is None for q in gold.queries)
    assert all("answerable" not in canonical_form(q) for q in gold.queries)
    # Scored as before: two answerable queries averaged, five for the no-answer rate.
    run = {"a1": ["d1"], "a2": ["x"], "p1": ["d5"], "u1": ["x"]}
    ev = evaluate(gold, run, ["hit@5"])
    assert ev.query_ids == ("a1", "a2")
    assert ev.aggregate["hit@5"] == 0.5
    assert ev.no_answer.query_ids == ("p1", "p2", "p3", "u1", "u2")
    assert ev.no_answer.returned_any == (True, False, False, True, False)
    # Written back natively: no key appears, the hash stays.
    write_native(gold, tmp_path / "back.jsonl")
    assert "answerable" not in (tmp_path / "back.jsonl").read_text(encoding="utf-8")
    assert load_gold(tmp_path / "back.jsonl").hash == OLD_HASH


# --------------------------------------------------------------------------- the key and header


def test_an_explicit_answerable_key_wins(tmp_path: Path) -> None:
    keys = {"p1": True, "u1": True, "p2": False, "u2": False, "a1": True}
    gold = load_gold(_variant(tmp_path, keys=keys))
    assert _flags(gold) == {"a1": True, "a2": True, "p1": True, "p2": False, "p3": False,
                            "u1": True, "u2": False}
    assert {q.id: q.declared for q in gold.queries} == {
        "a1": True, "a2": None, "p1": True, "p2": False, "p3": None, "u1": True, "u2": False}
    # Only what the grades would not tell is hashed: p1 and u1, answerable with no grade >= 1.
    hashed = {q.id for q in gold.queries if "answerable" in canonical_form(q)}
    assert hashed == {"p1", "u1"}
    assert canonical_form(gold.by_id["p1"])["answerable"] is True
    assert gold.hash != OLD_HASH
    # Keys that say what the grades say leave the hash alone.
    same = load_gold(_variant(tmp_path, keys={"p2": False, "u2": False, "a1": True}, name="s"))
    assert same.hash == OLD_HASH
    # Read, written and read again: the same queries, the same hash.
    write_native(gold, tmp_path / "back.jsonl")
    back = load_gold(tmp_path / "back.jsonl")
    assert back.hash == gold.hash and back.queries == gold.queries


def test_a_wrong_answerable_key_is_a_problem_at_its_line(tmp_path: Path) -> None:
    path = _variant(tmp_path, keys={"a1": False})
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2].replace('"relevant": ["d3"]', '"relevant": ["d3"], "answerable": "yes"')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(GoldError) as caught:
        load_gold(path)
    found = {(p.line, p.field): p.message for p in caught.value.problems}
    assert set(found) == {(2, "answerable"), (3, "answerable")}
    assert "answerable is false, but 'd1' has grade >= 1" in found[2, "answerable"]
    assert "true or false" in found[3, "answerable"]
    with pytest.raises(ValueError, match="declared unanswerable"):
        GoldQuery("q", "text", relevant={"d": 1}, declared=False)


def test_a_pooled_header_makes_queries_judged_only_0_answerable(tmp_path: Path) -> None:
    gold = load_gold(_variant(tmp_path, header={"judged": "pooled"}, keys={"p3": False}))
    # p1, p2 answerable (nothing found yet); p3 says otherwise; u1, u2 have no judgement at all.
    assert _flags(gold) == {"a1": True, "a2": True, "p1": True, "p2": True, "p3": False,
                            "u1": False, "u2": False}
    # The header and the same keys on each query are one meaning: one hash.
    spelled = load_gold(_variant(tmp_path, keys={"p1": True, "p2": True}, name="keys.jsonl"))
    assert gold.hash == spelled.hash != OLD_HASH
    # "complete" says what the grades say: the old meaning and the old hash.
    complete = load_gold(_variant(tmp_path, header={"judged": "complete"}, name="c.jsonl"))
    assert _flags(complete) == _flags(load_gold(OLD))
    assert complete.hash == OLD_HASH
    with pytest.raises(GoldError) as caught:
        load_gold(_variant(tmp_path, header={"judged": "partly"}, name="bad.jsonl"))
    [problem] = caught.value.problems
    assert (problem.line, problem.field) == (1, "judged")
    assert '"pooled"' in problem.message and '"complete"' in problem.message


# --------------------------------------------------------------------------- gold check


def _undeclared(gold: GoldSet) -> list[str]:
    report = check_gold(gold)
    return [f.message for f in report.findings if f.field == "answerable"]


def test_gold_check_warns_when_a_file_holds_both_kinds_unsaid(tmp_path: Path) -> None:
    gold, report = check_files(OLD)
    [finding] = [f for f in report.findings if f.field == "answerable"]
    assert (finding.severity, finding.check, finding.line) == ("warning", "controls", 4)
    text = render_check(report)
    line = next(t for t in text.splitlines() if "judged only 0" in t)
    assert line.startswith(f"  {OLD}:4: warning: 3 queries judged only 0 ('p1', 'p2', 'p3') "
                           "and 2 with no judgement ('u1', 'u2')")
    assert "all read as unanswerable, out of hit@k" in line
    assert '"judged": "pooled" in the header, or "answerable": true on each' in line
    assert '"judged": "complete", or "answerable": false' in line
    assert "more characters" not in line  # shown whole, never clipped
    assert report.ok  # a warning: nothing stops
    # Said in the file, any way: no warning.
    for header, keys in (({"judged": "pooled"}, {}), ({"judged": "complete"}, {}),
                         ({}, {"p1": True, "p2": False, "p3": True}),
                         ({}, {"u1": False, "u2": False})):
        assert _undeclared(load_gold(_variant(tmp_path, header, keys))) == [], (header, keys)
    # One kind alone is not ambiguous.
    only_zeros = tuple(q for q in gold.queries if q.relevant)
    assert _undeclared(GoldSet(only_zeros, "g", "native", "h")) == []
    # Many: three named of each, then how many more.
    many = tuple(GoldQuery(f"z{i}", "t", relevant={"d": 0}, line=i + 1) for i in range(5)) + tuple(
        GoldQuery(f"e{i}", "t", line=i + 10) for i in range(4))
    [message] = _undeclared(GoldSet(many, "g", "native", "h"))
    assert message.startswith("5 queries judged only 0 ('z0', 'z1', 'z2' and 2 more) and 4 with "
                              "no judgement ('e0', 'e1', 'e2' and 1 more)")


def test_gold_check_cli_prints_the_warning_and_exits_0(tmp_path: Path) -> None:
    done = run_cli("harness", "gold", "check", OLD, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"{OLD}:4: warning: 3 queries judged only 0" in done.stdout


# --------------------------------------------------------------------------- scoring


def test_an_answerable_query_with_nothing_relevant_scores_0_in_every_mean(tmp_path: Path) -> None:
    gold = load_gold(_variant(tmp_path, header={"judged": "pooled"}, keys={"u1": True}))
    # p1 returns its grade-0 documents and an unjudged one; u1 returns something; u2 nothing.
    run = {"a1": ["d1"], "a2": ["d3"], "p1": ["d5", "new", "d6"], "p2": [], "u1": ["x"],
           "u2": ["y"]}
    ev = evaluate(gold, run, METRICS)
    assert ev.query_ids == ("a1", "a2", "p1", "p2", "p3", "u1")  # p3 missing: scored 0 too
    for name in METRICS:
        column = ev.columns[name]
        assert np.isfinite(column).all(), name
        assert column[2:].tolist() == [0.0] * 4, name  # nothing relevant to find
    assert ev.aggregate["hit@5"] == 2 / 6  # a1 and a2 hit, out of six answerable
    assert ev.slices["howto"].n == 2 and ev.slices["default"].n == 4
    # The no-answer rate keeps to the unanswerable: u2 alone.
    assert ev.no_answer.query_ids == ("u2",) and ev.no_answer.rate == 1.0
    # Scored in a batch (what compare does): the same.
    [pooled] = evaluate_runs(gold, [run], METRICS).evaluations
    assert pooled.query_ids == ev.query_ids and pooled.aggregate == ev.aggregate
    # No answerable query has a relevant judgement: every mean is 0, none divides by zero.
    holes = GoldSet(tuple(q for q in gold.queries if not q.has_relevant and q.answerable),
                    "g", "native", "h")
    none = evaluate(holes, run, METRICS)
    assert none.n == 4 and all(v == 0.0 for v in none.aggregate.values())


def test_stats_and_convert_read_the_declaration(tmp_path: Path) -> None:
    gold = load_gold(_variant(tmp_path, header={"judged": "pooled"}))
    stats = gold_stats(gold)
    assert (stats.answerable, stats.unanswerable) == (5, 2)
    assert stats.relevant_histogram == {0: 3, 1: 2}  # p1..p3 have nothing relevant yet
    # BEIR cannot say a query is answerable: it reads back unanswerable, and the warning says so.
    # (Nor can it hold spans, which convert does not drop yet: a1's are left out here.)
    plain = replace(gold, queries=tuple(replace(q, spans={}) for q in gold.queries))
    warnings = convert(plain, "beir", tmp_path / "beir")
    assert any("3 queries answerable with only grade-0 judgements" in w and "p1, p2, p3" in w
               for w in warnings)
    back = load_gold(tmp_path / "beir")
    assert not any(back.by_id[q].answerable for q in JUDGED_ONLY_0)


# --------------------------------------------------------------------------- compare


def _pooled_gold(tmp_path: Path, pooled: bool) -> GoldSet:
    """compare_support's gold set (80 answerable, 6 with no judgement at all) and one query
    judged only 0, p1, in a native file whose header says "pooled" or nothing."""
    path = tmp_path / f"pooled-{pooled}.jsonl"
    write_native(make_gold(), path)
    header, *rows = path.read_text(encoding="utf-8").splitlines()
    head = json.loads(header) | ({"judged": "pooled"} if pooled else {})
    row = {"id": "p1", "query": "rotate the widget cert", "slice": "news",
           "relevant": {"p1-junk0": 0, "p1-junk1": 0}}
    path.write_text("\n".join([json.dumps(head), *rows, json.dumps(row)]) + "\n",
                    encoding="utf-8")
    return load_gold(path)


def test_compare_counts_a_pooled_query_in_hit_at_k_not_as_unanswerable(tmp_path: Path) -> None:
    results = {}
    for pooled in (False, True):
        gold = _pooled_gold(tmp_path, pooled)
        # Both sides answer p1 the same way (compare_support.ranking): its relevant-looking
        # id first, unjudged, then its grade-0 documents: no hit on either side.
        results[pooled] = compare(gold, make_run(gold, ranks()), candidate(gold, ranks()), FAST)
    old, new = results[False], results[True]
    assert (old.header.gold.n_answerable, old.header.gold.n_unanswerable) == (80, 7)
    assert (new.header.gold.n_answerable, new.header.gold.n_unanswerable) == (81, 6)
    for k in (5, 10):
        before, after = old.overall.row(f"hit@{k}"), new.overall.row(f"hit@{k}")
        assert before is not None and after is not None
        assert (before.n, after.n) == (80, 81)  # n grows by one
        assert (before.baseline, after.baseline) == (1.0, 80 / 81)  # p1 scores 0
        assert after.candidate == 80 / 81
    news = next(s for s in new.slices if s.name == "news")
    assert news.n == 41
    # Not counted as unanswerable: the no-answer rate is over u1..u6 alone (u5, u6 answer).
    assert (old.no_answer.n, new.no_answer.n) == (7, 6)
    assert (new.no_answer.baseline, new.no_answer.baseline_rate) == (2, 2 / 6)

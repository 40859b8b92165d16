"""Answer spans and the context metrics: union, dedupe and both ratios by hand, and properties."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import ConfigError
from harness.score.context import evidence, found_characters, union_length
from harness.score.evaluation import evaluate
from harness.score.metrics import METRICS_VERSION, parse_metric, score_query
from harness.values.types import GoldQuery, GoldSet

CP, CR = "context_precision", "context_recall"


def scores(ranking, texts, relevant, spans, k):
    got = score_query(ranking, relevant, [f"{CP}@{k}", f"{CR}@{k}"], texts=texts, spans=spans)
    return got[f"{CP}@{k}"], got[f"{CR}@{k}"]


def test_names_round_trip_and_the_registry_has_a_version() -> None:
    assert str(parse_metric("context_precision@5")) == "context_precision@5"
    assert parse_metric("context_recall@10").needs_texts
    assert not parse_metric("ndcg@10").needs_texts
    assert METRICS_VERSION


def test_union_length_counts_each_offset_once() -> None:
    # [0,5) and [3,8) cover 0..7: 8 offsets; [10,12) adds 2; [10,11) is inside it.
    assert union_length([(0, 5), (3, 8), (10, 12), (10, 11)]) == 8 + 2
    assert union_length([]) == 0


def test_evidence_drops_duplicates_and_nested_spans() -> None:
    assert evidence(["capital of France", "France", "capital of France", ""]) == (
        "capital of France",
    )
    assert evidence(["ab", "bc"]) == ("ab", "bc")  # overlapping, neither inside the other


def test_found_characters_unions_overlapping_occurrences() -> None:
    # "abc" at 0..2 and "bca" at 1..3: together offsets 0..3, 4 characters (not 3 + 3).
    assert found_characters("abcabc", ["abc", "bca"]) == 4
    assert found_characters("abcabc", ["zzz"]) == 0
    assert found_characters(None, ["abc"]) == 0
    # "the capital" at 9..19 and "capital of France" at 13..29 of
    # "Paris is the capital of France.": offsets 9..29, "the capital of France" = 21 chars.
    text = "Paris is the capital of France."
    assert found_characters(text, ["capital of France", "the capital"]) == 21


RELEVANT = {"d1": 2, "d2": 1, "d3": 0}
SPANS = {"d1": ("capital of France", "France", "capital of France"), "d2": ("Seine",)}
# d3's text "Lyon is big." is 12 characters; d1's "Paris is the capital of France." 31;
# d2's "The Seine river." 16.  Annotated: "capital of France" (17; "France" is inside it and
# the repeat adds nothing) + "Seine" (5) = 22.
RANKING = ["d3", "d1", "d1", "d2"]
TEXTS = [
    "Lyon is big.",
    "Paris is the capital of France.",
    "capital of France again",
    "The Seine river.",
]


def test_hand_worked_ratios_at_two_cutoffs() -> None:
    # top 2 unique: d3 (12 chars, no span) and d1 (31 chars, 17 found).
    assert scores(RANKING, TEXTS, RELEVANT, SPANS, 2) == (17 / (12 + 31), 17 / 22)
    # top 3 unique: d3, d1 (its first text; the repeat is dropped), d2 (16 chars, 5 found).
    assert scores(RANKING, TEXTS, RELEVANT, SPANS, 3) == (
        (17 + 5) / (12 + 31 + 16),
        (17 + 5) / 22,
    )


def test_a_span_counts_only_in_its_own_documents_text() -> None:
    # d3's text holds "Seine", but "Seine" is d2's span: nothing found.
    texts = ["Lyon on the Seine.", "no evidence here"]
    assert scores(["d3", "d1"], texts, RELEVANT, SPANS, 2) == (0.0, 0.0)


def test_a_span_found_only_partly_is_not_found() -> None:
    assert scores(["d1"], ["the capital of Fra"], RELEVANT, SPANS, 1) == (0.0, 0.0)


def test_empty_ranking_and_no_spans_score_zero() -> None:
    assert scores([], [], RELEVANT, SPANS, 5) == (0.0, 0.0)
    assert scores(["d1"], ["Paris"], RELEVANT, {}, 5) == (0.0, 0.0)
    assert scores(["d1"], [None], RELEVANT, SPANS, 5) == (0.0, 0.0)  # no text returned


def test_evaluate_needs_texts_for_the_context_metrics() -> None:
    query = GoldQuery("q1", "capital", relevant=RELEVANT, spans=SPANS)
    gold = GoldSet((query,), "mem", "native", "h")
    with pytest.raises(ConfigError, match=r"query\.texts"):
        evaluate(gold, {"q1": ["d1"]}, ["context_recall@5"])
    ev = evaluate(gold, {"q1": RANKING}, ["context_recall@3"], texts={"q1": tuple(TEXTS)})
    assert ev.aggregate["context_recall@3"] == 1.0


# --------------------------------------------------------------------------- properties

WORDS = st.text(alphabet="abc ", min_size=1, max_size=30)


@st.composite
def case(draw: st.DrawFn) -> tuple[list[str], list[str], dict[str, tuple[str, ...]], int]:
    docs = draw(st.lists(st.sampled_from(["d1", "d2", "d3"]), min_size=0, max_size=5))
    texts = [draw(WORDS) for _ in docs]
    spans: dict[str, tuple[str, ...]] = {}
    for doc in ("d1", "d2"):
        source = draw(WORDS)
        cuts = draw(st.lists(st.tuples(st.integers(0, 30), st.integers(1, 8)), max_size=3))
        found = tuple(source[i : i + n] for i, n in cuts if source[i : i + n])
        if found:
            spans[doc] = found
    return docs, texts, spans, draw(st.integers(1, 6))


REL = {"d1": 1, "d2": 2}


@settings(max_examples=examples(300), deadline=None)
@given(case(), st.data())
def test_duplicates_and_overlaps_never_raise_either_ratio(drawn, data) -> None:
    ranking, texts, spans, k = drawn
    before = scores(ranking, texts, REL, spans, k)
    assert all(0.0 <= x <= 1.0 for x in before)
    # A repeated chunk (after its first occurrence, with any text), a repeated span, and a
    # span nested in one of the spans.
    more_ranking, more_texts = list(ranking), list(texts)
    if ranking:
        doc = data.draw(st.sampled_from(ranking))
        at = data.draw(st.integers(ranking.index(doc) + 1, len(ranking)))
        more_ranking.insert(at, doc)
        more_texts.insert(at, data.draw(WORDS))
    more_spans = dict(spans)
    for doc, items in spans.items():
        pick = data.draw(st.sampled_from(items))
        start = data.draw(st.integers(0, len(pick) - 1))
        nested = pick[start : start + data.draw(st.integers(1, len(pick)))]
        more_spans[doc] = (*items, pick, nested)
    after = scores(more_ranking, more_texts, REL, more_spans, k)
    assert after[0] <= before[0] and after[1] <= before[1]


@settings(max_examples=examples(300), deadline=None)
@given(case())
def test_found_never_exceeds_the_text_nor_the_sum_of_found_spans(drawn) -> None:
    ranking, texts, spans, _ = drawn
    for doc, text in zip(ranking, texts, strict=True):
        items = evidence(spans.get(doc, ()))
        found = found_characters(text, items)
        assert found <= len(text)
        assert found <= sum(len(s) for s in items if s in text)


def test_gold_set_round_trip_keeps_spans(tmp_path) -> None:
    from harness.gold import load_gold, write_native

    query = GoldQuery("q1", "capital", relevant={"d1": 1}, spans={"d1": ("capital of France",)})
    write_native([query], tmp_path / "g.jsonl")
    loaded = load_gold(tmp_path / "g.jsonl")
    assert loaded.queries[0].spans == {"d1": ("capital of France",)}
    plain = load_gold_hash(tmp_path, replace(query, spans={}))
    assert plain != loaded.hash  # spans are content


def load_gold_hash(tmp_path, query: GoldQuery) -> str:
    from harness.gold.canonical import canonical_hash

    return canonical_hash([query])


# --------------------------------------------------------------------------- gold format and check


def _write(path, lines) -> None:
    import json

    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def test_gold_check_names_file_line_and_field_of_a_span_not_in_the_text(tmp_path) -> None:
    from cli_support import run_cli

    corpus, gold = tmp_path / "corpus.jsonl", tmp_path / "gold.jsonl"
    _write(corpus, [{"id": "d1", "title": "France", "text": "Paris is the capital of France."},
                    {"id": "d2", "text": "The Seine river."}])
    _write(gold, [
        {"id": "q1", "query": "capital of france", "relevant": {"d1": 1},
         "spans": {"d1": ["capital of France"]}},
        {"id": "q2", "query": "river", "relevant": {"d2": 1, "d1": 1},
         "spans": {"d2": ["Seine"], "d1": ["capital of Germany", "Paris is the", "the capital"]}},
    ])
    done = run_cli("harness", "gold", "check", gold, "--corpus", corpus, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    out = done.stdout
    assert f"{gold}:2: spans.d1[0]" in out and "'capital of Germany' is not in the text" in out
    # "Paris is the" (0..11) and "the capital" (9..19) overlap: one span, please.
    assert f"{gold}:2: spans.d1[2]" in out and "overlap" in out
    assert "gold.jsonl:1" not in out


@pytest.mark.parametrize(
    ("spans", "field", "words"),
    [
        ({"d9": ["x"]}, "spans.d9", "is not judged in this query"),
        ({"d2": ["x"]}, "spans.d2", "is judged 0"),
        ({"d1": []}, "spans.d1", "non-empty array"),
        ({"d1": ["ok", ""]}, "spans.d1[1]", "non-empty string"),
        (["x"], "spans", "is an object"),
    ],
)
def test_malformed_spans_are_problems_at_their_field(tmp_path, spans, field, words) -> None:
    from harness.errors import GoldError
    from harness.gold import load_gold

    gold = tmp_path / "gold.jsonl"
    _write(gold, [{"id": "q1", "query": "x", "relevant": {"d1": 1, "d2": 0}, "spans": spans}])
    with pytest.raises(GoldError) as raised:
        load_gold(gold)
    text = "\n".join(raised.value.details)
    assert f"{gold}:1: {field}" in text and words in text


# --------------------------------------------------------------------------- a real compare


@pytest.mark.slow
def test_a_compare_reports_the_context_metrics_of_a_real_service(tmp_path) -> None:
    import json

    from e2e_support import build_sandbox, query_ids

    sandbox = build_sandbox(tmp_path / "s", {"bury12": {"bury": query_ids(1, 12)}}, texts=True)
    # The answers of q01..q40 were graded correct, the rest wrong (one file for both sides).
    answers = tmp_path / "answers.tsv"
    answers.write_text("".join(f"{q}\t{int(q <= 'q40')}\n" for q in query_ids(1, 80)))
    done = sandbox.harness("compare", "--baseline", "main", "--candidate", "bury12",
                           "--format", "json", "--baseline-answers", str(answers),
                           "--candidate-answers", str(answers))
    assert sandbox.leftovers(sandbox.run_ids()) == []
    assert done.returncode in (0, 1), done.stderr
    document = json.loads(done.stdout)
    rows = {r["metric"]: r for r in document["overall"]["rows"]}
    # Every top 5: the query's own document first (2 shared words), then d01, d02, ... (1 word,
    # ties by id), each text "this document covers topic qNN in depth" = 39 characters, of which
    # the span "covers topic qNN" is 16.  Burying drops the query's document from 12 of 80.
    precision = 16 / (5 * 39)
    assert rows["context_precision@5"]["baseline"] == pytest.approx(precision)
    assert rows["context_precision@5"]["candidate"] == pytest.approx(68 / 80 * precision)
    assert rows["context_recall@5"]["baseline"] == 1.0
    assert rows["context_recall@5"]["candidate"] == pytest.approx(68 / 80)
    assert rows["context_recall@10"]["verdict"] == "regressed"
    # The 2x2 at k = 5: the baseline retrieves all 80; the candidate loses q01..q12, which were
    # answered correctly all the same (the model's own knowledge).
    table = document["twobytwo"]
    cells = {c["cell"]: c["query_ids"] for c in table["candidate"]["cells"]}
    assert cells["not retrieved, correct"] == query_ids(1, 12)
    assert cells["retrieved, correct"] == query_ids(13, 40)
    assert cells["retrieved, wrong"] == query_ids(41, 80)
    moves = {(m["before"], m["after"]): m["query_ids"] for m in table["moves"]}
    assert moves["retrieved, correct", "not retrieved, correct"] == query_ids(1, 12)
    saved = [p for p in sandbox.results.iterdir() if (p / "report.md").is_file()]
    assert "how queries moved" in (saved[0] / "report.md").read_text()

"""Gold-set tools: the tokeniser, the corpus index, check (one broken gold set per check), build
(re-checked by check), convert (round trips) and stats, on hand-made and real collections."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT, examples, shared_collection
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import GoldError, HarnessError
from harness.gold import (
    canonical_hash,
    check_files,
    load_corpus,
    load_gold,
    write_native,
)
from harness.gold.build import build_gold
from harness.gold.check import CHECKS, CheckReport, Finding, check_gold, check_query
from harness.gold.convert import convert
from harness.gold.documents import Corpus, Document
from harness.gold.render import render_check, render_stats
from harness.gold.summary import gold_stats
from harness.gold.text import (
    compounds,
    content_words,
    normalise,
    phrase_of,
    surface_words,
    terms,
    tokens,
)
from harness.values.types import CorpusInfo, GoldQuery, GoldSet

# --------------------------------------------------------------------------- a hand-made corpus

DOCS = [
    ("d1", "Rotating TLS certificates",
     "Run certbot renew on the edge proxies. The ERR-4711 alarm fires when a certificate "
     "expires within seven days."),
    ("d2", "Deploy freeze", "Production deploys are frozen on Fridays. Exceptions need approval "
     "from the on-call lead."),
    ("d3", "Database failover", "Patroni promotes the replica with the least lag when the primary "
     "is unreachable."),
    ("d4", "Kafka consumer lag", "Consumer lag grows while partitions are rebalanced; scale the "
     "consumer group."),
    ("d5", "Search ranking", "The ranking uses BM25 with a recency boost. ERR-4712 marks a stale "
     "index; 4711 is its predecessor."),
    ("d6", "Paging", "The on-call lead pages the owning team for production incidents."),
]


def corpus_rows(docs: list[tuple[str, str, str]] = DOCS) -> str:
    return "".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in docs)


@pytest.fixture
def corpus_file(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text(corpus_rows(), encoding="utf-8")
    return path


@pytest.fixture
def corpus(corpus_file: Path) -> Corpus:
    return load_corpus(corpus_file)


def gold_of(*queries: GoldQuery, corpus: CorpusInfo | None = None, source: str = "g.jsonl",
            ) -> GoldSet:
    return GoldSet(tuple(queries), source, "native", canonical_hash(queries), corpus)


def q(qid: str, text: str, slice_: str, relevant: dict[str, int] | None = None, *,
      line: int | None = None, outranks: tuple[tuple[str, str], ...] = ()) -> GoldQuery:
    return GoldQuery(qid, text, slice_, relevant or {}, outranks, line=line)


def errors(report: CheckReport, check: str) -> list[Finding]:
    return [f for f in report.findings if f.check == check and f.severity == "error"]


def only_error(report: CheckReport, check: str) -> Finding:
    found = [f for f in report.findings if f.severity == "error"]
    assert [f.check for f in found] == [check], [f.message for f in found]
    return found[0]


def write_lines(path: Path, *rows: dict[str, object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- the tokeniser


def test_words_are_lowercased_split_on_non_alphanumerics_and_lightly_normalised() -> None:
    assert tokens("Deploys-Policies, TLS_cert v2!") == ["deploy", "policy", "tls", "cert", "v2"]
    # "ss", "us" and "is" endings, short words, stop words and words with digits are kept.
    assert tokens("class status analysis gas this does 1990s") == [
        "class", "status", "analysis", "gas", "this", "does", "1990s"]
    # NFKC: the "fi" ligature and full-width letters are the letters they look like
    assert tokens("\ufb01les \uff26\uff55\uff4c\uff4c") == ["file", "full"]


def test_content_words_drop_stop_words_and_repeats_and_compounds_keep_identifiers() -> None:
    assert content_words("How do I rotate the certs, the certs?") == ["rotate", "cert"]
    assert compounds("ERR-4711 fired, e.g. max_conn v1.2.3. Not a-") == [
        "err-4711", "e.g", "max_conn", "v1.2.3"]
    assert terms("what is ERR-4711") == ["err", "4711", "err-4711"]


def test_the_phrase_of_a_query_is_its_quoted_part_else_all_of_it() -> None:
    assert phrase_of('docs with "consumer lag" in them') == "consumer lag"
    assert phrase_of("\u201cedge proxies\u201d please") == "edge proxies"
    assert phrase_of("consumer lag") == "consumer lag"


@settings(max_examples=examples(200))
@given(st.text())
def test_the_tokeniser_is_a_fixed_point_on_its_own_output(text: str) -> None:
    # build writes words and check re-reads them: both must see the same words.
    words = tokens(text)
    assert words == [normalise(w) for w in surface_words(text)]
    assert tokens(" ".join(words)) == words
    assert tokens(" ".join(surface_words(text))) == words  # build's queries are surface words
    assert all(normalise(w) == w for w in words)


# --------------------------------------------------------------------------- the corpus


def test_load_corpus_reads_every_document_with_its_line_and_the_file_sha256(
        corpus_file: Path, corpus: Corpus) -> None:
    assert [d.id for d in corpus.documents] == ["d1", "d2", "d3", "d4", "d5", "d6"]
    assert corpus.by_id["d3"] == Document("d3", DOCS[2][1], DOCS[2][2], 3)
    assert corpus.sha256 == hashlib.sha256(corpus_file.read_bytes()).hexdigest()
    assert corpus.info == CorpusInfo(str(corpus_file), corpus.sha256)


def test_load_corpus_takes_beir_ids_integer_ids_and_a_missing_title(tmp_path: Path) -> None:
    write_lines(tmp_path / "corpus.jsonl", {"_id": "a", "title": "T", "text": "x"},
                {"id": 7, "text": "y"})
    loaded = load_corpus(tmp_path)  # a folder means its corpus.jsonl
    assert [(d.id, d.title, d.text) for d in loaded.documents] == [("a", "T", "x"), ("7", "", "y")]


def test_load_corpus_lists_every_problem_with_its_line_and_field(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "c.jsonl", {"id": "a", "text": "x"}, {"id": "b"},
                       {"id": "c", "title": 3, "text": "z"}, {"id": "a", "text": "again"})
    with pytest.raises(GoldError) as info:
        load_corpus(path)
    assert [(p.line, p.field) for p in info.value.problems] == [(2, "text"), (3, "title"),
                                                                 (4, "id")]
    assert "it is missing" in info.value.problems[0].message
    assert "duplicate document id 'a' (first at line 1)" in info.value.problems[2].message


def test_document_frequency_counts_words_and_compounds_of_title_and_text(corpus: Corpus) -> None:
    assert corpus.df("err-4711") == 1 and corpus.holders("err-4711") == ("d1",)
    assert corpus.holders("4711") == ("d1", "d5")  # the bare number is in d5 too
    assert corpus.holders("lag") == ("d3", "d4")
    assert corpus.holders("certificate") == ("d1",)  # title "certificates", text "certificate"
    assert corpus.df("nowhere") == 0
    assert corpus.length("d6") == 1 + 11  # "Paging"; the text's 10 blanks, "on-call" is two


def test_a_phrase_matches_contiguous_words_of_one_field_ignoring_case_and_punctuation() -> None:
    docs = Corpus((Document("a", "Consumer", "lag grows"), Document("b", "", "consumer, LAG!"),
                   Document("c", "", "lag consumer"), Document("d", "", "consumer big lag")),
                  "mem")
    assert docs.phrase_matches(tokens("consumer lag")) == ("b",)  # never across title and text
    assert docs.phrase_matches([]) == ()


# --------------------------------------------------------------------------- check: one per check


def test_a_clean_gold_set_has_no_finding_but_power(corpus: Corpus) -> None:
    gold = gold_of(
        q("e1", "ERR-4711", "exact_token", {"d1": 1}),
        q("p1", "on-call lead", "phrase", {"d2": 1, "d6": 1}),
        q("s1", "what if the main datastore crashes", "semantic", {"d3": 2}),
        q("n1", "zorblax quindle", "nonsense"),
        corpus=corpus.info)
    report = check_gold(gold, corpus)
    assert report.ok
    assert {f.check for f in report.findings} == {"power"}
    assert report.labelled_ids == report.labelled_present == 4  # d1, d2, d6, d3


def test_integrity_reports_each_dangling_id_at_its_line_and_field(corpus: Corpus) -> None:
    gold = gold_of(q("q1", "lag", "x", {"d1": 1, "d99": 0}, line=2),
                   q("q2", "lag", "x", {"d2": 1}, outranks=(("d2", "gone"),), line=3))
    found = errors(check_gold(gold, corpus), "integrity")
    assert [(f.query_id, f.line, f.field) for f in found] == [("q1", 2, "relevant"),
                                                              ("q2", 3, "outranks[0]")]
    assert "document 'd99' is not in the corpus" in found[0].message
    assert "document 'gone' is not in the corpus" in found[1].message


def test_integrity_says_wrong_corpus_when_no_named_id_exists(corpus: Corpus) -> None:
    gold = gold_of(q("q1", "lag", "x", {"x1": 1, "x2": 1}))
    first = errors(check_gold(gold, corpus), "integrity")[0]
    assert first.query_id is None
    assert "none of the 2 documents the gold set names is in" in first.message


def test_check_files_reports_what_load_gold_would_raise_on_as_findings(
        tmp_path: Path, corpus_file: Path) -> None:
    gold = write_lines(tmp_path / "g.jsonl", {"id": "q1", "query": "lag", "relevant": ["d9"]},
                       {"id": "q2", "query": "lag", "relevant": ["d8"]})
    with pytest.raises(GoldError):
        load_gold(gold, corpus=corpus_file)
    loaded, report = check_files(gold, corpus_file)
    assert [(f.query_id, f.line) for f in errors(report, "integrity")] == [
        (None, None), ("q1", 1), ("q2", 2)]
    assert loaded.corpus == CorpusInfo(str(corpus_file), load_corpus(corpus_file).sha256)
    with pytest.raises(GoldError) as info:
        report.raise_if_errors()
    assert f"{gold}:1: relevant: integrity: query 'q1': document 'd9'" in str(info.value)
    assert "3 errors" in info.value.message


def test_check_files_on_a_malformed_gold_file_lists_the_dangling_ids_too(
        tmp_path: Path, corpus_file: Path) -> None:
    gold = write_lines(tmp_path / "g.jsonl", {"id": "q1", "query": "", "relevant": ["d9"]})
    with pytest.raises(GoldError) as info:
        check_files(gold, corpus_file)
    assert [(p.line, p.field) for p in info.value.problems] == [(1, "query"), (1, "relevant")]
    assert "document 'd9' is not in the corpus" in info.value.problems[1].message


def test_staleness_counts_the_labelled_ids_that_still_exist(corpus: Corpus) -> None:
    old = CorpusInfo("corpus.jsonl", "0" * 64)
    gold = gold_of(q("q1", "lag", "x", {"d3": 1, "d4": 0}, outranks=(("d3", "d0"),)), corpus=old)
    report = check_gold(gold, corpus)
    stale = errors(report, "staleness")
    assert len(stale) == 1 and stale[0].field == "corpus.sha256"
    assert f"built against corpus sha256 {'0' * 12}... but" in stale[0].message
    assert "2 of 3 labelled documents still exist (1 gone: see integrity)" in stale[0].message
    assert (report.labelled_ids, report.labelled_present) == (3, 2)


def test_staleness_cannot_be_told_without_a_recorded_sha256(corpus: Corpus) -> None:
    report = check_gold(gold_of(q("q1", "lag", "x", {"d3": 1})), corpus)
    [info] = [f for f in report.findings if f.check == "staleness"]
    assert info.severity == "info" and "records no corpus sha256" in info.message
    same = check_gold(gold_of(q("q1", "lag", "x", {"d3": 1}), corpus=corpus.info), corpus)
    assert not [f for f in same.findings if f.check == "staleness"]


def test_exact_query_whose_rare_term_is_no_longer_rare(corpus_file: Path, tmp_path: Path) -> None:
    docs = [*DOCS, ("d7", "Alarms", "ERR-4711 is noisy")]  # re-ingested: now in two documents
    (tmp_path / "new.jsonl").write_text(corpus_rows(docs), encoding="utf-8")
    gold = gold_of(q("e1", "what is ERR-4711", "exact_token", {"d1": 1}, line=4))
    finding = only_error(check_gold(gold, load_corpus(tmp_path / "new.jsonl")), "winnability")
    assert (finding.query_id, finding.line, finding.field) == ("e1", 4, "query")
    assert ("no term of the query occurs in exactly one document ('err' in 3, '4711' in 3, "
            "'err-4711' in 2)") in finding.message


def test_exact_query_whose_rare_term_is_in_another_document(corpus: Corpus) -> None:
    gold = gold_of(q("e1", "ERR-4712", "exact_rare", {"d1": 1}))
    finding = only_error(check_gold(gold, corpus), "winnability")
    assert ("rare terms single out a document that is not labelled relevant ('4712' in 'd5', "
            "'err-4712' in 'd5'; relevant: 'd1')") in finding.message


def test_exact_query_needs_its_answer_labelled(corpus: Corpus) -> None:
    finding = only_error(check_gold(gold_of(q("e1", "certbot", "exact_token")), corpus),
                         "winnability")
    assert "needs the document holding its rare term labelled relevant" in finding.message


def test_phrase_query_matching_more_than_its_answer_key(corpus: Corpus) -> None:
    finding = only_error(check_gold(gold_of(q("p1", "on-call lead", "phrase", {"d6": 1})),
                                    corpus), "winnability")
    assert ("the phrase 'on-call lead' matches 2 document(s) and 1 are labelled relevant: "
            "1 matching document(s) not labelled relevant ('d2')") in finding.message


def test_phrase_query_no_longer_matching_a_labelled_document(corpus: Corpus) -> None:
    gold = gold_of(q("p1", 'show "edge proxies"', "phrase", {"d1": 1, "d2": 1, "d3": 0}))
    finding = only_error(check_gold(gold, corpus), "winnability")
    assert "1 labelled relevant that it does not match ('d2')" in finding.message


def test_phrase_query_of_one_word(corpus: Corpus) -> None:
    finding = only_error(check_gold(gold_of(q("p1", "lag", "phrase", {"d3": 1})), corpus),
                         "winnability")
    assert "the phrase 'lag' has 1 word(s); a phrase query needs at least two" in finding.message


def test_a_paraphrase_sharing_a_normalised_word_with_its_answer_leaks(corpus: Corpus) -> None:
    gold = gold_of(q("s1", "renewing a certificates bundle", "paraphrase", {"d1": 1, "d2": 0}))
    finding = only_error(check_gold(gold, corpus), "leak")
    assert "shares 'certificate' with its answer 'd1'" in finding.message  # grade 0 not checked


def test_nonsense_controls_share_no_word_and_have_no_answer(corpus: Corpus) -> None:
    gold = gold_of(q("n1", "zorblax patroni", "nonsense"), q("n2", "zorblax", "nonsense",
                                                               {"d1": 1}))
    found = errors(check_gold(gold, corpus), "controls")
    assert [(f.query_id, f.field) for f in found] == [("n1", "query"), ("n2", "relevant")]
    assert "the corpus holds 'patroni' (1 documents, e.g. 'd3')" in found[0].message
    assert "a nonsense control is unanswerable, but 'd1' have grade >= 1" in found[1].message


def test_required_slices_and_the_missing_unanswerable_warning(corpus: Corpus) -> None:
    report = check_gold(gold_of(q("q1", "lag", "x", {"d3": 1})), corpus,
                        slices=["x", "semantic"])
    found = [(f.severity, f.message) for f in report.findings if f.check == "controls"]
    assert [severity for severity, _ in found] == ["error", "warning"]
    assert found[0][1].startswith("slice 'semantic' has no query")
    assert found[1][1].startswith("no unanswerable query: nothing checks")
    with_control = check_gold(gold_of(q("q1", "lag", "x", {"d3": 1}), q("q2", "zz", "x")), corpus)
    assert not [f for f in with_control.findings if f.check == "controls"]


def test_power_uses_the_mcnemar_exact_floor_per_slice_and_overall() -> None:
    # Two-sided exact McNemar with all n discordant pairs one way: p = 2 * 0.5**n.
    # n = 6: 2/64 = 0.03125 < 0.05, n = 5: 2/32 = 0.0625, so 6 at alpha 0.05;
    # n = 8: 2/256 = 0.0078 < 0.01, n = 7: 2/128 = 0.0156, so 8 at alpha 0.01.
    gold = gold_of(*[q(f"a{i}", "x", "big", {"d": 1}) for i in range(6)],
                   *[q(f"b{i}", "x", "small", {"d": 1}) for i in range(5)],
                   q("c0", "x", "small"))
    report = check_gold(gold)
    power = {row.slice: row for row in report.power}
    assert report.min_swing == 6
    assert (power["big"].min_swing, power["big"].share) == (6, 6 / 6)
    assert (power["small"].queries, power["small"].answerable, power["small"].min_swing) == \
        (6, 5, None)
    assert (report.overall.answerable, report.overall.min_swing) == (11, 6)
    [warning] = [f for f in report.findings if f.check == "power"]
    assert warning.severity == "warning"
    assert "slice 'small' has 5 answerable queries, fewer than the 6" in warning.message
    assert "add at least 1 answerable queries" in warning.message
    strict = check_gold(gold, alpha=0.01)
    assert strict.min_swing == 8 and strict.overall.min_swing == 8
    assert {row.slice for row in strict.power if row.min_swing is None} == {"big", "small"}


def test_without_a_corpus_the_corpus_checks_are_skipped_but_controls_run() -> None:
    report = check_gold(gold_of(q("n1", "zorblax", "nonsense", {"d1": 1})))
    assert [(f.check, f.severity) for f in report.findings if f.severity != "warning"] == [
        ("integrity", "info"), ("controls", "error")]
    text = render_check(report)
    assert "winnability: skipped (no corpus)" in text
    assert "result: 1 error, 3 warnings: fix the errors" in text


def test_findings_are_grouped_in_check_order_and_rendered_with_file_and_line(
        corpus: Corpus) -> None:
    gold = gold_of(q("s1", "certificate renewal", "semantic", {"d1": 1}, line=7),
                   q("q1", "x", "x", {"nope": 1}, line=9), source="gold.jsonl")
    report = check_gold(gold, corpus)
    assert [f.check for f in report.findings if f.severity == "error"] == ["integrity", "leak"]
    assert list(report.grouped()) == list(CHECKS)
    text = render_check(report)
    assert "gold.jsonl:9: error: query 'q1': document 'nope' is not in the corpus" in text
    assert "gold.jsonl:7: error: query 's1': shares 'certificate' with its answer" in text
    value = json.loads(render_check(report, "json"))
    assert value["schema_version"] == 1 and value["ok"] is False
    # warnings: no unanswerable query; slices 'semantic' and 'x' and the whole set too small
    assert value["counts"] == {"error": 2, "warning": 4, "info": 1}
    assert set(value["checks"]) == set(CHECKS)
    assert value["checks"]["leak"][0]["line"] == 7
    with pytest.raises(HarnessError, match="unknown output format 'xml'"):
        render_check(report, "xml")


# --------------------------------------------------------------------------- check: real data


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from harness.demo.generate import generate

    data = generate()
    folder = tmp_path_factory.mktemp("demo")
    (folder / "corpus.jsonl").write_bytes(data.corpus)
    (folder / "gold.jsonl").write_bytes(data.gold)
    return folder / "gold.jsonl", folder / "corpus.jsonl"


def test_the_demo_gold_set_passes_every_check(demo: tuple[Path, Path]) -> None:
    _, report = check_files(*demo)
    assert report.ok and not [f for f in report.findings if f.severity != "info"]
    assert report.labelled_present == report.labelled_ids
    assert {row.slice: row.min_swing for row in report.power}["nonsense"] is None


def test_a_demo_paraphrase_given_a_word_of_its_answer_leaks(demo: tuple[Path, Path]) -> None:
    gold, corpus = load_gold(demo[0]), load_corpus(demo[1])
    semantic = next(x for x in gold.queries if x.slice == "semantic")
    (answer,) = semantic.relevant
    word = sorted(set(content_words(corpus.by_id[answer].text)))[0]
    broken = replace(semantic, text=f"{semantic.text} {word}")
    queries = tuple(broken if x.id == semantic.id else x for x in gold.queries)
    report = check_gold(replace(gold, queries=queries), corpus)
    finding = only_error(report, "leak")
    assert (finding.query_id, finding.line) == (semantic.id, semantic.line)
    assert f"shares {word!r} with its answer {answer!r}" in finding.message


@pytest.mark.parametrize("name", ["scifact", "cranfield"])
def test_public_beir_collections_check_clean_against_their_corpus(name: str) -> None:
    folder = shared_collection(name)
    gold, report = check_files(folder, folder)
    assert report.ok, [f.message for f in report.findings if f.severity == "error"][:3]
    assert report.labelled_present == report.labelled_ids > 0
    assert report.lines_in == f"{folder}/queries.jsonl"
    assert gold.corpus is not None and gold.corpus.sha256 == load_corpus(folder).sha256


# --------------------------------------------------------------------------- build


def test_built_rows_are_winnable_by_construction(corpus: Corpus) -> None:
    rows = build_gold(corpus, exact_rare=2, phrase=2, nonsense=3, seed=3, min_words=5)
    assert [r.slice for r in rows] == ["exact_rare"] * 2 + ["phrase"] * 2 + ["nonsense"] * 3
    assert [r.id for r in rows[:2]] == ["exact_rare-001", "exact_rare-002"]
    for row in rows:
        assert row.derivation and corpus.sha256 is not None and corpus.sha256[:12] in \
            row.derivation
        assert check_query(row, corpus) == []
    for row in rows[:2]:
        (doc,) = row.relevant
        assert corpus.df(normalise(row.text)) == 1 and corpus.holders(normalise(row.text)) == \
            (doc,)
    for row in rows[2:4]:
        source = (row.derivation or "").split()[2].rstrip(";")  # "verbatim from d4; ..."
        assert row.text in corpus.by_id[source].text
        assert tuple(row.relevant) == corpus.phrase_matches(tokens(row.text))
    assert all(not r.relevant and not any(corpus.df(w) for w in tokens(r.text))
               for r in rows[4:])


def test_build_refuses_to_promise_more_than_the_corpus_holds(corpus: Corpus) -> None:
    with pytest.raises(GoldError, match="only 0 exact_rare queries could be mined from 0 "
                       "documents of a useful length"):
        build_gold(corpus, exact_rare=1, min_words=100)  # every document is shorter
    with pytest.raises(GoldError, match=r"--phrase is a count of queries, >= 0, not -1"):
        build_gold(corpus, phrase=-1)


def test_included_rows_come_first_and_are_checked(corpus: Corpus, tmp_path: Path) -> None:
    good = gold_of(q("para-1", "what if the main datastore crashes", "paraphrase",
                     {"d3": 1}, line=1), source="inc.jsonl")
    rows = build_gold(corpus, nonsense=1, include=good)
    assert [r.id for r in rows] == ["para-1", "nonsense-001"]
    leaking = gold_of(q("para-1", "replica promotion", "paraphrase", {"d3": 1}, line=4),
                      source="inc.jsonl")
    with pytest.raises(GoldError) as info:
        build_gold(corpus, nonsense=1, include=leaking)
    assert "inc.jsonl: the included queries fail their checks" in info.value.message
    # "promotion" is not "promotes": light normalisation strips a plural, not a suffix
    assert "inc.jsonl:4: query: leak: query 'para-1': shares 'replica' with its answer 'd3'" in \
        str(info.value)
    clash = gold_of(q("nonsense-001", "zzz", "x", line=2), source="inc.jsonl")
    with pytest.raises(GoldError) as info:
        build_gold(corpus, nonsense=1, include=clash)
    assert "inc.jsonl:2: id: id 'nonsense-001' is also a mined query's id" in str(info.value)


def test_build_is_deterministic_across_runs_and_hash_seeds(tmp_path: Path) -> None:
    script = ("import sys; from harness.gold import load_corpus, write_native; "
              "from harness.gold.build import build_gold; c = load_corpus(sys.argv[1]); "
              "write_native(build_gold(c, exact_rare=5, phrase=5, nonsense=5, "
              "seed=int(sys.argv[3]), min_words=10), sys.argv[2], corpus=c.info)")
    corpus = ROOT / "gold" / "example-corpus.jsonl"
    outputs = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"built-{hash_seed}.jsonl"
        subprocess.run([sys.executable, "-c", script, str(corpus), str(out), "0"], check=True,
                       env={**os.environ, "PYTHONHASHSEED": hash_seed})
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    documents = load_corpus(corpus)
    write_native(build_gold(documents, exact_rare=5, phrase=5, nonsense=5, seed=1, min_words=10),
                 tmp_path / "seed-1.jsonl", corpus=documents.info)
    assert (tmp_path / "seed-1.jsonl").read_bytes() != outputs[0]  # another seed, other rows
    header = json.loads(outputs[0].splitlines()[0])
    assert header["corpus"] == {"name": str(corpus), "sha256": documents.sha256}


@pytest.mark.parametrize("name", ["scifact", "cranfield", "vaswani"])
def test_build_on_public_corpora_then_check_the_written_file(name: str, tmp_path: Path) -> None:
    folder = shared_collection(name)
    corpus = load_corpus(folder)
    out = tmp_path / "built.jsonl"
    write_native(build_gold(corpus, exact_rare=10, phrase=10, nonsense=5, seed=7), out,
                 corpus=corpus.info)
    gold, report = check_files(out, folder)
    assert report.ok and not [f for f in report.findings if f.check != "power"]
    assert len(gold) == 25 and gold.corpus is not None
    with pytest.raises(GoldError, match="already exists"):  # what `gold build` without --force does
        write_native(gold, out, overwrite=False)
    assert gold.corpus.sha256 == corpus.sha256
    phrases = [x for x in gold.queries if x.slice == "phrase"]
    assert all(1 <= len(x.relevant) <= 25 for x in phrases)


# --------------------------------------------------------------------------- convert


FULL = gold_of(
    q("q1", "rotate the certs", "howto", {"d1": 2, "d2": 0}, outranks=(("d1", "d2"),)),
    replace(q("q2", "café\u2028menu", "lookup", {"d3": 1}), derivation="hand-written"),
    q("q3", "judged only 0", "default", {"d4": 0}),
    q("q4", "meeting rooms", "unanswerable"),
    corpus=CorpusInfo("corpus.jsonl", "ab" * 32))
JUDGED = [x for x in FULL.queries if x.relevant]


def test_native_beir_native_is_lossless_but_for_unjudged_queries_and_the_header(
        tmp_path: Path) -> None:
    warnings = convert(FULL, "beir", tmp_path / "beir")
    assert len(warnings) == 2
    assert warnings[0].startswith("1 queries without any judgement (relevant: {}) were dropped")
    assert "(q4)" in warnings[0]
    assert "the corpus the gold set records (corpus.jsonl, sha256 abababababab) was dropped" in \
        warnings[1]
    assert sorted(p.relative_to(tmp_path / "beir").as_posix()
                  for p in (tmp_path / "beir").rglob("*") if p.is_file()) == [
        "qrels/test.tsv", "queries.jsonl"]
    back = load_gold(tmp_path / "beir")
    assert back.hash == canonical_hash(JUDGED)
    assert convert(back, "native", tmp_path / "again.jsonl") == []
    assert load_gold(tmp_path / "again.jsonl").hash == canonical_hash(JUDGED)


def test_native_trec_round_trip_with_jsonl_topics_keeps_everything_judged(tmp_path: Path) -> None:
    convert(FULL, "trec", tmp_path / "trec")
    assert (tmp_path / "trec" / "qrels.txt").read_text().splitlines() == [
        "q1 0 d1 2", "q1 0 d2 0", "q2 0 d3 1", "q3 0 d4 0"]
    back = load_gold(tmp_path / "trec" / "qrels.txt", queries=tmp_path / "trec" / "topics.jsonl")
    assert back.hash == canonical_hash(JUDGED)


def test_tsv_topics_drop_slices_derivations_and_outranks_and_say_so(tmp_path: Path) -> None:
    gold = gold_of(*[replace(x, text="plain text") for x in JUDGED])
    warnings = convert(gold, "trec", tmp_path / "trec", topics="tsv")
    assert warnings == [
        "2 slices were dropped: qid<TAB>text topics cannot hold them; use topics jsonl to keep "
        "them",
        "1 derivations were dropped: qid<TAB>text topics cannot hold them; use topics jsonl to "
        "keep them",
        "1 outranks pairs were dropped: qid<TAB>text topics cannot hold them; use topics jsonl "
        "to keep them"]
    back = load_gold(tmp_path / "trec" / "qrels.txt", queries=tmp_path / "trec" / "topics.tsv")
    assert back.hash == canonical_hash(
        [replace(x, slice="default", derivation=None, outranks=()) for x in gold.queries])


def test_convert_never_overwrites_unless_asked(tmp_path: Path) -> None:
    (tmp_path / "beir").mkdir()
    convert(FULL, "beir", tmp_path / "beir")  # an empty folder holds nothing to lose
    with pytest.raises(GoldError, match="already exists; choose another output, or pass --force"):
        convert(FULL, "beir", tmp_path / "beir")
    (tmp_path / "g.jsonl").write_text("keep me")
    with pytest.raises(GoldError, match="already exists"):
        convert(FULL, "native", tmp_path / "g.jsonl")
    assert (tmp_path / "g.jsonl").read_text() == "keep me"
    convert(FULL, "native", tmp_path / "g.jsonl", overwrite=True)
    assert load_gold(tmp_path / "g.jsonl").hash == FULL.hash
    convert(gold_of(JUDGED[0]), "beir", tmp_path / "beir", overwrite=True)
    assert len(load_gold(tmp_path / "beir")) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["beir", "g.jsonl"]  # no temp left


@pytest.mark.parametrize(("to", "query", "fragment"), [
    ("trec", q("q 1", "x", "s", {"d1": 1}), "its id 'q 1' holds a character that TREC qrels"),
    ("trec", q("q1", "x", "s", {"d\u00a01": 1}), "its document id 'd\\xa01' holds a character"),
    ("beir", q("q\t1", "x", "s", {"d1": 1}), "its id 'q\\t1' holds a character that BEIR qrels"),
])
def test_ids_a_table_format_would_split_are_refused(tmp_path: Path, to: str, query: GoldQuery,
                                                    fragment: str) -> None:
    with pytest.raises(GoldError, match="cannot be written there") as info:
        convert(gold_of(query), to, tmp_path / "out")
    assert fragment in info.value.message
    assert not (tmp_path / "out").exists()


def test_converting_only_unjudged_queries_to_a_table_format_is_refused(tmp_path: Path) -> None:
    with pytest.raises(GoldError, match="nothing to write"):
        convert(gold_of(q("q1", "x", "s")), "beir", tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_a_public_beir_set_survives_beir_native_beir(tmp_path: Path) -> None:
    original = load_gold(shared_collection("scifact"))
    assert convert(original, "native", tmp_path / "scifact.jsonl") == []
    native = load_gold(tmp_path / "scifact.jsonl")
    assert convert(native, "beir", tmp_path / "beir", split="dev") == []
    assert load_gold(tmp_path / "beir", split="dev").hash == native.hash == original.hash


def test_beir_query_rows_with_a_bad_outranks_are_a_problem(tmp_path: Path) -> None:
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    write_lines(folder / "queries.jsonl",
                {"_id": "1", "text": "x", "metadata": {"outranks": [["a", "a"]]}})
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\ta\t1\n")
    with pytest.raises(GoldError) as info:
        load_gold(folder)
    problem = info.value.problems[0]  # then: the judged query has no (valid) text
    assert (problem.line, problem.field) == (1, "outranks[0]")
    assert "two different non-blank doc ids" in problem.message


_ids = st.text(alphabet="abcxyz0189-_.:", min_size=1, max_size=6)
_queries = st.builds(
    lambda qid, text, slice_, relevant, derivation: GoldQuery(
        qid, text, slice_, relevant,
        ((next(iter(relevant)), "stale"),) if relevant and derivation else (), derivation),
    _ids, st.text(min_size=1).filter(str.strip), st.sampled_from(["default", "a b", "é"]),
    st.dictionaries(_ids, st.integers(0, 3), min_size=1, max_size=3),
    st.none() | st.text(max_size=10))


@settings(max_examples=examples(25))
@given(st.lists(_queries, min_size=1, max_size=5, unique_by=lambda x: x.id),
       st.sampled_from(["beir", "trec"]))
def test_any_judged_gold_set_round_trips_through_the_table_formats(
        tmp_path_factory: pytest.TempPathFactory, queries: list[GoldQuery], to: str) -> None:
    out = tmp_path_factory.mktemp("round") / "out"
    assert convert(gold_of(*queries), to, out) == []
    back = load_gold(out) if to == "beir" else load_gold(out / "qrels.txt",
                                                         queries=out / "topics.jsonl")
    assert back.hash == canonical_hash(queries)


# --------------------------------------------------------------------------- stats


def test_stats_count_slices_relevant_per_query_grades_and_the_unanswerable_share() -> None:
    gold = gold_of(q("a", "x", "s1", {"d1": 1}), q("b", "x", "s1", {"d1": 2, "d2": 1, "d3": 0}),
                   q("c", "x", "s2", {"d1": 1, "d2": 1}), q("d", "x", "s2", {"d1": 3, "d2": 1,
                                                                              "d3": 1}),
                   q("e", "x", "s2", {"d9": 0}))
    stats = gold_stats(gold)
    assert [(s.slice, s.queries, s.answerable, s.unanswerable) for s in stats.slices] == [
        ("s1", 2, 2, 0), ("s2", 3, 2, 1)]
    # relevant per answerable query: 1, 2, 2, 3
    assert dict(stats.relevant_histogram) == {1: 1, 2: 2, 3: 1}
    assert (stats.relevant_min, stats.relevant_median, stats.relevant_max) == (1, (2 + 2) / 2, 3)
    assert stats.relevant_mean == (1 + 2 + 2 + 3) / 4
    assert dict(stats.grades) == {0: 2, 1: 6, 2: 1, 3: 1} and stats.judgements == 10
    assert stats.unanswerable_share == 1 / 5
    text = render_stats(stats)
    assert "5 queries, 4 answerable, 1 unanswerable (20.0%)" in text
    assert "relevant per answerable query: min 1, median 2, mean 2.00, max 3" in text
    assert "judgements: 10 (grade 0: 2, grade 1: 6, grade 2: 1, grade 3: 1)" in text
    value = json.loads(render_stats(stats, "json"))
    assert value["relevant_per_query"]["histogram"] == {"1": 1, "2": 2, "3": 1}
    assert value["unanswerable_share"] == 0.2


def test_stats_of_a_gold_set_without_answerable_queries() -> None:
    stats = gold_stats(gold_of(q("a", "x", "nonsense")))
    assert (stats.answerable, stats.relevant_median, stats.unanswerable_share) == (0, None, 1.0)
    assert "relevant per answerable query: no answerable query" in render_stats(stats)


# --------------------------------------------------------------------------- the README is true

README = ROOT / "gold" / "README.md"


def _block(text: str, fence: str) -> str:
    """The first block of `text` fenced with `fence` ("```jsonl")."""
    return text.split(fence + "\n", 1)[1].split("```", 1)[0]


def _shown_lines(text: str, command: str) -> list[str]:
    """The output lines under `command` in a fenced block, without "..." elisions."""
    lines = text.split(command + "\n", 1)[1].split("```", 1)[0].splitlines()
    return [line for line in lines if line.strip() != "..."]


def test_the_readme_check_example_is_real_output(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    section = README.read_text(encoding="utf-8").split("## Checking a gold set", 1)[1]
    (tmp_path / "gold").mkdir()
    (tmp_path / "gold" / "example-corpus.jsonl").write_bytes(
        (ROOT / "gold" / "example-corpus.jsonl").read_bytes())
    (tmp_path / "broken.jsonl").write_text(_block(section, "```jsonl"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    _, report = check_files("broken.jsonl", "gold/example-corpus.jsonl")
    real = render_check(report).splitlines()
    shown = _shown_lines(section, "$ harness gold check broken.jsonl --corpus "
                         "gold/example-corpus.jsonl")
    remaining = iter(real)
    assert all(line in remaining for line in shown)  # every line shown is real, in order
    assert len(shown) > 20 and shown[-1] == real[-1]


def test_the_readme_build_and_stats_examples_are_real_output(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             ) -> None:
    text = README.read_text(encoding="utf-8")
    monkeypatch.chdir(ROOT)
    corpus = load_corpus("gold/example-corpus.jsonl")
    write_native(build_gold(corpus, exact_rare=2, phrase=2, nonsense=1, min_words=10),
                 tmp_path / "built.jsonl", corpus=corpus.info)
    built = [line for line in (tmp_path / "built.jsonl").read_text().splitlines()
             if "-002" not in line]
    assert _shown_lines(text, "$ grep -v -- -002 built.jsonl") == built
    stats = _shown_lines(text, "$ harness gold stats gold/example.jsonl")
    assert stats == render_stats(gold_stats(load_gold("gold/example.jsonl"))).splitlines()


# --------------------------------------------------------------------------- pure modules stay pure

PURE = ["text", "documents", "check", "build", "summary", "render"]
PURE_IMPORTS = {"__future__", "collections", "collections.abc", "dataclasses", "functools",
                "json", "random", "re", "statistics", "typing", "unicodedata", "harness.errors",
                "harness.text.control_chars",
                "harness.values.swing", "harness.values.types",
                *(f"harness.gold.{m}" for m in PURE)}


@pytest.mark.parametrize("module", PURE)
def test_the_pure_gold_tools_import_no_io_stage_and_open_no_file(module: str) -> None:
    import ast

    tree = ast.parse((ROOT / "harness" / "gold" / f"{module}.py").read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported <= PURE_IMPORTS, imported - PURE_IMPORTS
    calls = {node.func.id for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert "open" not in calls and "print" not in calls

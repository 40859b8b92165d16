"""The gold stage: strict readers (one broken file per rule), corpus checks, hash, writer, data."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import replace
from pathlib import Path
from random import Random

import pytest
from conftest import ROOT, examples, shared_collection
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import GoldError, Problem
from harness.gold import (
    canonical_hash,
    detect_format,
    file_sha256,
    load_corpus_ids,
    load_gold,
    write_native,
)
from harness.values.types import CorpusInfo, GoldQuery, GoldSet

GOLD_DIR = ROOT / "gold"
HEADER = '{"format": "harness-gold", "version": 1}'
GOOD = '{"id": "q1", "query": "rotate the TLS cert", "relevant": ["d1"]}'


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def lines_file(tmp_path: Path, *lines: str, name: str = "gold.jsonl") -> Path:
    return write(tmp_path / name, "".join(line + "\n" for line in lines))


def problems_of(path: Path, **kwargs: object) -> list[Problem]:
    with pytest.raises(GoldError) as info:
        load_gold(path, **kwargs)  # type: ignore[arg-type]
    return list(info.value.problems)


def content(queries: tuple[GoldQuery, ...]) -> list[GoldQuery]:
    """Queries without `line` (where they were read is not content), sorted by id."""
    return sorted((replace(q, line=None) for q in queries), key=lambda q: q.id)


# --------------------------------------------------------------------------- native: one rule each

# (case, the file's lines, the line and field the single problem must name, a message fragment)
NATIVE_RULES = [
    ("malformed JSON", [GOOD, '{"id": "q2", "query": "x",'], 2, None, "malformed JSON"),
    ("NaN is not JSON", [GOOD, '{"id": "q2", "query": "x", "relevant": {"d1": NaN}}'], 2, None,
     "NaN is not JSON"),
    ("a line that is an array", [GOOD, '["q2", "x"]'], 2, None, "got an array"),
    ("a line that is a string", [GOOD, '"q2"'], 2, None, "got a string"),
    ("unknown field, with a guess", [GOOD, '{"id": "q2", "qeury": "x", "query": "x", '
     '"relevant": []}'], 2, "qeury", "did you mean 'query'"),
    ("key twice in one object", ['{"id": "q1", "query": "a", "query": "b", "relevant": []}'], 1,
     "query", "appears twice"),
    ("missing id", ['{"query": "x", "relevant": []}'], 1, "id", "'id' is missing"),
    ("missing query", ['{"id": "q1", "relevant": []}'], 1, "query", "'query' is missing"),
    ("missing relevant", ['{"id": "q1", "query": "x"}'], 1, "relevant", "'relevant' is missing"),
    ("empty id", ['{"id": "", "query": "x", "relevant": []}'], 1, "id", "non-blank"),
    ("blank id", ['{"id": "   ", "query": "x", "relevant": []}'], 1, "id", "non-blank"),
    ("id not a string", ['{"id": 17, "query": "x", "relevant": []}'], 1, "id", "got 17"),
    ("empty query", ['{"id": "q1", "query": "", "relevant": []}'], 1, "query", "non-blank"),
    ("blank query", ['{"id": "q1", "query": " \\t ", "relevant": []}'], 1, "query", "non-blank"),
    ("query not a string", ['{"id": "q1", "query": ["x"], "relevant": []}'], 1, "query",
     "non-blank"),
    ("negative grade", ['{"id": "q1", "query": "x", "relevant": {"d1": -1}}'], 1, "relevant",
     "grade -1"),
    ("boolean grade", ['{"id": "q1", "query": "x", "relevant": {"d1": true}}'], 1, "relevant",
     "grade true"),
    ("2.0 is not an integer", ['{"id": "q1", "query": "x", "relevant": {"d1": 2.0}}'], 1,
     "relevant", "grade 2.0"),
    ("string grade", ['{"id": "q1", "query": "x", "relevant": {"d1": "1"}}'], 1, "relevant",
     'grade "1"'),
    ("a document judged twice", ['{"id": "q1", "query": "x", "relevant": {"d1": 1, "d1": 2}}'],
     1, "relevant", "judged twice"),
    ("empty document id", ['{"id": "q1", "query": "x", "relevant": {"": 1}}'], 1, "relevant",
     "non-blank"),
    ("blank document id", ['{"id": "q1", "query": "x", "relevant": {" ": 1}}'], 1, "relevant",
     "non-blank"),
    ("blank document id in the list", ['{"id": "q1", "query": "x", "relevant": ["\\t"]}'], 1,
     "relevant", "non-empty string"),
    ("nested too deeply", ['{"id": "q1", "query": "x", "relevant": ' + "[" * 100_000 + "}"], 1,
     None, "nested too deeply"),
    ("a lone surrogate", ['{"id": "q1", "query": "x \\ud800", "relevant": ["d1"]}'], 1, None,
     "lone surrogate"),
    ("duplicate id in the list", ['{"id": "q1", "query": "x", "relevant": ["d1", "d1"]}'], 1,
     "relevant", "listed twice"),
    ("non-string in the list", ['{"id": "q1", "query": "x", "relevant": ["d1", 7]}'], 1,
     "relevant", "got 7"),
    ("relevant of the wrong type", ['{"id": "q1", "query": "x", "relevant": "d1"}'], 1,
     "relevant", "got a string"),
    ("empty slice", ['{"id": "q1", "query": "x", "relevant": [], "slice": ""}'], 1, "slice",
     "non-blank"),
    ("slice not a string", ['{"id": "q1", "query": "x", "relevant": [], "slice": 3}'], 1,
     "slice", "got 3"),
    ("the reserved slice", ['{"id": "q1", "query": "x", "relevant": [], "slice": "overall"}'],
     1, "slice", 'slice "overall" is reserved'),
    ("outranks not a list", ['{"id": "q1", "query": "x", "relevant": [], "outranks": "d1"}'], 1,
     "outranks", "got a string"),
    ("outranks pair of one id twice", ['{"id": "q1", "query": "x", "relevant": [], '
     '"outranks": [["d1", "d2"], ["d1", "d1"]]}'], 1, "outranks[1]", "two different"),
    ("outranks triple", ['{"id": "q1", "query": "x", "relevant": [], '
     '"outranks": [["d1", "d2", "d3"]]}'], 1, "outranks[0]", "[correct_id, stale_id]"),
    ("derivation not a string", ['{"id": "q1", "query": "x", "relevant": [], "derivation": 1}'],
     1, "derivation", "got an integer"),
    ("derivation null", ['{"id": "q1", "query": "x", "relevant": [], "derivation": null}'], 1,
     "derivation", "got null"),
    ("duplicate query id", [GOOD, '{"id": "q2", "query": "y", "relevant": []}', GOOD], 3, "id",
     "lines 1 and 3"),
    ("header not first", [GOOD, HEADER], 2, "format", "only allowed on the first line"),
    ("header with another format", ['{"format": "trec", "version": 1}', GOOD], 1, "format",
     '"harness-gold"'),
    ("header without version", ['{"format": "harness-gold"}', GOOD], 1, "version",
     "it is missing"),
    ("header version 2", ['{"format": "harness-gold", "version": 2}', GOOD], 1, "version",
     "got 2"),
    ("header version true", ['{"format": "harness-gold", "version": true}', GOOD], 1, "version",
     "got true"),
    ("header unknown key", ['{"format": "harness-gold", "version": 1, "corpos": {}}', GOOD], 1,
     "corpos", "did you mean 'corpus'"),
    ("header corpus not an object", ['{"format": "harness-gold", "version": 1, "corpus": "c"}',
     GOOD], 1, "corpus", "got a string"),
    ("header corpus without name", ['{"format": "harness-gold", "version": 1, "corpus": {}}',
     GOOD], 1, "corpus.name", "required"),
    ("header corpus bad sha256", ['{"format": "harness-gold", "version": 1, '
     '"corpus": {"name": "c.jsonl", "sha256": "ABC"}}', GOOD], 1, "corpus.sha256", "64 lowercase"),
    ("header description not a string", ['{"format": "harness-gold", "version": 1, '
     '"description": 5}', GOOD], 1, "description", "got an integer"),
]


@pytest.mark.parametrize(("lines", "line", "field", "fragment"),
                         [case[1:] for case in NATIVE_RULES], ids=[c[0] for c in NATIVE_RULES])
def test_each_broken_rule_is_one_problem_naming_line_and_field(
        tmp_path: Path, lines: list[str], line: int, field: str | None, fragment: str) -> None:
    path = lines_file(tmp_path, *lines)
    with pytest.raises(GoldError) as info:
        load_gold(path)
    assert [(p.line, p.field) for p in info.value.problems] == [(line, field)]
    assert fragment in info.value.problems[0].message
    where = f"{path}:{line}: {field}: " if field else f"{path}:{line}: "
    assert where + info.value.problems[0].message in str(info.value)
    assert "harness gold check" in str(info.value)


@pytest.mark.parametrize("text", ["", "\n\n  \n", HEADER + "\n"], ids=["empty", "blank", "header"])
def test_a_file_without_queries_is_a_problem(tmp_path: Path, text: str) -> None:
    [problem] = problems_of(write(tmp_path / "gold.jsonl", text))
    assert problem.line is None
    assert "no queries" in problem.message


def test_a_file_that_is_not_utf8_names_the_line_of_the_bad_byte(tmp_path: Path) -> None:
    path = write(tmp_path / "gold.jsonl", (GOOD + "\n").encode() * 2 + b'{"id": "\xff"}\n')
    [problem] = problems_of(path, fmt="native")
    assert problem.line == 3
    assert "not UTF-8" in problem.message


def test_every_problem_of_a_file_is_reported_at_once(tmp_path: Path) -> None:
    path = lines_file(
        tmp_path,
        GOOD,
        '{"id": "q2", "query": "", "relevant": []}',
        "",
        '{"id": "q3", "query": "x", "relevant": {"d1": -2}}',
        '{"id": "q4", "query": "x", "relevant": [], "extra": 1}',
    )
    problems = problems_of(path)
    assert [(p.line, p.field) for p in problems] == [(2, "query"), (4, "relevant"), (5, "extra")]
    with pytest.raises(GoldError, match="3 problems"):
        load_gold(path)


def test_one_line_with_several_faults_lists_each(tmp_path: Path) -> None:
    path = lines_file(tmp_path, '{"id": "", "query": " ", "relevant": {"d": 1.5}, "slice": ""}')
    assert {p.field for p in problems_of(path)} == {"id", "query", "relevant", "slice"}


# --------------------------------------------------------------------------- native: what it reads


def test_native_fields_defaults_and_physical_line_numbers(tmp_path: Path) -> None:
    sha = "ab" * 32
    path = lines_file(
        tmp_path,
        '{"format": "harness-gold", "version": 1, "description": "d", '
        f'"corpus": {{"name": "kb.jsonl", "sha256": "{sha}"}}}}',
        "",
        '{"id": "q1", "query": "who owns billing", "relevant": ["d1", "d2"]}',
        '{"id": "q2", "query": "deploy freeze", "slice": "policy", "relevant": {"d4": 2, "d3": 0},'
        ' "outranks": [["d4", "d3"]], "derivation": "d4 replaced d3"}',
        '{"id": "q3", "query": "meeting rooms", "relevant": {}}',
    )
    gold = load_gold(path)
    assert (gold.format, gold.version, gold.source) == ("native", 1, str(path))
    assert gold.corpus == CorpusInfo("kb.jsonl", sha)
    q1, q2, q3 = gold.queries
    assert q1 == GoldQuery("q1", "who owns billing", "default", {"d1": 1, "d2": 1}, line=3)
    assert q2 == GoldQuery("q2", "deploy freeze", "policy", {"d4": 2, "d3": 0}, (("d4", "d3"),),
                           "d4 replaced d3", line=4)
    assert (q1.answerable, q2.answerable, q3.answerable) == (True, True, False)
    assert gold.slices == ("default", "policy")
    assert gold.hash == canonical_hash(gold.queries)


def test_crlf_line_ends_and_a_bom_are_read(tmp_path: Path) -> None:
    path = write(tmp_path / "gold.jsonl", ("\ufeff" + HEADER + "\r\n" + GOOD + "\r\n").encode())
    [query] = load_gold(path).queries
    assert (query.id, query.text, query.line) == ("q1", "rotate the TLS cert", 2)


def test_a_line_separator_inside_a_string_does_not_split_the_line(tmp_path: Path) -> None:
    path = lines_file(tmp_path, '{"id": "q1", "query": "a\u2028b", "relevant": []}', GOOD.replace(
        "q1", "q2"))
    assert [q.text for q in load_gold(path).queries] == ["a\u2028b", "rotate the TLS cert"]


# --------------------------------------------------------------------------- corpus


def corpus_file(tmp_path: Path, *ids: str, name: str = "corpus.jsonl") -> Path:
    rows = [json.dumps({"id": doc, "title": "", "text": f"text of {doc}"}) for doc in ids]
    return lines_file(tmp_path, *rows, name=name)


def test_ids_missing_from_the_corpus_name_query_line_and_field(tmp_path: Path) -> None:
    corpus = corpus_file(tmp_path, "d1", "d2", "d3")
    path = lines_file(
        tmp_path,
        '{"id": "q1", "query": "x", "relevant": {"d1": 1, "d9": 0}}',
        '{"id": "q2", "query": "y", "relevant": ["d2"], "outranks": [["d2", "d3"], ["d2", "d8"]]}',
        '{"id": "q3", "query": "", "relevant": []}',
    )
    problems = problems_of(path, corpus=corpus)  # found in another order, listed by line
    assert [(p.line, p.field) for p in problems] == [(1, "relevant"), (2, "outranks[1]"),
                                                     (3, "query")]
    assert "query 'q1': document 'd9' is not in the corpus" in problems[0].message
    assert "query 'q2': document 'd8'" in problems[1].message


def test_a_wrong_corpus_says_so_before_listing_every_id(tmp_path: Path) -> None:
    corpus = corpus_file(tmp_path, "other-1", "other-2")
    problems = problems_of(lines_file(tmp_path, GOOD, GOOD.replace("q1", "q2")), corpus=corpus)
    assert len(problems) == 3
    assert "none of the 2 documents" in problems[0].message


def test_a_beir_corpus_folder_with_underscore_ids_and_integer_ids(tmp_path: Path) -> None:
    write(tmp_path / "beir" / "corpus.jsonl", '{"_id": "d1", "text": "a"}\n{"id": 7}\n')
    gold = load_gold(lines_file(tmp_path, GOOD.replace('["d1"]', '["d1", "7"]')),
                     corpus=tmp_path / "beir")
    ids, sha = load_corpus_ids(tmp_path / "beir")
    assert ids == {"d1", "7"}
    assert gold.corpus == CorpusInfo(str(tmp_path / "beir" / "corpus.jsonl"), sha)


def test_corpus_ids_and_sha256_come_from_one_pass_over_the_bytes(tmp_path: Path) -> None:
    corpus = corpus_file(tmp_path, "d1", "d2")
    ids, sha = load_corpus_ids(corpus)
    assert ids == frozenset({"d1", "d2"})
    assert sha == hashlib.sha256(corpus.read_bytes()).hexdigest() == file_sha256(corpus)


def test_a_malformed_corpus_lists_its_problems_with_the_gold_sets(tmp_path: Path) -> None:
    corpus = write(tmp_path / "corpus.jsonl",
                   '{"id": "d1"}\n{"id": "d1"}\n{"title": "no id"}\n[1]\n{"id": ""}\n{oops\n')
    problems = problems_of(lines_file(tmp_path, GOOD, '{"id": "q2"}'), corpus=corpus)
    assert [(Path(p.path).name, p.line, p.field) for p in problems] == [
        ("gold.jsonl", 2, "query"), ("gold.jsonl", 2, "relevant"),
        ("corpus.jsonl", 2, "id"), ("corpus.jsonl", 3, "id"), ("corpus.jsonl", 4, None),
        ("corpus.jsonl", 5, "id"), ("corpus.jsonl", 6, None)]
    assert "first at line 1" in problems[2].message


def test_a_missing_corpus_is_a_problem_naming_it(tmp_path: Path) -> None:
    [problem] = problems_of(lines_file(tmp_path, GOOD), corpus=tmp_path / "nope.jsonl")
    assert problem.path == str(tmp_path / "nope.jsonl")
    assert "corpus not found" in problem.message


def test_the_header_sha256_must_match_the_corpus(tmp_path: Path) -> None:
    corpus = corpus_file(tmp_path, "d1")
    stale = "0" * 64
    path = lines_file(tmp_path, '{"format": "harness-gold", "version": 1, "corpus": '
                      f'{{"name": "corpus.jsonl", "sha256": "{stale}"}}}}', GOOD)
    [problem] = problems_of(path, corpus=corpus)
    assert (problem.line, problem.field) == (1, "corpus.sha256")
    assert file_sha256(corpus) in problem.message
    assert load_gold(path).corpus == CorpusInfo("corpus.jsonl", stale)  # no corpus, no check


# --------------------------------------------------------------------------- dispatch


def test_format_detection(tmp_path: Path) -> None:
    assert detect_format(tmp_path) == "beir"
    assert detect_format(lines_file(tmp_path, "", GOOD)) == "native"
    assert detect_format(lines_file(tmp_path, "q1 0 d1 1", name="qrels")) == "trec"
    assert detect_format(lines_file(tmp_path, "[1]", name="array")) == "trec"


def test_inputs_that_cannot_be_read_name_the_path(tmp_path: Path) -> None:
    gold = lines_file(tmp_path, GOOD)
    qrels = lines_file(tmp_path, "q1 0 d1 1", name="qrels.txt")
    cases: list[tuple[dict[str, object], str]] = [
        ({"path": tmp_path / "absent.jsonl"}, "absent.jsonl: gold set not found"),
        ({"path": qrels}, "need their query texts"),
        ({"path": qrels, "queries": tmp_path / "topics.tsv"}, "topics.tsv: queries file not found"),
        ({"path": gold, "fmt": "xml"}, "unknown gold format 'xml'"),
        ({"path": gold, "queries": qrels}, "only read with TREC qrels"),
        ({"path": gold, "fmt": "beir"}, "a BEIR gold set is a folder"),
        ({"path": tmp_path, "fmt": "native"}, "is a file, not a folder"),
        ({"path": tmp_path}, "a folder is read as a BEIR gold set, and it holds no queries.jsonl"),
    ]
    for kwargs, message in cases:
        path = kwargs.pop("path")
        with pytest.raises(GoldError, match=message):
            load_gold(path, **kwargs)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- BEIR and TREC


def beir_folder(tmp_path: Path, qrels: str, *, name: str = "qrels/test.tsv") -> Path:
    folder = tmp_path / "beir"
    write(folder / "queries.jsonl",
          '{"_id": "q1", "text": "rotate the TLS cert", "metadata": {}}\n'
          '{"_id": "q2", "text": "who owns billing", "metadata": {"slice": "entity"}}\n'
          '{"_id": "q3", "text": "never judged"}\n')
    write(folder / name, qrels)
    return folder


def test_beir_loads_judged_queries_in_queries_file_order(tmp_path: Path) -> None:
    folder = beir_folder(tmp_path, "query-id\tcorpus-id\tscore\nq2\td4\t2\nq2\td9\t0\nq1\td1\t1\n")
    gold = load_gold(folder)
    assert gold.format == "beir"
    assert content(gold.queries) == [
        GoldQuery("q1", "rotate the TLS cert", "default", {"d1": 1}),
        GoldQuery("q2", "who owns billing", "entity", {"d4": 2, "d9": 0}),
    ]
    assert [q.line for q in gold.queries] == [1, 2]  # lines of queries.jsonl


def test_beir_split_choice_and_flat_qrels(tmp_path: Path) -> None:
    folder = beir_folder(tmp_path, "query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    write(folder / "qrels" / "dev.tsv", "query-id\tdoc-id\tscore\nq2\td2\t1\n")
    assert [q.id for q in load_gold(folder, split="dev").queries] == ["q2"]
    with pytest.raises(GoldError, match=r"no qrels for split 'train'.*splits here: dev, test"):
        load_gold(folder, split="train")
    flat = beir_folder(tmp_path / "flat", "query-id\tdoc-id\tscore\nq1\td1\t3\n", name="qrels.tsv")
    assert load_gold(flat).queries[0].relevant == {"d1": 3}


def test_beir_rules_each_name_their_line(tmp_path: Path) -> None:
    folder = beir_folder(tmp_path, "q1\td1\t1\n"  # no header
                         "q1\td2\n"
                         "q1\td3\t1.0\n"
                         "q2\td4\t-1\n"
                         "q1\td1\t0\n"
                         "q7\td5\t1\n"
                         "q7\td6\t1\n")
    qrels = str(folder / "qrels" / "test.tsv")
    problems = problems_of(folder)
    assert [(p.path, p.line, p.field) for p in problems] == [
        (qrels, 1, None), (qrels, 2, None), (qrels, 3, "score"), (qrels, 4, "score"),
        (qrels, 5, "corpus-id"), (qrels, 6, "query-id")]
    assert "header" in problems[0].message
    assert "lines 1 and 5" in problems[4].message
    assert "no text in" in problems[5].message


def test_queries_file_rules(tmp_path: Path) -> None:
    folder = beir_folder(tmp_path, "query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    write(folder / "queries.jsonl", '{"_id": "q1", "text": "a"}\n{"_id": "q1", "text": "b"}\n'
          '{"text": "c"}\n{"_id": "q4", "text": " "}\n{"_id": "q5", "text": "e", "slice": ""}\n'
          '{"_id": "q6", "id": "q7", "text": "f"}\n[]\n'
          '{"_id": "q8", "text": "g", "metadata": {"slice": "overall"}}\n')
    queries = str(folder / "queries.jsonl")
    problems = problems_of(folder)
    assert [(p.path, p.line, p.field) for p in problems] == [
        (queries, 2, "id"), (queries, 3, "id"), (queries, 4, "text"), (queries, 5, "slice"),
        (queries, 6, "id"), (queries, 7, None), (queries, 8, "slice")]


def test_trec_qrels_with_tsv_or_jsonl_topics(tmp_path: Path) -> None:
    qrels = write(tmp_path / "qrels.txt", "q2 0 d4 2\nq2 0 d9 0\n\nq1 Q0 d1 1\n")
    tsv = write(tmp_path / "topics.tsv", "q1\trotate the TLS cert\nq2\twho owns billing\n")
    jsonl = write(tmp_path / "topics.jsonl", '{"id": "q1", "text": "rotate the TLS cert"}\n'
                  '{"id": "q2", "text": "who owns billing"}\n{"id": "q3", "text": "unjudged"}\n')
    from_tsv = load_gold(qrels, queries=tsv)
    from_jsonl = load_gold(qrels, queries=jsonl, fmt="trec")
    expected = [GoldQuery("q1", "rotate the TLS cert", relevant={"d1": 1}),
                GoldQuery("q2", "who owns billing", relevant={"d4": 2, "d9": 0})]
    assert content(from_tsv.queries) == content(from_jsonl.queries) == expected
    assert from_tsv.format == "trec"
    assert from_tsv.hash == from_jsonl.hash


def test_trec_rules_each_name_their_line(tmp_path: Path) -> None:
    qrels = write(tmp_path / "qrels.txt", "q1 0 d1 1\nq1 0 d2\nq1 0 d3 -1\nq1 0 d4 x\n")
    topics = write(tmp_path / "topics.tsv", "q1\tfine\nq2 no tab\n")
    problems = problems_of(qrels, queries=topics)
    assert [(Path(p.path).name, p.line, p.field) for p in problems] == [
        ("topics.tsv", 2, None), ("qrels.txt", 2, None), ("qrels.txt", 3, "relevance"),
        ("qrels.txt", 4, "relevance")]
    sgml = write(tmp_path / "topics.sgml", "<top>\n<num> q1\n</top>\n")
    good_qrels = write(tmp_path / "good.txt", "q1 0 d1 1\nq2 0 d1 1\n")
    [problem] = problems_of(good_qrels, queries=sgml)  # and not "q1, q2: no text" as well
    assert problem.line == 1
    assert "SGML" in problem.message


def test_a_table_without_judged_queries_has_no_queries(tmp_path: Path) -> None:
    folder = beir_folder(tmp_path, "query-id\tcorpus-id\tscore\n")
    [problem] = problems_of(folder)
    assert "no queries" in problem.message


# --------------------------------------------------------------------------- the content hash


def test_the_hash_of_one_query_by_hand() -> None:
    query = GoldQuery("q1", "caf\u00e9", "s", {"d2": 0, "d1": 2}, (("d1", "d2"),), None, line=9)
    form = ('[{"derivation":null,"id":"q1","outranks":[["d1","d2"]],'
            '"relevant":{"d1":2,"d2":0},"slice":"s","text":"caf\u00e9"}]')
    assert canonical_hash([query]) == hashlib.sha256(form.encode("utf-8")).hexdigest()


def test_the_hash_of_two_queries_by_hand_in_either_order() -> None:
    """Unique ids are encoded in one call, shared ones one by one: the same text either way."""
    a = GoldQuery("q2", "x", relevant={"d1": 1})
    b = GoldQuery("q1", "y", relevant={"d2": 0})
    form = ('[{"derivation":null,"id":"q1","outranks":[],"relevant":{"d2":0},"slice":"default",'
            '"text":"y"},{"derivation":null,"id":"q2","outranks":[],"relevant":{"d1":1},'
            '"slice":"default","text":"x"}]')
    expected = hashlib.sha256(form.encode("utf-8")).hexdigest()
    assert canonical_hash([a, b]) == canonical_hash([b, a]) == expected
    twice = replace(a, id="q1")
    assert canonical_hash([twice, b]) == canonical_hash([b, twice])


def test_the_hash_covers_content_and_only_content() -> None:
    base = GoldQuery("q1", "x", "s", {"d1": 1, "d2": 0}, (("d1", "d2"),), "why")
    same = [replace(base, line=4), replace(base, relevant={"d2": 0, "d1": 1})]
    different = [replace(base, text="y"), replace(base, slice="t"), replace(base, derivation=None),
                 replace(base, relevant={"d1": 1}), replace(base, relevant={"d1": 2, "d2": 0}),
                 replace(base, outranks=()), replace(base, id="q2")]
    assert {canonical_hash([q]) for q in same} == {canonical_hash([base])}
    hashes = {canonical_hash([q]) for q in different}
    assert len(hashes) == len(different) and canonical_hash([base]) not in hashes


def test_the_same_content_in_three_formats_has_one_hash(tmp_path: Path) -> None:
    native = lines_file(tmp_path, HEADER,
                        '{"id": "q2", "query": "who owns billing", "relevant": {"d9": 0, "d4": 2}}',
                        '{"id": "q1", "query": "rotate the TLS cert", "relevant": ["d1"]}')
    beir = beir_folder(tmp_path, "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td4\t2\nq2\td9\t0\n")
    write(beir / "queries.jsonl", '{"_id": "q1", "text": "rotate the TLS cert"}\n'
          '{"_id": "q2", "text": "who owns billing"}\n')
    qrels = write(tmp_path / "qrels.txt", "q2 0 d4 2\nq1 0 d1 1\nq2 0 d9 0\n")
    topics = write(tmp_path / "topics.tsv", "q2\twho owns billing\nq1\trotate the TLS cert\n")
    golds = [load_gold(native), load_gold(beir), load_gold(qrels, queries=topics)]
    assert [g.format for g in golds] == ["native", "beir", "trec"]
    assert len({g.hash for g in golds}) == 1
    assert content(golds[0].queries) == content(golds[1].queries) == content(golds[2].queries)


ids = st.text(alphabet="abcdefgh0123456789-_", min_size=1, max_size=6)
texts = st.text(min_size=1, max_size=20).filter(str.strip)
queries_strategy = st.lists(
    st.builds(GoldQuery, id=ids, text=texts, slice=texts.filter(lambda t: t != "overall"),
              relevant=st.dictionaries(ids, st.integers(0, 4), max_size=4),
              outranks=st.lists(st.tuples(ids, ids).filter(lambda p: p[0] != p[1]), max_size=2)
              .map(tuple),
              derivation=st.none() | st.text(max_size=10)),
    min_size=1, max_size=6, unique_by=lambda q: q.id)


@settings(max_examples=examples(60))
@given(queries_strategy, st.randoms())
def test_write_then_load_gives_the_same_queries_and_hash(
        queries: list[GoldQuery], rng: Random) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "gold.jsonl"
        write_native(queries, path, description="property")
        gold = load_gold(path)
    assert content(gold.queries) == content(tuple(queries))
    assert [q.line for q in gold.queries] == list(range(2, len(queries) + 2))
    shuffled = list(queries)
    rng.shuffle(shuffled)
    assert gold.hash == canonical_hash(queries) == canonical_hash(shuffled)


# --------------------------------------------------------------------------- the writer


def test_write_native_round_trips_a_gold_set_with_its_corpus(tmp_path: Path) -> None:
    source = load_gold(GOLD_DIR / "example.jsonl")
    path = tmp_path / "copy.jsonl"
    write_native(source, path)
    copy = load_gold(path)
    assert (copy.queries, copy.hash, copy.corpus) == (source.queries, source.hash, source.corpus)
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[1])
    assert list(first) == sorted(first)  # sorted keys
    write_native(source.queries, path, corpus=CorpusInfo("other.jsonl"), description="d")
    assert path.read_text(encoding="utf-8").splitlines()[0] == (
        '{"format": "harness-gold", "version": 1, "corpus": {"name": "other.jsonl"}, '
        '"description": "d"}')


def test_write_native_refuses_what_load_gold_would_refuse(tmp_path: Path) -> None:
    path = write(tmp_path / "gold.jsonl", "before\n")
    bad = [GoldQuery("q1", "x", relevant={"d1": -1}), GoldQuery("q1", " ")]
    with pytest.raises(GoldError) as info:
        write_native(bad, path)
    assert [(p.line, p.field) for p in info.value.problems] == [(2, "relevant"), (3, "id"),
                                                                (3, "query")]
    assert path.read_text() == "before\n"
    assert os.listdir(tmp_path) == ["gold.jsonl"]


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "gold.jsonl", "before\n")
    path.chmod(0o640)

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(GoldError, match="cannot write the gold set: No space left"):
        write_native([GoldQuery("q1", "x")], path)
    assert path.read_text() == "before\n"
    assert os.listdir(tmp_path) == ["gold.jsonl"]
    monkeypatch.undo()
    write_native([GoldQuery("q1", "x")], path)
    assert path.stat().st_mode & 0o777 == 0o640  # an overwrite keeps the file's mode
    with pytest.raises(GoldError, match="cannot write"):
        write_native([GoldQuery("q1", "x")], tmp_path / "missing" / "gold.jsonl")


# --------------------------------------------------------------------------- the public collections


def test_scifact_as_beir_and_as_trec(tmp_path: Path) -> None:
    data = shared_collection("scifact")
    beir = load_gold(data, corpus=data)  # every judged id is a SciFact document
    assert len(beir) == 300  # SOURCE.md: 300 queries, 339 qrels, all grade 1
    assert sum(len(q.relevant) for q in beir.queries) == 339
    assert {g for q in beir.queries for g in q.relevant.values()} == {1}
    assert beir.by_id["1"].relevant == {"31715818": 1}  # spot checks listed in SOURCE.md
    assert beir.by_id["36"].relevant == {"5152028": 1, "11705328": 1}
    assert len(beir.by_id["873"].relevant) == 5
    assert beir.corpus == CorpusInfo(str(data / "corpus.jsonl"), file_sha256(data / "corpus.jsonl"))
    qrels, topics = as_trec(data, tmp_path)
    trec = load_gold(qrels, queries=topics)
    assert trec.format == "trec"
    assert content(trec.queries) == content(beir.queries)
    assert trec.hash == beir.hash


def test_cranfield_graded_as_beir_and_as_trec(tmp_path: Path) -> None:
    data = shared_collection("cranfield")
    beir = load_gold(data, corpus=data / "corpus.jsonl")
    assert len(beir) == 225
    grades = [g for q in beir.queries for g in q.relevant.values()]
    # SOURCE.md: score 4 -> 128, 3 -> 387, 2 -> 734, 1 -> 363, 0 -> 225 (1,837 lines)
    assert [grades.count(g) for g in range(5)] == [225, 363, 734, 387, 128]
    assert all(q.answerable for q in beir.queries)
    q1 = beir.by_id["1"]  # qrels.tsv lines 2-3 and the code -1 line of query 1
    assert (q1.relevant["184"], q1.relevant["29"], q1.relevant["486"]) == (3, 3, 0)
    assert q1.text.startswith("what similarity laws must be obeyed")
    qrels, topics = as_trec(data, tmp_path)
    trec = load_gold(qrels, queries=topics)
    assert trec.hash == beir.hash


def as_trec(data: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The collection's qrels as TREC `qid 0 docid rel`, its queries as `qid<TAB>text`."""
    rows = (data / "qrels.tsv").read_text(encoding="utf-8").splitlines()[1:]
    qrels = write(tmp_path / "qrels.trec",
                  "".join("{} 0 {} {}\n".format(*row.split("\t")) for row in rows))
    topics = [json.loads(line) for line in (data / "queries.jsonl").read_text().splitlines()]
    queries = write(tmp_path / "topics.tsv", "".join(f"{t['id']}\t{t['text']}\n" for t in topics))
    return qrels, queries


# --------------------------------------------------------------------------- the example in gold/


def test_the_example_loads_cleanly_against_its_corpus() -> None:
    corpus = GOLD_DIR / "example-corpus.jsonl"
    gold = load_gold(GOLD_DIR / "example.jsonl", corpus=corpus)
    assert isinstance(gold, GoldSet)
    assert gold.corpus == CorpusInfo("example-corpus.jsonl", file_sha256(corpus))
    ids, _ = load_corpus_ids(corpus)
    assert 25 <= len(ids) <= 40 and 15 <= len(gold) <= 25
    assert len(gold.slices) >= 3
    assert any(2 in q.relevant.values() for q in gold.queries)  # graded
    assert any(not q.answerable for q in gold.queries)
    assert any(q.outranks for q in gold.queries)


def test_the_example_run_ranks_corpus_documents_for_every_gold_query() -> None:
    gold = load_gold(GOLD_DIR / "example.jsonl")
    ids, _ = load_corpus_ids(GOLD_DIR / "example-corpus.jsonl")
    rows = [json.loads(line) for line in (GOLD_DIR / "example-run.jsonl").read_text().splitlines()]
    assert [row["id"] for row in rows] == [q.id for q in gold.queries]
    for row in rows:
        assert set(row) == {"id", "ranking"}
        assert len(set(row["ranking"])) == len(row["ranking"]) > 0
        assert set(row["ranking"]) <= ids
    top = {row["id"]: row["ranking"][0] for row in rows}
    hits = sum(gold.by_id[q].relevant.get(doc, 0) > 0 for q, doc in top.items())
    assert 0 < hits < sum(q.answerable for q in gold.queries)  # plausible, not perfect


def test_the_readme_examples_are_true(tmp_path: Path) -> None:
    readme = (GOLD_DIR / "README.md").read_text(encoding="utf-8")
    block = readme.split("```jsonl\n", 1)[1].split("```", 1)[0]
    gold = load_gold(write(tmp_path / "readme.jsonl", block),
                     corpus=GOLD_DIR / "example-corpus.jsonl")
    assert [q.id for q in gold.queries] == ["q01", "q04", "q06", "q18"]
    example = load_gold(GOLD_DIR / "example.jsonl").by_id
    assert all(q.relevant == example[q.id].relevant for q in gold.queries)
    form = readme.split("```json\n", 1)[1].split("```", 1)[0].strip()
    query = GoldQuery("q1", "caf\u00e9", "s", {"d1": 2, "d2": 0}, (("d1", "d2"),))
    assert canonical_hash([query]) == hashlib.sha256(form.encode("utf-8")).hexdigest()

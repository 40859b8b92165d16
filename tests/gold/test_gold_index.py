"""`Corpus.prepare(terms)` answers df and holders exactly as the whole inverted index does.

The oracle is a second Corpus of the same documents whose whole index is built (`df` of a term
nobody prepared); the prepared one must agree on every term, including words that only reach the
term through normalisation ("policies" -> "policy", "deploys" -> "deploy"), compounds, words
after NFKC folding ("ﬁle" -> "file"), non-ASCII text (the exact path), and terms no word can be.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import GoldError
from harness.gold import check_files
from harness.gold.check import check_gold
from harness.gold.documents import Corpus, Document
from harness.gold.text import compounds, surface_forms, tokens

_PIECES = [
    "policy", "policies", "Policys", "deploy", "deploys", "DEPLOYIES", "class", "status", "is",
    "err-48213", "ERR-48213", "v1.2.3", "max_conn", "ops_9.x", "a-b..c", "48213", "ﬁle", "file",
    "café", "cafés", "Straße", "naïve-mode", "ΣΟΦΙΑΣ", "x", "--", "...", "_", "\u00a0", "ǅ",
    "İstanbul", "lag", "LAG!", "consumer,", "(err-1)", "y", "ies", "s",
]
_TEXT = st.lists(st.sampled_from(_PIECES), max_size=8).map(" ".join)


def _oracle(documents: tuple[Document, ...], terms: list[str]) -> dict[str, tuple[str, ...]]:
    whole = Corpus(documents, "oracle")
    whole.df("\0 build the whole index \0")
    return {term: whole.holders(term) for term in terms}


def _terms(documents: tuple[Document, ...]) -> list[str]:
    found = {"no such term", "", "a b", "err-", "policys", "deploies", "-", "Policy"}
    for doc in documents:
        for field in (doc.title, doc.text):
            found.update(tokens(field))
            found.update(compounds(field))
            found.update(word + "s" for word in tokens(field))
    return sorted(found)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(_TEXT, _TEXT), min_size=1, max_size=6))
def test_prepared_terms_agree_with_the_whole_index(fields: list[tuple[str, str]]) -> None:
    documents = tuple(Document(f"d{i}", title, text) for i, (title, text) in enumerate(fields))
    terms = _terms(documents)
    expected = _oracle(documents, terms)
    prepared = Corpus(documents, "prepared")
    prepared.prepare(terms)
    assert "_postings" not in prepared.__dict__  # answered without the whole index
    for term in terms:
        assert prepared.holders(term) == expected[term], term
        assert prepared.df(term) == len(expected[term]), term


def test_a_term_not_prepared_falls_back_to_the_whole_index() -> None:
    documents = (Document("a", "Deploys", "err-7 policies"), Document("b", "", "policy"))
    corpus = Corpus(documents, "c")
    corpus.prepare(["policy"])
    assert corpus.holders("policy") == ("a", "b")
    assert corpus.holders("err-7") == ("a",)  # not prepared: the whole index answers
    assert corpus.holders("deploy") == ("a",)


def test_surface_forms_are_the_words_that_normalise_to_a_term() -> None:
    assert surface_forms("policy") == ["policy", "policys", "policies"]
    assert surface_forms("class") == ["class"]  # "classs" keeps its "ss"
    assert surface_forms("deploys") == []  # no word normalises to it
    assert surface_forms("err-1") == []  # a compound, not a word


def test_check_files_reads_the_same_on_the_demo_as_with_the_whole_index(tmp_path: Path) -> None:
    from harness.demo.generate import write

    corpus_path, gold_path = write(tmp_path)
    gold, report = check_files(gold_path, corpus_path)
    from harness.gold import load_corpus

    whole = load_corpus(corpus_path)
    whole.df("\0 build the whole index \0")
    # With the whole index built first, prepare is a no-op: the report is the unprepared one.
    assert check_gold(gold, whole) == report


# --------------------------------------------------------------------------- reading the corpus

_LINES = [
    b'{"id": "a", "title": "T", "text": "x"}',
    b'{"id": "b", "text": "no title"}',
    b'{"_id": "c", "text": "beir"}',
    b'{"_id": "d", "id": "d", "text": "both agree"}',
    b'{"_id": "e", "id": "f", "text": "disagree"}',
    b'{"id": 7, "text": "integer id"}',
    b'{"id": true, "text": "bool id"}',
    b'{"id": "", "text": "empty id"}',
    b'{"id": "g", "title": 3, "text": "bad title"}',
    b'{"id": "h", "title": "no text"}',
    b'{"id": "a", "text": "duplicate"}',
    b'{"text": "no id"}',
    b'["not", "an", "object"]',
    b'{"id": "i", "text": "caf\xc3\xa9 \\ud800"}',
    b'{"id": "j", "text": "\xed\xa0\x80 a raw surrogate"}',
    b'{"id": "k", "text": "\xff bad utf-8"}',
    b'\xef\xbb\xbf{"id": "l", "text": "a BOM"}',
    '{"id": "m", "text": "utf-16"}'.encode("utf-16"),
    b'{"id": "n", "text": "trailing"} x',
    b'{"id": "o", "text": "crlf"}\r',
    b"   ",
    b'{"id": "p", "text": "nul \x00 inside"}',
    b'\x00{"id": "q"}',
]


@settings(max_examples=examples(200), deadline=None)
@given(lines=st.lists(st.sampled_from(_LINES), max_size=8))
def test_the_quick_reading_of_a_line_changes_nothing(
    lines: list[bytes], tmp_path_factory: pytest.TempPathFactory
) -> None:
    import harness.gold.corpus as reading

    path = tmp_path_factory.mktemp("corpus") / "corpus.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")

    def outcome() -> object:
        try:
            ids, sha = reading.load_corpus_ids(path)
            return ids, sha, reading.load_corpus(path).documents
        except GoldError as error:
            return str(error), [str(p) for p in error.problems]

    quick = outcome()
    with pytest.MonkeyPatch.context() as patch:  # every line through the exact, slow reading
        patch.setattr(reading, "_quick_row", lambda raw: None)
        patch.setattr(reading, "_quick_id", lambda row: None)
        exact = outcome()
    assert quick == exact

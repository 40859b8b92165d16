"""A corpus held in memory, for the checks and the builder: documents and a lazy inverted index.

    Corpus(documents, name, sha256)      built by `corpus.load_corpus(path)`, or by hand in tests
      .ids / .by_id                      which documents exist
      .df(term) / .holders(term)         how many / which documents hold a term
      .prepare(terms)                    find just these terms now, in one pass (optional)
      .words(doc_id) / .fields(doc_id)   a document's normalised words: a set / title and text
      .phrase_matches(words)             the documents whose title or text holds a phrase

Pure: no I/O. Nothing is tokenised until a check asks (integrity needs only the ids): a document's
words when its words are asked for, the whole index when a term's frequency is. A caller that
knows every term it will ask about says so first (`prepare(terms)`, as `gold check` does): one
pass over the corpus then finds just those terms, with the same answers as the whole index, which
is built only if another term is asked about (see harness.gold.text for the tokeniser). A term
is a normalised word or a compound, and a document's terms are those of its title and its text
together. A phrase matches a document when its words occur contiguously, in order, inside the
title's words or the text's words (never across the two): case and punctuation between words are
ignored, as in a search engine's phrase query.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from harness.gold.text import (
    ASCII_COMPOUND,
    ASCII_GAPS,
    compounds,
    fold,
    surface_forms,
    tokens,
)
from harness.values.types import CorpusInfo


@dataclass(frozen=True)
class Document:
    """One corpus row: its id, title ("" when absent) and text, and its line in the file."""

    id: str
    title: str
    text: str
    line: int | None = None


@dataclass(frozen=True, eq=False)
class Corpus:
    """The documents of one corpus, in file order, with the file's name and sha256."""

    documents: tuple[Document, ...]
    name: str
    sha256: str | None = None

    @property
    def info(self) -> CorpusInfo:
        """What a gold header records about this corpus."""
        return CorpusInfo(self.name, self.sha256)

    def __len__(self) -> int:
        return len(self.documents)

    @cached_property
    def by_id(self) -> Mapping[str, Document]:
        return {doc.id: doc for doc in self.documents}

    @cached_property
    def ids(self) -> frozenset[str]:
        return frozenset(self.by_id)

    # Per document index, filled as asked: its title's and text's words (see `_words_of`).
    _words_memo: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = field(
        default_factory=dict, init=False, repr=False)
    # term -> postings, for the terms `prepare` was given (while the whole index is not built).
    _prepared: dict[str, tuple[int, ...]] = field(default_factory=dict, init=False, repr=False)

    def _words_of(self, index: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The words of one document's title and of its text, tokenised on first use."""
        found = self._words_memo.get(index)
        if found is None:
            doc = self.documents[index]
            found = self._words_memo[index] = (tuple(tokens(doc.title)), tuple(tokens(doc.text)))
        return found

    @cached_property
    def _fields(self) -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
        """Per document, in corpus order: the words of its title and of its text."""
        return tuple(self._words_of(index) for index in range(len(self.documents)))

    @cached_property
    def _position(self) -> Mapping[str, int]:
        return {doc.id: index for index, doc in enumerate(self.documents)}

    @cached_property
    def _postings(self) -> Mapping[str, tuple[int, ...]]:
        """term -> the positions (in corpus order) of the documents holding it."""
        postings: dict[str, list[int]] = {}
        for index, (doc, (title, text)) in enumerate(zip(self.documents, self._fields,
                                                         strict=True)):
            held = {*title, *text, *compounds(doc.title), *compounds(doc.text)}
            for term in held:
                postings.setdefault(term, []).append(index)
        return {term: tuple(found) for term, found in postings.items()}

    def _posting(self, term: str) -> tuple[int, ...]:
        if "_postings" not in self.__dict__ and term in self._prepared:
            return self._prepared[term]
        return self._postings.get(term, ())

    def prepare(self, terms: Iterable[str]) -> None:
        """Find the documents holding each of `terms` in one pass, so `df` and `holders` of them
        need no whole index: what the whole index would say of them, for a fraction of its cost
        (a no-op once the whole index exists). A term is what the index holds: a normalised word
        (`text.tokens`) or a compound (`text.compounds`); anything else is held nowhere."""
        if "_postings" in self.__dict__:
            return
        wanted = {term for term in terms if term not in self._prepared}
        if not wanted:
            return
        # A document holds a word term when one of its words, as written, normalises to it.
        surface = {form: term for term in wanted for form in surface_forms(term)}
        surface_bytes = {form.encode("utf-8"): term for form, term in surface.items()}
        found: dict[str, list[int]] = {term: [] for term in wanted}
        for index, doc in enumerate(self.documents):
            title, text = fold(doc.title), fold(doc.text)
            if title.isascii() and text.isascii():
                raw = f"{title}\n{text}".encode("ascii")
                held = {surface_bytes[w] for w in surface_bytes.keys() & raw.translate(
                    ASCII_GAPS).split()}
                held.update(wanted.intersection(m.decode("ascii")
                                                for m in ASCII_COMPOUND.findall(raw)))
            else:  # the exact rules, as the whole index applies them
                title_words, text_words = self._words_of(index)
                held = {*title_words, *text_words, *compounds(doc.title),
                        *compounds(doc.text)} & wanted
            for term in held:
                found[term].append(index)
        self._prepared.update((term, tuple(holding)) for term, holding in found.items())

    def df(self, term: str) -> int:
        """Document frequency of a normalised word or a compound (0 when absent)."""
        return len(self._posting(term))

    def holders(self, term: str) -> tuple[str, ...]:
        """The ids of the documents holding `term`, in corpus order."""
        return tuple(self.documents[i].id for i in self._posting(term))

    def words(self, doc_id: str) -> frozenset[str]:
        """The normalised words of a document's title and text (KeyError for an unknown id)."""
        title, text = self._words_of(self._position[doc_id])
        return frozenset(title) | frozenset(text)

    def fields(self, doc_id: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The normalised words of a document's title and of its text, in order."""
        return self._words_of(self._position[doc_id])

    def length(self, doc_id: str) -> int:
        """How many words a document's title and text hold together."""
        title, text = self._words_of(self._position[doc_id])
        return len(title) + len(text)

    def phrase_matches(self, words: Sequence[str]) -> tuple[str, ...]:
        """Ids (corpus order) of the documents whose title or text holds `words` contiguously.

        `words` are normalised words (`text.tokens(phrase)`); an empty phrase matches nothing.
        """
        if not words:
            return ()
        lists = sorted((self._posting(w) for w in set(words)), key=len)
        candidates = set(lists[0]).intersection(*lists[1:])
        needle = " " + " ".join(words) + " "
        found = []
        for index in sorted(candidates):
            if any(needle in " " + " ".join(part) + " " for part in self._words_of(index)):
                found.append(self.documents[index].id)
        return tuple(found)

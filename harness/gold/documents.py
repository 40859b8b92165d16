"""A corpus held in memory, for the checks and the builder: documents and a lazy inverted index.

    Corpus(documents, name, sha256)      built by `corpus.load_corpus(path)`, or by hand in tests
      .ids / .by_id                      which documents exist
      .df(term) / .holders(term)         how many / which documents hold a term
      .words(doc_id) / .fields(doc_id)   a document's normalised words: a set / title and text
      .phrase_matches(words)             the documents whose title or text holds a phrase

Pure: no I/O. Nothing is tokenised until a check asks (integrity needs only the ids); then every
document is tokenised once (see harness.gold.text) and the index kept. A term is a normalised word
or a compound, and a document's terms are those of its title and its text together. A phrase
matches a document when its words occur contiguously, in order, inside the title's words or the
text's words (never across the two): case and punctuation between words are ignored, as in a
search engine's phrase query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from harness.gold.text import compounds, tokens
from harness.types import CorpusInfo


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

    @cached_property
    def _fields(self) -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
        """Per document, in corpus order: the words of its title and of its text."""
        return tuple((tuple(tokens(d.title)), tuple(tokens(d.text))) for d in self.documents)

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

    def df(self, term: str) -> int:
        """Document frequency of a normalised word or a compound (0 when absent)."""
        return len(self._postings.get(term, ()))

    def holders(self, term: str) -> tuple[str, ...]:
        """The ids of the documents holding `term`, in corpus order."""
        return tuple(self.documents[i].id for i in self._postings.get(term, ()))

    def words(self, doc_id: str) -> frozenset[str]:
        """The normalised words of a document's title and text (KeyError for an unknown id)."""
        title, text = self._fields[self._position[doc_id]]
        return frozenset(title) | frozenset(text)

    def fields(self, doc_id: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The normalised words of a document's title and of its text, in order."""
        return self._fields[self._position[doc_id]]

    def length(self, doc_id: str) -> int:
        """How many words a document's title and text hold together."""
        title, text = self._fields[self._position[doc_id]]
        return len(title) + len(text)

    def phrase_matches(self, words: Sequence[str]) -> tuple[str, ...]:
        """Ids (corpus order) of the documents whose title or text holds `words` contiguously.

        `words` are normalised words (`text.tokens(phrase)`); an empty phrase matches nothing.
        """
        if not words:
            return ()
        lists = sorted((self._postings.get(w, ()) for w in set(words)), key=len)
        candidates = set(lists[0]).intersection(*lists[1:])
        needle = " " + " ".join(words) + " "
        found = []
        for index in sorted(candidates):
            if any(needle in " " + " ".join(field) + " " for field in self._fields[index]):
                found.append(self.documents[index].id)
        return tuple(found)

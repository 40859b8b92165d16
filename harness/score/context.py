"""Answer spans in returned context: the characters behind context_precision@k and
context_recall@k (`harness.score.metrics`).

Pure: no I/O, no clock, no randomness.  A gold query may carry, per relevant document, answer
spans: exact, verbatim substrings of that document's text (`GoldQuery.spans`).  A service that
sets `query.texts` returns, beside each ranked id, the text it would hand a model (the returned
context of that chunk).  Everything is counted in characters (Python `str` code points):

- **evidence** of a document = its spans with exact duplicates dropped and every span that lies
  inside another span of the same document dropped (it adds no character): `evidence(spans)`;
- **annotated characters** of a query = the sum of the lengths of the evidence of its documents
  (`gold check` refuses spans of one document that overlap in its text without one holding the
  other, so this is the size of the union of the spans in the corpus);
- a span is **found** in a returned chunk when it occurs verbatim in that chunk's returned text
  (the text returned beside that id, not beside another: a chunk's text holds only its own
  document's spans); it is located at its first occurrence;
- **found characters** of a returned chunk = the size of the interval union, over character
  offsets of its returned text, of the found spans of its document: overlapping or nested
  occurrences count each character once (`found_characters`), so it is never more than the
  text's length, nor more than the document's annotated characters.

Rankings are deduplicated by chunk id first (the first occurrence and its text are kept, as every
metric keeps it), so a chunk returned twice counts once, in precision's denominator too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence


def evidence(spans: Iterable[str]) -> tuple[str, ...]:
    """The spans that add characters: empty and duplicate spans dropped, and every span that is
    a substring of another kept span dropped; the rest in their first order."""
    unique = [s for s in dict.fromkeys(spans) if s]
    return tuple(s for s in unique if not any(s != t and s in t for t in unique))


def annotated_characters(spans: Mapping[str, Sequence[str]]) -> int:
    """The annotated characters of one query: the evidence lengths of every document, summed."""
    return sum(len(s) for doc_spans in spans.values() for s in evidence(doc_spans))


def union_length(intervals: Iterable[tuple[int, int]]) -> int:
    """How many integer offsets the half-open intervals [start, end) cover together."""
    covered = 0
    reach = None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            covered += end - start
            reach = end
        elif end > reach:
            covered += end - reach
            reach = end
    return covered


def found_characters(text: str | None, spans: Sequence[str]) -> int:
    """The characters of `text` inside a found span (first occurrence of each), unioned."""
    if not text:
        return 0
    starts = ((text.find(s), len(s)) for s in evidence(spans))
    return union_length((i, i + n) for i, n in starts if i >= 0)


def first_texts(
    ranking: Sequence[str], texts: Sequence[str | None], max_k: int
) -> list[tuple[str, str | None]]:
    """The first max_k unique ids of a ranking, each with the text of its first occurrence
    (None past the end of `texts`: a record keeps only the texts a cutoff can read)."""
    if len(texts) > len(ranking):
        raise ValueError(f"{len(texts)} texts for {len(ranking)} ids")
    top: dict[str, str | None] = {}
    for i, doc in enumerate(ranking):
        if doc not in top:
            top[doc] = texts[i] if i < len(texts) else None
            if len(top) == max_k:
                break
    return list(top.items())

"""`harness gold build`: mine queries whose answer is known by construction from a corpus.

    build_gold(corpus, *, exact_rare=0, phrase=0, nonsense=0, seed=0, include=None)
        -> list[GoldQuery]

Pure: no I/O (write the result with `write_native(queries, out, corpus=corpus.info)`, which
records the corpus name and sha256 in the header). Every mined row carries a `derivation` saying
how its answer is known, and is kept only when `check.check_query` finds nothing wrong with it,
so `gold check` passes on what `gold build` writes:

- exact_rare (slice "exact_rare", ids "exact_rare-001", ...): one query per document, the
  documents drawn at random from those of `min_words` to `max_words` words (title and text) that
  hold a word of document frequency 1 (not a stop word, at least 4 characters, with a letter); the
  query is that word as written (lower-cased), the answer its one document.
- phrase ("phrase", "phrase-001", ...): from documents drawn at random (same length bounds), a
  verbatim run of `phrase_words` words of the text separated by single spaces, neither end a stop
  word, no word all digits; kept when it matches between 1 and `max_phrase_docs` documents
  (`Corpus.phrase_matches`). The matching documents, all grade 1, are the answer key.
- nonsense ("nonsense", "nonsense-001", ...): two or three made-up words of three
  consonant-vowel syllables, each absent from the corpus after normalisation; unanswerable.

`include` rows (a hand-written GoldSet, e.g. paraphrases) come first, unchanged, after passing
`check_gold` against the corpus with no error. The same corpus, counts, seed and include give the
same rows in the same order: every draw comes from `random.Random(f"{seed}/{kind}")` and nothing
is iterated in hash order. Asking for more rows of a kind than the corpus yields is a GoldError.
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import TypeVar

from harness.errors import GoldError, Problem
from harness.gold.check import check_gold, check_query
from harness.gold.documents import Corpus, Document
from harness.gold.text import STOP_WORDS, normalise, surface_words, tokens
from harness.values.types import GoldQuery, GoldSet

_WORD = re.compile(r"[^\W_]+")
_Source = TypeVar("_Source")  # what one mined row is drawn from: a document, or an attempt
_CONSONANTS = "bdfgklmnprtvz"
_VOWELS = "aeiou"


def build_gold(corpus: Corpus, *, exact_rare: int = 0, phrase: int = 0, nonsense: int = 0,
               seed: int = 0, include: GoldSet | None = None, min_words: int = 20,
               max_words: int = 2000, phrase_words: int = 3,
               max_phrase_docs: int = 25) -> list[GoldQuery]:
    """The included rows, then the mined ones, in the order of the module docstring."""
    for name, value in (("exact_rare", exact_rare), ("phrase", phrase), ("nonsense", nonsense)):
        if value < 0:
            raise GoldError(f"--{name.replace('_', '-')} is a count of queries, >= 0, not {value}")
    if phrase_words < 2:
        raise GoldError(f"a phrase has at least two words, not {phrase_words}")
    rows = list(include.queries) if include is not None else []
    if include is not None:
        _check_include(include, corpus)
    useful = [d for d in corpus.documents if min_words <= corpus.length(d.id) <= max_words]
    sha = (corpus.sha256 or "unknown")[:12]
    mined = [
        *_mine(corpus, "exact_rare", exact_rare, seed, useful,
               lambda d, rng: _exact_rare(corpus, d, rng, sha)),
        *_mine(corpus, "phrase", phrase, seed, useful,
               lambda d, rng: _phrase(corpus, d, rng, sha, phrase_words, max_phrase_docs)),
        *_mine(corpus, "nonsense", nonsense, seed, range(100 * nonsense),
               lambda _, rng: _nonsense(corpus, rng, sha)),
    ]
    taken = {q.id: q.line for q in rows}
    clashes = [q for q in mined if q.id in taken]
    if clashes:
        source = include.source if include is not None else "include"
        raise GoldError(f"{source}: ids clash with mined queries", [
            Problem(source, f"id {q.id!r} is also a mined query's id; rename the included "
                    "query", taken[q.id], "id") for q in clashes])
    return rows + mined


def _check_include(include: GoldSet, corpus: Corpus) -> None:
    report = check_gold(include, corpus)
    if report.ok:
        return
    try:
        report.raise_if_errors()
    except GoldError as exc:
        raise GoldError(f"{include.source}: the included queries fail their checks against "
                        f"{corpus.name}", exc.problems,
                        hint="fix them, or leave them out of --include") from None


_Made = tuple[str, dict[str, int], str] | None  # query text, relevant, derivation


def _mine(corpus: Corpus, kind: str, count: int, seed: int, sources: Sequence[_Source],
          make: Callable[[_Source, random.Random], _Made]) -> list[GoldQuery]:
    """Up to `count` rows from `sources` drawn without replacement; GoldError when too few."""
    if count == 0:
        return []
    rng = random.Random(f"{seed}/{kind}")
    order = list(sources)
    rng.shuffle(order)
    width = max(3, len(str(count)))
    found: list[GoldQuery] = []
    seen: set[str] = set()
    for source in order:
        made = make(source, rng)
        if made is None or made[0] in seen:
            continue
        text, relevant, derivation = made
        query = GoldQuery(f"{kind}-{len(found) + 1:0{width}d}", text, kind, relevant,
                          derivation=derivation)
        if check_query(query, corpus):
            continue  # not winnable as check judges it: never write what check would refuse
        seen.add(text)
        found.append(query)
        if len(found) == count:
            return found
    where = "attempts" if kind == "nonsense" else "documents of a useful length"
    raise GoldError(f"only {len(found)} {kind} queries could be mined from {len(sources)} "
                    f"{where} of {corpus.name}, not {count}; ask for fewer "
                    f"(--{kind.replace('_', '-')}), or change the word bounds")


def _rare_word(word: str) -> bool:
    return len(word) >= 4 and word not in STOP_WORDS and any(c.isalpha() for c in word)


def _exact_rare(corpus: Corpus, document: Document, rng: random.Random, sha: str) -> _Made:
    title, text = corpus.fields(document.id)
    rare = [w for w in dict.fromkeys((*title, *text)) if corpus.df(w) == 1 and _rare_word(w)]
    if not rare:
        return None
    word = rng.choice(rare)
    # The query is the word as written, since a normalised form ("analysi") is not one.
    written = next(raw for raw in surface_words(f"{document.title}\n{document.text}")
                   if normalise(raw) == word)
    derivation = (f"{written!r} occurs in exactly one document, {document.id} "
                  f"({corpus.length(document.id)} words), of corpus sha256 {sha}")
    return written, {document.id: 1}, derivation


def _phrase(corpus: Corpus, document: Document, rng: random.Random, sha: str, size: int,
            most: int) -> _Made:
    text = unicodedata.normalize("NFKC", document.text)
    spans = [m.span() for m in _WORD.finditer(text)]
    words = [text[a:b] for a, b in spans]

    def usable(start: int) -> bool:
        window = range(start, start + size)
        return (all(text[spans[i][1]:spans[i + 1][0]] == " " for i in window[:-1])
                and not any(words[i].isdigit() for i in window)
                and words[start].lower() not in STOP_WORDS
                and words[start + size - 1].lower() not in STOP_WORDS)

    starts = [i for i in range(len(spans) - size + 1) if usable(i)]
    if not starts:
        return None
    start = rng.choice(starts)
    phrase = text[spans[start][0]:spans[start + size - 1][1]]
    matches = corpus.phrase_matches(tokens(phrase))
    if document.id not in matches or len(matches) > most:
        return None
    derivation = (f"verbatim from {document.id}; the phrase occurs in {len(matches)} "
                  f"document(s) of corpus sha256 {sha}, all labelled relevant")
    return phrase, dict.fromkeys(matches, 1), derivation


def _nonsense(corpus: Corpus, rng: random.Random, sha: str) -> _Made:
    words = ["".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(3))
             for _ in range(rng.randint(2, 3))]
    if any(corpus.df(normalise(w)) or w in STOP_WORDS for w in words):
        return None
    return " ".join(words), {}, f"no word of the query occurs in corpus sha256 {sha}"

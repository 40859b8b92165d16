"""The one tokeniser that `gold check` and `gold build` share: words, content words, identifiers.

    tokens(text)         every word, normalised, in order (phrases are matched on these)
    content_words(text)  distinct tokens minus stop words (leaks and nonsense are judged on these)
    compounds(text)      identifiers such as "err-75844", "v1.2.3", "max_conn" (exact queries)
    terms(text)          content words, then compounds: what an exact query is checked on

A word is a maximal run of letters and digits (`[^\\W_]+`) in the text after Unicode NFKC
normalisation and lower-casing, so "TLS-cert_v2" gives "tls", "cert", "v2". Light
normalisation, applied to every word that is all letters, is at least 4 letters long and is not a
stop word: a final "ies" becomes "y" ("policies" -> "policy"); otherwise a final "s" is dropped
unless the word ends in "ss", "us" or "is" ("deploys" -> "deploy", "class", "status" and
"analysis" are kept). Words with a digit are kept as they are. Check and build apply the same
rules to queries and documents, so the rules need only be consistent, not linguistically right.

A compound is two or more words joined by single "-", "_" or "." characters, lower-cased and not
otherwise normalised. Compounds are indexed beside words: "err-75844" can occur in one document
while "75844" also occurs elsewhere, and an identifier is what an exact-token query asks for.

`STOP_WORDS` lists the English function words that are never content; a stop word is kept as it
is by normalisation and still counts in phrases.
"""

from __future__ import annotations

import re
import unicodedata

STOP_WORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing down during each either else
ever every few for from further had has have having he her here hers herself him himself his
how however i if in into is it its itself just let me more most my myself neither no nor not
now of off on once only or other our ours ourselves out over own per same she should so some
such than that the their theirs them themselves then there these they this those through to
too under until up upon us very via was we were what whatever when where whether which while
who whom whose why will with within without would yet you your yours yourself yourselves""".split()  # noqa: SIM905
)

_WORD = re.compile(r"[^\W_]+")
_COMPOUND = re.compile(r"(?<![^\W_])[^\W_]++(?:[-_.][^\W_]++)++")  # possessive: linear time


def _normalise(word: str) -> str:
    if len(word) >= 4 and word.isalpha() and word not in STOP_WORDS:
        if word.endswith("ies") and len(word) >= 5:
            return word[:-3] + "y"
        if word.endswith("s") and not word.endswith(("ss", "us", "is")):
            return word[:-1]
    return word


class _Memo(dict[str, str]):
    """normalise, memoised: a corpus repeats its vocabulary millions of times, and `map` over
    `__getitem__` runs at C speed for every word seen before."""

    def __missing__(self, word: str) -> str:
        if len(self) >= 1_000_000:  # bounded, whatever text passes through
            self.clear()
        found = self[word] = _normalise(word)
        return found


_memo = _Memo()


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def normalise(word: str) -> str:
    """One lower-case word after the light normalisation described in the module docstring."""
    return _memo[word]


def surface_words(text: str) -> list[str]:
    """Every word of `text` as written (NFKC, lower-cased), before light normalisation:
    `tokens(text)` is `normalise` applied to each."""
    return _WORD.findall(_fold(text))


def tokens(text: str) -> list[str]:
    """Every word of `text`, normalised, in order; stop words included."""
    return list(map(_memo.__getitem__, _WORD.findall(_fold(text))))


def content_words(text: str) -> list[str]:
    """The distinct normalised words of `text` that are not stop words, in first-seen order."""
    return list(dict.fromkeys(t for t in tokens(text) if t not in STOP_WORDS))


def compounds(text: str) -> list[str]:
    """The distinct compounds of `text` ("err-75844"), lower-cased, in first-seen order."""
    return list(dict.fromkeys(_COMPOUND.findall(_fold(text))))


def surface_forms(term: str) -> list[str]:
    """The words as written (NFKC, lower-cased) that `normalise` maps to `term`: `term` itself,
    `term` + "s" and, for a final "y", "ies" in its place; only those that map back to it
    (`normalise` changes nothing else, so no other word can). Empty for what no word maps to."""
    forms = [term, term + "s"] + ([term[:-1] + "ies"] if term.endswith("y") else [])
    return [form for form in forms if _WORD.fullmatch(form) and normalise(form) == term]


def fold(text: str) -> str:
    """`text` as the words and compounds are read from it: NFKC-normalised and lower-cased."""
    return _fold(text)


# The ASCII fast path: in ASCII text a word character (`[^\W_]`) is exactly [A-Za-z0-9], so a
# byte translation that blanks every other byte, then a split, gives the same words as `_WORD`;
# and a compound is the same match of this bytes pattern as of `_COMPOUND`.
ASCII_GAPS = bytes(b if chr(b).isascii() and chr(b).isalnum() else 32 for b in range(256))
ASCII_COMPOUND = re.compile(rb"(?<![A-Za-z0-9])[A-Za-z0-9]++(?:[-_.][A-Za-z0-9]++)++")


def terms(text: str) -> list[str]:
    """Content words then compounds: the terms whose document frequency an exact query is
    checked on."""
    return content_words(text) + compounds(text)


def phrase_of(query: str) -> str:
    """The phrase a phrase query asks for: the text between its first two double quotes
    (straight or curly), else the whole query."""
    match = re.search(r"[\"\u201c\u201d]([^\"\u201c\u201d]+)[\"\u201c\u201d]", query)
    return match.group(1) if match else query

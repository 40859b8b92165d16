"""The query text as the service should receive it: named rewrites, the same for both sides.

    rewritten(text, name) -> str          `query.rewrite`; None leaves the text as written
    REWRITES                              every name, with what it does

Some services cannot take a question as typed: SQLite FTS5's MATCH rejects punctuation and
operators in raw text (`what's new?` is a syntax error), so each term must be quoted and the
terms joined with OR. A rewrite is part of how the gold set is asked, so both sides get the same
one (the loader refuses a per-side or per-ref `rewrite`); the gold set and the reports keep the
text as written. A user's own function, `rewrite = "module:function"`, is `harness.config.hook`.
Pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

_TERM = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")  # words, and don't as one


def _terms(text: str) -> list[str]:
    return _TERM.findall(text)


def _fts5_or(text: str) -> str:
    # Each term as an FTS5 string ("" escapes a quote inside one), any of them may match.
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in _terms(text))


REWRITES: Mapping[str, tuple[Callable[[str], str], str]] = {
    "fts5_or": (_fts5_or, 'each term quoted, joined with OR: what\'s new? -> "what\'s" OR "new"'),
    "terms": (lambda text: " ".join(_terms(text)), "the words only, punctuation dropped"),
    "lower": (str.lower, "lower-cased"),
}


def rewritten(text: str, name: str | None) -> str:
    """`text` through the rewrite `name` (a key of REWRITES), or unchanged for None."""
    if name is None:
        return text
    return REWRITES[name][0](text)

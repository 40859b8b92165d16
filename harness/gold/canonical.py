"""The content hash of a gold set: the same questions and judgements give the same hash.

The canonical form is one JSON array, UTF-8, no whitespace, keys sorted, of one object per query,
sorted by query id:

    {"derivation": str | null, "id": str, "outranks": [[correct, stale], ...],
     "relevant": {doc_id: grade, ...}, "slice": str, "text": str}

- `relevant` is sorted by doc id (JSON key order), grades are plain ints, grade-0 judgements are
  kept (a judged non-relevant document is content: it changes what a metric may count).
- `outranks` keeps its order (it is a list the author wrote, not a set).
- `"spans": {doc_id: [span, ...]}` (answer spans, sorted by doc id, each list in its order) is
  present only when the query has spans, so gold sets without spans keep the hash they had.
- `"answerable": true` is present only when the query is answerable without a judgement of
  grade >= 1 (`GoldQuery.answerable` says so where the grades alone would not): the hash covers
  what a query means, not how the file said it. So a gold set without the native format's
  "answerable" key and "judged" header keeps the hash it had; `"answerable": false` on a query
  judged only 0, `"answerable": true` beside a grade >= 1, or a header "judged": "complete" say
  what the grades say, and change nothing; "judged": "pooled" and `"answerable": true` on the
  same query judged only 0 give the same hash.
- `line` (where a query was read) and everything about the file (format, header, description,
  corpus, blank lines, key order, list-vs-object shorthand for `relevant`) is left out.

So a gold set read from native JSON Lines, a BEIR folder or TREC qrels has the same hash whenever
the ids, texts, slices and judgements are the same; a BEIR or TREC set has slice "default" and no
outranks/derivation unless its queries file says otherwise. The hash is sha256, in lowercase hex.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from operator import attrgetter

from harness.values.types import GoldQuery


def canonical_form(query: GoldQuery) -> dict[str, object]:
    """The part of a query that its hash covers, as a JSON-ready dict."""
    form: dict[str, object] = {
        "derivation": query.derivation,
        "id": query.id,
        "outranks": [[correct, stale] for correct, stale in query.outranks],
        # Sorted by the encoder (sort_keys), as every object of the form is.
        "relevant": {doc: int(grade) for doc, grade in query.relevant.items()},
        "slice": query.slice,
        "text": query.text,
    }
    if query.spans:
        form["spans"] = {doc: list(spans) for doc, spans in query.spans.items()}
    if query.declared and not query.has_relevant:  # the only case the grades do not tell
        form["answerable"] = True
    return form


def _dumps(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_hash(queries: Iterable[GoldQuery]) -> str:
    """sha256 hex of the canonical form above; independent of the order of `queries`.

    Queries sharing an id (which no loader lets through) are ordered by their canonical text, so
    the hash still does not depend on input order.
    """
    queries = list(queries)
    by_id = sorted(queries, key=attrgetter("id"))
    if len({q.id for q in by_id}) == len(by_id):  # the common case: one JSON encoding in C
        text = _dumps([canonical_form(q) for q in by_id])
    else:
        forms = sorted((q.id, _dumps(canonical_form(q))) for q in queries)
        text = "[" + ",".join(form for _, form in forms) + "]"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()

"""`harness gold check`: what can be known about a gold set before any service is booted.

    check_gold(gold, corpus, *, alpha=0.05, slices=(), lines_in=None) -> CheckReport

Pure: no I/O (the gold set and the corpus come in loaded, see `harness.gold.check_files`). Each
check yields Findings (severity "error" | "warning" | "info"); `CheckReport.ok` is False when any
is an error, and `raise_if_errors` turns them into one GoldError for `compare` and `run`. The
checks, in report order (CHECKS), with the words judged by `harness.gold.text`:

- integrity (corpus): every `relevant` and `outranks` id is a document; a dangling id is an error.
  When no id the gold set names is in the corpus, one more error says it is the wrong corpus.
  Every answer span (`spans.DOC[i]`) must occur verbatim in that document's text: an error
  otherwise; and two spans of one document that overlap in its text, neither holding the other,
  are an error (join them into one span: the context metrics count each annotated character
  once).
- staleness (corpus): the sha256 the header records differs from the corpus's: an error that
  counts how many labelled ids (distinct ids in `relevant` and `outranks`) still exist, so a stale
  file is not mistaken for a catastrophic regression. No sha256 recorded: an info.
- winnability (corpus), by slice name (slices not named here are not checked):
  - EXACT_SLICES: the query's rare terms are its `terms` (content words and compounds) whose
    document frequency is 1. There must be at least one, and the one document holding each must
    be labelled relevant (grade >= 1); relevant documents beyond those are not checked.
  - PHRASE_SLICES: the phrase (`text.phrase_of`: the quoted part, else the whole query) has at
    least two words, and the documents it matches (`Corpus.phrase_matches`) are exactly those
    labelled relevant.
- leak (corpus): in PARAPHRASE_SLICES, no content word of the query is a word of the title or
  text of a document labelled relevant.
- characters: a query whose text (or id) holds a control character (C0 but tab, DEL, C1: what
  `harness.text.control_chars` escapes) is a warning naming it: sent in a JSON body or a URL
  parameter it is escaped and harmless, but a `query.headers` value cannot carry it (compare
  and run refuse such a query before anything boots), and wherever it is shown it shows escaped.
- controls: a NONSENSE_SLICES query is unanswerable and (with a corpus) none of its content words
  is in any document; each slice named in `slices` has a query; a warning when no query at all
  is unanswerable. A warning when the gold set holds both kinds of query without a relevant
  document and says of neither what it is (`GoldQuery.declared` None): queries with no
  judgement at all and queries judged only 0. Both are read as unanswerable, but a set judged
  by pooling a system's results holds answerable queries of the second kind (nothing relevant
  found yet); the warning names a few of each, at the line of the first judged only 0, and
  says how to tell them apart (the native header's "judged", a query's "answerable").
- power: per slice and overall, `answerable` queries (`GoldQuery.answerable`: the ones a
  quality metric scores) and the smallest net swing of a binary metric the McNemar exact test
  can call at `alpha` (`harness.values.swing.detectable_swing`); a warning for each slice (and
  for the whole set) with answerable queries but fewer than that swing.

Without a corpus the corpus checks are skipped, which one info finding says.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

from harness.errors import GoldError, Problem
from harness.gold.documents import Corpus
from harness.gold.text import content_words, phrase_of, terms, tokens
from harness.text.control_chars import control_chars
from harness.values.swing import detectable_swing, min_detectable_swing
from harness.values.types import CorpusInfo, GoldQuery, GoldSet

Severity = Literal["error", "warning", "info"]
CHECKS = ("integrity", "staleness", "winnability", "leak", "characters", "controls", "power")
EXACT_SLICES = frozenset({"exact_token", "exact_rare"})
PHRASE_SLICES = frozenset({"phrase"})
PARAPHRASE_SLICES = frozenset({"semantic", "paraphrase"})
NONSENSE_SLICES = frozenset({"nonsense"})
ALL = "(all)"  # the SlicePower of the whole gold set
_SHOWN = 5  # ids or words named in one message before "and N more"


@dataclass(frozen=True)
class Finding:
    """One thing a check found; `message` says what is wrong and what to do (no query id)."""

    severity: Severity
    check: str
    query_id: str | None
    line: int | None
    message: str
    field: str | None = None


@dataclass(frozen=True)
class SlicePower:
    """How far a binary metric must move in one slice before McNemar can call it.

    `min_swing` is the smallest net swing (queries) significant at the report's alpha, or None
    when the slice has fewer answerable queries than that: nothing in it can ever be called.
    """

    slice: str
    queries: int
    answerable: int
    min_swing: int | None

    @property
    def share(self) -> float | None:
        """`min_swing` as a fraction of the answerable queries (None when it cannot happen)."""
        return None if self.min_swing is None else self.min_swing / self.answerable


@dataclass(frozen=True)
class CheckReport:
    """Everything `gold check` found, grouped by check, with the power of each slice."""

    source: str
    format: str
    gold_hash: str
    queries: int
    lines_in: str | None  # the file that finding lines count in
    corpus: CorpusInfo | None  # what was checked against; None without a corpus
    documents: int | None
    recorded: CorpusInfo | None  # what the gold set records (its header)
    labelled_ids: int
    labelled_present: int | None
    alpha: float
    min_swing: int
    findings: tuple[Finding, ...]
    power: tuple[SlicePower, ...]
    overall: SlicePower

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    @property
    def ok(self) -> bool:
        return self.count("error") == 0

    def grouped(self) -> dict[str, tuple[Finding, ...]]:
        """Findings by check, every check present, in CHECKS order."""
        return {c: tuple(f for f in self.findings if f.check == c) for c in CHECKS}

    def raise_if_errors(self) -> None:
        """Raise one GoldError listing every error finding (what `compare` and `run` call)."""
        errors = [f for f in self.findings if f.severity == "error"]
        if not errors:
            return
        where = self.lines_in or self.source
        problems = [Problem(where, f"{f.check}: {_subject(f)}{f.message}", f.line, f.field)
                    for f in errors]
        noun = "error" if len(errors) == 1 else "errors"
        raise GoldError(f"{self.source}: the gold set fails its checks: {len(errors)} {noun}",
                        problems, hint="fix each error above, then run `harness gold check "
                        "GOLD --corpus CORPUS` for the full report")


def _subject(finding: Finding) -> str:
    return f"query {finding.query_id!r}: " if finding.query_id is not None else ""


def check_gold(gold: GoldSet, corpus: Corpus | None = None, *, alpha: float = 0.05,
               slices: Collection[str] = (), lines_in: str | None = None) -> CheckReport:
    """Run every check of the module docstring; nothing raises for what a check finds.

    `slices` names slices that must have queries; `lines_in` names the file the queries' lines
    count in (default: the gold file for native, `queries.jsonl` of a BEIR folder).
    """
    labelled = {doc for q in gold.queries for doc in _named(q)}
    found: list[Finding] = []
    present: int | None = None
    if corpus is None:
        found.append(Finding("info", "integrity", None, None, "no corpus given: the integrity, "
                             "staleness, winnability and leak checks need one (--corpus)"))
    else:
        corpus.prepare(_asked_terms(gold))  # the terms below ask df of: no whole index needed
        present = len(labelled & corpus.ids)
        found += _integrity(gold, corpus)
        found += _spans(gold, corpus)
        found += _staleness(gold, corpus, len(labelled), present)
    for query in gold.queries:
        found += check_query(query, corpus) if corpus is not None else _nonsense(query, None)
    found += _characters(gold)
    found += _controls(gold, slices)
    power, overall = _power(gold, alpha)
    found += _power_findings(power, overall, alpha)
    order = {check: index for index, check in enumerate(CHECKS)}
    if lines_in is None and gold.format in ("native", "beir"):
        lines_in = gold.source if gold.format == "native" else f"{gold.source}/queries.jsonl"
    return CheckReport(
        source=gold.source, format=gold.format, gold_hash=gold.hash, queries=len(gold),
        lines_in=lines_in, corpus=None if corpus is None else corpus.info,
        documents=None if corpus is None else len(corpus), recorded=gold.corpus,
        labelled_ids=len(labelled), labelled_present=present, alpha=alpha,
        min_swing=min_detectable_swing(alpha),
        findings=tuple(sorted(found, key=lambda f: order[f.check])),  # stable: gold order within
        power=power, overall=overall,
    )


def _asked_terms(gold: GoldSet) -> Iterator[str]:
    """Every term whose document frequency (or postings) the per-query checks may ask for."""
    for query in gold.queries:
        if query.slice in EXACT_SLICES:
            yield from terms(query.text)
        elif query.slice in PHRASE_SLICES:
            yield from tokens(phrase_of(query.text))
        if query.slice in NONSENSE_SLICES:
            yield from content_words(query.text)


def check_query(query: GoldQuery, corpus: Corpus) -> list[Finding]:
    """The findings about one query alone: winnability, leak and its nonsense control.

    `gold build` keeps a mined row only when this finds nothing.
    """
    return [*_winnability(query, corpus), *_leak(query, corpus), *_nonsense(query, corpus)]


def _named(query: GoldQuery) -> Iterator[str]:
    yield from query.relevant
    for pair in query.outranks:
        yield from pair


def _expected(query: GoldQuery) -> list[str]:
    return [doc for doc, grade in query.relevant.items() if grade >= 1]


def _listed(items: list[str]) -> str:
    shown = ", ".join(repr(item) for item in items[:_SHOWN])
    return shown + (f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else "")


def _error(query: GoldQuery, check: str, message: str, field: str | None = None) -> Finding:
    return Finding("error", check, query.id, query.line, message, field)


# --------------------------------------------------------------------------- corpus checks


def _integrity(gold: GoldSet, corpus: Corpus) -> list[Finding]:
    found = []
    references = 0
    for query in gold.queries:
        named = [(doc, "relevant") for doc in query.relevant]
        named += [(doc, f"outranks[{i}]") for i, pair in enumerate(query.outranks) for doc in pair]
        references += len(named)
        found += [_error(query, "integrity", f"document {doc!r} is not in the corpus "
                         f"{corpus.name}; correct the id, or drop the judgement if the document "
                         "was removed", field) for doc, field in named if doc not in corpus.ids]
    if found and len(found) == references > 1:
        found.insert(0, Finding("error", "integrity", None, None, f"none of the {references} "
                                f"documents the gold set names is in {corpus.name}: is it the "
                                "corpus the gold set was made for?"))
    return found


def _spans(gold: GoldSet, corpus: Corpus) -> list[Finding]:
    found = []
    for query in gold.queries:
        for doc, spans in query.spans.items():
            document = corpus.by_id.get(doc)
            if document is None:
                continue  # the dangling id is already an integrity error
            placed: list[tuple[int, int, int]] = []
            for i, span in enumerate(spans):
                start = document.text.find(span)
                if start < 0:
                    found.append(_error(query, "integrity", f"span {_excerpt(span)} is not in "
                                        f"the text of document {doc!r}; copy it verbatim from "
                                        "the document's text (case, spaces and punctuation "
                                        "included)", f"spans.{doc}[{i}]"))
                else:
                    placed.append((start, start + len(span), i))
            found += _overlaps(query, doc, spans, placed)
    return found


def _overlaps(query: GoldQuery, doc: str, spans: tuple[str, ...],
              placed: list[tuple[int, int, int]]) -> list[Finding]:
    found = []
    for a, (start_a, end_a, i) in enumerate(placed):
        for start_b, end_b, j in placed[a + 1:]:
            nested = spans[i] in spans[j] or spans[j] in spans[i]
            if not nested and start_a < end_b and start_b < end_a:
                found.append(_error(query, "integrity", f"spans [{i}] and [{j}] of document "
                                    f"{doc!r} overlap in its text; join them into one span",
                                    f"spans.{doc}[{j}]"))
    return found


def _excerpt(span: str, width: int = 40) -> str:
    return repr(span if len(span) <= width else span[: width - 3] + "...")


def _staleness(gold: GoldSet, corpus: Corpus, labelled: int, present: int) -> list[Finding]:
    recorded = gold.corpus.sha256 if gold.corpus else None
    if recorded is None:
        where = ("record it with `harness gold convert GOLD --to native --corpus CORPUS --out "
                 "NEW.jsonl`" + (", which writes it into the header" if gold.format == "native"
                                 else " (only the native format has a header to hold it)"))
        return [Finding("info", "staleness", None, None, "the gold set records no corpus sha256, "
                        f"so whether it is stale cannot be told; {where}")]
    if corpus.sha256 is None:
        return [Finding("info", "staleness", None, None, f"the corpus {corpus.name} has no "
                        "sha256 (it was not read from a file), so staleness cannot be told")]
    if corpus.sha256 == recorded:
        return []
    gone = labelled - present
    counted = f"{present} of {labelled} labelled documents still exist" + (
        f" ({gone} gone: see integrity)" if gone else "")
    return [Finding("error", "staleness", None, None, f"the gold set was built against corpus "
                    f"sha256 {recorded[:12]}... but {corpus.name} has {corpus.sha256[:12]}...: "
                    f"the corpus changed since the judgements were made; {counted}. Re-check the "
                    "judgements, then record the new sha256 in the header (corpus.sha256)",
                    "corpus.sha256")]


def _winnability(query: GoldQuery, corpus: Corpus) -> list[Finding]:
    if query.slice in EXACT_SLICES:
        return _exact(query, corpus)
    if query.slice in PHRASE_SLICES:
        return _phrase(query, corpus)
    return []


def _exact(query: GoldQuery, corpus: Corpus) -> list[Finding]:
    expected = _expected(query)
    if not expected:
        return [_error(query, "winnability", "an exact-token query needs the document holding "
                       "its rare term labelled relevant (grade >= 1); label it, or move the query "
                       "to an unanswerable slice", "relevant")]
    frequency = {term: corpus.df(term) for term in terms(query.text)}
    rare = [term for term, df in frequency.items() if df == 1]
    if not rare:
        seen = [f"{t!r} in {df}" if df else f"{t!r} in none" for t, df in frequency.items()]
        shown = ", ".join(seen[:_SHOWN]) + (" ..." if len(seen) > _SHOWN else "")
        return [_error(query, "winnability", "no term of the query occurs in exactly one "
                       f"document ({shown or 'it has no content word'}), so it cannot single out "
                       "its answer; query a term of document frequency 1, or move the query to "
                       "another slice", "query")]
    elsewhere = [(term, holder) for term in rare for holder in corpus.holders(term)
                 if holder not in expected]
    if not elsewhere:
        return []
    where = ", ".join(f"{term!r} in {holder!r}" for term, holder in elsewhere)
    return [_error(query, "winnability", f"rare terms single out a document that is not "
                   f"labelled relevant ({where}; relevant: {_listed(expected)}); label it, or "
                   "drop those terms from the query", "relevant")]


def _phrase(query: GoldQuery, corpus: Corpus) -> list[Finding]:
    phrase = phrase_of(query.text)
    words = tokens(phrase)
    if len(words) < 2:
        return [_error(query, "winnability", f"the phrase {phrase!r} has {len(words)} word(s); a "
                       "phrase query needs at least two (quote them inside a longer query)",
                       "query")]
    expected = _expected(query)
    matches = corpus.phrase_matches(words)
    extra = [doc for doc in matches if doc not in expected]
    matched = set(matches)
    missing = [doc for doc in expected if doc not in matched]
    if not extra and not missing:
        return []
    parts = []
    if extra:
        parts.append(f"{len(extra)} matching document(s) not labelled relevant ({_listed(extra)})")
    if missing:
        parts.append(f"{len(missing)} labelled relevant that it does not match "
                     f"({_listed(missing)})")
    return [_error(query, "winnability", f"the phrase {phrase!r} matches {len(matches)} "
                   f"document(s) and {len(expected)} are labelled relevant: "
                   f"{'; '.join(parts)}. Label exactly the matching documents, or pick another "
                   "phrase", "relevant")]


def _leak(query: GoldQuery, corpus: Corpus) -> list[Finding]:
    if query.slice not in PARAPHRASE_SLICES:
        return []
    words = content_words(query.text)
    found = []
    for doc in _expected(query):
        if doc not in corpus.ids:
            continue  # integrity reports it
        shared = [word for word in words if word in corpus.words(doc)]
        if shared:
            found.append(_error(query, "leak", f"shares {_listed(shared)} with its answer "
                                f"{doc!r}: a {query.slice} query must not be answerable by "
                                "matching words; reword it, or move it to a lexical slice",
                                "query"))
    return found


# --------------------------------------------------------------------------- characters


def _characters(gold: GoldSet) -> list[Finding]:
    found = []
    for query in gold.queries:
        for field, text in (("query", query.text), ("id", query.id)):
            chars = control_chars(text.replace("\t", ""))
            if chars:
                found.append(Finding("warning", "characters", query.id, query.line,
                                     f"its {'text' if field == 'query' else 'id'} holds {chars}: "
                                     "a header cannot carry it (compare refuses the query where "
                                     "query.headers takes {query}) and reports show it escaped; "
                                     "remove it", field))
    return found


# --------------------------------------------------------------------------- controls and power


def _nonsense(query: GoldQuery, corpus: Corpus | None) -> list[Finding]:
    if query.slice not in NONSENSE_SLICES:
        return []
    found = []
    if query.has_relevant:
        found.append(_error(query, "controls", "a nonsense control is unanswerable, but "
                            f"{_listed(_expected(query))} have grade >= 1; make relevant empty",
                            "relevant"))
    elif query.answerable:
        found.append(_error(query, "controls", 'a nonsense control is unanswerable, but it is '
                            'read as answerable ("answerable": true, or judged only 0 under the '
                            'header\'s "judged": "pooled"); give it "answerable": false',
                            "answerable"))
    words = content_words(query.text)
    if not words:
        found.append(_error(query, "controls", "a nonsense control needs a word that is not a "
                            "stop word", "query"))
    if corpus is not None and (known := [w for w in words if corpus.df(w)]):
        seen = [f"{w!r} ({corpus.df(w)} documents, e.g. {corpus.holders(w)[0]!r})"
                for w in known]
        found.append(_error(query, "controls", f"the corpus holds {', '.join(seen)}; a nonsense "
                            "control shares no word with it: replace what it holds", "query"))
    return found


def _controls(gold: GoldSet, slices: Collection[str]) -> list[Finding]:
    found = [Finding("error", "controls", None, None, f"slice {name!r} has no query; add "
                     "queries to it, or stop requiring it") for name in sorted(slices)
             if name not in gold.slices]
    if all(query.answerable for query in gold.queries):
        found.append(Finding("warning", "controls", None, None, "no unanswerable query: nothing "
                             "checks that the service can answer with nothing; add some "
                             "(`harness gold build --nonsense N`, or \"relevant\": {})"))
    return found + _undeclared(gold)


def _undeclared(gold: GoldSet) -> list[Finding]:
    """The warning of the module docstring: both kinds of query without a relevant document,
    and nothing said of either. Short enough to be shown whole (`render` clips at 400)."""
    silent = [q for q in gold.queries if q.declared is None and not q.has_relevant]
    empty = [q for q in silent if not q.relevant]
    zeros = [q for q in silent if q.relevant]
    if not (empty and zeros):
        return []

    def some(queries: list[GoldQuery]) -> str:
        named = ", ".join(repr(q.id if len(q.id) <= 12 else q.id[:11] + "~") for q in queries[:3])
        return named + (f" and {len(queries) - 3} more" if len(queries) > 3 else "")

    return [Finding(
        "warning", "controls", None, zeros[0].line,
        f"{len(zeros)} {'query' if len(zeros) == 1 else 'queries'} judged only 0 ({some(zeros)}) "
        f"and {len(empty)} with no judgement ({some(empty)}), none declared: "
        "all read as unanswerable, out of hit@k. Answerable, just not found yet? "
        '"judged": "pooled" in the header, or "answerable": true on each. Unanswerable? '
        '"judged": "complete", or "answerable": false',
        "answerable")]


def _power(gold: GoldSet, alpha: float) -> tuple[tuple[SlicePower, ...], SlicePower]:
    def one(name: str, queries: list[GoldQuery]) -> SlicePower:
        answerable = sum(q.answerable for q in queries)
        return SlicePower(name, len(queries), answerable, detectable_swing(answerable, alpha))

    members: Mapping[str, list[GoldQuery]] = {
        name: [q for q in gold.queries if q.slice == name] for name in gold.slices}
    return tuple(one(n, qs) for n, qs in members.items()), one(ALL, list(gold.queries))


def _power_findings(power: tuple[SlicePower, ...], overall: SlicePower,
                    alpha: float) -> list[Finding]:
    swing = min_detectable_swing(alpha)
    found = []
    for row in (*power, overall):
        if row.answerable and row.min_swing is None:
            what = "the gold set" if row.slice == ALL else f"slice {row.slice!r}"
            has = f"{row.answerable} answerable {'query' if row.answerable == 1 else 'queries'}"
            found.append(Finding("warning", "power", None, None, f"{what} has {has}, "
                                 f"fewer than the {swing} a McNemar exact "
                                 f"test needs at alpha {alpha:g}: no change in it can ever be "
                                 f"called significant; add at least {swing - row.answerable} "
                                 "answerable queries, or read its numbers as descriptive"))
    return found

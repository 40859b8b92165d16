"""Every reason a comparison of two runs is invalid, and which repeats of a run are used
(`usable` and `by_query`, from `harness.verdict.repeats`).

Part of `harness.verdict.decide` (its docstring states every rule); pure.  `harness gate` and
`harness threshold` use the same usable repeats, and the gate the same failures and errored
answers.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Iterator, Sequence
from itertools import chain

import numpy as np
import numpy.typing as npt

from harness.errors import clip
from harness.text.control_chars import shown as visible
from harness.values.types import Answers, GoldSet, QueryResult, RefRun
from harness.verdict.comparison import CompareSettings, ErrorKindSummary, PrepareStep
from harness.verdict.repeats import WARNING_STAGES
from harness.verdict.repeats import by_query as by_query  # re-exported: validity.by_query(rep)
from harness.verdict.repeats import usable as usable  # re-exported: validity.usable(run)

_SIDES = ("baseline", "candidate")
_SHOWN_IDS = 5
_SAMPLE_CHARS = 200  # of a sample answer's detail, shown with the errors of its kind
NEARLY_ALL = 0.9  # a share of failed queries past which the request itself is wrong


def _label(side: str, run: RefRun) -> str:
    return f"{side} {run.ref} ({run.sha[:8]})"


def run_failures(label: str, run: RefRun) -> list[str]:
    """Why `run` cannot be used, each line starting with `label`: a failed build, no repeats,
    and every repeat that failed at any stage but teardown (with its log, when there is one)."""
    reasons = []
    if run.build_failure is not None:
        reasons.append(f"{label}: {_build_failed(visible(run.build_failure.message))}")
    elif not run.repeats:
        reasons.append(f"{label}: no repeats were run; run it with --repeats 1 or more")
    for rep in run.repeats:
        if rep.failure is not None and rep.failure.stage not in WARNING_STAGES:
            log = f"; see {rep.log_path}" if rep.log_path else ""
            reasons.append(
                f"{label}: repeat {rep.index + 1} failed at {rep.failure.stage}: "
                f"{visible(rep.failure.message)}{log}"  # may quote the service: escaped
            )
    return reasons


def _build_failed(message: str) -> str:
    """ "build failed: ..." once, whether the recorded message says it already or not."""
    return message if message.startswith("build failed") else f"build failed: {message}"


def _all_answered(gold: GoldSet, answers: Answers) -> bool:
    """Every gold query has an answer in `answers` and none of them errored (the common case,
    checked on the columns, without a step per gold query in Python: answers in gold order are
    one list comparison, others one set comparison)."""
    ids = list(gold.by_id)
    if answers.query_ids != ids and not answers.query_rows.keys() >= gold.by_id.keys():
        return False
    return bool(answers.ok[answers.last_rows].all())


def _errored(
    gold: GoldSet, run: RefRun
) -> tuple[list[tuple[str, str, QueryResult | None]], int]:
    """Over the usable repeats of `run`: every (query id, kind, answer) that errored, in order
    (kind an ErrorKind value, or "missing" with no answer for a gold query left unanswered),
    and how many answers were asked for."""
    found: list[tuple[str, str, QueryResult | None]] = []
    asked = 0
    for rep in usable(run):
        answers = rep.answers
        asked += len(gold.queries)
        if _all_answered(gold, answers):
            continue
        ids = list(gold.by_id)  # gold order
        rows = answers.rows(ids)
        bad = (rows < 0) | ~answers.ok[np.maximum(rows, 0)]  # only the errored are built
        for i in np.flatnonzero(bad).tolist():
            result = None if rows[i] < 0 else answers[int(rows[i])]
            kind = "missing" if result is None else result.error and result.error.value
            if kind:
                found.append((ids[i], kind, result))
    return found, asked


def errored_problems(
    gold: GoldSet, run: RefRun, label: str, max_errors: int, *, examples: bool = True
) -> tuple[list[str], list[str]]:
    """The errored answers of `run` as (invalid, warnings): one line starting with `label`,
    invalid beyond `max_errors`, else a warning.  Counted over the usable repeats, by kind (an
    ErrorKind value, or "missing" for a gold query with no recorded answer); with `examples`,
    the first query ids concerned are named too."""
    kinds: Counter[str] = Counter()
    statuses: Counter[int] = Counter()
    ids: dict[str, None] = {}
    details: dict[str, str] = {}  # the first detail of each kind: what its advice is about
    found, asked = _errored(gold, run)
    for query_id, kind, result in found:
        kinds[kind] += 1
        ids[query_id] = None
        if result is not None and result.detail:
            details.setdefault(kind, result.detail)
        if result is not None and result.status is not None and result.status >= 300:
            statuses[result.status] += 1
    errored = sum(kinds.values())
    if not errored:
        return [], []
    counts = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items()))
    if statuses:
        counts += " (" + ", ".join(f"HTTP {s}: {n}" for s, n in sorted(statuses.items())) + ")"
    if examples:
        some = list(ids)[:_SHOWN_IDS]
        counts += f"; e.g. {', '.join(some)}" + (", ..." if len(ids) > _SHOWN_IDS else "")
    what = f"{label}: {errored} errored answer{'s' * (errored != 1)} ({counts})"
    if errored > max_errors:
        if errored >= NEARLY_ALL * asked:
            every = "every" if errored == asked else "nearly every"
            hint = (
                f"{every} query failed, so the request or the answer's shape is wrong, not "
                "the service's luck: check query.path, query.method and the request body, and "
                "the response shape against query.ids"
            )
        else:
            hint = "see the service log, or raise compare.max_errors"
        by_status = tuple(sorted(statuses.items()))
        specific = [
            advice(kind, by_status if kind == "http_status" else (), details.get(kind, ""))
            for kind in sorted(kinds)
        ]
        extra = "".join(f"; {a}" for a in dict.fromkeys(specific) if a)
        return [f"{what} exceed max_errors = {max_errors}; {hint}{extra}"], []
    return [], [f"{what}, within max_errors; those queries are left out"]


# What a status or kind most often means, and what to change: the first fit wins.
_BY_STATUS = {
    400: "HTTP 400: the service refused the request: check query.params or query.json",
    401: "HTTP 401: the service wants credentials: pin them in query.headers",
    403: "HTTP 403: the service refused access: check query.headers",
    404: "HTTP 404: no such endpoint: check query.path (and the service's routes)",
    405: "HTTP 405: the endpoint takes another method: check query.method",
    415: "HTTP 415: the body's content type is not what the endpoint takes (a form or JSON)",
    422: "HTTP 422: the body's shape is not what the endpoint takes (a FastAPI Form() wants a "
    "form, not JSON): check query.json, query.params and the field names",
    500: "HTTP 500: the service failed on the query text: some engines reject raw questions "
    '(SQLite FTS5: query.rewrite = "fts5_or"); see the service log',
}
_SPECIFIC = {
    "timeout": "timeout: raise query.timeout if the service is only slow, else see its log",
    "connection": "connection: the service closed or refused connections: see its log",
    "not_json": "not_json: the answer is not JSON: check query.path, or set query.select for "
    "an HTML page",
    "no_match": "no_match: query.ids found nothing in the answer: hold it against the sample",
    "bad_shape": "bad_shape: query.ids picked something that is not a list of ids",
    "bad_shape:query.scores": "bad_shape: query.scores read something that is not one finite "
    "number per id: hold it against the sample (remove it if the service sends no scores)",
    "bad_shape:query.texts": "bad_shape: query.texts read something that is not one string (or "
    "null) per id: hold it against the sample",
    "too_large": "too_large: raise query.max_bytes if the service is right to send that much",
    "missing": "missing: the repeat ended before every query was asked: see the failures",
}


def advice(kind: str, statuses: Sequence[tuple[int, int]] = (), detail: str = "") -> str:
    """What an errored answer of `kind` (with these HTTP statuses, most frequent first counts)
    most likely means and what to change; "" when there is nothing better than the log.  A
    `detail` that names the key it is about ("query.scores: ...", harness.replay.client) is
    advised on that key: a NaN score is not a wrong query.ids."""
    for status, _ in sorted(statuses, key=lambda s: -s[1]):
        if status in _BY_STATUS:
            return _BY_STATUS[status]
        if status >= 500:
            return f"HTTP {status}: the service failed: see the service log"
    key = detail.partition(":")[0] if detail.startswith("query.") else ""
    return _SPECIFIC.get(f"{kind}:{key}", _SPECIFIC.get(kind, ""))


def error_kinds(gold: GoldSet, run: RefRun, side: str) -> tuple[ErrorKindSummary, ...]:
    """The errored answers of `run` over its usable repeats, one summary per kind: counts, HTTP
    statuses, the first errored answer's detail as a sample (clipped), and `advice`."""
    counts: Counter[str] = Counter()
    statuses: dict[str, Counter[int]] = {}
    samples: dict[str, tuple[str | None, str]] = {}
    errored, asked = _errored(gold, run)
    for query_id, kind, result in errored:
        counts[kind] += 1
        if result is not None and result.status is not None and result.status >= 300:
            statuses.setdefault(kind, Counter())[result.status] += 1
        if kind not in samples and result is not None:
            samples[kind] = (result.detail, query_id)
    found = []
    for kind, n in sorted(counts.items()):
        by_status = tuple(sorted(statuses.get(kind, Counter()).items()))
        detail, query_id = samples.get(kind, (None, ""))
        found.append(
            ErrorKindSummary(
                side=side,
                kind=kind,
                count=n,
                asked=asked,
                statuses=by_status,
                # The service's words: escaped for every format the summary is shown in.
                sample=None if detail is None else clip(visible(detail), _SAMPLE_CHARS),
                sample_query=query_id or None,
                advice=advice(kind, by_status, detail or ""),
            )
        )
    return tuple(found)


def prepare_steps(run: RefRun, side: str) -> tuple[PrepareStep, ...]:
    """The median seconds of each step after readiness over the repeats that ran it, in the
    order the steps ran (the prepare commands, then the loader)."""
    seen: dict[str, list[float]] = {}
    for rep in run.repeats:
        for step, seconds in rep.prepare_steps.items():
            seen.setdefault(step, []).append(seconds)
    return tuple(
        PrepareStep(side, step, float(statistics.median(values)), len(values))
        for step, values in seen.items()
    )


def id_space_problems(
    gold: GoldSet,
    run: RefRun,
    label: str,
    corpus_ids: frozenset[str] | None,
    max_unknown: int,
) -> tuple[list[str], list[str]]:
    """The ids `run` returned, held against the ids of the gold set and the corpus, as
    (invalid, warnings): a run that returned nothing at all, or no id the gold set or corpus
    knows, is invalid (ids from the wrong field score 0 on both sides, never "no change");
    with a corpus, returned ids absent from it are counted, invalid beyond `max_unknown`.
    Each distinct id is looked up once (`_returned`), not each returned one."""
    repeats = [rep.answers for rep in usable(run)]
    oks = [a.ok for a in repeats]
    if not any(ok.any() for ok in oks):  # nothing answered at all: the failures say why
        return [], []
    sample = next(
        (s for a, ok in zip(repeats, oks, strict=True) if (s := _sample(a, ok)) is not None), None
    )
    if sample is None:
        return [f"{label}: returned no result for any query; check query.ids and the service"], []
    if corpus_ids is None and _judged_early(gold, repeats[0], oks[0]):
        return [], []  # the common case: some of the first answers return a judged document
    known = gold_ids(gold)
    space = known | corpus_ids if corpus_ids else known
    if corpus_ids is None and any(any(map(space.__contains__, c)) for c in _returned(repeats, oks)):
        return [], []  # the common case: stops in the first few answers
    returned = list(dict.fromkeys(chain.from_iterable(_returned(repeats, oks))))
    if not space:
        return [], []  # nothing judged yet and no corpus: no id space to check (a new pool)
    if not space.intersection(returned):
        where = "the gold set's judgements" + (" or the corpus" if corpus_ids else "")
        shown = ", ".join(json.dumps(i) for i in sample[1][:5])
        return [
            f"{label}: none of the {len(returned)} ids it returned is a document id of {where}, "
            f"e.g. {sample[0]} answered [{shown}{', ...' if len(sample[1]) > 5 else ''}]; check "
            "query.ids: it must pick the document id field of each result"
        ], []
    if corpus_ids is None:
        return [], []
    unknown = [i for i in returned if i not in corpus_ids]
    if not unknown:
        return [], []
    shown = ", ".join(map(visible, unknown[:_SHOWN_IDS])) + (
        ", ..." if len(unknown) > _SHOWN_IDS else ""
    )
    what = f"{label}: {len(unknown)} returned ids are not in the corpus ({shown})"
    if len(unknown) > max_unknown:
        return [f"{what}, more than compare.max_unknown_ids = {max_unknown}"], []
    return [], [f"{what}, within compare.max_unknown_ids"]


def gold_ids(gold: GoldSet) -> set[str]:
    """Every document id the gold set names: judged, or in an outranks pair."""
    known = {doc for q in gold.queries for doc in q.relevant}
    return known | {doc for q in gold.queries for pair in q.outranks for doc in pair}


def _judged_early(gold: GoldSet, answers: Answers, ok: npt.NDArray[np.bool_]) -> bool:
    """Whether one of the first answers that did not error returned a document its own query
    judged (or names in an outranks pair): enough to know the ids are from the gold set's id
    space, without gathering every id the gold set names."""
    for row in np.flatnonzero(ok)[:_EARLY].tolist():
        result = answers[row]
        query = gold.by_id.get(result.query_id)
        if query is not None and any(
            d in query.relevant or any(d in pair for pair in query.outranks) for d in result.ids
        ):
            return True
    return False


_EARLY = 256  # answers looked at by _judged_early


def _sample(answers: Answers, ok: npt.NDArray[np.bool_]) -> tuple[str, tuple[str, ...]] | None:
    """The first answer of `answers` that did not error and returned ids: (query id, ids)."""
    c = answers.columns
    found = np.flatnonzero(ok & (c.ids_at[1:] > c.ids_at[:-1]))
    if not len(found):
        return None
    first = answers[int(found[0])]
    return first.query_id, first.ids


def _returned(
    repeats: Sequence[Answers], oks: Sequence[npt.NDArray[np.bool_]], chunk: int = 1024
) -> Iterator[list[str]]:
    """The ids returned by the answers that did not error, in the order first returned (repeat
    by repeat, answer by answer), `chunk` at a time; each distinct id once within a repeat,
    looked up once (a repeat's ids are codes into its table of distinct ids)."""
    for answers, ok in zip(repeats, oks, strict=True):
        c = answers.columns
        codes = c.ids[np.repeat(ok, np.diff(c.ids_at))]
        distinct, first = np.unique(codes, return_index=True)
        ordered = distinct[np.argsort(first, kind="stable")]
        for start in range(0, len(ordered), chunk):
            yield c.docs.take(ordered[start : start + chunk])
            chunk = min(chunk * 4, 1 << 20)


def check(
    gold: GoldSet,
    runs: Sequence[RefRun],
    settings: CompareSettings,
    corpus_ids: frozenset[str] | None = None,
) -> tuple[list[str], list[str]]:
    """(why the comparison of `runs` (baseline, candidate) is invalid, warnings): failed builds
    and repeats, errored answers over max_errors, ids from another id space, gold hashes that
    differ."""
    invalid: list[str] = []
    warnings: list[str] = []
    for side, run in zip(_SIDES, runs, strict=True):
        label = _label(side, run)
        invalid += run_failures(label, run)
        bad, odd = id_space_problems(gold, run, label, corpus_ids, settings.max_unknown_ids)
        invalid += bad
        warnings += odd
        for rep in run.repeats:
            if not rep.teardown_confirmed or (rep.failure and rep.failure.stage == "teardown"):
                warnings.append(
                    f"{label}: repeat {rep.index + 1}: teardown was not confirmed; "
                    "a process may be left over"
                )
        too_many, within = errored_problems(gold, run, label, settings.max_errors)
        invalid += too_many
        warnings += within
        if run.gold_hash != gold.hash:
            invalid.append(
                f"{label} was measured against gold {run.gold_hash[:12]}, not the gold set given "
                f"({gold.hash[:12]}); re-run it with --fresh"
            )
    if runs[0].gold_hash != runs[1].gold_hash:
        invalid.append(
            f"baseline and candidate were measured against different gold sets "
            f"({runs[0].gold_hash[:12]} vs {runs[1].gold_hash[:12]}); re-run both with --fresh"
        )
    return invalid, warnings


# --------------------------------------------------------------------------- per-side data

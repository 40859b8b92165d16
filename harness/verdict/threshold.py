"""`harness threshold`: can this service tell when it has nothing? Choose a no-answer cutoff.

    run = load_record(Path("results/runs/x.json"))   # harness.results.records; or a comparison dir
    t = analyse(gold, run, bins=10)
    render_threshold(t, "text" | "json")

Pure: the run comes in loaded (`harness.results.records.load_record`), the text goes out rendered.
Usable repeats are compare's (`harness.verdict.validity.usable`): every repeat that did not
fail, or failed only at teardown; none after a failed build.

For services that return scores (`query.scores` in harness.toml). The top score of a query is
the score of the first result the service returned (rank 1, as a user sees it), in each usable
repeat; over repeats the low median is taken, an empty answer counting as the lowest (so a
query that returned nothing in most repeats returned nothing). Errored answers are left out;
a query with no usable answer is excluded and counted.

The decision rule is "answer iff top score >= cutoff". An empty answer is an abstention at any
cutoff. For a cutoff t, over the analysed queries:

    abstention rate   = answerable queries abstained on (top < t, or empty) / answerable
    false-answer rate = unanswerable queries answered (top >= t)          / unanswerable

Candidates are the lowest top score (answer everything that returned something), every
midpoint between two consecutive distinct top scores, and the next float above the highest
(answer nothing: better than answering everything when many answerable queries already came
back empty); the best minimises abstention rate + false-answer rate (Youden's J), ties going to
the candidate with fewer false answers.

Separable means every answerable top score is above every unanswerable one (both sides having
some): the gap is min(answerable) - max(unanswerable) > 0, and the best cutoff is its midpoint.
Otherwise the two distributions overlap, and the report says plainly that this system cannot
tell when it has nothing. The histogram bins the top scores into `bins` equal-width bins over
[lowest, highest] (each bin [lo, hi), the last one closed; one bin when all scores are equal).
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.errors import HarnessError, NotComparableError
from harness.values.types import GoldSet, RefRun
from harness.verdict import validity

SCHEMA = "harness-threshold"
SCHEMA_VERSION = 1
BAR_WIDTH = 30


@dataclass(frozen=True)
class TopScore:
    """One analysed query's top score over repeats; None when it returned nothing."""

    query_id: str
    answerable: bool
    score: float | None


@dataclass(frozen=True)
class Cutoff:
    value: float
    abstained: int  # answerable queries abstained on
    false_answers: int  # unanswerable queries answered
    n_answerable: int
    n_unanswerable: int

    @property
    def abstention_rate(self) -> float:
        return self.abstained / self.n_answerable if self.n_answerable else 0.0

    @property
    def false_answer_rate(self) -> float:
        return self.false_answers / self.n_unanswerable if self.n_unanswerable else 0.0


@dataclass(frozen=True)
class Histogram:
    edges: tuple[float, ...]  # len(bins) + 1
    answerable: tuple[int, ...]
    unanswerable: tuple[int, ...]


@dataclass(frozen=True)
class Threshold:
    """Everything `harness threshold` shows; `words` is the plain-language conclusion."""

    ref: str
    sha: str
    scores: tuple[TopScore, ...]
    excluded: tuple[str, ...]  # gold queries with no usable answer
    histogram: Histogram | None
    gap: float | None
    separable: bool
    cutoff: Cutoff | None
    words: str

    def side(self, answerable: bool) -> tuple[TopScore, ...]:
        return tuple(s for s in self.scores if s.answerable is answerable)


# --------------------------------------------------------------------------- the analysis (pure)


def top_scores(gold: GoldSet, run: RefRun) -> tuple[tuple[TopScore, ...], tuple[str, ...]]:
    """Each gold query's top score (see the module docstring) and the ids left out.

    HarnessError when an answer with results carries no scores: the service's scores are not
    being recorded (set query.scores), so nothing can be said about them. Read off each
    repeat's columns (`harness.values.answers.Answers`): no answer is built.
    """
    usable = [rep.answers for rep in validity.usable(run)]
    ids = list(gold.by_id)  # gold order
    unscored, first_unscored = 0, ""
    # repeats x queries: the top score (-inf where the answer was empty), whether the answer
    # was empty, and whether the query has a usable answer in that repeat
    tops = np.full((len(usable), len(ids)), -np.inf)
    empty = np.ones(tops.shape, dtype=bool)
    used = np.zeros(tops.shape, dtype=bool)
    for r, answers in enumerate(usable):
        c = answers.columns
        last = answers.last_rows
        returned = c.ids_at[1:] > c.ids_at[:-1]
        bad = last[(c.error[last] == -1) & returned[last] & ~c.scored[last]]
        if len(bad):
            unscored += len(bad)
            first_unscored = first_unscored or answers.query_ids[int(bad[0])]
        rows = answers.rows(ids)
        here = np.maximum(rows, 0)
        used[r] = (rows >= 0) & (c.error[here] == -1)
        has, first = answers.first_scores()
        tops[r] = np.where(has[here], first[here], -np.inf)
        empty[r] = ~has[here]
    if unscored:
        raise HarnessError(
            f"{run.record_path or run.ref}: {unscored} answers carry no scores "
            f"(e.g. {first_unscored}); a no-answer threshold needs the service's scores",
            [
                "set query.scores in harness.toml to the JMESPath of the scores "
                '(e.g. "results[].score"), then run again'
            ],
        )
    # The low median over the usable repeats, an empty answer lowest: sorted by (not usable,
    # score) and stable, so that of equal scores the first repeat's is taken, as sorted() did.
    counts = np.count_nonzero(used, axis=0)
    found: list[TopScore] = []
    excluded: list[str] = []
    if usable:
        order = np.lexsort((tops, ~used), axis=0)
        columns = np.arange(len(ids))
        picked = order[np.maximum(counts - 1, 0) // 2, columns]
        values = tops[picked, columns].tolist()
        none = empty[picked, columns].tolist()
    else:
        values, none = [0.0] * len(ids), [True] * len(ids)
    for q, n, value, is_empty in zip(gold.queries, counts.tolist(), values, none, strict=True):
        if not n:
            excluded.append(q.id)
        else:
            found.append(TopScore(q.id, q.answerable, None if is_empty else value))
    return tuple(found), tuple(excluded)


def evaluate_cutoff(scores: Sequence[TopScore], cutoff: float) -> Cutoff:
    """The counts of "answer iff top score >= cutoff" (an empty answer always abstains)."""
    answered = [s for s in scores if s.score is not None and s.score >= cutoff]
    return Cutoff(
        value=cutoff,
        abstained=sum(s.answerable for s in scores) - sum(s.answerable for s in answered),
        false_answers=sum(not s.answerable for s in answered),
        n_answerable=sum(s.answerable for s in scores),
        n_unanswerable=sum(not s.answerable for s in scores),
    )


def best_cutoff(scores: Sequence[TopScore]) -> Cutoff | None:
    """The candidate minimising abstention + false-answer rate, the first of equals with the
    fewest false answers (as `evaluate_cutoff` of each candidate, then `min`, gives); None
    without any top score. Counted over the sorted scores, one search per candidate."""
    distinct = sorted({s.score for s in scores if s.score is not None})
    if not distinct:
        return None
    candidates = [
        distinct[0],
        *(_between(a, b) for a, b in itertools.pairwise(distinct)),
        math.nextafter(distinct[-1], math.inf),
    ]
    n_answerable = sum(s.answerable for s in scores)
    n_unanswerable = len(scores) - n_answerable
    cut = np.array(candidates, dtype=np.float64)
    at_least = []  # per candidate: answerable, then unanswerable, top scores >= it
    for answerable in (True, False):
        side = np.sort(
            np.array(
                [s.score for s in scores if s.answerable is answerable and s.score is not None],
                dtype=np.float64,
            )
        )
        at_least.append(len(side) - np.searchsorted(side, cut, side="left"))
    abstained = n_answerable - at_least[0]
    false_answers = at_least[1]
    rate = (abstained / n_answerable if n_answerable else np.zeros(len(cut))) + (
        false_answers / n_unanswerable if n_unanswerable else np.zeros(len(cut))
    )
    tied = np.flatnonzero(rate == rate.min())
    best = int(tied[np.argmin(false_answers[tied])])  # argmin: the first of equals, as min
    return Cutoff(
        value=candidates[best],
        abstained=int(abstained[best]),
        false_answers=int(false_answers[best]),
        n_answerable=n_answerable,
        n_unanswerable=n_unanswerable,
    )


def _between(a: float, b: float) -> float:
    """A cutoff that answers b and abstains on a (a < b): their midpoint, or b itself where the
    midpoint rounds onto a (adjacent subnormal floats); halved first, so it never overflows."""
    middle = a / 2 + b / 2
    return middle if a < middle <= b else b


def histogram(scores: Sequence[TopScore], bins: int) -> Histogram | None:
    """Equal-width bins over the finite top scores; None when there are none."""
    if bins < 1:
        raise ValueError(f"bins must be >= 1, not {bins}")
    values = [s.score for s in scores if s.score is not None]
    if not values:
        return None
    lo, hi = min(values), max(values)
    count = bins if hi > lo else 1
    if math.isfinite(hi - lo):
        width = (hi - lo) / count
        edges = (*(lo + i * width for i in range(count)), hi)
    else:  # a range wider than the largest float: weighted means never overflow
        edges = (*(lo * (1 - i / count) + hi * (i / count) for i in range(count)), hi)
    counts = {True: [0] * count, False: [0] * count}
    for s in scores:
        if s.score is not None:
            index = min(bisect.bisect_right(edges, s.score) - 1, count - 1)
            counts[s.answerable][index] += 1
    return Histogram(edges, tuple(counts[True]), tuple(counts[False]))


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _words(
    answerable: Sequence[float], unanswerable: Sequence[float], gap: float | None, c: Cutoff | None
) -> str:
    """The conclusion in plain words; `answerable` / `unanswerable` are the finite top scores."""
    if c is None:
        return "no query returned a scored result: there is nothing to separate"
    if not c.n_unanswerable:
        return (
            "the gold set has no unanswerable query, so no cutoff can be chosen; add some "
            "(queries with no relevant document) and run again"
        )
    if not answerable:
        return "no answerable query returned a scored result: there is nothing to separate"
    highest = max([*answerable, *unanswerable])
    if c.value > highest:
        best = (
            f"answering nothing (any cutoff above {highest:.6g}), which abstains on every "
            "answerable query"
        )
    else:
        best = (
            f"a cutoff at {c.value:.6g}, which abstains on {_pct(c.abstention_rate)} of "
            f"answerable queries and answers {_pct(c.false_answer_rate)} of unanswerable ones"
        )
    if not unanswerable:
        return f"every unanswerable query already returned nothing; the best is {best}"
    if gap is not None:
        return (
            f"a gap of {gap:.6g} separates them (answerable top scores >= {min(answerable):.6g}, "
            f"unanswerable <= {max(unanswerable):.6g}): {best}"
        )
    return (
        f"the two distributions overlap (answerable top scores go down to "
        f"{min(answerable):.6g}, unanswerable up to {max(unanswerable):.6g}): this system cannot "
        f"tell when it has nothing. The best it can do is {best}"
    )


def analyse(gold: GoldSet, run: RefRun, *, bins: int = 10) -> Threshold:
    """Top scores, histogram, gap and best cutoff of one run (see the module docstring)."""
    if run.gold_hash != gold.hash:
        raise NotComparableError(
            f"{run.record_path or run.ref} was measured against gold {run.gold_hash[:12]}, not "
            f"the gold set given ({gold.hash[:12]})",
            ["pass the gold set it was measured on (--gold or --config), or run it again"],
        )
    scores, excluded = top_scores(gold, run)
    answerable = [s.score for s in scores if s.answerable and s.score is not None]
    unanswerable = [s.score for s in scores if not s.answerable and s.score is not None]
    gap = None
    if answerable and unanswerable and min(answerable) > max(unanswerable):
        gap = min(answerable) - max(unanswerable)
    cutoff = best_cutoff(scores)
    return Threshold(
        ref=run.ref,
        sha=run.sha,
        scores=scores,
        excluded=excluded,
        histogram=histogram(scores, bins),
        gap=gap,
        separable=gap is not None,
        cutoff=cutoff,
        words=_words(answerable, unanswerable, gap, cutoff),
    )


# --------------------------------------------------------------------------- rendering (pure)


def _bar(count: int, most: int) -> str:
    return "#" * (round(BAR_WIDTH * count / most) if most else 0)


def _render_text(t: Threshold) -> str:
    n_ans, n_un = len(t.side(True)), len(t.side(False))
    lines = [f"harness threshold: {t.ref} ({t.sha[:8]}): top-result score, answerable vs not", ""]
    h = t.histogram
    if h is not None:
        most = max(*h.answerable, *h.unanswerable)
        cut = t.cutoff.value if t.cutoff else None
        rows = []
        for i, (a, u) in enumerate(zip(h.answerable, h.unanswerable, strict=True)):
            lo, hi = h.edges[i], h.edges[i + 1]
            last = i == len(h.answerable) - 1
            span = f"[{lo:.4g}, {hi:.4g}{']' if last else ')'}"
            inside = cut is not None and lo <= cut and (cut < hi or (last and cut <= hi))
            mark = "  <- cutoff" if inside else ""
            rows.append(
                (
                    span,
                    f"{_bar(a, most):<{BAR_WIDTH}} {a:>3}",
                    f"{_bar(u, most):<{BAR_WIDTH}} {u:>3}{mark}",
                )
            )
        width = max(len("top score"), *(len(r[0]) for r in rows))
        head = (
            f"{'top score':<{width}}",
            f"{f'answerable (n={n_ans})':<{BAR_WIDTH + 4}}",
            f"unanswerable (n={n_un})",
        )
        lines.append("  ".join(head))
        lines += ["  ".join((r[0].ljust(width), r[1], r[2])).rstrip() for r in rows]
        if cut is not None and cut > h.edges[-1]:
            lines.append(f"{'':<{width}}  (the cutoff lies above every top score)")
    empty_a = sum(s.score is None for s in t.side(True))
    empty_u = sum(s.score is None for s in t.side(False))
    lines.append(f"returned nothing: {empty_a} answerable, {empty_u} unanswerable")
    if t.excluded:
        lines.append(f"left out (no usable answer): {len(t.excluded)}")
    lines += ["", t.words]
    return "\n".join(lines) + "\n"


def threshold_to_dict(t: Threshold) -> dict[str, Any]:
    h, c = t.histogram, t.cutoff
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "ref": t.ref,
        "sha": t.sha,
        "separable": t.separable,
        "gap": t.gap,
        "words": t.words,
        "cutoff": None
        if c is None
        else {
            "value": c.value,
            "abstained": c.abstained,
            "false_answers": c.false_answers,
            "n_answerable": c.n_answerable,
            "n_unanswerable": c.n_unanswerable,
            "abstention_rate": c.abstention_rate,
            "false_answer_rate": c.false_answer_rate,
        },
        "histogram": None
        if h is None
        else {
            "edges": list(h.edges),
            "answerable": list(h.answerable),
            "unanswerable": list(h.unanswerable),
        },
        "top_scores": [
            {"query_id": s.query_id, "answerable": s.answerable, "score": s.score} for s in t.scores
        ],
        "excluded": list(t.excluded),
    }


def render_threshold(t: Threshold, fmt: str) -> str:
    """`fmt` is "text" (a histogram for the terminal) or "json" (the data)."""
    if fmt == "json":
        return json.dumps(threshold_to_dict(t), sort_keys=True, indent=2, allow_nan=False) + "\n"
    if fmt == "text":
        return _render_text(t)
    raise ValueError(f"unknown format {fmt!r}; known: text, json")

"""A run's rankings judged once, for every metric to read (`harness.score.metrics`).

    ranks = judge(rankings, relevant, max_k, rel_level)      # JudgedRanks, one row per query
    judge_sized / judge_heads / judge_width                  # the same from arrays already cut
    dedupe(ids)                                              # first occurrence kept, in order

Each ranking is deduplicated lazily (the FIRST occurrence of an id is kept, later ones are
dropped, before any cutoff) until max_k unique ids are collected; every grade is looked up once
into an (n x width) array, with per query the number of relevant documents and the ideal gains
(the judged grades, sorted descending). With the returned texts and the gold answer spans, the
context metrics' arrays are filled too (`harness.score.context` counts their characters). Pure.

Holes: `judged[q, j]` says whether rank j + 1 has any judgement at all (grade 0 or negative
included), which a gain of 0 cannot tell from an unjudged document; `JudgedRanks.condensed` is
the same rows with every unjudged document removed (Sakai's condensed list, trec_eval -J), made
from that array by shifting the judged columns left, never by judging again. A cell is filled
with NaN until a grade is found for it, so one `isnan` gives `judged` and the grade arrays read
as before (`fmax` and `>=` read NaN as 0 and False).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from itertools import chain, islice, repeat
from operator import attrgetter, call, methodcaller
from typing import Any

import numpy as np
import numpy.typing as npt

from harness.score.context import annotated_characters, first_texts, found_characters

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.intp]

# What a cell holds until a grade is found for it: unjudged, or past the list's end.
_UNJUDGED = float("nan")


def _check_rel_level(rel_level: int) -> None:
    # 0 would make every unjudged document relevant.
    if isinstance(rel_level, bool) or not isinstance(rel_level, int) or rel_level < 1:
        raise ValueError(f"rel_level must be an integer >= 1, not {rel_level!r}")


@dataclass(frozen=True, eq=False)
class JudgedRanks:
    """What every metric reads, one row per query, column j = rank j + 1 of the deduped list.

    `gains[q, j]` is the grade at that rank clipped at 0 (0 when unjudged or past the list's end);
    `relevant[q, j]` is grade >= rel_level; `n_relevant[q]` counts the query's judgements with
    grade >= rel_level; `ideal[q, j]` is the (j + 1)-th largest positive judged grade, else 0;
    `answerable[q]` is some grade >= 1 (`GoldQuery.has_relevant`; a gold file may declare a
    query answerable without one, which `harness.score.evaluation` reads from the gold set).

    Holes (None only in a JudgedRanks built by hand; `judge` and every variant fill them):
    `judged[q, j]` is whether the query has any judgement of that id, whatever its grade (0 and
    negative included; False past the list's end); `n_nonrelevant[q]` counts the query's
    judgements with grade < rel_level (negative included); `n_ranked[q]` is how many unique ids
    the row ranks (at most its width). `condensed` is these rows with the unjudged ids removed.

    With returned texts (else None): `found[q, j]` is the found characters of the chunk at rank
    j + 1 (`context.found_characters`), `length[q, j]` the length of its returned text (0 for a
    missing text or past the list's end), `annotated[q]` the query's annotated characters.
    """

    gains: FloatArray
    relevant: BoolArray
    n_relevant: FloatArray
    ideal: FloatArray
    answerable: BoolArray
    judged: BoolArray | None = None
    n_nonrelevant: FloatArray | None = None
    n_ranked: IntArray | None = None
    found: FloatArray | None = None
    length: FloatArray | None = None
    annotated: FloatArray | None = None

    @property
    def width(self) -> int:
        return int(self.gains.shape[1])

    @cached_property
    def condensed(self) -> JudgedRanks:
        """Sakai's condensed list: each row with every unjudged id removed and the judged ones
        moved up in their order (what trec_eval -J and pytrec_eval's judged_docs_only_flag
        score), at the same width, padded as past a list's end; the per-query counts and the
        ideal gains unchanged (they are the judgements'). No context arrays: a condensed list
        has no returned texts. Made once per JudgedRanks, on first use."""
        judged = _holes(self)
        n_judged = judged.sum(axis=1)
        rows, columns = np.nonzero(judged)  # row by row, left to right
        # Judged cell i of a row goes to column i: its index among the row's judged cells.
        to = np.arange(len(rows)) - (np.cumsum(n_judged) - n_judged)[rows]

        def shift(x: npt.NDArray[Any]) -> npt.NDArray[Any]:
            out = np.zeros_like(x)
            out[rows, to] = x[rows, columns]
            return out

        return JudgedRanks(
            gains=shift(self.gains),
            relevant=shift(self.relevant),
            n_relevant=self.n_relevant,
            ideal=self.ideal,
            answerable=self.answerable,
            judged=np.arange(self.width) < n_judged[:, None],
            n_nonrelevant=self.n_nonrelevant,
            n_ranked=n_judged.astype(np.intp),
        )

    def select(self, rows: npt.NDArray[np.intp], width: int) -> JudgedRanks:
        """These rows, cut (or padded with zeros) to `width` columns, as new C-ordered arrays:
        what `judge` gives for those rankings alone when `width` is the width it would choose
        (`judge_width`)."""

        def cut(x: npt.NDArray[np.generic]) -> npt.NDArray[Any]:
            out = np.zeros((len(rows), width), dtype=x.dtype)
            w = min(width, x.shape[1])
            out[:, :w] = x[rows, :w]
            return out

        def pick(x: npt.NDArray[Any] | None, wide: bool = True) -> npt.NDArray[Any] | None:
            if x is None:
                return None
            return cut(x) if wide else np.ascontiguousarray(x[rows])

        return JudgedRanks(
            gains=cut(self.gains),
            relevant=cut(self.relevant),
            n_relevant=np.ascontiguousarray(self.n_relevant[rows]),
            ideal=cut(self.ideal),
            answerable=np.ascontiguousarray(self.answerable[rows]),
            judged=pick(self.judged),
            n_nonrelevant=pick(self.n_nonrelevant, wide=False),
            n_ranked=None if self.n_ranked is None else np.minimum(self.n_ranked[rows], width),
            found=pick(self.found),
            length=pick(self.length),
            annotated=pick(self.annotated, wide=False),
        )


def _holes(r: JudgedRanks) -> BoolArray:
    if r.judged is None:
        raise ValueError(
            "the condensed (primed) metrics read JudgedRanks.judged: make the JudgedRanks with "
            "judge()"
        )
    return r.judged


def judge_width(sizes: npt.NDArray[np.intp], positive: int, max_k: int) -> int:
    """The width `judge` chooses for rankings of these `sizes` (`judge_sized`) over queries of
    which the one with the most positive judgements has `positive` of them."""
    return max(1, int(sizes.max(initial=0)), min(max_k, positive))


def dedupe(ids: Iterable[str]) -> tuple[str, ...]:
    """The ids in order, every later duplicate dropped: the first occurrence keeps its place."""
    return tuple(dict.fromkeys(ids))


def _top_unique(ranking: Sequence[str], k: int) -> dict[str, None]:
    """The first k unique ids of a ranking, as dict keys in rank order; walks only as far as it
    must (the head is deduped in C; only a head with duplicates makes us walk on)."""
    top = dict.fromkeys(ranking[:k])
    if len(top) < k and len(ranking) > k:
        for doc in islice(ranking, k, None):
            top[doc] = None
            if len(top) == k:
                break
    return top


def judge(
    rankings: Sequence[Sequence[str]],
    judgements: Sequence[Mapping[str, int]],
    max_k: int,
    rel_level: int = 1,
    *,
    texts: Sequence[Sequence[str | None] | None] | None = None,
    spans: Sequence[Mapping[str, Sequence[str]]] | None = None,
) -> JudgedRanks:
    """Look every ranking's top max_k unique ids up in its query's judgements, once.

    With `texts` (per query the returned text of each position, None for a query without
    them) and `spans` (per query, `GoldQuery.spans`), the context arrays are filled too.
    """
    return judge_sized(rankings, judgements, max_k, rel_level, texts=texts, spans=spans)[0]


def judge_sized(
    rankings: Sequence[Sequence[str]],
    judgements: Sequence[Mapping[str, int]],
    max_k: int,
    rel_level: int = 1,
    *,
    texts: Sequence[Sequence[str | None] | None] | None = None,
    spans: Sequence[Mapping[str, Sequence[str]]] | None = None,
) -> tuple[JudgedRanks, npt.NDArray[np.intp]]:
    """`judge`, and per ranking the number of unique ids judged (at most max_k): what
    `JudgedRanks.select` needs to cut a subset of the rows to the width `judge` would give it."""
    _check_rel_level(rel_level)
    if len(rankings) != len(judgements):
        raise ValueError(f"{len(rankings)} rankings for {len(judgements)} judgement maps")
    if any(map(isinstance, rankings, repeat(str))):
        raise TypeError("a ranking is a sequence of ids, not a string")
    n = len(rankings)
    # One Python-level step per query, everything inside it in C: at 100,000 queries each extra
    # step costs about 0.1 s.
    found: list[float] = []
    sizes: list[int] = []
    unjudged = repeat(_UNJUDGED)
    for ranking, rel in zip(rankings, judgements, strict=True):
        top = dict.fromkeys(ranking[:max_k])
        if len(top) < max_k and len(ranking) > max_k:
            top = _top_unique(ranking, max_k)
        sizes.append(len(top))
        found.extend(map(rel.get, top, unjudged))
    judged = _judged(found, sizes, judgements, max_k, rel_level)
    lengths = np.array(sizes, dtype=np.intp)
    if texts is None:
        return judged, lengths
    return _with_context(judged, rankings, texts, spans or [{}] * n, max_k), lengths


def judge_heads(
    heads: Sequence[str],
    sizes: Sequence[int],
    judgements: Sequence[Mapping[str, int]],
    max_k: int,
    rel_level: int = 1,
) -> JudgedRanks:
    """`judge` for rankings given by their heads: the first min(len, max_k) ids of each ranking,
    all unique (a TREC run holds no id twice for a query), flattened in query order, and
    `sizes[q]`, how many of them are query q's. Every lookup is one call from C: no Python step
    per query or per id."""
    _check_rel_level(rel_level)
    if len(sizes) != len(judgements):
        raise ValueError(f"{len(sizes)} rankings for {len(judgements)} judgement maps")
    gets = chain.from_iterable(map(repeat, map(attrgetter("get"), judgements), sizes))
    found: list[float] = list(map(call, gets, heads, repeat(_UNJUDGED)))
    return _judged(found, sizes, judgements, max_k, rel_level)


def _judged(
    found: Sequence[float],
    sizes: Sequence[int],
    judgements: Sequence[Mapping[str, int]],
    max_k: int,
    rel_level: int,
) -> JudgedRanks:
    """The JudgedRanks of the grades `found` at the ranks of every query (`sizes[q]` of them
    for query q, in query order; NaN where unjudged)."""
    n = len(judgements)
    lengths = np.array(sizes, dtype=np.intp)
    counts = np.fromiter(map(len, judgements), dtype=np.intp, count=n)
    grades = np.fromiter(
        chain.from_iterable(map(methodcaller("values"), judgements)),
        dtype=np.float64,
        count=int(counts.sum()),
    )
    owner = np.repeat(np.arange(n), counts)
    ranked, fill = _ranked(lengths, owner, grades, max_k)
    ranked[fill] = found
    return _ranks(ranked, owner, grades, rel_level, lengths)


def judge_columns(
    query: npt.NDArray[np.integer[Any]],
    position: npt.NDArray[np.int64],
    grade: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    owner: npt.NDArray[np.integer[Any]],
    grades: npt.NDArray[np.int64],
    max_k: int,
    rel_level: int = 1,
) -> JudgedRanks:
    """`judge` from columns (`harness.score.trec`): the found `grade` of ranked lines at
    (`query`, 0-based `position` < max_k), each query's ranking size cut at max_k (`sizes`),
    and every judgement as (`owner` query, `grades`). A line not given is unjudged."""
    _check_rel_level(rel_level)
    judged = grades.astype(np.float64)
    lengths = sizes.astype(np.intp)
    ranked, _ = _ranked(lengths, owner, judged, max_k)
    ranked[query, position] = grade
    return _ranks(ranked, owner, judged, rel_level, lengths)


def _ranked(
    lengths: npt.NDArray[np.intp], owner: npt.NDArray[Any], grades: FloatArray, max_k: int
) -> tuple[FloatArray, BoolArray]:
    """NaNs (unjudged) of the width `judge` gives (the longest ranking, or as many ranks as the
    most positive judgements of a query, up to max_k), and the cells the rankings fill."""
    n = len(lengths)
    n_positive = np.bincount(owner[grades > 0], minlength=n)
    width = max(1, int(lengths.max(initial=0)), min(max_k, int(n_positive.max(initial=0))))
    return np.full((n, width), _UNJUDGED), np.arange(width) < lengths[:, None]


def _ranks(
    ranked: FloatArray,
    owner: npt.NDArray[Any],
    grades: FloatArray,
    rel_level: int,
    lengths: IntArray,
) -> JudgedRanks:
    """JudgedRanks of the grades at each rank (`ranked`, NaN where unjudged or past the list's
    end), every judgement of each query, and each ranking's length (`lengths`, cut at max_k)."""
    n, width = ranked.shape
    n_relevant = np.bincount(owner, weights=grades >= rel_level, minlength=n).astype(np.float64)
    n_judgements = np.bincount(owner, minlength=n)
    positive = grades > 0
    ideal_owner, ideal_grade = owner[positive], grades[positive]
    n_positive = np.bincount(ideal_owner, minlength=n)
    answerable = np.bincount(owner, weights=grades >= 1, minlength=n) > 0
    ideal = np.zeros((n, width))
    order = np.lexsort((-ideal_grade, ideal_owner))
    ideal_owner, ideal_grade = ideal_owner[order], ideal_grade[order]
    position = np.arange(len(ideal_owner)) - (np.cumsum(n_positive) - n_positive)[ideal_owner]
    keep = position < width
    ideal[ideal_owner[keep], position[keep]] = ideal_grade[keep]
    return JudgedRanks(
        gains=np.fmax(ranked, 0.0),  # NaN (unjudged) gains 0, as does a grade <= 0
        relevant=ranked >= rel_level,  # NaN >= anything is False
        n_relevant=n_relevant,
        ideal=ideal,
        answerable=answerable,
        judged=~np.isnan(ranked),
        n_nonrelevant=n_judgements - n_relevant,
        n_ranked=np.minimum(lengths, width),
    )


def _with_context(
    judged: JudgedRanks,
    rankings: Sequence[Sequence[str]],
    texts: Sequence[Sequence[str | None] | None],
    spans: Sequence[Mapping[str, Sequence[str]]],
    max_k: int,
) -> JudgedRanks:
    n, width = judged.gains.shape
    if not len(texts) == len(spans) == n:
        raise ValueError(f"{len(texts)} text lists and {len(spans)} span maps for {n} rankings")
    found = np.zeros((n, width))
    length = np.zeros((n, width))
    for q, (ranking, returned, query_spans) in enumerate(zip(rankings, texts, spans, strict=True)):
        if returned is None:
            continue
        for j, (doc, text) in enumerate(first_texts(ranking, returned, max_k)):
            length[q, j] = len(text or "")
            found[q, j] = found_characters(text, query_spans.get(doc, ()))
    annotated = np.array([annotated_characters(s) for s in spans], dtype=np.float64)
    return replace(judged, found=found, length=length, annotated=annotated)

"""Retrieval metrics over ranked ids, with trec_eval's conventions, for a whole run at once.

Pure: no I/O, no clock, no randomness.  A run is scored in three steps:

1. each ranking is deduplicated lazily (the FIRST occurrence of an id is kept, later ones are
   dropped, before any cutoff) until max(k) unique ids are collected;
2. `judge` (`harness.score.judged`) looks every grade up once into an (n x width) array and
   precomputes per query the number of relevant documents and the ideal gains (the judged
   grades, sorted descending);
3. every metric in `REGISTRY` (`METRICS`, and `HOLE_METRICS` below) is a vectorised function
   of that `JudgedRanks` and a cutoff k.

Relevance: a judged grade >= `rel_level` (default 1) is relevant for the binary-relevance
metrics (hit, recall, p, mrr, ap); unjudged documents have grade 0.  The graded metrics (ndcg,
ndcg_burges) follow trec_eval's ndcg_cut exactly.  Checked with pytrec_eval-terrier 0.5: at
relevance_level 2 a grade-1 document still gains 1 (ndcg_cut ignores -l), and grades <= 0 gain
nothing, in the run or in the ideal.  tests/score/test_metrics_oracle.py finds every value equal to
pytrec_eval's, to the last bit, on BM25 runs over SciFact and Cranfield.

Names (`parse_metric`): harness's own (`ndcg@10`), ir_measures' (`nDCG@10`, `RR@10`, `AP`) and
trec_eval's (`ndcg_cut_10`, `P_5`, `map`, `recip_rank`) name the same registry entries and print
back as written.  `ap`, `ndcg`, `ndcg_burges` and `mrr` without a cutoff read the whole returned
ranking (trec_eval's `map`, `ndcg`, `recip_rank`: the ideal of uncut ndcg holds every positive
judgement); hit, recall and p always need one.

Ranks are positions in the deduplicated list, in the order the service returned: nothing here
breaks ties (a TREC run file is put in trec_eval's order by `harness.score.runfile`).

The context metrics (context_precision, context_recall) read the returned text of each ranked
chunk and the gold answer spans (`harness.score.context` counts their characters); `judge` fills
their arrays only when it is given the texts.

Holes in the judgements (`HOLE_METRICS`, beside `METRICS`): a gold set built by judging what one
system returned leaves another's new documents unjudged, and every metric above scores an
unjudged document as junk.  These read `JudgedRanks.judged` (any judgement, grade 0 included):
`judged@k` (ir_measures' Judged@k: how much of what was returned was judged), `bpref`
(trec_eval's: only judged documents count) and the condensed-list variants, named with Sakai's
prime (`ndcg'@10`, `ap'`, `hit'@5`: the metric on the ranking with every unjudged id removed,
trec_eval -J).  tests/score/test_judged_metrics.py checks them against ir_measures and pytrec_eval.

`METRICS_VERSION` names the definitions below: it changes whenever a metric's formula, duplicate
rule or empty-ranking value changes, and it is part of the evaluation-definition hash.

A query with no grade >= 1 (`score_query` refuses it): unanswerable, `no_answer_false_positive`
scores it; answerable (`GoldQuery.answerable`: nothing relevant judged yet), it scores 0 on
every quality metric in `harness.score.evaluation`.  `outranks_holds` checks a pair.  Scoring a
whole run against a gold set (which queries are averaged, missing queries, slices) is
`harness.score.evaluation`'s.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from harness.score.judged import BoolArray, FloatArray, IntArray, JudgedRanks, judge

# The version of the metric definitions (see the module docstring): 2 added the context metrics.
METRICS_VERSION = "2"


# --------------------------------------------------------------------------- the metrics


def _ratio(num: FloatArray, den: FloatArray) -> FloatArray:
    """num / den, and 0 where den is 0 (trec_eval's guard for a query with nothing relevant)."""
    out = np.zeros_like(num, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _row_sums(x: FloatArray) -> FloatArray:
    """Row sums added strictly left to right, as trec_eval's loops add.

    A matrix product or pairwise `sum` groups terms by the array's width, which depends on the
    rest of the batch; the same ranking must score bit-identically in any batch, or a paired
    test would see deltas of 1e-17 between identical answers.
    """
    if x.shape[1] == 0:
        return np.zeros(x.shape[0])
    return np.asarray(np.cumsum(x, axis=1)[:, -1], dtype=np.float64)


def _dcg(gains: FloatArray, k: int) -> FloatArray:
    top = gains[:, :k]
    return _row_sums(top / np.log2(np.arange(2.0, top.shape[1] + 2.0)))


def hit(r: JudgedRanks, k: int) -> FloatArray:
    """hit@k = 1 if any relevant document is in the top k, else 0.

    ir_measures and trec_eval call this Success@k (`success_k`); some papers call it Recall@k,
    which is not our recall@k.  Empty ranking: 0.  A repeated relevant id counts once; the ranks
    are the service's own order (no tie-breaking here); unanswerable queries are not scored.
    """
    return np.asarray(r.relevant[:, :k].any(axis=1), dtype=np.float64)


def recall(r: JudgedRanks, k: int) -> FloatArray:
    """recall@k = |relevant in top k| / |relevant| (trec_eval recall_k).

    Empty ranking: 0; a repeated id counts once.  |relevant| = 0 (possible only with
    rel_level > 1) gives 0, as trec_eval does.
    """
    return _ratio(r.relevant[:, :k].sum(axis=1, dtype=np.float64), r.n_relevant)


def precision(r: JudgedRanks, k: int) -> FloatArray:
    """p@k = |relevant in top k| / k, always over k (trec_eval P_k).

    A list shorter than k, or an empty one, still divides by k: missing ranks score as junk, and
    a repeated id counts once (its later copies are gone before the cut).
    """
    return np.asarray(r.relevant[:, :k].sum(axis=1, dtype=np.float64) / k, dtype=np.float64)


def mrr(r: JudgedRanks, k: int) -> FloatArray:
    """mrr@k = 1 / rank of the first relevant document within the top k, else 0.

    trec_eval's recip_rank on the run cut at k; ir_measures' RR@k on a run without score ties
    (its default provider breaks ties by docid ascending, trec_eval by docid descending).
    Ranks count unique ids: a junk id repeated above the first hit pushes it down once only.
    """
    top = r.relevant[:, :k]
    first = top.argmax(axis=1)
    return np.where(top.any(axis=1), 1.0 / (first + 1.0), 0.0).astype(np.float64)


def ndcg(r: JudgedRanks, k: int) -> FloatArray:
    """ndcg@k = DCG@k / IDCG@k, DCG@k = sum over ranks i <= k of gain_i / log2(i + 1).

    gain = the judged grade when > 0, else 0; IDCG@k is the DCG@k of all positive judged grades
    sorted descending (judged documents the run never returned count).  `rel_level` is ignored,
    exactly as trec_eval's ndcg_cut ignores -l.  A repeated id gains once.  Empty ranking: 0.
    """
    return _ratio(_dcg(r.gains, k), _dcg(r.ideal, k))


def ndcg_burges(r: JudgedRanks, k: int) -> FloatArray:
    """ndcg@k with Burges et al.'s gain 2**grade - 1 (so grade 1 -> 1, 2 -> 3, 3 -> 7), ideal alike.

    Equals trec_eval's ndcg_cut on qrels whose grades are mapped to 2**grade - 1.  Duplicates,
    empty rankings and rel_level as for ndcg.  A query whose top grade is above GAIN_SHIFT_FROM
    has both its gains and its ideal ones scaled by 2**-shift (the ratio is the same), so a grade
    of 2000 gives a number, not inf / inf; below it nothing changes.
    """
    top = r.ideal[:, :1] if r.ideal.shape[1] else np.zeros((r.ideal.shape[0], 1))
    shift = np.maximum(top - GAIN_SHIFT_FROM, 0.0)
    gains = np.exp2(r.gains - shift) - np.exp2(-shift)
    ideal = np.exp2(r.ideal - shift) - np.exp2(-shift)
    return _ratio(_dcg(gains, k), _dcg(ideal, k))


GAIN_SHIFT_FROM = 900.0
"""ndcg_burges' largest unscaled grade: 2**900 times a few thousand ranks is still finite."""


def average_precision(r: JudgedRanks, k: int) -> FloatArray:
    """ap@k = (sum over relevant ranks i <= k of precision@i) / |relevant| (trec_eval map_cut_k).

    The denominator is every relevant judgement, not min(k, |relevant|).  Empty ranking: 0; a
    repeated id counts once; |relevant| = 0 gives 0.
    """
    top = r.relevant[:, :k]
    precision_at = np.cumsum(top, axis=1) / np.arange(1.0, top.shape[1] + 1.0)
    return _ratio(_row_sums(np.where(top, precision_at, 0.0)), r.n_relevant)


def _context(r: JudgedRanks) -> tuple[FloatArray, FloatArray, FloatArray]:
    if r.found is None or r.length is None or r.annotated is None:
        raise ValueError("context metrics need the returned texts: set query.texts")
    return r.found, r.length, r.annotated


def context_precision(r: JudgedRanks, k: int) -> FloatArray:
    """context_precision@k = found characters / returned characters, over the top k unique
    chunks (`harness.score.context` defines both).

    Which texts count: the returned text of each of the first k chunks of the ranking
    deduplicated by id (a repeated chunk counts once, with its first text); a span is found
    only in its own document's returned text, verbatim, and overlapping or nested spans are
    unioned, so duplicates and overlaps cannot raise it.  Empty ranking, or no returned
    character in the top k: 0 (as p@k scores an empty list).  A query without spans: 0 (none of
    its returned characters is evidence).  Unanswerable queries are not scored; `rel_level` is
    ignored (spans are only allowed on documents of grade >= 1).
    """
    found, length, _ = _context(r)
    return _ratio(_row_sums(found[:, :k]), _row_sums(length[:, :k]))


def context_recall(r: JudgedRanks, k: int) -> FloatArray:
    """context_recall@k = found characters in the top k unique chunks / annotated characters.

    Duplicates, overlaps and which texts count as for context_precision.  Empty ranking: 0.  A
    query without spans (no annotated character): 0, as trec_eval's recall scores a query with
    nothing relevant.  Never above 1: each chunk finds at most its document's evidence.
    """
    found, _, annotated = _context(r)
    return _ratio(_row_sums(found[:, :k]), annotated)


# --------------------------------------------------------------------------- judgement holes


def _holes(r: JudgedRanks) -> tuple[BoolArray, FloatArray, IntArray]:
    if r.judged is None or r.n_nonrelevant is None or r.n_ranked is None:
        raise ValueError(
            "judged@k, bpref and the condensed (primed) metrics read JudgedRanks.judged: "
            "make the JudgedRanks with judge()"
        )
    return r.judged, r.n_nonrelevant, r.n_ranked


def judged_share(r: JudgedRanks, k: int) -> FloatArray:
    """judged@k = |judged ids in the top k| / min(k, |ids returned|): ir_measures' Judged@k.

    Judged: the query has a judgement of the id at any grade (0, judged not relevant, included:
    ir_measures' `did in qrels`).  The denominator is what was returned up to k, not k (as
    ir_measures computes it, whose docstring's "P@k with a rel below any judgement" would
    divide by k): three ids returned, all judged, give 1.0 at any k >= 3.  Uncut (`judged`,
    ir_measures' `Judged`): over the whole returned ranking.  A repeated id counts once (its
    later copies are gone before the cut); ranks are the service's order.  Empty ranking: 0
    (ir_measures divides by zero there).  Not a quality score: it is computed for every
    query scored, answerable or not (`MetricDef.quality`), as ir_measures does for any query
    with judgements.
    """
    judged, _, n_ranked = _holes(r)
    top = judged[:, :k].sum(axis=1, dtype=np.float64)
    return _ratio(top, np.minimum(n_ranked, k).astype(np.float64))


def bpref(r: JudgedRanks, k: int) -> FloatArray:
    """bpref = (1/R) * sum over the relevant ids d ranked of (1 - min(n_d, R) / min(R, N)):
    trec_eval's bpref exactly (Buckley and Voorhees, SIGIR 2004, as trec_eval 9 codes it).

    R = the query's judgements with grade >= rel_level (returned or not), N = those below it
    (judged not relevant), n_d = the judged non-relevant ids ranked above d.  Unjudged ids are
    skipped: they neither score nor count in n_d.  A relevant id with n_d = 0 scores 1 (the
    guard trec_eval needs when N = 0: then every term is 1).  Terms are added rank by rank.
    Reads the whole returned ranking (k is the full width: trec_eval's bpref has no cutoff).
    Empty ranking: 0; R = 0: 0.  A repeated id counts once.  A negative grade (no gold file
    holds one: the readers refuse it) is judged not relevant here; trec_eval skips it as
    unjudged.
    """
    judged, n_nonrelevant, _ = _holes(r)
    relevant = r.relevant[:, :k]
    above = np.cumsum(judged[:, :k] & ~relevant, axis=1)  # at a relevant rank: the ones above
    n_relevant = r.n_relevant[:, None]
    den = np.minimum(n_nonrelevant, r.n_relevant)[:, None]
    # den >= 1 wherever a term is used (above > 0 means N >= 1; a relevant id, R >= 1).
    term = 1.0 - np.minimum(above, n_relevant) / np.where(den > 0, den, 1.0)
    terms = np.where(relevant, np.where(above > 0, term, 1.0), 0.0)
    return _ratio(_row_sums(terms), r.n_relevant)


def condensed(fn: MetricFn) -> MetricFn:
    """`fn` on the condensed list (Sakai, SIGIR 2007): the name with a prime, x'@k = x@k of
    each ranking with every unjudged id removed before the cutoff, the judged ones keeping
    their order (`JudgedRanks.condensed`).  What trec_eval -J, pytrec_eval's
    judged_docs_only_flag=True and ir_measures' judged_only=True compute.

    Only the ranking changes: |relevant| and the ideal gains are the judgements', so
    recall'@k, ap' and ndcg' keep their denominators, and p'@k still divides by k.
    Duplicates are dropped first (the first occurrence counts, as for x).  Empty ranking, or
    nothing in it judged: 0.  The top k may come from any depth, so a primed metric judges
    the whole returned ranking whatever its cutoff (`MetricSpec.depth`).  A negative grade
    (no gold file holds one) keeps its id in the list here; trec_eval -J drops it.
    """

    def on_condensed(r: JudgedRanks, k: int) -> FloatArray:
        return fn(r.condensed, k)  # ValueError when r has no `judged` (JudgedRanks.condensed)

    on_condensed.__name__ = f"{fn.__name__}_condensed"
    return on_condensed


class Kind(enum.StrEnum):
    """Which paired test fits: McNemar for 0/1 per query, randomization for the rest."""

    BINARY = "binary"
    CONTINUOUS = "continuous"


MetricFn = Callable[[JudgedRanks, int], FloatArray]


@dataclass(frozen=True)
class MetricDef:
    """A registry entry: `fn(judged, k)` gives one value per row; `kind` picks the paired test;
    `texts` says it reads the returned context texts (`judge(..., texts=...)`); `whole` that
    it reads the whole returned ranking at any cutoff (a condensed list's top k may come from
    any depth); `quality` False that it describes the judgements, not the ranking's quality
    (judged@k): scored on every scored query, answerable or not, and no verdict of better or
    worse."""

    name: str
    kind: Kind
    fn: MetricFn
    texts: bool = False
    whole: bool = False
    quality: bool = True


# Rates over a gold set's unanswerable queries, beside the per-query metrics: no cutoff, and
# lower is better. `no_answer_fp` = unanswerable queries that returned anything / unanswerable
# queries (what `no_answer_false_positive(...).returned_any` counts), as compare reports it.
NO_ANSWER_FP = "no_answer_fp"
LOWER_IS_BETTER: frozenset[str] = frozenset({NO_ANSWER_FP})


def lower_is_better(name: str) -> bool:
    """Whether a smaller value of `name` is better: a rate of LOWER_IS_BETTER, or a metric spec
    (every metric in REGISTRY is higher-better); ValueError for a name that is neither."""
    if name in LOWER_IS_BETTER:
        return True
    parse_metric(name)
    return False


METRICS: Mapping[str, MetricDef] = MappingProxyType(
    {
        d.name: d
        for d in (
            MetricDef("hit", Kind.BINARY, hit),
            MetricDef("recall", Kind.CONTINUOUS, recall),
            MetricDef("p", Kind.CONTINUOUS, precision),
            MetricDef("mrr", Kind.CONTINUOUS, mrr),
            MetricDef("ndcg", Kind.CONTINUOUS, ndcg),
            MetricDef("ndcg_burges", Kind.CONTINUOUS, ndcg_burges),
            MetricDef("ap", Kind.CONTINUOUS, average_precision),
            MetricDef("context_precision", Kind.CONTINUOUS, context_precision, texts=True),
            MetricDef("context_recall", Kind.CONTINUOUS, context_recall, texts=True),
        )
    }
)

# The metrics that read which ranked ids were judged at all (`JudgedRanks.judged`): kept apart
# from METRICS, whose every entry scores an unjudged id as junk; `REGISTRY` holds both.
_CONDENSED = ("hit", "recall", "p", "mrr", "ndcg", "ndcg_burges", "ap")
HOLE_METRICS: Mapping[str, MetricDef] = MappingProxyType(
    {
        d.name: d
        for d in (
            MetricDef("judged", Kind.CONTINUOUS, judged_share, quality=False),
            MetricDef("bpref", Kind.CONTINUOUS, bpref),
            *(
                MetricDef(f"{name}'", METRICS[name].kind, condensed(METRICS[name].fn), whole=True)
                for name in _CONDENSED
            ),
        )
    }
)
REGISTRY: Mapping[str, MetricDef] = MappingProxyType({**METRICS, **HOLE_METRICS})

# Metrics that take no cutoff: trec_eval's bpref reads the whole ranking and has none.
NO_CUTOFF_METRICS = frozenset({"bpref"})

# Every accepted spelling, canonical first: harness's own, then ir_measures' (`nDCG@10`, `RR`)
# and trec_eval's (`ndcg_cut_10`, `P_5`, `recip_rank`, `map`).  A spec prints back as it was
# written, so a user's `nDCG@10` is `nDCG@10` in every table; equality and hashing use the
# canonical (name, k), so `nDCG@10 == ndcg@10 == ndcg_cut_10`.
_AT_K = {  # NAME@k: every registry name, then the other tools' spellings
    **{name: name for name in REGISTRY},  # bpref@k too: MetricSpec says it takes no cutoff
    "Success": "hit", "R": "recall", "P": "p", "RR": "mrr", "nDCG": "ndcg", "AP": "ap",
    "Judged": "judged", "Bpref": "bpref",
    # ir_measures' names of the condensed list (its pytrec_eval provider passes -J)
    "Success(judged_only=True)": "hit'", "R(judged_only=True)": "recall'",
    "P(judged_only=True)": "p'", "RR(judged_only=True)": "mrr'",
    "nDCG(judged_only=True)": "ndcg'", "AP(judged_only=True)": "ap'",
}  # fmt: skip
_TREC_K = {  # trec_eval's NAME_k
    "success": "hit", "recall": "recall", "P": "p", "ndcg_cut": "ndcg", "map_cut": "ap",
}  # fmt: skip
_UNCUT = {  # the whole returned ranking, no cutoff
    "mrr": "mrr", "RR": "mrr", "recip_rank": "mrr",
    "ndcg": "ndcg", "nDCG": "ndcg",
    "ndcg_burges": "ndcg_burges",
    "ap": "ap", "AP": "ap", "map": "ap",
    "judged": "judged", "Judged": "judged",
    "bpref": "bpref", "Bpref": "bpref",
    "mrr'": "mrr'", "RR(judged_only=True)": "mrr'",
    "ndcg'": "ndcg'", "nDCG(judged_only=True)": "ndcg'",
    "ndcg_burges'": "ndcg_burges'",
    "ap'": "ap'", "AP(judged_only=True)": "ap'",
}  # fmt: skip
UNCUT_METRICS = frozenset(_UNCUT.values())
_UNCUT_NAMES = ", ".join(
    sorted(n for n in UNCUT_METRICS if not n.endswith("'") and n not in NO_CUTOFF_METRICS)
)
# Spellings people bring from elsewhere that are not accepted, only to suggest one in an error.
_ALIASES = {
    "success": "hit", "precision": "p", "rr": "mrr", "recip_rank": "mrr", "map": "ap", "r": "recall"
}  # fmt: skip
_AT = re.compile(r"([^@]+)@([1-9][0-9]*)")  # NAME must then be one of _AT_K's
_UNDERSCORE = re.compile(r"([A-Za-z_]+?)_([1-9][0-9]*)")


def _known() -> str:
    # The primes by example: every error that lists the names must stay one readable line
    # (a config problem is cut at 400 characters, `harness.errors.Problem`).
    plain = (name for name in REGISTRY if not name.endswith("'"))
    names = ", ".join(name if name in NO_CUTOFF_METRICS else f"{name}@k" for name in plain)
    return f"{names}, primes (ndcg'@k)"


@dataclass(frozen=True)
class MetricSpec:
    """A metric at a cutoff (`k`), or over the whole returned ranking (`k` None: trec_eval's
    `map`, `ndcg`, `recip_rank`); `str(spec)` is the name as written (`label`, e.g. "nDCG@10"
    or "ndcg_cut_10"), else the canonical one ("ndcg@10", "ap").  Equality, hashing and order
    use only (name, k): every spelling of one metric is one metric."""

    name: str
    k: int | None
    label: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.name not in REGISTRY:
            raise ValueError(f"unknown metric {self.name!r}; known metrics: {_known()}")
        if self.k is None:
            if self.name not in UNCUT_METRICS:
                raise ValueError(f"{self.name} needs a cutoff ({self.name}@k)")
        elif self.name in NO_CUTOFF_METRICS:
            raise ValueError(
                f"{self.name} reads the whole ranking and takes no cutoff, as trec_eval's: "
                f"give it as {self.name}"
            )
        elif isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ValueError(f"cutoff of {self.name} must be an integer >= 1, not {self.k!r}")

    def __str__(self) -> str:
        return self.label or self.canonical

    @property
    def canonical(self) -> str:
        return self.name if self.k is None else f"{self.name}@{self.k}"

    @property
    def depth(self) -> int:
        """How many unique ids the metric reads: k, or every one (uncut, or a condensed
        metric, whose top k may come from any rank)."""
        return UNCUT_DEPTH if self.k is None or REGISTRY[self.name].whole else self.k

    @property
    def kind(self) -> Kind:
        return REGISTRY[self.name].kind

    @property
    def needs_texts(self) -> bool:
        return REGISTRY[self.name].texts

    @property
    def quality(self) -> bool:
        """False for a metric that describes the judgements, not the ranking (judged@k)."""
        return REGISTRY[self.name].quality

    def compute(self, ranks: JudgedRanks) -> FloatArray:
        return REGISTRY[self.name].fn(ranks, ranks.width if self.k is None else self.k)

    def sort_key(self) -> tuple[str, int]:
        return (self.name, UNCUT_DEPTH if self.k is None else self.k)


# An uncut metric judges the whole ranking and every positive judgement (`judge` widens its
# arrays only as far as the longest ranking or judgement list, never to this).
UNCUT_DEPTH = 2**62


def parse_metric(text: str) -> MetricSpec:
    """Parse a metric name; anything unknown raises ValueError.

    Accepted: harness's canonical names (`ndcg@10`, lower case, a cutoff >= 1 without leading
    zeros; `ap`, `ndcg`, `ndcg_burges`, `mrr` uncut), ir_measures' (`nDCG@10`, `P@5`, `R@100`,
    `RR@10`, `AP@100`, `Success@5`; `AP`, `nDCG`, `RR` uncut) and trec_eval's (`ndcg_cut_10`,
    `P_5`, `recall_100`, `map_cut_100`, `success_5`; `map`, `ndcg`, `recip_rank` uncut).
    The hole metrics: `judged@10` (ir_measures' `Judged@10`; `judged`/`Judged` uncut), `bpref`
    (ir_measures' `Bpref`, trec_eval's `bpref`; no cutoff), and a prime for the condensed list,
    `ndcg'@10`, `ap'`, `mrr'@10`, `hit'@5`, ... (ir_measures' `nDCG(judged_only=True)@10`, ...;
    trec_eval spells it -J).
    `str(parse_metric(s)) == s` for each.  The error names every known metric and, when it can,
    the spelling that was meant ("NDCG@10" -> "ndcg@10", "map@100" -> "ap@100").
    """
    if text in _UNCUT:
        return MetricSpec(_UNCUT[text], None, _label(text, _UNCUT[text], None))
    for pattern, table in ((_AT, _AT_K), (_UNDERSCORE, _TREC_K)):
        match = pattern.fullmatch(text)
        if match and match.group(1) in table:
            name, k = table[match.group(1)], int(match.group(2))
            return MetricSpec(name, k, _label(text, name, k))
    hint = ""
    loose = re.fullmatch(r"\s*([A-Za-z_]+'?)\s*@\s*\+?0*([1-9][0-9]*)\s*", text)
    if loose:
        name = loose.group(1).lower()
        name = _ALIASES.get(name, name)
        if name in REGISTRY and name not in NO_CUTOFF_METRICS:
            hint = f" (did you mean {name}@{int(loose.group(2))}?)"
    raise ValueError(
        f"unknown metric {text!r}{hint}; known metrics: {_known()}, with k >= 1 (or "
        f"ir_measures' and trec_eval's: nDCG@10, P@5, RR@10, AP, ndcg_cut_10, map, "
        f"recip_rank; uncut: {_UNCUT_NAMES})"
    )


def _label(text: str, name: str, k: int | None) -> str | None:
    """The spelling to print back: None when it is the canonical one already."""
    return None if text == (name if k is None else f"{name}@{k}") else text


def parse_metrics(text: str) -> tuple[MetricSpec, ...]:
    """Parse "hit@5,ndcg@10" (spaces around commas allowed) in order, dropping a name given
    twice.  Two spellings of one metric ("nDCG@10,ndcg_cut_10") are refused (ValueError naming
    both): they are one column, and silently showing it under one name hides the other."""
    parts = [p.strip() for p in text.split(",")]
    if not any(parts):
        raise ValueError(f"no metric given; known metrics: {_known()}")
    seen: dict[MetricSpec, MetricSpec] = {}
    for spec in map(parse_metric, parts):
        first = seen.setdefault(spec, spec)
        if str(first) != str(spec):
            canonical = spec.name if spec.k is None else f"{spec.name}@{spec.k}"
            raise ValueError(
                f"{first} and {spec} are two names of one metric ({canonical}): give it once, "
                "under the name its column should carry"
            )
    return tuple(seen)


def as_specs(specs: Iterable[MetricSpec | str]) -> tuple[MetricSpec, ...]:
    """Specs given as MetricSpecs or canonical names, in order, each once."""
    return tuple(dict.fromkeys(s if isinstance(s, MetricSpec) else parse_metric(s) for s in specs))


def score_query(
    ranking: Sequence[str],
    relevant: Mapping[str, int],
    specs: Iterable[MetricSpec | str],
    rel_level: int = 1,
    *,
    texts: Sequence[str | None] | None = None,
    spans: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, float]:
    """Every metric for one answerable query, keyed by canonical name (`texts`, the returned
    text of each position, and `spans`, the query's answer spans, for the context metrics).

    Raises ValueError for a query with no grade >= 1: unanswerable, it has no quality score (use
    `no_answer_false_positive`); answerable, it scores 0 on every quality metric.
    """
    if not any(grade >= 1 for grade in relevant.values()):
        raise ValueError("query has no grade >= 1: score it with no_answer_false_positive")
    chosen = as_specs(specs)
    ranks = judge(
        [ranking], [relevant], max((s.depth for s in chosen), default=1), rel_level,
        texts=None if texts is None else [texts], spans=[spans or {}],
    )
    return {str(s): float(s.compute(ranks)[0]) for s in chosen}


# --------------------------------------------------------------------------- unanswerable, outranks


@dataclass(frozen=True)
class NoAnswerOutcome:
    """returned_any: any id at all; above_threshold: any score > threshold (None: not known)."""

    returned_any: bool
    above_threshold: bool | None


def no_answer_false_positive(
    ranking: Sequence[str],
    scores: Sequence[float] | None = None,
    threshold: float | None = None,
) -> NoAnswerOutcome:
    """How an unanswerable query went wrong: it returned something; and, when the service gave
    scores and a threshold is set, something scored strictly above it (NaN never is)."""
    if scores is not None and len(scores) != len(ranking):
        raise ValueError(f"{len(scores)} scores for {len(ranking)} ids")
    above = None
    if scores is not None and threshold is not None:
        above = any(s > threshold for s in scores)
    return NoAnswerOutcome(returned_any=len(ranking) > 0, above_threshold=above)


def outranks_holds(ranking: Sequence[str], correct: str, stale: str) -> bool:
    """Whether the correction ranks above the stale fact, over the whole returned list.

    Positions are first occurrences (the duplicate rule).  Holds iff `correct` is present and
    either `stale` is absent or ranks below it.  `correct` absent: fails, whatever `stale` does
    (both absent included).  `correct == stale` never holds.
    """
    ids = list(ranking)
    if correct not in ids:
        return False
    return stale not in ids or ids.index(correct) < ids.index(stale)

"""The frozen values that travel between pipeline stages.

gold -> (GoldSet) -> runner -> (RefRun of Repeats of QueryResults) -> metrics/stats/compare
-> (Comparison) -> report.  Stage-private types live in their own module; only what crosses a
stage boundary lives here, with one exception: the Comparison tree lives in
`harness.verdict.comparison` (it holds `harness.verdict.stats` results, and stats imports this
module).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from harness.text.control_chars import shown

# Re-exported: the values of one answer live beside the columns that hold them.
from harness.values.answers import Answers as Answers
from harness.values.answers import ErrorKind as ErrorKind
from harness.values.answers import QueryResult as QueryResult
from harness.values.costs import Usage as Usage  # what a boot cost: the boot stage makes it

# --------------------------------------------------------------------------- definition


@dataclass(frozen=True)
class DefinitionPart:
    name: str
    sha256: str


@dataclass(frozen=True)
class Definition:
    """What defines a measurement (`harness.score.definition` makes one): the overall sha256 and
    the hash of each part, in `harness.score.definition.PARTS` order."""

    sha256: str
    parts: tuple[DefinitionPart, ...]

    def part(self, name: str) -> str | None:
        return next((p.sha256 for p in self.parts if p.name == name), None)

    def to_dict(self) -> dict[str, object]:
        return {"sha256": self.sha256, "parts": {p.name: p.sha256 for p in self.parts}}


# --------------------------------------------------------------------------- gold


@dataclass(frozen=True)
class CorpusInfo:
    """The corpus a gold set was built against: a name or path, and its sha256 when known."""

    name: str
    sha256: str | None = None


@dataclass(frozen=True, eq=True)
class GoldQuery:
    """One labelled query.

    `relevant` maps document id to an integer grade >= 0 (0 = judged, not relevant).
    `outranks` holds (correct_id, stale_id) pairs: the correction must rank above the stale fact.
    `spans` maps a relevant document id to its answer spans: exact, verbatim substrings of that
    document's text, the evidence the context metrics look for (`harness.score.context`).
    Frozen but not hashable (`relevant` is a dict): key queries by `id`.

    `answerable`: whether the corpus holds an answer. An unanswerable query's correct answer is
    an empty (or low-scored) list; it is scored only by the no-answer rates. `declared` is what
    the gold file said (the native format's "answerable" key, or its header's "judged" for a
    query judged only 0: `harness.gold.native`); None when it said nothing, and then the
    grades decide: some grade >= 1 is answerable, none is not (the meaning every gold set had
    before the key). An answerable query with no grade >= 1 (a pooled set's query whose answer
    nobody has found yet) scores 0 on every quality metric. `declared=False` beside a grade >= 1
    is a contradiction, refused (ValueError; the readers report it as a problem first).
    """

    id: str
    text: str
    slice: str = "default"
    relevant: Mapping[str, int] = field(default_factory=dict)
    outranks: tuple[tuple[str, str], ...] = ()
    derivation: str | None = None
    spans: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Where it came from, for messages: neither part of the content hash nor of equality.
    line: int | None = field(default=None, compare=False)
    declared: bool | None = None

    def __post_init__(self) -> None:
        if self.declared is False and self.has_relevant:
            raise ValueError(f"query {self.id!r} is declared unanswerable but has a document of "
                             "grade >= 1")

    @property
    def has_relevant(self) -> bool:
        """Some judgement of grade >= 1."""
        return any(grade >= 1 for grade in self.relevant.values())

    @property
    def answerable(self) -> bool:
        return self.has_relevant if self.declared is None else self.declared


@dataclass(frozen=True)
class GoldSet:
    """A validated gold set. `hash` is the sha256 of its canonical form (gold.canonical_hash)."""

    queries: tuple[GoldQuery, ...]
    source: str
    format: str  # "native" | "beir" | "trec"
    hash: str
    corpus: CorpusInfo | None = None
    version: int = 1
    # What the judgements are, as the native header says ("judged"): a pool of what some system
    # returned (True), complete (False); None: unsaid, and a grade 0 anywhere makes it a pool.
    pooled: bool | None = None

    @cached_property
    def by_id(self) -> Mapping[str, GoldQuery]:
        return {q.id: q for q in self.queries}

    @cached_property
    def slices(self) -> tuple[str, ...]:
        return tuple(sorted({q.slice for q in self.queries}))

    def __len__(self) -> int:
        return len(self.queries)


# --------------------------------------------------------------------------- one query's answer


# ErrorKind and QueryResult: harness.values.answers (re-exported above).


# --------------------------------------------------------------------------- runs


@dataclass(frozen=True)
class RunFailure:
    """A stage of a run that did not complete: the run is invalid, never scored."""

    stage: str  # "worktree" | "build" | "boot" | "ready" | "prepare" | "teardown" | "interrupted"
    # | "replay" (a round stopped: query.max_consecutive_failures)
    message: str
    log_tail: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # The message and the log's last lines quote the service (its log, its answers): held
        # escaped (harness.text.control_chars), so no record, old or new, and no format shows an
        # ESC.
        object.__setattr__(self, "message", shown(self.message, lines=True))
        object.__setattr__(self, "log_tail", tuple(map(shown, self.log_tail)))


@dataclass(frozen=True)
class Machine:
    """What the machine was doing during one repeat (pyperf records the same kind of thing).

    `load_before` / `load_after` are the 1-minute load averages (os.getloadavg) around the
    repeat's queries, `cpu_count` the CPUs the OS reports, `client_cpu_ns` the harness's own
    CPU time (this thread, time.thread_time_ns) spent per timed query: the client's share of
    what the clock saw.
    """

    load_before: float
    load_after: float
    cpu_count: int
    client_cpu_ns: int = 0


PREPARE_STEP = "prepare:"
OVERALL = "overall"
"""The scope of the whole gold set in every report, gate file and matrix: no slice may take it."""
"""The prefix of a Repeat's timings_s keys that time the steps between readiness and the queries
("prepare:prepare[0]" for a prepare command, "prepare:load" and "prepare:index" for the loader)."""


@dataclass(frozen=True)
class Repeat:
    """One boot of a service on a fresh copy of its data, and every gold query sent once."""

    index: int
    # Held as `Answers` (columns; any sequence of QueryResult given is turned into one).
    results: Sequence[QueryResult]
    timings_s: Mapping[str, float] = field(default_factory=dict)  # boot, queries, teardown, ...
    teardown_confirmed: bool = True
    log_path: str | None = None
    failure: RunFailure | None = None
    sandbox: str | None = None  # "bubblewrap" or "plain" (harness.boot.sandbox); None: unknown
    machine: Machine | None = None
    # Per result (in results order), this side's place in its query's time-paired exchange in
    # this round: 0 sent first, 1 second, ...; () when not measured in a pair (harness.replay
    # .order says how the places are drawn).
    positions: tuple[int, ...] = ()
    # A round past compare.repeats, run for the latency verdict only (harness.verdict
    # .latency_rule): its answers time latency and are never scored for quality.
    latency_only: bool = False
    usage: Usage | None = None  # what the boot cost (None: not booted by the harness, or older)

    def __post_init__(self) -> None:
        if not isinstance(self.results, Answers):
            object.__setattr__(self, "results", Answers.of(self.results))

    @property
    def answers(self) -> Answers:
        """`results`, with its columns (`harness.values.answers`)."""
        assert isinstance(self.results, Answers)  # __post_init__
        return self.results

    @property
    def errors(self) -> int:
        return self.answers.errors

    @property
    def prepare_steps(self) -> dict[str, float]:
        """Seconds of each step after readiness, by name ("prepare[0]", "load", "index")."""
        cut = len(PREPARE_STEP)
        return {k[cut:]: v for k, v in self.timings_s.items() if k.startswith(PREPARE_STEP)}


@dataclass(frozen=True)
class RefRun:
    """Every repeat of one ref, with what makes it comparable to another RefRun."""

    ref: str
    sha: str
    config_hash: str
    gold_hash: str
    corpus_hash: str | None
    tool_version: str
    host: Mapping[str, str]
    repeats: tuple[Repeat, ...]
    query_config: Mapping[str, object] = field(default_factory=dict)
    build_failure: RunFailure | None = None
    timings_s: Mapping[str, float] = field(default_factory=dict)  # "build" (0 when cached)
    build_cached: bool | None = None  # None: nothing to build
    record_path: str | None = None
    reused: bool = False
    # The invocation that measured it: two runs with the same pair_id were measured together,
    # round by round and query by query (runner.run_pair); None when measured on its own.
    pair_id: str | None = None
    concurrency: int = 1
    inputs_hash: str | None = None  # contents of every file the configuration names by path
    # What defines the measurement (harness.score.definition); None in records made before it.
    definition: Definition | None = None
    # The seed the order within each pair was drawn from (--seed, else fresh per compare:
    # harness.replay.order); None when measured on its own.
    order_seed: int | None = None
    # The rounds the latency rule planned for (harness.verdict.latency_rule.plan's budget);
    # None: the rounds were a fixed number (`repeats`), one look at the end.
    latency_budget: int | None = None
    # The build's own wall time (when cached: as recorded when it ran) and the bytes it wrote
    # (its venv and what it added to the checkout); None: nothing built, or an older record.
    build_seconds: float | None = None
    build_bytes: int | None = None

    @property
    def failures(self) -> tuple[RunFailure, ...]:
        found = [self.build_failure] if self.build_failure else []
        found += [r.failure for r in self.repeats if r.failure]
        return tuple(found)


# --------------------------------------------------------------------------- floors


@dataclass(frozen=True)
class FloorRow:
    """One absolute floor (`[gate.floors]`) checked on one run: `scope` is "overall" or a slice,
    `bound` "at least" (a floor) or "at most" (a ceiling, for a lower-is-better metric), `value`
    the run's (None: not measured), over `n` queries; `passed` is False when it is not met or
    could not be measured."""

    scope: str
    metric: str
    bound: str
    limit: float
    value: float | None
    n: int
    passed: bool


@dataclass(frozen=True)
class LoadRound:
    """One boot of one side sent the gold queries open loop at `rate` requests/s on a fixed
    arrival schedule (compare --rate; `harness.replay.open_loop`).  `latencies_ms`: each answered
    (2xx) request's latency from its INTENDED send time, so a stall makes every later request's
    latency include the wait; `lags_ms`: how late the client sent each request behind its
    intended time (the client's own lag, not the service's); `elapsed_s`: from the first
    intended send to the last answer; `failure`: why the round measured nothing (a boot that
    failed), else None."""

    side: str
    rate: float
    index: int
    sent: int
    latencies_ms: tuple[float, ...]
    lags_ms: tuple[float, ...]
    errors: int
    timeouts: int
    elapsed_s: float
    failure: str | None = None


# --------------------------------------------------------------------------- verdicts


class Verdict(enum.StrEnum):
    """The fixed vocabulary of every verdict the harness prints or writes."""

    IMPROVED = "improved"
    REGRESSED = "regressed"
    NO_DIFFERENCE = "no measurable difference"  # it could have seen a change, and did not
    # It could not have: too few queries, too unstable, too few rounds; what would tell is said.
    INCONCLUSIVE = "inconclusive"
    INVALID = "invalid"
    NOT_COMPARED = "not compared"  # not measured together (a stored run): no latency verdict

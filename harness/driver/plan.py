"""What the run driver is handed: the narrow plan of one invocation, and the reading its
sessions share.

    plan = run_plan(config, gold, results_dir, concurrency=1)   # the callers' one place
    session = RefSession(plan, "baseline", "main", reading=SharedReading())

The driver takes of the gold set only what it asks and checks (`Asked`): each query's id and
text, the set's hash for the records, the document ids its judgements name (the adapter check's
id space: `harness.driver.adapter_check`) and where each query was read (a refusal names its
line).  The judgements themselves stay with the caller, who scores the runs.  Of the config it
takes the whole `HarnessConfig`: a ref's side is resolved from it (base < [side.*] < every
matching [ref."PATTERN"] < a sweep's pins), its inputs hashed and its build made from it, all
by the config stage's functions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from harness.config import HarnessConfig, QueryConfig
from harness.replay.client import AnswerCache
from harness.replay.request import Requests
from harness.values.types import GoldSet, QueryResult

Progress = Callable[[str, int, int, int, QueryResult | None], None]
"""progress(label, done, total, errors, last_result) — called as queries complete."""


class Observer(Protocol):
    """Told what the runner is doing between queries: `planned(boots)` once per run of
    sessions, `phase(name, detail)` as each ref is checked out ("checkout") and built ("build"),
    `asking(label)` when the services of a progress label are up and its timed queries begin
    (so a pace is the queries', not the boots'), `note(message)` when a round is stopped
    (`query.max_consecutive_failures`)."""

    def planned(self, boots: int) -> None: ...

    def phase(self, name: str, detail: str) -> None: ...

    def asking(self, label: str) -> None: ...

    def note(self, message: str) -> None: ...


RemoteRounds = Callable[[Sequence[Any], int], None]
"""remote_rounds(sessions, repeats): `harness.driver.remote.run_rounds`, playing the rounds of
`RefSession`s (`harness.driver.session`, which imports this module: hence `Any`) on Ray."""


@dataclass(frozen=True)
class Asked:
    """What the driver takes of the gold set: the queries it asks and what checks their answers."""

    items: tuple[tuple[str, str], ...]  # (query id, text), in the gold set's order
    gold_hash: str  # recorded in every RefRun (`GoldSet.hash`)
    # Every document id the judgements name (graded or in an outranks pair): an answer naming
    # none of them (nor a corpus id) means a wrong query.ids (`harness.driver.adapter_check`).
    judged: frozenset[str]
    source: str  # the gold set as given (`GoldSet.source`)
    queries_file: str  # the file its queries were read from: a refusal names it
    lines: tuple[int | None, ...]  # each query's line in it, as `items`

    @classmethod
    def of(cls, gold: GoldSet) -> Asked:
        return cls(
            items=tuple((q.id, q.text) for q in gold.queries),
            gold_hash=gold.hash,
            judged=frozenset(
                {doc for q in gold.queries for doc in q.relevant}
                | {doc for q in gold.queries for pair in q.outranks for doc in pair}
            ),
            source=gold.source,
            queries_file=f"{gold.source}/queries.jsonl" if gold.format == "beir" else gold.source,
            lines=tuple(q.line for q in gold.queries),
        )

    def lines_by_id(self) -> dict[str, int | None]:
        """Each query's line in `queries_file`, by id (None: unknown)."""
        return {known: line for (known, _), line in zip(self.items, self.lines, strict=True)}


@dataclass(frozen=True)
class RunPlan:
    """Everything the runs of one invocation share, as the driver needs it (`run_plan`)."""

    config: HarnessConfig
    asked: Asked
    corpus_hash: str | None
    results_dir: Path
    concurrency: int = 1
    keep: bool = False
    redact: bool = False  # records under results/runs/ keep no error details (--redact)
    progress: Progress | None = field(default=None, compare=False)
    observer: Observer | None = field(default=None, compare=False)
    # Where the rounds run: None here; "auto" or a cluster address on Ray (harness.driver.remote)
    ray: str | None = None
    # What plays the rounds there: harness.driver.remote.run_rounds, handed down by the caller
    # (remote imports the runner, so the runner never imports it).
    remote_rounds: RemoteRounds | None = field(default=None, compare=False)
    # The seed of the order within each pair (harness.replay.order): --seed, else None and a
    # fresh one is drawn per run of sessions, then recorded in each RefRun as order_seed.
    order_seed: int | None = None


def run_plan(
    config: HarnessConfig,
    gold: GoldSet,
    results_dir: Path,
    *,
    concurrency: int = 1,
    keep: bool = False,
    redact: bool = False,
    progress: Progress | None = None,
    observer: Observer | None = None,
    ray: str | None = None,
    remote_rounds: RemoteRounds | None = None,
    order_seed: int | None = None,
) -> RunPlan:
    """The driver's plan of `config` and `gold` (the gold set's corpus hash recorded)."""
    return RunPlan(
        config=config,
        asked=Asked.of(gold),
        corpus_hash=gold.corpus.sha256 if gold.corpus else None,
        results_dir=results_dir,
        concurrency=concurrency,
        keep=keep,
        redact=redact,
        progress=progress,
        observer=observer,
        ray=ray,
        remote_rounds=remote_rounds,
        order_seed=order_seed,
    )


class SharedReading:
    """What the sessions measured together share when their query settings and queries are
    the same (both sides of a compare, usually): the requests encoded once, each distinct
    answer read once, whichever side it came from.  Either is a pure function of the query
    settings (and the answer's bytes), so sharing changes no byte sent and no answer read.
    Made by whoever makes the sessions; a Ray worker makes its own."""

    def __init__(self) -> None:
        self.known: list[tuple[QueryConfig, list[tuple[str, str]], Requests, AnswerCache]] = []

    def of(
        self, query: QueryConfig, items: list[tuple[str, str]]
    ) -> tuple[Requests, AnswerCache]:
        """The `Requests` and `AnswerCache` of `query` and `items`: the ones an earlier session
        with equal settings and queries made, else new ones."""
        for known, asked, requests, answers in self.known:
            if known == query and asked == items:
                return requests, answers
        requests, answers = Requests(query, items), AnswerCache(query)
        self.known.append((query, items, requests, answers))
        return requests, answers


__all__ = [
    "Asked",
    "Observer",
    "Progress",
    "RemoteRounds",
    "RunPlan",
    "SharedReading",
    "run_plan",
]

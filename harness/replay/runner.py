"""The runner stage: one ref, N repeats, each on a freshly booted service, into a RefRun.

    with RefSession(plan, "candidate", "feat/x") as session:   # resolve, worktree, build once
        for i in range(repeats):
            session.run_repeat(i)                               # boot, replay, tear down
        run = session.finish()                                  # a RefRun, saved under results/

`run_ref` runs one ref; `run_pair` (compare) and `harness.sweep.run` open several sessions and
measure them together (`run_interleaved`): time-paired rounds, each booting every session's service
and sending each query to all of them back to back, in an order balanced per round
(`harness.replay.order`), so numbers that are compared were measured at the same moment.  Each
repeat records what the machine was doing (`types.Machine`: load average, CPU count, the client's
CPU per query).
Nothing here turns a failure into a score: a build or boot failure is recorded as a RunFailure
and the run is invalid.  So is a round stopped because one side failed
`query.max_consecutive_failures` queries in a row (timeouts, connection failures: a stalled
service): the round ends there, every side's repeat of it fails (stage "replay"), an Observer
`note` says so at once, and no later round runs.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import Protocol

from harness import __version__
from harness.boot.deployed import DeployedContext, deployed
from harness.boot.isolation import data_source
from harness.boot.service import ServiceContext, running_service
from harness.checkout.build import build, with_venv
from harness.checkout.editable import editable_paths
from harness.checkout.interpreter import interpreter
from harness.checkout.worktree import checkout, resolve_ref, tree_changes, tree_fingerprint
from harness.config import HarnessConfig, SideConfig, effective_side, side_hash
from harness.config.inputs import build_inputs, inputs_hash
from harness.errors import BuildError, ConfigError, ResultsError, ServiceError
from harness.replay import latency_rounds
from harness.replay.adapter_check import AdapterCheck, id_adapter, probe_count
from harness.replay.client import (
    READ_BATCH,
    AnswerCache,
    Channel,
    Sent,
    Stopped,
    Streak,
    replay,
    warm_up,
)
from harness.replay.hook import rewritten_items
from harness.replay.order import draw_seed, in_rotation, pair_orders
from harness.replay.request import Requests
from harness.results.files import utc_stamp
from harness.results.records import find_reusable, host_fingerprint, save_run
from harness.score.definition import Definition, definition
from harness.scrub import register_headers, safe_url
from harness.types import PREPARE_STEP, GoldSet, Machine, QueryResult, RefRun, Repeat, RunFailure
from harness.verdict.latency_rule import LatencyBudget

STOPPED = "replay"  # RunFailure.stage of a round stopped for failures in a row
Progress = Callable[[str, int, int, int, QueryResult | None], None]
"""progress(label, done, total, errors, last_result) — called as queries complete."""


class Observer(Protocol):
    """Told what the runner is doing between queries: `planned(boots)` once per run of
    sessions, `phase(name, detail)` as each ref is checked out ("checkout") and built ("build"),
    `note(message)` when a round is stopped (`query.max_consecutive_failures`)."""

    def planned(self, boots: int) -> None: ...

    def phase(self, name: str, detail: str) -> None: ...

    def note(self, message: str) -> None: ...


RemoteRounds = Callable[[Sequence["RefSession"], int], None]


@dataclass(frozen=True)
class RunPlan:
    """Everything shared by the runs of one invocation."""

    config: HarnessConfig
    gold: GoldSet
    corpus_hash: str | None
    results_dir: Path
    concurrency: int = 1
    keep: bool = False
    redact: bool = False  # records under results/runs/ keep no error details (--redact)
    progress: Progress | None = field(default=None, compare=False)
    observer: Observer | None = field(default=None, compare=False)
    # Where the rounds run: None here; "auto" or a cluster address on Ray (harness.replay.remote)
    ray: str | None = None
    # What plays the rounds there: harness.replay.remote.run_rounds, handed down by the caller
    # (remote imports this module, so this one never imports it).
    remote_rounds: RemoteRounds | None = field(default=None, compare=False)
    # The seed of the order within each pair (harness.replay.order): --seed, else None and a
    # fresh one is drawn per run of sessions, then recorded in each RefRun as order_seed.
    order_seed: int | None = None


class RefSession:
    """One ref checked out and built; boots its service once per repeat."""

    def __init__(
        self,
        plan: RunPlan,
        side: str,
        ref: str,
        *,
        label: str | None = None,
        pins: Mapping[str, str] | None = None,
        url: str | None = None,
    ) -> None:
        self.plan = plan
        self.side_name = side
        # The name in progress lines and in the record (a sweep says "main [RRF_K=60]").
        self.ref = label or ref
        self.requested_ref, self.pins = ref, dict(pins or {})  # what a Ray worker opens again
        self.host: dict[str, str] | None = None  # where its rounds ran, when not here (Ray)
        # A running deployment (compare --baseline-url): no ref, checkout, build or boot.
        self.url = url
        self.resolved = None if url is not None else resolve_ref(plan.config.repo, ref)
        # commit sha, or <sha>+dirty.<hash12> for WORKTREE, or "deployed-<hash12>" of the URL
        self.sha = self.resolved.key if self.resolved is not None else _url_key(url or "")
        # base < [side.*] < every matching [ref."PATTERN"] < the sweep's pins
        commit = None if self.resolved is None else self.resolved.sha
        chosen = effective_side(plan.config, side, None if url is not None else ref, commit)
        if pins:
            chosen = replace(
                chosen, service=replace(chosen.service, env={**chosen.service.env, **pins})
            )
        self.side: SideConfig = chosen
        # Its credentials (query.headers' Authorization, Cookie) never come back in any output.
        register_headers(chosen.query.headers)
        _check_limit(plan.config, side, ref, chosen)
        if url is None:  # a missing service.python: a config error before any checkout
            interpreter(self.side.service.python, plan.config.config_dir)
        self.config_hash = side_hash(self.side)
        self.inputs_hash = inputs_hash(self.side, plan.config)
        self.pair_id: str | None = None
        self.order_seed: int | None = plan.order_seed
        # Rounds from this index on are latency-only (harness.replay.latency_rounds); the plan
        # of rounds the latency rule was made for, when it ran sequentially.
        self.quality_rounds: int | None = None
        self.latency_budget: int | None = None
        self.repeats: list[Repeat] = []
        self.build_failure: RunFailure | None = None
        self.worktree: Path | None = None
        self.extra_env: dict[str, str] = {}
        self._stack = contextlib.ExitStack()
        self.timings: dict[str, float] = {}
        self.build_cached: bool | None = None
        self.tree: dict[str, tuple[int, int]] = {}  # the checkout as built (tree_fingerprint)
        self.ids = id_adapter(self.side.query, plan.config, side)
        # A wrong query.ids found in the first answers of the first boot (exit 3), not at the end.
        self.adapter_check = AdapterCheck(
            plan.config, side, self.side.query, self.ids, plan.gold, redact=plan.redact
        )
        # Rewritten once, before anything is built: a hook that fails on a query stops here.
        self._items = rewritten_items(
            ((q.id, q.text) for q in plan.gold.queries), self.side.query.rewrite, plan.config.path
        )
        # Encoded once for every boot of this ref (each boot changes only the Host's port).
        self.requests = Requests(self.side.query, self._items)
        self.answers = AnswerCache(self.side.query)  # what its answers read as, across boots
        # A round stopped for failures in a row (`Stopped`): the run is invalid, no more rounds.
        self.stopped = False

    @property
    def log_dir(self) -> Path:
        return self.plan.results_dir / "logs"

    def __enter__(self) -> RefSession:
        if self.resolved is None:
            return self  # a deployment: nothing to check out or build
        observer = self.plan.observer
        what = f"{self.side_name} {self.ref} ({self.sha[:8]})"
        try:
            if observer is not None:
                observer.phase("checkout", what)
            self.worktree = self._stack.enter_context(
                checkout(self.plan.config.repo, self.resolved, keep=self.plan.keep)
            )
            # A data path or committed symlink leading out of the tree: refused before any boot.
            data_source(self.side.service, self.worktree, self.plan.config.config_dir)
            if self.plan.keep:
                print(
                    f"harness: keeping the worktree of {self.ref} at {self.worktree}",
                    file=sys.stderr,
                )
            if observer is not None:
                observer.phase("build", what)
            service, sha_key = build_inputs(self.side.service, self.sha, self.plan.config)
            result = build(
                self.worktree, sha_key=sha_key, service=service, log_dir=self.log_dir
            )
            self.timings["build"] = result.seconds
            if result.note:
                print(f"harness: warning: {self.ref}: {result.note}", file=sys.stderr)
            self.build_cached = result.cached if self.side.service.build else None
            if result.venv is not None:
                # The venv's bin goes first on the caller's PATH, never instead of it.
                caller_path = {"PATH": os.environ.get("PATH", os.defpath)}
                self.extra_env = with_venv(caller_path, result.venv)
                # An editable install in the (cached) venv: imported from this checkout.
                editable = editable_paths(result.venv, self.worktree)
                if editable:
                    self.extra_env["PYTHONPATH"] = os.pathsep.join(map(str, editable))
            self.tree = tree_fingerprint(self.worktree)
        except BuildError as exc:
            self.build_failure = RunFailure("build", exc.message, exc.details)
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stack.close()

    def boot(self, log_path: Path) -> ServiceContext | DeployedContext:
        """The context that boots this session's service (or checks a deployment's readiness)."""
        if self.url is not None:
            return deployed(self.url, self.side.service, log_path=log_path)
        assert self.worktree is not None
        return running_service(
            self.side.service,
            self.worktree,
            log_path=log_path,
            extra_env=self.extra_env,
            corpus=self.plan.config.corpus,
            config_dir=self.plan.config.config_dir,
        )

    @property
    def bootable(self) -> bool:
        return self.url is not None or (self.build_failure is None and self.worktree is not None)

    def run_repeat(self, index: int) -> Repeat:
        """Boot on a fresh data copy, replay every gold query once, tear down confirmed dead."""
        if not self.bootable:
            rep = Repeat(index=index, results=(), failure=self.build_failure)
            self.repeats.append(rep)
            return rep
        label = f"{self.side_name} {self.ref} ({self.sha[:8]}) repeat {index + 1}"
        log_path = self._log_path(index)
        items = self.items()
        timings: dict[str, float] = {}
        results: tuple[QueryResult, ...] = ()
        failure: RunFailure | None = None
        machine: Machine | None = None
        errors = 0

        def on_result(done: int, total: int, result: QueryResult) -> None:
            nonlocal errors
            errors += 0 if result.ok else 1
            if self.plan.progress is not None:
                self.plan.progress(label, done, total, errors, result)

        if self.plan.progress is not None:
            self.plan.progress(label, 0, len(items), 0, None)  # booting
        svc_cm = self.boot(log_path)
        try:
            with svc_cm as svc:
                timings["boot"] = svc.boot_seconds
                timings.update(_prepare_steps(svc))
                load_before, cpu0, started = _load(), time.thread_time_ns(), [time.perf_counter()]
                try:
                    results = replay(
                        svc.url,
                        self.side.query,
                        items,
                        concurrency=self.plan.concurrency,
                        on_result=on_result,
                        open_socket=svc.open_socket,
                        requests=self.requests,
                        answers=self.answers,
                        on_start=lambda: started.append(time.perf_counter()),
                    )
                except Stopped as stop:  # the service is torn down as after any replay
                    results, failure = stop.results, self.stop(f"{label}:", stop.message)
                timings["queries"] = time.perf_counter() - started[-1]
                machine = _machine(load_before, cpu0, len(results))
        except ServiceError as exc:  # a stop is the repeat's failure even if teardown fails
            failure = failure or RunFailure(exc.stage, exc.message, exc.details)
        if failure is None:  # torn down already: the first boot's answers, before the next boot
            self.adapter_check(results, f"{self.side_name} {self.ref} ({self.sha[:8]})")
        return self._record(index, results, timings, svc_cm, log_path, failure, machine)

    def stop(self, who: str, message: str) -> RunFailure:
        """This session's round stopped (`Stopped`): said at once (`who` names the round and
        the side), and the repeat's failure."""
        self.stopped = True
        observer = self.plan.observer
        if observer is not None:
            observer.note(f"{who} stopped, the run is invalid: {message}")
        return RunFailure(STOPPED, message)

    def _record(
        self,
        index: int,
        results: tuple[QueryResult, ...],
        timings: dict[str, float],
        svc_cm: ServiceContext | DeployedContext | None,
        log_path: Path,
        failure: RunFailure | None,
        machine: Machine | None,
        positions: tuple[int, ...] = (),
    ) -> Repeat:
        if self.ids:  # after the clock: adapting ids is not the service's latency
            results = tuple(replace(r, ids=self.ids.apply(r.ids)) for r in results)
        teardown = None if svc_cm is None else svc_cm.teardown
        confirmed = teardown is not None and teardown.confirmed
        if teardown is not None:
            timings["teardown"] = teardown.seconds
            if teardown.died_before_teardown and (failure is None or failure.stage == STOPPED):
                # It answered some queries, then died: every later answer is suspect. (A round
                # stopped for the connection failures that followed says why second.)
                said = "the service exited while being queried"
                if failure is not None:
                    said += f"; {failure.message}"
                failure = RunFailure("crashed", said)
        changed = (
            []
            if self.worktree is None
            else tree_changes(self.tree, tree_fingerprint(self.worktree))
        )
        if changed and failure is None:
            shown = "; ".join(changed[:5]) + (
                f"; and {len(changed) - 5} more" if len(changed) > 5 else ""
            )
            failure = RunFailure(
                "checkout",
                f"the service changed its own checkout during the boot ({shown}); the next "
                "boot would run a different service: write state under {home} or {data}",
            )
        rep = Repeat(
            index=index,
            results=results,
            timings_s=timings,
            teardown_confirmed=confirmed,
            log_path=str(log_path),
            failure=failure,
            sandbox=None if svc_cm is None else svc_cm.sandbox,
            machine=machine,
            positions=positions if len(positions) == len(results) else (),
            latency_only=self.quality_rounds is not None and index >= self.quality_rounds,
        )
        self.repeats.append(rep)
        return rep

    def items(self) -> list[tuple[str, str]]:
        """(query id, text as sent) of every gold query: the side's query.rewrite applied."""
        return list(self._items)

    def _log_path(self, index: int) -> Path:
        path = self.log_dir / f"{utc_stamp()}_{self.sha[:8]}_{self.side_name}_r{index}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def finish(self) -> RefRun:
        """The RefRun of every repeat so far, written as a new record under results/runs/."""
        run = RefRun(
            ref=self.ref,
            sha=self.sha,
            config_hash=self.config_hash,
            gold_hash=self.plan.gold.hash,
            corpus_hash=self.plan.corpus_hash,
            tool_version=__version__,
            host=self.host or host_fingerprint(),
            repeats=tuple(self.repeats),
            query_config=_query_config_dict(self.side),
            build_failure=self.build_failure,
            timings_s=dict(self.timings),
            build_cached=self.build_cached,
            pair_id=self.pair_id,
            # Only when queries were sent in pairs (not alone, nor under --concurrency N > 1).
            order_seed=self.order_seed if any(rep.positions for rep in self.repeats) else None,
            concurrency=self.plan.concurrency,
            inputs_hash=self.inputs_hash,
            definition=run_definition(
                self.plan.gold.hash,
                self.plan.corpus_hash,
                _query_config_dict(self.side),
                self.config_hash,
                self.plan.config.compare.k,
            ),
            latency_budget=self.latency_budget,
        )
        try:
            path = save_run(self.plan.results_dir, run, redact=self.plan.redact)
        except ResultsError as exc:
            # What was measured still reaches the report; only its record is missing.
            print(f"harness: warning: run record not saved: {exc.message}", file=sys.stderr)
            return run
        return replace(run, record_path=str(path))


def _check_limit(config: HarnessConfig, side: str, ref: str, chosen: SideConfig) -> None:
    """A ref table that lowers query.limit below a cutoff: the CLI checked only the sides."""
    limit, deepest = chosen.query.limit, max(config.compare.k, default=0)
    if limit < deepest and limit != config.side(side).query.limit:
        raise ConfigError(
            f"{config.path}: query.limit = {limit} for {ref} on the {side} side (from a "
            f'[ref."PATTERN"] table) is below the cutoff {deepest}: its hit@{deepest} would be '
            f"computed from {limit} results",
            hint=f"raise query.limit to {deepest} or more in that table, or lower compare.k",
        )


def run_definition(
    gold: str, corpus: str | None, query: Mapping[str, object], config_hash: str, k: Sequence[int]
) -> Definition:
    """What a run record measured: its gold set, corpus, query settings, cutoffs, the metric
    version and its side's configuration (the metric names are decided when it is scored)."""
    return definition(
        gold=gold, corpus=corpus, query={"run": query}, k=k, config={"side": config_hash}
    )


def _query_config_dict(side: SideConfig) -> dict[str, object]:
    q = side.query
    return {
        "method": q.method,
        "path": q.path,
        "params": dict(q.params),
        "json": None if q.json is None else dict(q.json),
        **({} if q.form is None else {"form": dict(q.form)}),
        "ids": q.ids,
        "scores": q.scores,
        "texts": q.texts,
        "rewrite": q.rewrite,
        "select": q.select,
        "id_pattern": q.id_pattern,
        "id_field": q.id_field,
        "limit": q.limit,
        "timeout": q.timeout,
        "max_bytes": q.max_bytes,
    }


def run_interleaved(
    sessions: Sequence[RefSession],
    *,
    repeats: int,
    fresh: bool = False,
    latency_budget: LatencyBudget | None = None,
) -> tuple[RefRun, ...]:
    """Every session `repeats` rounds, measured together; one RefRun per session, in order.

    A session whose record already exists for exactly these inputs is reused unless `fresh`
    (its RefRun has `reused=True`, no pair_id) and boots nothing: its ref is resolved, but no
    worktree is made.  The sessions measured now share a `pair_id` and, at concurrency 1, run
    time-paired rounds (`_paired_round`: each round boots all of them, then sends each query to all
    back to back, half of the queries baseline-first, drawn per compare); under `concurrency > 1`,
    or with one session, each round boots them one after the other (order alternating), each sending
    its queries as a burst.

    With a `latency_budget`, two sessions measured together at concurrency 1 go on past
    `repeats` one latency-only round at a time until the latency rule decides or the budget is
    spent (`harness.replay.latency_rounds`); on Ray they run `repeats` rounds, one look.
    """
    runs: dict[int, RefRun] = {}
    on_ray = bool(sessions) and sessions[0].plan.ray is not None
    with contextlib.ExitStack() as stack:
        live: dict[int, RefSession] = {}
        for i, session in enumerate(sessions):
            # A deployment is never reused: what answers at a URL changes without a commit.
            found = None if fresh or session.url is not None else _reusable(session, repeats)
            if found is not None:
                runs[i] = replace(
                    found, repeats=found.repeats[:repeats], reused=True, latency_budget=None
                )
        observer = sessions[0].plan.observer if sessions else None
        if observer is not None and len(runs) < len(sessions):
            observer.planned((len(sessions) - len(runs)) * repeats)
        for i, session in enumerate(sessions):
            if i not in runs:  # on Ray, each round's worker checks out and builds: not here
                live[i] = session if on_ray else stack.enter_context(session)
        together = list(live.values())
        if len(together) > 1:
            pair_id = secrets.token_hex(8)
            # One order seed for the run: --seed, else drawn now (a fresh order per compare).
            seed = together[0].order_seed
            seed = draw_seed() if seed is None else seed
            for session in together:
                session.pair_id, session.order_seed = pair_id, seed
        if on_ray and together:
            remote_rounds = together[0].plan.remote_rounds
            if remote_rounds is None:
                raise ValueError("a RunPlan with `ray` needs remote_rounds (remote.run_rounds)")
            remote_rounds(together, repeats)
        elif latency_budget is not None and len(together) == 2 and together[0].plan.concurrency < 2:
            _sequential_rounds(together, repeats, latency_budget)
        else:
            for index in range(repeats):
                play_round(together, index, repeats)
                if any(session.stopped for session in together):
                    break  # the run is invalid already: no more rounds of a stalled service
        runs.update({i: session.finish() for i, session in live.items()})
    return tuple(runs[i] for i in range(len(sessions)))


def _sequential_rounds(
    sessions: Sequence[RefSession], repeats: int, budget: LatencyBudget
) -> None:
    """Round 1, then the plan's round count fixed from its duration, then rounds until
    `latency_rounds.settled` (the latency rule decided, or the budget is spent)."""
    tolerance = sessions[0].plan.config.compare.latency_tolerance
    observer = sessions[0].plan.observer
    for session in sessions:
        session.quality_rounds = repeats
    started = time.monotonic()
    play_round(sessions, 0, repeats)
    total = latency_rounds.planned_rounds(budget, repeats, time.monotonic() - started)
    for session in sessions:
        session.latency_budget = total
    index = 1
    while not latency_rounds.settled(sessions, repeats, total, tolerance):
        if any(session.stopped for session in sessions):
            break  # the run is invalid already: no more rounds of a stalled service
        if index >= repeats and observer is not None:
            observer.planned(len(sessions))  # a latency-only round: two more boots
        play_round(sessions, index, total)
        index += 1


def play_round(sessions: Sequence[RefSession], index: int, repeats: int) -> None:
    """Round `index` of entered sessions: time-paired (`_paired_round`) when there are several
    at concurrency 1, else each session's repeat in turn (order alternating by round)."""
    if len(sessions) > 1 and sessions[0].plan.concurrency == 1:
        _paired_round(sessions, index, repeats)
    else:
        stopped: list[RefSession] = []
        for session in sessions if index % 2 == 0 else sessions[::-1]:
            if stopped:  # not booted: the round ended with the stalled session's repeat
                session.repeats.append(Repeat(index=index, results=(), failure=_cut(stopped)))
                continue
            session.run_repeat(index)
            if session.stopped:
                stopped.append(session)


def run_ref(plan: RunPlan, side: str, ref: str, *, repeats: int) -> RefRun:
    """One ref on its own, `repeats` times, always measured afresh (`harness run` and
    `harness gate` measure the ref as it is now; no earlier record is reused)."""
    (run,) = run_interleaved([RefSession(plan, side, ref)], repeats=repeats, fresh=True)
    return run


def run_pair(
    plan: RunPlan,
    baseline_ref: str,
    candidate_ref: str,
    *,
    repeats: int,
    reuse: bool = False,
    latency_budget: LatencyBudget | None = None,
) -> tuple[RefRun, RefRun]:
    """Both refs through `run_interleaved`, measured together: `repeats` rounds, each booting
    both services afresh (boot order alternating) and sending every query to both back to back, half
    of them baseline-first in each round (drawn from --seed, else afresh: `harness.replay.order`),
    so a burst of machine load hits both sides of a pair alike.  The two RefRuns share a `pair_id`:
    what `compare` requires before it gives a latency verdict.

    Both sides are measured now, each build cached as always, so a re-compare gives a latency
    verdict.  Only with `reuse` (compare --reuse-runs) is a stored run reused, for quality only:
    the other side is then measured alone (no pair_id) and latency is not compared.  When both
    sides are the same ref and configuration (an A/A), nothing is reused even then: both are
    measured, never one record twice.
    """
    sessions = [
        RefSession(plan, "baseline", baseline_ref),
        RefSession(plan, "candidate", candidate_ref),
    ]
    same = len({(s.sha, s.config_hash, s.inputs_hash) for s in sessions}) == 1
    baseline, candidate = run_interleaved(
        sessions, repeats=repeats, fresh=not reuse or same, latency_budget=latency_budget
    )
    return baseline, candidate


def run_deployed(
    plan: RunPlan,
    baseline_url: str,
    candidate_url: str,
    *,
    repeats: int,
    latency_budget: LatencyBudget | None = None,
) -> tuple[RefRun, RefRun]:
    """Two running deployments measured together, exactly as `run_pair` measures two refs
    (time-paired rounds, the order within pairs balanced, a shared pair_id), with nothing checked
    out, built, booted or torn down; never reused (a URL's service changes without a commit)."""
    sessions = [  # named by the URL without its userinfo, requests sent with it
        RefSession(plan, "baseline", safe_url(baseline_url), url=baseline_url),
        RefSession(plan, "candidate", safe_url(candidate_url), url=candidate_url),
    ]
    baseline, candidate = run_interleaved(
        sessions, repeats=repeats, fresh=True, latency_budget=latency_budget
    )
    return baseline, candidate


def _reusable(session: RefSession, repeats: int) -> RefRun | None:
    plan = session.plan
    return find_reusable(
        plan.results_dir,
        sha=session.sha,
        config_hash=session.config_hash,
        gold_hash=plan.gold.hash,
        corpus_hash=plan.corpus_hash,
        repeats=repeats,
        inputs_hash=session.inputs_hash,
        concurrency=plan.concurrency,
        texts=session.side.query.texts is not None,
        definition=run_definition(
            plan.gold.hash,
            plan.corpus_hash,
            _query_config_dict(session.side),
            session.config_hash,
            plan.config.compare.k,
        ),
    )


@dataclass
class _Side:
    """One session's boot within a paired round."""

    session: RefSession
    log_path: Path
    svc_cm: ServiceContext | DeployedContext | None = None
    channel: Channel | None = None
    failure: RunFailure | None = None
    results: list[QueryResult] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    positions: list[int] = field(default_factory=list)  # its place in each query's exchange
    probed: int = 0  # warm-up requests already sent (and checked: `_probe`) in round 1


def _probe(side: _Side, items: Sequence[tuple[str, str]]) -> int:
    """Round 1, right after this side's boot: its first warm-up answers read and held against
    the adapter (`harness.replay.adapter_check`), so a wrong query.ids stops the run before the
    next service boots; the warm-up requests sent (the rest are sent as usual)."""
    session, channel = side.session, side.channel
    assert channel is not None
    count = probe_count(session.side.query, items)
    if count == 0 or session.adapter_check.done:
        return 0
    answers = [channel.read(channel.send(*items[i % len(items)])) for i in range(count)]
    session.adapter_check(answers, f"{session.side_name} {session.ref} ({session.sha[:8]})")
    return count


def _paired_round(sessions: Sequence[RefSession], index: int, repeats: int) -> None:
    """One round: boot every session's service, then each query to all of them back to back
    (the order balanced per round: `harness.replay.order`), then tear them all down; one
    Repeat per session."""
    plan = sessions[0].plan
    items = sessions[0].items()  # query.rewrite is the same for every side (the loader says so)
    if sessions[0].order_seed is None:  # a round played outside run_interleaved
        sessions[0].order_seed = draw_seed()
    seed = sessions[0].order_seed
    order = list(sessions) if index % 2 == 0 else list(sessions)[::-1]
    sides = [_Side(s, s._log_path(index)) for s in order]
    names = " + ".join(f"{s.side_name} {s.ref} ({s.sha[:8]})" for s in sessions)
    label = f"round {index + 1}/{repeats}: {names}"
    machine: Machine | None = None
    with contextlib.ExitStack() as stack:
        for side in sides:
            session = side.session
            if not session.bootable:
                side.failure = session.build_failure
                continue
            if plan.progress is not None:
                plan.progress(label, 0, len(items), 0, None)  # booting
            cm = session.boot(side.log_path)
            side.svc_cm = cm
            try:
                svc = cm.__enter__()
            except ServiceError as exc:
                side.failure = RunFailure(exc.stage, exc.message, exc.details)
                continue
            stack.push(_quiet_exit(cm, side))
            side.timings["boot"] = svc.boot_seconds
            side.timings.update(_prepare_steps(svc))
            side.channel = stack.enter_context(
                Channel(
                    svc.url,
                    session.side.query,
                    items,
                    open_socket=svc.open_socket,
                    requests=session.requests,
                    answers=session.answers,
                )
            )
            side.probed = _probe(side, items) if index == 0 else 0
        # In the sessions' order (baseline, candidate, ...), not the boot order: the rotations
        # of harness.replay.order are of this list.
        rank = {id(s): i for i, s in enumerate(sessions)}
        asking = sorted(
            (side for side in sides if side.channel is not None),
            key=lambda side: rank[id(side.session)],
        )
        rotations = pair_orders(len(items), len(asking), seed, index) if asking else []
        for side in asking:
            assert side.channel is not None
            warm_up(side.channel, items, skip=side.probed)
        load_before, cpu0, t0 = _load(), time.thread_time_ns(), time.perf_counter()
        errors = 0
        # Each query's exchanges, in the order sent; read every READ_BATCH queries, off the clock.
        sent: list[list[tuple[_Side, Sent]]] = []
        streaks = {id(side): Streak(side.session.side.query) for side in asking}
        stopped: list[_Side] = []
        asked = 0  # queries sent to every side: all of them unless the round was stopped
        # Nothing to ask when every side failed to boot (or was never bootable).
        for done, (query_id, text) in enumerate(items if asking else (), start=1):
            asked = done
            exchanges = []
            for place, side in enumerate(in_rotation(asking, rotations[done - 1])):
                assert side.channel is not None
                side.positions.append(place)
                one = side.channel.send(query_id, text)
                exchanges.append((side, one))
                stop = streaks[id(side)].stops(one)
                if stop is not None:  # this side stalls: the round ends with this query
                    who = f"{label}: {side.session.side_name} {side.session.ref}"
                    side.failure = side.session.stop(who, stop)
                    stopped.append(side)
            sent.append(exchanges)
            if len(sent) == READ_BATCH or done == len(items) or stopped:
                errors = _read(sent, done - len(sent), len(items), errors, plan.progress, label)
                sent.clear()
                for side in asking:  # query.warmup = 0: no probe; the first answers instead
                    who = f"{side.session.side_name} {side.session.ref} ({side.session.sha[:8]})"
                    side.session.adapter_check(side.results, who)
            if stopped:
                _cut_short(asking, stopped)
                break
        elapsed = time.perf_counter() - t0
        if asking:
            machine = _machine(load_before, cpu0, asked * len(asking))
        for side in asking:
            side.timings["queries"] = elapsed
    for side in sides:
        side.session._record(
            index,
            tuple(side.results),
            side.timings,
            side.svc_cm,
            side.log_path,
            side.failure,
            machine if side.channel is not None else None,
            tuple(side.positions),
        )


def _cut(stopped: Sequence[RefSession]) -> RunFailure:
    """The failure of the other sessions' repeats in a round stopped for `stopped`: cut short
    through no fault of theirs (their missing answers are not counted as their errors)."""
    names = " and ".join(f"{s.side_name} {s.ref}" for s in stopped)
    said = f"the round was stopped when {names} failed too many queries in a row"
    return RunFailure(STOPPED, said)


def _cut_short(asking: Sequence[_Side], stopped: Sequence[_Side]) -> None:
    """The other sides of a paired round stopped for `stopped`: their repeat failed too."""
    failure = _cut([side.session for side in stopped])
    for side in asking:
        if side.failure is None:
            side.failure = failure


def _read(
    sent: Sequence[Sequence[tuple[_Side, Sent]]],
    before: int,
    total: int,
    errors: int,
    progress: Progress | None,
    label: str,
) -> int:
    """Read a batch of a round's answers into each side's results, query by query in the order
    sent, telling `progress` of each query as when it was asked; the errors counted so far."""
    for offset, exchanges in enumerate(sent, start=1):
        result = None
        for side, one in exchanges:
            assert side.channel is not None
            result = side.channel.read(one)
            side.results.append(result)
            errors += 0 if result.ok else 1
        if progress is not None:
            progress(label, before + offset, total, errors, result)
    return errors


def _url_key(url: str) -> str:
    """The stand-in for a commit sha of a deployment: stable per URL, never a real sha.  Of the
    URL without its userinfo: the same deployment reached with a new password is the same
    deployment, and no hash of a password (guessable offline when it is weak) is stored."""
    import hashlib

    return "url-" + hashlib.sha256(safe_url(url).encode()).hexdigest()[:12]


def _quiet_exit(cm: ServiceContext | DeployedContext, side: _Side) -> Callable[..., bool]:
    """The exit of a booted service inside the round's stack: a ServiceError at teardown is the
    side's failure (as run_repeat records it), not the round's end."""

    def exit_(*exc_info: object) -> bool:
        try:
            cm.__exit__(*exc_info)  # type: ignore[arg-type]
        except ServiceError as exc:
            if side.failure is None:
                side.failure = RunFailure(exc.stage, exc.message, exc.details)
        return False

    return exit_


def _prepare_steps(svc: object) -> dict[str, float]:
    """Each prepare command's and loader phase's seconds, keyed "prepare:<step>" in a Repeat's
    timings_s ("prepare:prepare[0]", "prepare:load", "prepare:index"): apart from the queries."""
    steps: dict[str, float] = dict(getattr(svc, "prepare_steps", {}))
    return {f"{PREPARE_STEP}{name}": seconds for name, seconds in steps.items()}


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:  # not every platform has one
        return -1.0


def _machine(load_before: float, cpu0: int, queries: int) -> Machine:
    """What the machine was doing during a repeat's queries, measured now that they are done."""
    spent = time.thread_time_ns() - cpu0
    return Machine(
        load_before=load_before,
        load_after=_load(),
        cpu_count=os.cpu_count() or 0,
        client_cpu_ns=spent // max(queries, 1),
    )

"""A ref's session: checked out and built once, its service booted once per repeat.

    with RefSession(plan, "candidate", "feat/x") as session:   # resolve, worktree, build once
        for i in range(repeats):
            session.run_repeat(i)                               # boot, replay, tear down
        run = session.finish()                                  # a RefRun, saved under results/

`RunPlan` (`harness.driver.plan`) is what the runs of one invocation share, and a
`SharedReading` what the sessions measured together share; `harness.driver.runner` runs sessions
(`run_ref`, `run_pair`, `run_interleaved`) and `harness.driver.pairs` plays their time-paired
rounds.  Each repeat records what the machine was doing (`types.Machine`: load average, CPU
count, the client's CPU per query).
Nothing here turns a failure into a score: a build or boot failure is recorded as a RunFailure
and the run is invalid.  So is a round stopped because one side failed
`query.max_consecutive_failures` queries in a row (timeouts, connection failures: a stalled
service): the round ends there, every side's repeat of it fails (stage "replay"), an Observer
`note` says so at once, and no later round runs.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import TracebackType

from harness import __version__
from harness.boot.deployed import DeployedContext, deployed
from harness.boot.interpreter import interpreter
from harness.boot.isolation import data_source
from harness.boot.service import ServiceContext, running_service
from harness.checkout.build import build, with_venv
from harness.checkout.editable import editable_paths
from harness.checkout.worktree import (
    checkout,
    resolve_option,
    tree_changes,
    tree_fingerprint,
)
from harness.config import HarnessConfig, SideConfig, effective_side, side_hash
from harness.config.hook import rewritten_items
from harness.config.inputs import build_inputs, inputs_hash
from harness.driver.adapter_check import AdapterCheck, id_adapter
from harness.driver.ended import ended, exit_first, exited, unhinted
from harness.driver.plan import RunPlan, SharedReading
from harness.errors import BuildError, ConfigError, ResultsError, ServiceError
from harness.replay.client import STOP_HINTS, Stopped, replay
from harness.replay.request import refuse_injections
from harness.results.files import utc_stamp
from harness.results.records import host_fingerprint, save_run
from harness.score.definition import Definition, definition
from harness.text.scrub import register_fields, register_headers, safe_url, scrubbed_fields
from harness.values.types import (
    PREPARE_STEP,
    ErrorKind,
    Machine,
    QueryResult,
    RefRun,
    Repeat,
    RunFailure,
)

STOPPED = "replay"  # RunFailure.stage of a round stopped for failures in a row


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
        option: str = "--ref",
        reading: SharedReading | None = None,
    ) -> None:
        self.plan = plan
        self.side_name = side
        # The name in progress lines and in the record (a sweep says "main [RRF_K=60]").
        self.ref = label or ref
        self.requested_ref, self.pins = ref, dict(pins or {})  # what a Ray worker opens again
        self.host: dict[str, str] | None = None  # where its rounds ran, when not here (Ray)
        # A running deployment (compare --baseline-url): no ref, checkout, build or boot.
        self.url = url
        # An unknown ref names the option it came by (--ref, compare's --baseline, ...).
        repo = plan.config.repo
        self.resolved = None if url is not None else resolve_option(repo, ref, option)
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
        # Its credentials (query.headers' Authorization, Cookie; an api_key in query.params)
        # never come back in any output.
        register_headers(chosen.query.headers)
        for template in (chosen.query.params, chosen.query.form, chosen.query.json):
            register_fields(template)
        _check_limit(plan.config, side, ref, chosen)
        if url is None:  # a missing service.python: a config error before any checkout
            interpreter(self.side.service.python, plan.config.config_dir)
        self.config_hash = side_hash(self.side)
        self.inputs_hash = inputs_hash(self.side, plan.config)
        self.pair_id: str | None = None
        self.order_seed: int | None = plan.order_seed
        # Rounds from this index on are latency-only (harness.driver.latency_rounds); the plan
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
        self.build_cost: tuple[float | None, int | None] = (None, None)  # seconds, bytes
        self.tree: dict[str, tuple[int, int]] = {}  # the checkout as built (tree_fingerprint)
        self.ids = id_adapter(self.side.query, plan.config, side)
        # A wrong query.ids found in the first answers of the first boot (exit 3), not at the end.
        self.adapter_check = AdapterCheck(
            plan.config, side, self.side.query, self.ids, plan.asked.judged, redact=plan.redact
        )
        # Rewritten once, before anything is built: a hook that fails on a query stops here.
        self._items = rewritten_items(
            plan.asked.items, self.side.query.rewrite, plan.config.path
        )
        asked = plan.asked
        refuse_injections(
            side,
            self.side.query,
            self._items,
            source=asked.source,
            where=asked.queries_file,
            lines=asked.lines_by_id(),
        )
        # Encoded once for every boot of this ref (each boot changes only the Host's port), and
        # what its answers read as, across boots: shared with the other sessions of `reading`
        # whose query settings and queries are the same.
        reading = SharedReading() if reading is None else reading
        self.requests, self.answers = reading.of(self.side.query, self._items)
        # A round stopped for failures in a row (`Stopped`): the run is invalid, no more rounds.
        self.stopped = False
        # A repeat failed (a boot, a build, a crash): the run is invalid, and every later boot
        # of this service would fail the same way: no more rounds are played.
        self.failed = False

    @property
    def log_dir(self) -> Path:
        return self.plan.results_dir / "logs"

    @property
    def described(self) -> str:
        """How progress and errors name it: "baseline main (abc12345)"."""
        return f"{self.side_name} {self.ref} ({self.sha[:8]})"

    def check_adapter(self, answers: Sequence[QueryResult]) -> None:
        """Its first answers held against the adapter (`harness.driver.adapter_check`): a
        wrong query.ids stops the run here, before the next service boots."""
        self.adapter_check(answers, self.described)

    def __enter__(self) -> RefSession:
        if self.resolved is None:
            return self  # a deployment: nothing to check out or build
        observer = self.plan.observer
        what = self.described
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
            self.build_cost = (result.build_seconds, result.output_bytes)
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
        label = f"{self.described} repeat {index + 1}"
        log_path = self.new_log_path(index)
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
                timings.update(prepare_timings(svc))
                if self.plan.observer is not None:
                    self.plan.observer.asking(label)
                load_before, cpu0, started = loadavg(), time.thread_time_ns(), [time.perf_counter()]
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
                    results = stop.results
                    failure = self.stop(f"{label}:", stop.message, svc_cm)
                timings["queries"] = time.perf_counter() - started[-1]
                machine = machine_during(load_before, cpu0, len(results))
        except ServiceError as exc:  # a stop is the repeat's failure even if teardown fails
            failure = failure or RunFailure(exc.stage, exc.message, exc.details)
        if failure is None:  # torn down already: the first boot's answers, before the next boot
            self.check_adapter(results)
        return self.record_repeat(index, results, timings, svc_cm, log_path, failure, machine)

    def stop(
        self, who: str, message: str, svc_cm: ServiceContext | DeployedContext | None = None
    ) -> RunFailure:
        """This session's round stopped (`Stopped`): said at once (`who` names the round and
        the side), and the repeat's failure.  When its service (booted by `svc_cm`) has
        exited, that is the reason, with its status, not a stall."""
        self.stopped = True
        # Refused connections most often mean it died: its exit is awaited (up to
        # service.kill_wait, as for a killed one), not raced, so the note says so at once.
        refused = message.endswith(STOP_HINTS[ErrorKind.CONNECTION])
        status = exited(svc_cm, wait=refused)
        if status is not None:
            message = f"the service {ended(status)} while being queried; {unhinted(message)}"
        observer = self.plan.observer
        if observer is not None:
            observer.note(f"{who} stopped, the run is invalid: {message}")
        return RunFailure(STOPPED, message)

    def record_repeat(
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
        """Repeat `index` of this session, as its boot (`svc_cm`) ended, appended to `repeats`:
        the answers' ids adapted, a death, a fork limit or a changed checkout its failure (the
        paired and sequential rounds of `harness.driver.pairs` and `.blocks` record theirs so)."""
        if self.ids:  # after the clock: adapting ids is not the service's latency
            results = tuple(replace(r, ids=self.ids.apply(r.ids)) for r in results)
        teardown = None if svc_cm is None else svc_cm.teardown
        confirmed = teardown is not None and teardown.confirmed
        if teardown is not None:
            timings["teardown"] = teardown.seconds
            if teardown.died_before_teardown and (failure is None or failure.stage == STOPPED):
                # It answered some queries, then died: every later answer is suspect. (A round
                # stopped for the connection failures that followed says why second.)
                said = f"the service {ended(teardown.exit_status)} while being queried"
                if failure is not None:  # `stop` said so when it saw the exit in time
                    said = exit_first(said, unhinted(failure.message))
                failure = RunFailure("crashed", said)
        limit = svc_cm.limit_reached() if isinstance(svc_cm, ServiceContext) else None
        usage = getattr(svc_cm, "usage", None)  # a boot's cost (harness.boot.usage)
        if usage is not None:  # CPU per answer: the answers without an error
            usage = replace(usage, queries=sum(1 for r in results if r.ok))
        if limit is not None and failure is None:  # some of its forks failed: not the service
            failure = RunFailure("run", limit)
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
                "run",  # "failed at run": it ran; what it did is the message
                f"the service changed its own checkout during the boot ({shown}); the next "
                "boot would run a different service: write state under its HOME or its data "
                "copy (harness.toml's {home} and {data} placeholders)",
            )
        self.failed = self.failed or failure is not None
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
            usage=usage,
        )
        self.repeats.append(rep)
        return rep

    def items(self) -> list[tuple[str, str]]:
        """(query id, text as sent) of every gold query: the side's query.rewrite applied."""
        return list(self._items)

    def ask_only(self, keep: set[str]) -> None:
        """From now on, only the queries of `keep` are asked (the latency rounds of a
        sequential compare replay the queries its quality rounds asked, no more)."""
        self._items = [item for item in self._items if item[0] in keep]

    def new_log_path(self, index: int) -> Path:
        """A new log file's path for repeat `index` under results/logs/ (the folder made)."""
        path = self.log_dir / f"{utc_stamp()}_{self.sha[:8]}_{self.side_name}_r{index}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def finish(self) -> RefRun:
        """The RefRun of every repeat so far, written as a new record under results/runs/."""
        run = RefRun(
            ref=self.ref,
            sha=self.sha,
            config_hash=self.config_hash,
            gold_hash=self.plan.asked.gold_hash,
            corpus_hash=self.plan.corpus_hash,
            tool_version=__version__,
            host=self.host or host_fingerprint(),
            repeats=tuple(self.repeats),
            query_config=query_config_dict(self.side),
            build_failure=self.build_failure,
            timings_s=dict(self.timings),
            build_cached=self.build_cached,
            build_seconds=self.build_cost[0],
            build_bytes=self.build_cost[1],
            pair_id=self.pair_id,
            # Only when queries were sent in pairs (not alone, nor under --concurrency N > 1).
            order_seed=self.order_seed if any(rep.positions for rep in self.repeats) else None,
            concurrency=self.plan.concurrency,
            inputs_hash=self.inputs_hash,
            definition=run_definition(
                self.plan.asked.gold_hash,
                self.plan.corpus_hash,
                query_config_dict(self.side),
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


def query_config_dict(side: SideConfig) -> dict[str, object]:
    """The query settings a record keeps: a credential-named field's value as [scrubbed]
    (`harness.text.scrub.scrubbed_fields`), in memory as on disk, so that a record read back defines
    the same measurement as the run that wrote it."""
    q = side.query
    return {
        "method": q.method,
        "path": q.path,
        "params": scrubbed_fields(q.params),
        "json": None if q.json is None else scrubbed_fields(q.json),
        **({} if q.form is None else {"form": scrubbed_fields(q.form)}),
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


def _url_key(url: str) -> str:
    """The stand-in for a commit sha of a deployment: stable per URL, never a real sha.  Of the
    URL without its userinfo: the same deployment reached with a new password is the same
    deployment, and no hash of a password (guessable offline when it is weak) is stored."""
    import hashlib

    return "url-" + hashlib.sha256(safe_url(url).encode()).hexdigest()[:12]


def prepare_timings(svc: object) -> dict[str, float]:
    """Each prepare command's and loader phase's seconds, keyed "prepare:<step>" in a Repeat's
    timings_s ("prepare:prepare[0]", "prepare:load", "prepare:index"): apart from the queries."""
    steps: dict[str, float] = dict(getattr(svc, "prepare_steps", {}))
    return {f"{PREPARE_STEP}{name}": seconds for name, seconds in steps.items()}


def loadavg() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:  # not every platform has one
        return -1.0


def machine_during(load_before: float, cpu0: int, queries: int) -> Machine:
    """What the machine was doing during a repeat's queries, measured now that they are done."""
    spent = time.thread_time_ns() - cpu0
    return Machine(
        load_before=load_before,
        load_after=loadavg(),
        cpu_count=os.cpu_count() or 0,
        client_cpu_ns=spent // max(queries, 1),
    )

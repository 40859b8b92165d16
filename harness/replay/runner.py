"""The runner stage: one ref, N repeats, each on a freshly booted service, into a RefRun.

    with RefSession(plan, "candidate", "feat/x") as session:   # resolve, worktree, build once
        for i in range(repeats):
            session.run_repeat(i)                               # boot, replay, tear down
        run = session.finish()                                  # a RefRun, saved under results/

`run_ref` runs one ref; `run_pair` (compare) and `harness.sweep.run` open several sessions and
interleave their repeats (`run_interleaved`). Nothing here turns a failure into a score: a
build or boot failure is recorded as a RunFailure and the run is invalid.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType

from harness import __version__
from harness.boot.isolation import data_source
from harness.boot.service import running_service
from harness.checkout.build import build, with_venv
from harness.checkout.worktree import checkout, resolve_ref, tree_changes, tree_fingerprint
from harness.config import HarnessConfig, QueryConfig, SideConfig, side_hash
from harness.errors import BuildError, ResultsError, ServiceError
from harness.gold.corpus import load_corpus
from harness.replay.answers import IdAdapter, adapter_for
from harness.replay.client import replay
from harness.replay.rewrite import rewritten
from harness.results.files import utc_stamp
from harness.results.records import find_reusable, host_fingerprint, save_run
from harness.types import GoldSet, QueryResult, RefRun, Repeat, RunFailure

Progress = Callable[[str, int, int, int, QueryResult | None], None]
"""progress(label, done, total, errors, last_result) — called as queries complete."""


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


class RefSession:
    """One ref checked out and built; boots its service once per repeat."""

    def __init__(self, plan: RunPlan, side: str, ref: str, *, label: str | None = None) -> None:
        self.plan = plan
        self.side: SideConfig = plan.config.side(side)
        self.side_name = side
        # The name in progress lines and in the record (a sweep says "main [RRF_K=60]").
        self.ref = label or ref
        self.resolved = resolve_ref(plan.config.repo, ref)
        self.sha = self.resolved.key  # commit sha, or <sha>+dirty.<hash12> for WORKTREE
        self.config_hash = side_hash(self.side)
        self.repeats: list[Repeat] = []
        self.build_failure: RunFailure | None = None
        self.worktree: Path | None = None
        self.extra_env: dict[str, str] = {}
        self._stack = contextlib.ExitStack()
        self.timings: dict[str, float] = {}
        self.build_cached: bool | None = None
        self.tree: dict[str, tuple[int, int]] = {}  # the checkout as built (tree_fingerprint)
        self.ids = id_adapter(self.side.query, plan.config.corpus)

    @property
    def log_dir(self) -> Path:
        return self.plan.results_dir / "logs"

    def __enter__(self) -> RefSession:
        try:
            self.worktree = self._stack.enter_context(
                checkout(self.plan.config.repo, self.resolved, keep=self.plan.keep)
            )
            # A data path or committed symlink leading out of the tree: refused before any boot.
            data_source(self.side.service, self.worktree)
            if self.plan.keep:
                print(
                    f"harness: keeping the worktree of {self.ref} at {self.worktree}",
                    file=sys.stderr,
                )
            result = build(
                self.worktree,
                sha_key=self.sha,
                service=self.side.service,
                log_dir=self.log_dir,
            )
            self.timings["build"] = result.seconds
            self.build_cached = result.cached if self.side.service.build else None
            if result.venv is not None:
                # The venv's bin goes first on the caller's PATH, never instead of it.
                caller_path = {"PATH": os.environ.get("PATH", os.defpath)}
                self.extra_env = with_venv(caller_path, result.venv)
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

    def run_repeat(self, index: int) -> Repeat:
        """Boot on a fresh data copy, replay every gold query once, tear down confirmed dead."""
        if self.build_failure is not None or self.worktree is None:
            rep = Repeat(index=index, results=(), failure=self.build_failure)
            self.repeats.append(rep)
            return rep
        label = f"{self.side_name} {self.ref} ({self.sha[:8]}) repeat {index + 1}"
        log_path = self.log_dir / f"{utc_stamp()}_{self.sha[:8]}_{self.side_name}_r{index}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        rewrite = self.side.query.rewrite
        items = [(q.id, rewritten(q.text, rewrite)) for q in self.plan.gold.queries]
        timings: dict[str, float] = {}
        results: tuple[QueryResult, ...] = ()
        failure: RunFailure | None = None
        errors = 0
        sandbox: str | None = None

        def on_result(done: int, total: int, result: QueryResult) -> None:
            nonlocal errors
            errors += 0 if result.ok else 1
            if self.plan.progress is not None:
                self.plan.progress(label, done, total, errors, result)

        if self.plan.progress is not None:
            self.plan.progress(label, 0, len(items), 0, None)  # booting
        svc_cm = running_service(
            self.side.service, self.worktree, log_path=log_path, extra_env=self.extra_env
        )
        try:
            with svc_cm as svc:
                sandbox = svc.sandbox
                timings["boot"] = svc.boot_seconds
                t0 = time.perf_counter()
                results = replay(
                    svc.url,
                    self.side.query,
                    items,
                    concurrency=self.plan.concurrency,
                    on_result=on_result,
                    open_socket=svc.open_socket,
                )
                timings["queries"] = time.perf_counter() - t0
            if self.ids:  # after the clock: adapting ids is not the service's latency
                results = tuple(replace(r, ids=self.ids.apply(r.ids)) for r in results)
        except ServiceError as exc:
            failure = RunFailure(exc.stage, exc.message, exc.details)
        teardown = svc_cm.teardown
        confirmed = teardown is not None and teardown.confirmed
        if teardown is not None:
            timings["teardown"] = teardown.seconds
            if failure is None and teardown.died_before_teardown:
                # It answered some queries, then died: every later answer is suspect.
                failure = RunFailure("crashed", "the service exited while being queried")
        changed = tree_changes(self.tree, tree_fingerprint(self.worktree))
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
            sandbox=sandbox or svc_cm.sandbox,
        )
        self.repeats.append(rep)
        return rep

    def finish(self) -> RefRun:
        """The RefRun of every repeat so far, written as a new record under results/runs/."""
        run = RefRun(
            ref=self.ref,
            sha=self.sha,
            config_hash=self.config_hash,
            gold_hash=self.plan.gold.hash,
            corpus_hash=self.plan.corpus_hash,
            tool_version=__version__,
            host=host_fingerprint(),
            repeats=tuple(self.repeats),
            query_config=_query_config_dict(self.side),
            build_failure=self.build_failure,
            timings_s=dict(self.timings),
            build_cached=self.build_cached,
        )
        try:
            path = save_run(self.plan.results_dir, run, redact=self.plan.redact)
        except ResultsError as exc:
            # What was measured still reaches the report; only its record is missing.
            print(f"harness: warning: run record not saved: {exc.message}", file=sys.stderr)
            return run
        return replace(run, record_path=str(path))


def id_adapter(query: QueryConfig, corpus: Path | None) -> IdAdapter:
    """The side's IdAdapter (`harness.replay.answers`), reading the corpus when id_field asks."""
    documents = load_corpus(corpus) if query.id_field and corpus is not None else None
    return adapter_for(query.id_pattern, query.id_field, documents)


def _query_config_dict(side: SideConfig) -> dict[str, object]:
    q = side.query
    return {
        "method": q.method,
        "path": q.path,
        "params": dict(q.params),
        "json": None if q.json is None else dict(q.json),
        "ids": q.ids,
        "scores": q.scores,
        "rewrite": q.rewrite,
        "select": q.select,
        "id_pattern": q.id_pattern,
        "id_field": q.id_field,
        "limit": q.limit,
        "timeout": q.timeout,
    }


def run_interleaved(
    sessions: Sequence[RefSession], *, repeats: int, fresh: bool = False
) -> tuple[RefRun, ...]:
    """Every session `repeats` times, interleaved (a, b, c, a, b, c, ...) so machine drift hits
    all alike; returns one RefRun per session, in order. A session whose record already exists
    for exactly these inputs is reused unless `fresh` (its RefRun has `reused=True`) and boots
    nothing: its ref is resolved, but no worktree is made."""
    runs: dict[int, RefRun] = {}
    with contextlib.ExitStack() as stack:
        live: dict[int, RefSession] = {}
        for i, session in enumerate(sessions):
            plan = session.plan
            found = None
            if not fresh:
                found = find_reusable(
                    plan.results_dir,
                    sha=session.sha,
                    config_hash=session.config_hash,
                    gold_hash=plan.gold.hash,
                    corpus_hash=plan.corpus_hash,
                    repeats=repeats,
                )
            if found is not None:
                runs[i] = replace(found, repeats=found.repeats[:repeats], reused=True)
            else:
                live[i] = stack.enter_context(session)
        for index in range(repeats):
            for session in live.values():
                session.run_repeat(index)
        runs.update({i: session.finish() for i, session in live.items()})
    return tuple(runs[i] for i in range(len(sessions)))


def run_ref(plan: RunPlan, side: str, ref: str, *, repeats: int) -> RefRun:
    """One ref on its own, `repeats` times, always measured afresh (`harness run` and
    `harness gate` measure the ref as it is now; no earlier record is reused)."""
    (run,) = run_interleaved([RefSession(plan, side, ref)], repeats=repeats, fresh=True)
    return run


def run_pair(
    plan: RunPlan, baseline_ref: str, candidate_ref: str, *, repeats: int, fresh: bool = False
) -> tuple[RefRun, RefRun]:
    """Both refs through `run_interleaved`: baseline, candidate, baseline, candidate, ..."""
    baseline, candidate = run_interleaved(
        [RefSession(plan, "baseline", baseline_ref), RefSession(plan, "candidate", candidate_ref)],
        repeats=repeats,
        fresh=fresh,
    )
    return baseline, candidate

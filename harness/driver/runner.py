"""The runner stage: refs measured together, round after round, into RefRuns.

    run_ref(plan, side, ref, repeats=N)                 one ref on its own (harness run, gate)
    run_pair(plan, baseline, candidate, repeats=N)      both refs time-paired (compare)
    run_interleaved(sessions, repeats=N)                any sessions (sweep, matrix)

`run_pair` (compare) and `harness.sweep.run` open several sessions (`harness.driver.session`)
and measure them together (`run_interleaved`): time-paired rounds (`harness.driver.pairs`), each
booting every session's service and sending each query to all of them back to back, in an order
balanced per round (`harness.replay.order`), so numbers that are compared were measured at the
same moment.  With a latency budget, latency-only rounds follow until the latency rule decides
(`harness.driver.latency_rounds`).
"""
from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Sequence
from dataclasses import replace

from harness.driver import latency_rounds
from harness.driver.pairs import cut_off, paired_round
from harness.driver.plan import (
    Observer,
    Progress,
    RemoteRounds,
    RunPlan,
    SharedReading,
    run_plan,
)
from harness.driver.session import RefSession, query_config_dict, run_definition
from harness.replay.order import draw_seed
from harness.results.records import find_reusable
from harness.text.scrub import safe_url
from harness.values.types import RefRun, Repeat
from harness.verdict.latency_rule import LatencyBudget

__all__ = [  # what callers import from here (the sessions themselves: harness.driver.session)
    "Observer",
    "Progress",
    "RefSession",
    "RemoteRounds",
    "RunPlan",
    "SharedReading",
    "play_round",
    "run_deployed",
    "run_interleaved",
    "run_pair",
    "run_plan",
    "run_ref",
]



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
    time-paired rounds (`paired_round`: each round boots all of them, then sends each query to all
    back to back, half of the queries baseline-first, drawn per compare); under `concurrency > 1`,
    or with one session, each round boots them one after the other (order alternating), each sending
    its queries as a burst.

    With a `latency_budget`, two sessions measured together at concurrency 1 go on past
    `repeats` one latency-only round at a time until the latency rule decides or the budget is
    spent (`harness.driver.latency_rounds`); on Ray they run `repeats` rounds, one look.
    """
    runs: dict[int, RefRun] = {}
    on_ray = bool(sessions) and sessions[0].plan.ray is not None
    with contextlib.ExitStack() as stack:
        live: dict[int, RefSession] = {}
        for i, session in enumerate(sessions):
            # A deployment is never reused: what answers at a URL changes without a commit.
            found = None if fresh or session.url is not None else _reusable(session, repeats)
            if found is not None:
                # Named by the ref asked for now (a record bisect made is named by its sha).
                runs[i] = replace(
                    found,
                    ref=session.ref,
                    repeats=found.repeats[:repeats],
                    reused=True,
                    latency_budget=None,
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
                if any(session.stopped or session.failed for session in together):
                    break  # the run is invalid already: no more rounds of a failing service
        runs.update({i: session.finish() for i, session in live.items()})
    return tuple(runs[i] for i in range(len(sessions)))


def _sequential_rounds(
    sessions: Sequence[RefSession], repeats: int, budget: LatencyBudget
) -> None:
    """Round 1, then the plan's round count fixed from its duration (a round count: before
    round 1), then rounds until `latency_rounds.settled` (the latency rule decided, the budget
    is spent, or the run is invalid already)."""
    compare = sessions[0].plan.config.compare
    observer = sessions[0].plan.observer
    for session in sessions:
        session.quality_rounds = repeats
        if budget.rounds is not None:  # known now: progress says "round 1 (of at most 15)"
            session.latency_budget = latency_rounds.planned_rounds(budget, repeats, 0.0)
    started = time.monotonic()
    play_round(sessions, 0, sessions[0].latency_budget or repeats)
    total = latency_rounds.planned_rounds(budget, repeats, time.monotonic() - started)
    for session in sessions:
        session.latency_budget = total
    index = 1
    while not latency_rounds.settled(
        sessions, repeats, total, compare.latency_tolerance, compare.max_errors
    ):
        if any(session.stopped or session.failed for session in sessions):
            break  # the run is invalid already: no more rounds of a failing service
        if index >= repeats and observer is not None:
            observer.planned(len(sessions))  # a latency-only round: two more boots
        play_round(sessions, index, total)
        index += 1


def play_round(sessions: Sequence[RefSession], index: int, repeats: int) -> None:
    """Round `index` of entered sessions: time-paired (`paired_round`) when there are several
    at concurrency 1, else each session's repeat in turn (order alternating by round)."""
    if len(sessions) > 1 and sessions[0].plan.concurrency == 1:
        paired_round(sessions, index, repeats)
    else:
        stopped: list[RefSession] = []
        for session in sessions if index % 2 == 0 else sessions[::-1]:
            if stopped:  # not booted: the round ended with the stalled session's repeat
                session.repeats.append(Repeat(index=index, results=(), failure=cut_off(stopped)))
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
    reading = SharedReading()
    sessions = [
        RefSession(plan, "baseline", baseline_ref, option="--baseline", reading=reading),
        RefSession(plan, "candidate", candidate_ref, option="--candidate", reading=reading),
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
    reading = SharedReading()
    sessions = [  # named by the URL without its userinfo, requests sent with it
        RefSession(plan, "baseline", safe_url(baseline_url), url=baseline_url, reading=reading),
        RefSession(
            plan, "candidate", safe_url(candidate_url), url=candidate_url, reading=reading
        ),
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
        gold_hash=plan.asked.gold_hash,
        corpus_hash=plan.corpus_hash,
        repeats=repeats,
        inputs_hash=session.inputs_hash,
        concurrency=plan.concurrency,
        texts=session.side.query.texts is not None,
        definition=run_definition(
            plan.asked.gold_hash,
            plan.corpus_hash,
            query_config_dict(session.side),
            session.config_hash,
            plan.config.compare.k,
        ),
        queries=len(plan.asked.items),
    )



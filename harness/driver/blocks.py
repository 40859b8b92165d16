"""Quality rounds asked block by block (`compare --sequential`), then latency rounds on the
queries asked.

    asked = run_blocks(sessions, repeats, order, block, look)   # sessions entered, paired

The R quality rounds' services are booted first and stay up together (2R services: boots
alternate between the sides round by round, as `runner._paired_round`'s do); then the queries of
`order` (the compare's seeded random order) go in blocks of `block`: each block to every round in
turn, each query to both sides of that round back to back (the order within the pair balanced,
`harness.replay.order`, as in a round of the fixed design), so a block is a set of queries
answered R times per side, and each round is one boot, as it is without --sequential.  After each
block `look(asked, answers)` (answers per side, per round: the verdict stage's rule, passed in as
a callback) says whether to stop; the last block ends the gold set.  Then every service is torn
down and each round's answers are recorded as that side's Repeat.

Latency rounds past R (`harness.driver.latency_rounds`) replay only the queries asked (never more
than quality needed), until the latency rule decides or its budget is spent; quality's first look
waits for `harness.verdict.asked.LATENCY_QUERIES` queries (`sequential_design`) so a latency round
has queries enough to estimate from.  A round stopped because a side failed too many queries in a
row ends the asking: the run is invalid, as in the fixed design.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Callable, Sequence

from harness.driver import latency_rounds
from harness.driver.pairs import (
    PairedSide,
    ask_pair,
    boot_side,
    collector_off,
    cut_short,
    drain,
    probe_adapter,
    side_sequence,
    warm_pairs,
)
from harness.driver.plan import RunPlan, SharedReading
from harness.driver.runner import play_round
from harness.driver.session import RefSession, loadavg, machine_during
from harness.replay.client import READ_BATCH, Sent, Streak
from harness.replay.order import draw_seed, in_rotation, pair_orders
from harness.text.scrub import safe_url
from harness.values.types import Machine, QueryResult, RefRun
from harness.verdict.latency_rule import LatencyBudget

Look = Callable[[int, Sequence[Sequence[Sequence[QueryResult]]]], bool]
"""look(queries asked, answers[side][round]) -> stop now."""


def run_blocks(
    sessions: Sequence[RefSession],
    repeats: int,
    order: Sequence[str],
    block: int,
    look: Look,
    latency_budget: LatencyBudget | None = None,
) -> int:
    """The quality rounds block by block, then the latency rounds on the queries asked (with a
    budget); the number of queries of `order` asked.  `sessions` are entered and paired."""
    for session in sessions:
        session.quality_rounds = repeats
    started = time.monotonic()
    asked = _quality_rounds(sessions, repeats, order, block, look)
    keep = set(order[:asked])
    for session in sessions:  # the latency rounds replay the queries quality asked, no more
        session.ask_only(keep)
    if latency_budget is None or any(s.stopped or s.failed for s in sessions):
        return asked
    compare = sessions[0].plan.config.compare
    tolerance, max_errors = compare.latency_tolerance, compare.max_errors
    per_round = (time.monotonic() - started) / max(repeats, 1)
    total = latency_rounds.planned_rounds(latency_budget, repeats, per_round)
    for session in sessions:
        session.latency_budget = total
    index = repeats
    observer = sessions[0].plan.observer
    # Errored answers past max_errors made the run invalid: no latency round follows (as in
    # the fixed design's rounds); a service timing out on a query waited it out 5 more rounds.
    while not latency_rounds.settled(sessions, repeats, total, tolerance, max_errors):
        if any(session.stopped or session.failed for session in sessions):
            break
        if observer is not None:
            observer.planned(len(sessions))  # a latency-only round: two more boots
        play_round(sessions, index, total)
        index += 1
    return asked


def _quality_rounds(
    sessions: Sequence[RefSession],
    repeats: int,
    order: Sequence[str],
    block: int,
    look: Look,
) -> int:
    plan = sessions[0].plan
    items = sessions[0].items()
    text = dict(items)
    place = {qid: i for i, (qid, _) in enumerate(items)}
    if sessions[0].order_seed is None:
        sessions[0].order_seed = draw_seed()
    seed = sessions[0].order_seed
    rounds: list[list[PairedSide]] = []  # per round, the sides in the sessions' order
    asked = 0
    machines: list[Machine | None] = [None] * repeats
    names = " + ".join(s.described for s in sessions)
    # One label for the R rounds' 2R boots and the queries asked of them (harness.cli.progress
    # counts the boots of a label done when its queries are).
    label = f"rounds 1-{repeats}, asked block by block: {names}"
    with contextlib.ExitStack() as stack:
        for index in range(repeats):
            boot_order = list(sessions) if index % 2 == 0 else list(sessions)[::-1]
            sides = {id(s): PairedSide(s, s.new_log_path(index)) for s in boot_order}
            for session in boot_order:
                if plan.progress is not None:
                    plan.progress(label, 0, len(order), 0, None)  # booting
                side = sides[id(session)]
                boot_side(side, stack, side.session.items())
                if index == 0 and side.channel is not None:
                    # A wrong query.ids stops the run here, before the next service boots.
                    side.probed = probe_adapter(side, items)
            rounds.append([sides[id(s)] for s in sessions])
            if any(side.failure is not None for side in rounds[-1]):
                break  # the run is invalid: every later boot would fail the same way
        live = [[side for side in r if side.channel is not None] for r in rounds]
        rotations = [
            pair_orders(len(items), len(a), seed, i) if a else [] for i, a in enumerate(live)
        ]
        for index, asking in enumerate(live):  # in pairs: no side warmed last every time
            warm_pairs(asking, items, index)
        if any(side.failure is not None for r in rounds for side in r):
            live = []  # a boot failed: the run is invalid, asking the others shows nothing
        elif plan.observer is not None:
            plan.observer.asking(label)
        streaks = {id(side): Streak(side.session.side.query) for r in live for side in r}
        # Per round, per rotation: each side's place in the pair, with its channel and streak.
        orders = [[side_sequence(in_rotation(a, r), streaks) for r in range(len(a))] for a in live]
        clock = [0.0] * repeats
        # Each round's own CPU (its exchanges and reads, not the looks): Machine.client_cpu_ns
        # was the CPU of every round and look since the first block, over one round's queries.
        cpu = [0] * repeats
        loads = [loadavg() for _ in range(repeats)]
        errors = [0] * repeats
        stopped: list[PairedSide] = []
        for start in range(0, len(order), block):
            chunk = order[start : start + block]
            if not live:
                break
            gc_back_on = collector_off()  # as in a round of the fixed design (pairs.py)
            stack.callback(gc_back_on)  # on any way out of the asking
            for index, asking in enumerate(live):
                if not asking:
                    continue
                t0, cpu0 = time.perf_counter(), time.thread_time_ns()
                sent: list[list[tuple[PairedSide, Sent]]] = []
                sequences = orders[index]
                round_label = f"round {index + 1}/{repeats}"
                for offset, query_id in enumerate(chunk):
                    sequence = sequences[rotations[index][place[query_id]]]
                    sent.append(
                        ask_pair(sequence, query_id, text[query_id], round_label, stopped)
                    )
                    if len(sent) == READ_BATCH or offset == len(chunk) - 1 or stopped:
                        clock[index] += time.perf_counter() - t0
                        errors[index] = drain(
                            sent,
                            start + offset + 1 - len(sent),
                            len(order),
                            errors[index],
                            None,
                            label,
                        )
                        sent.clear()
                        for side in asking:  # query.warmup = 0: no probe; the first answers
                            side.session.check_adapter(side.results)
                        t0 = time.perf_counter()
                    if stopped:
                        break
                cpu[index] += time.thread_time_ns() - cpu0
                if stopped:
                    cut_short([s for r in live for s in r], stopped)
                    break
            gc_back_on()  # the look below allocates: collected as usual
            asked = min(start + block, len(order))
            if plan.progress is not None and asked < len(order):
                plan.progress(label, asked, len(order), sum(errors), None)
            if stopped:
                break
            answers = [[r[i].results for r in rounds] for i in range(len(sessions))]
            if look(asked, answers):
                break
        if plan.progress is not None:  # the label's boots are done, however many were asked
            plan.progress(label, len(order), len(order), sum(errors), None)
        for index, asking in enumerate(live):
            if asking:  # `machine_during` counts the CPU since its second argument
                since = time.thread_time_ns() - cpu[index]
                machines[index] = machine_during(loads[index], since, asked * len(asking))
            for side in asking:
                side.timings["queries"] = clock[index]
    for index, sides_of_round in enumerate(rounds):
        for side in sides_of_round:
            side.session.record_repeat(
                index,
                tuple(side.results),
                side.timings,
                side.svc_cm,
                side.log_path,
                side.failure,
                machines[index] if side.channel is not None else None,
                tuple(side.positions),
            )
    return asked


def run_sequential_pair(
    plan: RunPlan,
    baseline: str,
    candidate: str,
    *,
    repeats: int,
    order: Sequence[str],
    block: int,
    look: Look,
    latency_budget: LatencyBudget | None = None,
    urls: bool = False,
) -> tuple[RefRun, RefRun, int]:
    """Both refs (or, with `urls`, two running deployments) measured together, afresh, block by
    block (`run_blocks`); the two RefRuns (one pair_id) and the queries asked."""
    reading = SharedReading()
    if urls:
        sessions = [
            RefSession(plan, "baseline", safe_url(baseline), url=baseline, reading=reading),
            RefSession(plan, "candidate", safe_url(candidate), url=candidate, reading=reading),
        ]
    else:
        sessions = [
            RefSession(plan, "baseline", baseline, option="--baseline", reading=reading),
            RefSession(plan, "candidate", candidate, option="--candidate", reading=reading),
        ]
    with contextlib.ExitStack() as stack:
        if plan.observer is not None:
            plan.observer.planned(len(sessions) * repeats)
        for session in sessions:
            stack.enter_context(session)
        pair_id = secrets.token_hex(8)
        seed = sessions[0].order_seed
        seed = draw_seed() if seed is None else seed
        for session in sessions:
            session.pair_id, session.order_seed = pair_id, seed
        asked = run_blocks(sessions, repeats, order, block, look, latency_budget)
        base, cand = (session.finish() for session in sessions)
    return base, cand, asked

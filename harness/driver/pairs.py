"""One time-paired round of several sessions: every service booted, each query sent to all of
them back to back, then all torn down.

    paired_round(sessions, index, repeats)      # one Repeat appended to each session

The order within each query's exchange is balanced per round (`harness.replay.order`).  What is
timed is only the exchanges; reading answers (every READ_BATCH queries) is off the clock.
"""
from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.boot.deployed import DeployedContext
from harness.boot.service import ServiceContext
from harness.driver.adapter_check import probe_count
from harness.driver.plan import Progress
from harness.driver.session import (
    STOPPED,
    RefSession,
    loadavg,
    machine_during,
    prepare_timings,
)
from harness.errors import ServiceError
from harness.replay.client import (
    READ_BATCH,
    Channel,
    Sent,
    Streak,
    warm_up,
)
from harness.replay.order import draw_seed, in_rotation, pair_orders
from harness.values.types import Machine, QueryResult, RunFailure


@dataclass
class PairedSide:
    """One session's boot within a paired round."""

    session: RefSession
    log_path: Path
    svc_cm: ServiceContext | DeployedContext | None = None
    channel: Channel | None = None
    failure: RunFailure | None = None
    results: list[QueryResult] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    positions: list[int] = field(default_factory=list)  # its place in each query's exchange
    probed: int = 0  # warm-up requests already sent (and checked: `probe_adapter`) in round 1


def probe_adapter(side: PairedSide, items: Sequence[tuple[str, str]]) -> int:
    """Round 1, right after this side's boot: its first warm-up answers read and held against
    the adapter (`harness.driver.adapter_check`), so a wrong query.ids stops the run before the
    next service boots; the warm-up requests sent (the rest are sent as usual)."""
    session, channel = side.session, side.channel
    assert channel is not None
    count = probe_count(session.side.query, items)
    if count == 0 or session.adapter_check.done:
        return 0
    answers = [channel.read(channel.send(*items[i % len(items)])) for i in range(count)]
    session.check_adapter(answers)
    return count


WARM_IN_PAIRS = True
"""Warm up in pairs, as the timed loop asks (`warm_pairs`); False: each side's warm-up in turn,
baseline first (the runner before scripts/latency_noise.py), kept for that script's contrast."""
GC_OFF = True
"""The client's garbage collector held off during the timed loop (`collector_off`)."""


def warm_pairs(
    asking: Sequence[PairedSide], items: Sequence[tuple[str, str]], index: int = 0
) -> None:
    """Each side's `query.warmup` requests, sent in pairs the way the timed loop sends its
    queries: warm-up i of round `index` goes to every side back to back, side (index + i) mod
    n first, so every side ends its warm-up at the same moment, just before the clock, and the
    very last warm-up request (with an odd count, the same side's in every round if the first
    pair always began with the baseline) moves on by round.

    Sent one side after the other (baseline's warm-up, then candidate's), the side warmed last
    met the first timed queries fresh from its warm-up while the other had sat idle through it:
    a side bias of the boot-order-independent kind, the same in every round of every compare.
    Round 1's adapter probe (`probe_adapter`, right after each boot, so the side booted second is
    probed last) does not count toward it: the warm-up in pairs follows in full."""
    if not WARM_IN_PAIRS:
        for side in asking:
            assert side.channel is not None
            warm_up(side.channel, items, skip=side.probed)
        return
    if not items:
        return
    most = max((side.session.side.query.warmup for side in asking), default=0)
    for i in range(most):
        query_id, text = items[i % len(items)]
        for side in in_rotation(asking, (index + i) % len(asking)):
            assert side.channel is not None
            if i < side.session.side.query.warmup:
                side.channel.send(query_id, text)


def collector_off() -> Callable[[], None]:
    """Python's cyclic garbage collector off (when GC_OFF and it is on); what turns it back on
    (once, whenever called).  For the timed loop: a collection that starts inside a timed
    exchange stops the client for as long as it takes, on whichever side happened to be on the
    clock; the loop allocates little that reference counting does not free at once.  Nothing
    is collected first: what the young generations hold is collected once the collector is
    back on, off the loop (a collection here cost the loop 2.5 us per exchange in a compare
    asked block by block, one per block)."""
    if not GC_OFF or not gc.isenabled():
        return lambda: None
    gc.disable()
    pending = [True]

    def back_on() -> None:
        if pending.pop() if pending else False:
            gc.enable()

    return back_on


def round_words(session: RefSession, index: int, repeats: int) -> str:
    """ "round 3/5" when the rounds are fixed; "round 7 (of at most 15)" when latency rounds may
    stop before the budget (`harness.driver.latency_rounds`)."""
    most, quality = session.latency_budget, session.quality_rounds
    if most is not None and quality is not None and most > quality:
        return f"round {index + 1} (of at most {most})"
    return f"round {index + 1}/{repeats}"


def boot_side(
    side: PairedSide, stack: contextlib.ExitStack, items: Sequence[tuple[str, str]]
) -> None:
    """Boot `side`'s service into `stack` and open its channel to it; a side that was not built
    or did not boot gets its failure instead, and no channel."""
    session = side.session
    if not session.bootable:
        side.failure = session.build_failure
        return
    cm = session.boot(side.log_path)
    side.svc_cm = cm
    try:
        svc = cm.__enter__()
    except ServiceError as exc:
        side.failure = RunFailure(exc.stage, exc.message, exc.details)
        return
    stack.push(quiet_exit(cm, side))
    side.timings["boot"] = svc.boot_seconds
    side.timings.update(prepare_timings(svc))
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


def paired_round(sessions: Sequence[RefSession], index: int, repeats: int) -> None:
    """One round: boot every session's service, then each query to all of them back to back
    (the order balanced per round: `harness.replay.order`), then tear them all down; one
    Repeat per session."""
    plan = sessions[0].plan
    items = sessions[0].items()  # query.rewrite is the same for every side (the loader says so)
    if sessions[0].order_seed is None:  # a round played outside run_interleaved
        sessions[0].order_seed = draw_seed()
    seed = sessions[0].order_seed
    order = list(sessions) if index % 2 == 0 else list(sessions)[::-1]
    sides = [PairedSide(s, s.new_log_path(index)) for s in order]
    names = " + ".join(s.described for s in sessions)
    label = f"{round_words(sessions[0], index, repeats)}: {names}"
    machine: Machine | None = None
    with contextlib.ExitStack() as stack:
        for side in sides:
            if side.session.bootable and plan.progress is not None:
                plan.progress(label, 0, len(items), 0, None)  # booting
            boot_side(side, stack, items)
            if side.channel is not None:
                side.probed = probe_adapter(side, items) if index == 0 else 0
        # In the sessions' order (baseline, candidate, ...), not the boot order: the rotations
        # of harness.replay.order are of this list.
        rank = {id(s): i for i, s in enumerate(sessions)}
        asking = sorted(
            (side for side in sides if side.channel is not None),
            key=lambda side: rank[id(side.session)],
        )
        rotations = pair_orders(len(items), len(asking), seed, index) if asking else []
        warm_pairs(asking, items, index)
        if plan.observer is not None and asking:
            plan.observer.asking(label)
        gc_back_on = collector_off()
        stack.callback(gc_back_on)  # on any way out of the round
        load_before, cpu0, t0 = loadavg(), time.thread_time_ns(), time.perf_counter()
        errors = 0
        # Each query's exchanges, in the order sent; read every READ_BATCH queries, off the clock.
        sent: list[list[tuple[PairedSide, Sent]]] = []
        streaks = {id(side): Streak(side.session.side.query) for side in asking}
        stopped: list[PairedSide] = []
        asked = 0  # queries sent to every side: all of them unless the round was stopped
        # Nothing to ask when every side failed to boot (or was never bootable).
        # Per rotation: each side's place in the pair, with its channel and streak.
        sequences = [side_sequence(in_rotation(asking, r), streaks) for r in range(len(asking))]
        for done, (query_id, text) in enumerate(items if asking else (), start=1):
            asked = done
            sent.append(ask_pair(sequences[rotations[done - 1]], query_id, text, label, stopped))
            if len(sent) == READ_BATCH or done == len(items) or stopped:
                errors = drain(sent, done - len(sent), len(items), errors, plan.progress, label)
                sent.clear()
                for side in asking:  # query.warmup = 0: no probe; the first answers instead
                    side.session.check_adapter(side.results)
            if stopped:
                cut_short(asking, stopped)
                break
        elapsed = time.perf_counter() - t0
        gc_back_on()
        if asking:
            machine = machine_during(load_before, cpu0, asked * len(asking))
        for side in asking:
            side.timings["queries"] = elapsed
    for side in sides:
        side.session.record_repeat(
            index,
            tuple(side.results),
            side.timings,
            side.svc_cm,
            side.log_path,
            side.failure,
            machine if side.channel is not None else None,
            tuple(side.positions),
        )


def side_sequence(
    sides: Sequence[PairedSide], streaks: dict[int, Streak]
) -> list[tuple[int, PairedSide, Channel, Streak]]:
    """`sides` in the order a pair sends to them: each one's place, channel and streak (looked
    up once per round, not once per exchange)."""
    sequence = []
    for place, side in enumerate(sides):
        assert side.channel is not None
        sequence.append((place, side, side.channel, streaks[id(side)]))
    return sequence


def ask_pair(
    sequence: Sequence[tuple[int, PairedSide, Channel, Streak]],
    query_id: str,
    text: str,
    label: str,
    stopped: list[PairedSide],
) -> list[tuple[PairedSide, Sent]]:
    """One query to each side of a pair, in `sequence`'s order (`side_sequence`), back to back:
    the exchanges, unread. A side whose streak of failures stops it is stopped (its failure
    named "`label`: side ref") and added to `stopped`: the round ends with this query."""
    exchanges = []
    for place, side, channel, streak in sequence:
        side.positions.append(place)
        one = channel.send(query_id, text)
        exchanges.append((side, one))
        # An answer with no failure in a streak of none leaves it at none.
        if one.failure is None and one.result is None and not streak.count:
            continue
        stop = streak.stops(one)
        if stop is not None:
            who = f"{label}: {side.session.side_name} {side.session.ref}"
            side.failure = side.session.stop(who, stop, side.svc_cm)
            stopped.append(side)
    return exchanges


def cut_off(stopped: Sequence[RefSession]) -> RunFailure:
    """The failure of the other sessions' repeats in a round stopped for `stopped`: cut short
    through no fault of theirs (their missing answers are not counted as their errors)."""
    names = " and ".join(f"{s.side_name} {s.ref}" for s in stopped)
    said = f"the round was stopped when {names} failed too many queries in a row"
    return RunFailure(STOPPED, said)


def cut_short(asking: Sequence[PairedSide], stopped: Sequence[PairedSide]) -> None:
    """The other sides of a paired round stopped for `stopped`: their repeat failed too."""
    failure = cut_off([side.session for side in stopped])
    for side in asking:
        if side.failure is None:
            side.failure = failure


def drain(
    sent: Sequence[Sequence[tuple[PairedSide, Sent]]],
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
            if result.error is not None:  # not `result.ok`: a property call per answer
                errors += 1
        if progress is not None:
            progress(label, before + offset, total, errors, result)
    return errors


def quiet_exit(cm: ServiceContext | DeployedContext, side: PairedSide) -> Callable[..., bool]:
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



"""The load phase of compare --rate: for each rate, rounds alternating between the refs
(baseline, candidate, candidate, baseline, ...), each booting one service afresh and sending it
the gold queries (cycled) open loop on the rate's schedule, the same schedule for both refs.

    rounds = play_load(sessions, rates=(10.0, 80.0), duration=RateDuration(seconds=10),
                       pairs=3, seed=7, arrivals="poisson")        # LoadRounds, in play order

`sessions` are entered `RefSession`s (checked out and built: `harness.driver.session`); each
round boots its service as a timed round does (`RefSession.boot`), warms it with
`query.warmup` requests off the clock, fires (`harness.replay.open_loop.fire`) and tears it
down.  One service runs at a time: the client and the service share the machine, and a second
service would be a third party to it.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.driver.session import RefSession
from harness.errors import ServiceError
from harness.replay.open_loop import fire
from harness.replay.schedule import RateDuration, arrival_schedule
from harness.values.types import LoadRound


def round_order(pairs: int) -> tuple[int, ...]:
    """Which session (0 baseline, 1 candidate) plays each of a rate's 2 * `pairs` rounds:
    0 1 1 0 0 1 1 0 ... so neither side always goes first, nor always right after a boot."""
    return tuple(k for p in range(pairs) for k in ((0, 1) if p % 2 == 0 else (1, 0)))


def play_load(
    sessions: Sequence[RefSession],
    *,
    rates: Sequence[float],
    duration: RateDuration,
    pairs: int,
    seed: int,
    arrivals: str,
) -> tuple[LoadRound, ...]:
    """Every rate's rounds, lowest rate first; a side whose service would not boot records a
    failed round (and plays no more: every later boot would fail the same way)."""
    plan = sessions[0].plan
    items = sessions[0].items()  # query.rewrite is the same for both sides (the loader says so)
    played: list[LoadRound] = []
    failed: set[int] = set()
    for rate in rates:
        schedule = arrival_schedule(rate, duration.count(rate), seed=seed, arrivals=arrivals)
        seen = [0, 0]
        for n, which in enumerate(round_order(pairs)):
            session = sessions[which]
            index = seen[which]
            seen[which] += 1
            label = f"load {rate:g}/s round {n + 1}/{2 * pairs}: {session.described}"
            if plan.progress is not None:
                plan.progress(label, 0, len(schedule), 0, None)
            if which in failed or not session.bootable:
                why = "not booted: an earlier boot failed" if which in failed else "not built"
                played.append(_failed(session, rate, index, why))
                continue
            try:
                played.append(_round(session, rate, index, schedule, items))
            except ServiceError as exc:
                failed.add(which)
                played.append(_failed(session, rate, index, exc.message))
            if plan.progress is not None:
                plan.progress(label, len(schedule), len(schedule), played[-1].errors, None)
    return tuple(played)


def _round(
    session: RefSession,
    rate: float,
    index: int,
    schedule: Sequence[float],
    items: Sequence[tuple[str, str]],
) -> LoadRound:
    query = session.side.query
    log_path = session.log_dir / f"load_{rate:g}_{session.sha[:8]}_{session.side_name}_r{index}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with session.boot(log_path) as svc:
        prepared = session.requests.for_url(svc.url)
        payloads = [prepared[text] for _, text in items]
        shots = fire(
            svc.url,
            payloads,
            schedule,
            query,
            open_socket=svc.open_socket,
            warm=max(query.warmup, 8),
        )
    answered = [s for s in shots if s.outcome == "ok"]
    last = max((s.latency_ms / 1e3 + at for s, at in zip(shots, schedule, strict=True)),
               default=0.0)
    return LoadRound(
        side=session.side_name,
        rate=rate,
        index=index,
        sent=len(shots),
        latencies_ms=tuple(round(s.latency_ms, 4) for s in answered),
        lags_ms=tuple(round(s.lag_ms, 4) for s in shots),
        errors=sum(s.outcome == "error" for s in shots),
        timeouts=sum(s.outcome == "timeout" for s in shots),
        elapsed_s=last,
    )


def _failed(session: RefSession, rate: float, index: int, why: str) -> LoadRound:
    return LoadRound(session.side_name, rate, index, 0, (), (), 0, 0, 0.0, failure=why)

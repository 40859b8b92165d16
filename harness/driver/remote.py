"""Rounds on Ray: one task per round, so the two sides of a latency pair share a machine.

    require_ray("--ray")               # HarnessError (exit 2) naming the extra when it is missing
    run_rounds(sessions, repeats)      # the driver: one task per round; Repeats back, in order

A round is what `runner.play_round` runs: every session's service booted, each query sent to
all of them back to back, everything torn down.  On Ray each round is one task: its worker opens
the same sessions again (the same refs, labels and pins), checks out and builds them there (a
RefSession: worktree and build, from that machine's build cache), plays the round and returns,
per session, its Repeat and what its build said.  The driver appends the Repeats in round order,
so each session's `finish()` writes its record under the driver's results directory exactly as
a run without Ray does.  A sweep's round holds every point (the reference among them), so each
value is time-paired with the reference as it is without Ray.

Each task reserves as many CPUs as the smallest machine in the cluster has: one round per
machine at a time.  Two rounds on one machine would contend for its CPU, and a latency pair
measured beside another round is noisier than one measured alone; several machines run several
rounds at once.  Every machine needs harness (the same version: checked) and the repository,
config, gold set and results directory at the same paths (one shared filesystem, or identical
copies; the logs stay on the machine that booted the service).

Ray is imported here only, and only when called: `harness` without --ray never loads it.
"""

from __future__ import annotations

import contextlib
import socket
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

from harness import __version__
from harness.config import HarnessConfig
from harness.driver.plan import RunPlan, SharedReading
from harness.driver.runner import RefSession, play_round
from harness.errors import HarnessError, RefError, clip
from harness.process.extras import require
from harness.results.records import host_fingerprint
from harness.values.types import Repeat, RunFailure

CONNECT_TIMEOUT_S = 10.0
"""How long `--ray HOST:PORT` may take to accept a TCP connection before it is called unreachable
(Ray itself retries a wrong address for minutes)."""
CANCEL_GRACE_S = 60.0
"""After a failure or Ctrl-C, how long the driver waits for cancelled rounds to tear down their
services before it disconnects (a worker killed mid-round would leave its services running)."""


@dataclass(frozen=True)
class SessionSpec:
    """What a worker needs to open a session again: the RefSession arguments, its SHA and its
    configuration (a matrix's sessions each have their own)."""

    config: HarnessConfig
    side: str
    ref: str
    label: str
    pins: Mapping[str, str]
    sha: str


@dataclass(frozen=True)
class RoundOutcome:
    """One session's part of a round played on a worker."""

    repeat: Repeat
    build_failure: RunFailure | None
    build_seconds: float | None
    build_cached: bool | None
    host: Mapping[str, str]
    tool_version: str


def require_ray(option: str = "--ray") -> ModuleType:
    """The `ray` module, or a HarnessError saying how to install it."""
    return require("ray", option)


def run_rounds(sessions: Sequence[RefSession], repeats: int) -> None:
    """Play rounds 0..repeats-1 of `sessions` (not entered: nothing is built here) as Ray
    tasks, and append each round's Repeat to its session, in round order."""
    ray = require_ray()
    plan = sessions[0].plan
    assert plan.ray is not None
    specs = [
        SessionSpec(s.plan.config, s.side_name, s.requested_ref, s.ref, dict(s.pins), s.sha)
        for s in sessions
    ]
    # The worker's plan: no progress lines (the terminal is the driver's), no Ray of its own.
    worker_plan = replace(
        plan,
        progress=None,
        observer=None,
        ray=None,
        remote_rounds=None,
        order_seed=sessions[0].order_seed,
    )
    with _connected(ray, plan.ray):
        task = ray.remote(num_cpus=_round_cpus(ray), max_retries=0)(play_remote_round)
        pending = {task.remote(worker_plan, specs, i, repeats): i for i in range(repeats)}
        outcomes: dict[int, list[RoundOutcome]] = {}
        try:
            while pending:
                (ready,), _ = ray.wait(list(pending), num_returns=1)
                index = pending.pop(ready)
                outcomes[index] = _get(ray, ready)
                where = outcomes[index][0].host.get("hostname", "?")
                print(f"harness: round {index + 1}/{repeats} done on {where}", file=sys.stderr)
        finally:
            if pending:  # a KeyboardInterrupt in each task: its services are torn down
                for ref in pending:
                    ray.cancel(ref)
                ray.wait(list(pending), num_returns=len(pending), timeout=CANCEL_GRACE_S)
    for index in range(repeats):
        for session, outcome in zip(sessions, outcomes[index], strict=True):
            _absorb(session, outcome)


def play_remote_round(
    plan: RunPlan, specs: Sequence[SessionSpec], index: int, repeats: int
) -> list[RoundOutcome]:
    """The task: open, check out and build every session here, play round `index`, tear down."""
    reading = SharedReading()  # the worker's own: nothing of the driver's crosses over
    sessions = [
        RefSession(
            replace(plan, config=s.config),
            s.side,
            s.ref,
            label=s.label,
            pins=s.pins,
            reading=reading,
        )
        for s in specs
    ]
    for session, spec in zip(sessions, specs, strict=True):
        if session.sha != spec.sha:
            raise RefError(
                f"{spec.ref} is {session.sha[:12]} on {host_fingerprint()['hostname']} but "
                f"{spec.sha[:12]} where harness was started: every machine must see the same "
                "repository",
                [f"update the repository at {plan.config.repo} on every machine"],
            )
    with contextlib.ExitStack() as stack:
        entered = [stack.enter_context(session) for session in sessions]
        play_round(entered, index, repeats)
    host = host_fingerprint()
    return [
        RoundOutcome(
            repeat=session.repeats[-1],
            build_failure=session.build_failure,
            build_seconds=session.timings.get("build"),
            build_cached=session.build_cached,
            host=host,
            tool_version=__version__,
        )
        for session in sessions
    ]


def _absorb(session: RefSession, outcome: RoundOutcome) -> None:
    """One round's outcome into the driver's session, as if the round had run here."""
    if outcome.tool_version != __version__:
        raise HarnessError(
            f"--ray: a worker runs harness {outcome.tool_version}, this machine "
            f"{__version__}: records from two versions are not one run",
            ["install the same harness version on every machine of the cluster"],
        )
    session.repeats.append(outcome.repeat)
    if session.build_failure is None:
        session.build_failure = outcome.build_failure
    if outcome.build_seconds is not None:
        session.timings.setdefault("build", outcome.build_seconds)
    if session.build_cached is None:
        session.build_cached = outcome.build_cached
    host = dict(outcome.host)
    if session.host is None:
        session.host = host
    elif host["hostname"] not in session.host["hostname"].split(", "):
        # Rounds on several machines: the record names them all.
        names = f"{session.host['hostname']}, {host['hostname']}"
        session.host = {**session.host, "hostname": names}


@contextlib.contextmanager
def _connected(ray: Any, address: str) -> Iterator[None]:
    """Connected to Ray for the block: `auto` finds a running cluster (RAY_ADDRESS, `ray
    start`) or starts a local one for this run; anything else is a cluster address.  A Ray
    the caller had already initialised is used and left running."""
    if ray.is_initialized():
        yield
        return
    if address != "auto":
        _check_reachable(address)
    try:
        ray.init(
            address=None if address == "auto" else address,
            include_dashboard=False,
            configure_logging=False,
        )
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise HarnessError(
            f"--ray {address}: cannot connect to a Ray cluster: {exc}",
            ["start one (ray start --head), or give --ray auto to start a local one"],
        ) from None
    try:
        yield
    finally:
        ray.shutdown()


def _check_reachable(address: str) -> None:
    """A HarnessError now when nothing listens at HOST:PORT (or ray://HOST:PORT)."""
    host, sep, port = address.split("://", 1)[-1].rpartition(":")
    if not sep or not host or not port.isdigit():
        raise HarnessError(
            f"--ray {clip(address)}: not auto and not HOST:PORT",
            ["give --ray auto, or a cluster's address, e.g. --ray 10.0.0.5:6379"],
        )
    try:
        with socket.create_connection((host.strip("[]"), int(port)), CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        raise HarnessError(
            f"--ray {clip(address)}: nothing answers there ({exc.strerror or exc})",
            ["start the cluster (ray start --head), or give --ray auto to start a local one"],
        ) from None


def _round_cpus(ray: Any) -> float:
    """The CPUs of the smallest live machine that has any: each round reserves a whole one."""
    cpus = [
        float(node["Resources"].get("CPU", 0))
        for node in ray.nodes()
        if node.get("Alive") and node.get("Resources", {}).get("CPU", 0) > 0
    ]
    return max(1.0, min(cpus, default=1.0))


def _get(ray: Any, ref: Any) -> list[RoundOutcome]:
    """A round's outcome; a HarnessError raised on the worker is raised here as itself."""
    try:
        outcome: list[RoundOutcome] = ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, HarnessError):
            raise cause from None
        raise
    return outcome

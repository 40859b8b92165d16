#!/usr/bin/env python
"""Where the round-to-round noise and any side bias of latency rounds come from: the harness's
rounds, through its own runner, interleaved in time with a bare loop of fresh process pairs on
the same small, fast services.

    python scripts/latency_noise.py [--rounds 60] [--queries 50] [--cost-ms 2] [--sleep-ms 0]
                                    [--variants harness,bare] [--mode plain|sandbox]

Each variant plays one A/A round (main against main, both booted afresh) in turn, in a shuffled
order per round, so load that comes and goes meets every variant alike.  A round's estimate is
`latency_rule.round_estimate` (the 20%-trimmed mean of per-query log(candidate/baseline)) for
every variant.  Printed per variant: the rounds, the mean round log ratio with its 95% t interval
(a side bias: it should cover 0), and the spread (the SD of the round log ratios, with its 95%
chi-square interval), with the ratio of each spread to the bare loop's.

Variants:

    harness         the runner as it is (`harness.driver.runner.play_round`)
    bare            fresh pairs booted by Popen, one raw keep-alive socket each, the warm-up
                    interleaved like the timed loop, exactly half the queries baseline-first
    bare-fixed-warm the bare loop, warm-up always baseline then candidate (the runner before
                    this script: `harness.driver.pairs.WARM_IN_PAIRS` off)
    harness-fixed-warm  the runner with the warm-up always baseline first, then candidate
    harness-gc      the runner with the collector left on during the timed loop
                    (`harness.driver.pairs.GC_OFF` off)
    bare-warm0 / bare-warm20   the bare loop with 0 or 20 warm-up requests per side
    bare-hashseed   the bare loop with PYTHONHASHSEED=0 for both services
    bare-pin        the bare loop with the client on CPU 0 and both services on CPU 1

The services: `cost_service.py` (a fixed CPU cost per query, `--cost-ms`; `--sleep-ms` adds a
sleep, 3 ms with no CPU cost is the shape of the end-to-end fixture whose A/A was once called
slower).  Nothing but 127.0.0.1; every process started here is ended by its pid.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import math
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # cost_service beside it

import cost_service

from harness.verdict.latency_rule import round_estimate

Round = Callable[[int], tuple[np.ndarray, np.ndarray]]


@dataclass
class Tally:
    name: str
    logs: list[float] = field(default_factory=list)
    within: list[float] = field(default_factory=list)
    seconds: float = 0.0


# --------------------------------------------------------------------------- the bare loop


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _quickack(sock: socket.socket) -> None:
    """Acknowledge at once, as the harness's client does (harness.replay.wire._quickack): else a
    service writing headers and body apart waits for the 40 ms delayed ACK."""
    with contextlib.suppress(AttributeError, OSError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)


def _read_answer(sock: socket.socket, buffer: bytearray) -> None:
    """Read one HTTP/1.1 answer with a Content-Length off `sock` (what is left in `buffer`)."""
    while b"\r\n\r\n" not in buffer:
        _quickack(sock)
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buffer += chunk
    head, _, _ = bytes(buffer).partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    end = len(head) + 4 + length
    while len(buffer) < end:
        _quickack(sock)
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buffer += chunk
    del buffer[:end]


class BareService:
    """One fresh service process, booted by Popen in its own session, and a keep-alive socket."""

    def __init__(self, repo: Path, env: dict[str, str], cpus: set[int] | None) -> None:
        self.port = _free_port()
        self.process = subprocess.Popen(
            [sys.executable, str(repo / "svc.py"), "--port", str(self.port)],
            cwd=repo,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        if cpus is not None:
            os.sched_setaffinity(self.process.pid, cpus)
        deadline = time.monotonic() + 30
        while True:
            try:
                self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
                break
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.close()
                    raise SystemExit("a bare service did not start") from None
                time.sleep(0.01)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = bytearray()
        self.ask(b"/health")

    def request(self, path: bytes) -> bytes:
        host = f"127.0.0.1:{self.port}".encode()
        return b"GET " + path + b" HTTP/1.1\r\nHost: " + host + b"\r\n\r\n"

    def ask(self, path: bytes) -> int:
        raw = self.request(path)
        started = time.perf_counter_ns()
        self.sock.sendall(raw)
        _read_answer(self.sock, self.buffer)
        return time.perf_counter_ns() - started

    def close(self) -> None:
        with contextlib.suppress(AttributeError, OSError):
            self.sock.close()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, 9)
        self.process.wait()


def bare_round(
    repo: Path,
    queries: Sequence[bytes],
    *,
    warmup: int = 3,
    warm_in_pairs: bool = True,
    hashseed: str | None = None,
    pin: bool = False,
) -> Round:
    env = {"PATH": os.environ.get("PATH", os.defpath)}
    if hashseed is not None:
        env["PYTHONHASHSEED"] = hashseed

    def play(index: int) -> tuple[np.ndarray, np.ndarray]:
        mine = os.sched_getaffinity(0)
        if pin:
            os.sched_setaffinity(0, {0})
        try:
            order = [0, 1] if index % 2 == 0 else [1, 0]  # boot order alternates, as the runner's
            booted: dict[int, BareService] = {}
            try:
                for side in order:
                    booted[side] = BareService(repo, env, {1} if pin else None)
                sides = [booted[0], booted[1]]
                if warm_in_pairs:
                    for i in range(warmup):
                        first = i % 2
                        for s in (sides[first], sides[1 - first]):
                            s.ask(queries[i % len(queries)])
                else:
                    for s in sides:
                        for i in range(warmup):
                            s.ask(queries[i % len(queries)])
                flips = [0] * (len(queries) // 2) + [1] * (len(queries) - len(queries) // 2)
                random.shuffle(flips)
                base = np.zeros(len(queries))
                cand = np.zeros(len(queries))
                for q, (path, flip) in enumerate(zip(queries, flips, strict=True)):
                    if flip:
                        cand[q] = sides[1].ask(path)
                        base[q] = sides[0].ask(path)
                    else:
                        base[q] = sides[0].ask(path)
                        cand[q] = sides[1].ask(path)
                return base / 1e6, cand / 1e6
            finally:
                for side in order[::-1]:
                    if side in booted:
                        booted[side].close()
        finally:
            os.sched_setaffinity(0, mine)

    return play


# --------------------------------------------------------------------------- the runner


@contextlib.contextmanager
def harness_rounds(repo: Path, results: Path) -> Iterator[Round]:
    """The runner's own rounds of main against main (entered sessions, a pair id, a seed)."""
    from harness.config import load_config
    from harness.driver import runner
    from harness.driver.plan import Asked
    from harness.gold import check_files
    from harness.replay.order import draw_seed

    config = load_config(repo / "harness.toml", repo=repo)
    gold, report = check_files(config.gold, config.corpus)
    report.raise_if_errors()
    plan = runner.RunPlan(
        config=config, asked=Asked.of(gold), corpus_hash=None, results_dir=results
    )
    reading = runner.SharedReading()  # both sides' requests encoded once, as compare's are
    sessions = [
        runner.RefSession(plan, "baseline", "main", reading=reading),
        runner.RefSession(plan, "candidate", "main", reading=reading),
    ]
    ids = [q.id for q in gold.queries]
    with contextlib.ExitStack() as stack:
        for s in sessions:
            stack.enter_context(s)
        seed = draw_seed()
        for s in sessions:
            s.pair_id, s.order_seed = "noise", seed

        def play(index: int) -> tuple[np.ndarray, np.ndarray]:
            runner.play_round(sessions, index, index + 1)
            out = []
            for s in sessions:
                rep = s.repeats[-1]
                if rep.failure is not None:
                    raise SystemExit(f"a harness round failed: {rep.failure.message}")
                by_id = {r.query_id: r.latency_ns for r in rep.results}
                out.append(np.array([by_id[i] for i in ids], dtype=np.float64) / 1e6)
                s.repeats.clear()  # nothing kept across rounds but what the runner keeps
            return out[0], out[1]

        yield play


@contextlib.contextmanager
def patched(target: object, name: str, value: object) -> Iterator[None]:
    old = getattr(target, name)
    setattr(target, name, value)
    try:
        yield
    finally:
        setattr(target, name, old)


def with_patch(play: Round, target: object, name: str, value: object) -> Round:
    def inner(index: int) -> tuple[np.ndarray, np.ndarray]:
        with patched(target, name, value):
            return play(index)

    return inner


# --------------------------------------------------------------------------- statistics


def chi2_sd_interval(sd: float, n: int) -> tuple[float, float]:
    """95% interval of a normal SD from n values (scipy's chi-square quantiles)."""
    from scipy.stats import chi2

    df = n - 1
    return sd * math.sqrt(df / chi2.ppf(0.975, df)), sd * math.sqrt(df / chi2.ppf(0.025, df))


def t_interval(values: Sequence[float]) -> tuple[float, float, float]:
    from scipy.stats import t

    x = np.asarray(values)
    mean = float(x.mean())
    half = float(t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return mean, mean - half, mean + half


def summary(tallies: Sequence[Tally]) -> None:
    bare = next((t for t in tallies if t.name == "bare"), None)
    bare_sd = float(np.std(bare.logs, ddof=1)) if bare and len(bare.logs) > 2 else math.nan
    print(
        f"{'variant':<20} {'rounds':>6}  {'mean log ratio (95% CI)':<28} "
        f"{'spread SD (95% CI)':<26} {'/bare':>6} {'within SD':>9} {'s/round':>8}"
    )
    for t in tallies:
        n = len(t.logs)
        if n < 3:
            print(f"{t.name:<20} {n:>6}  too few rounds")
            continue
        mean, lo, hi = t_interval(t.logs)
        sd = float(np.std(t.logs, ddof=1))
        slo, shi = chi2_sd_interval(sd, n)
        within = math.sqrt(float(np.mean(t.within)))
        print(
            f"{t.name:<20} {n:>6}  {mean:+.4f} ({lo:+.4f} to {hi:+.4f})   "
            f"{sd:.4f} ({slo:.4f}-{shi:.4f})    {sd / bare_sd:>6.2f} {within:>9.4f} "
            f"{t.seconds / n:>8.2f}"
        )


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(f"signal {signum}")  # unwinds: every service started here is ended


def main() -> int:
    signal.signal(signal.SIGTERM, _stop)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--cost-ms", type=float, default=2.0, help="CPU work per query")
    parser.add_argument("--sleep-ms", type=float, default=0.0, help="sleep per query")
    parser.add_argument("--variants", default="harness,bare")
    parser.add_argument("--mode", choices=("plain", "sandbox"), default="plain")
    parser.add_argument("--seed", type=int, default=0, help="the order of variants per round")
    args = parser.parse_args()
    if args.mode == "plain":
        os.environ["HARNESS_SANDBOX"] = "off"
    chosen = args.variants.split(",")
    print(
        f"latency noise: {args.rounds} A/A rounds per variant, {args.queries} queries, "
        f"{args.cost_ms:g} ms CPU + {args.sleep_ms:g} ms sleep per query, {args.mode} mode, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at the start",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="latency-noise-") as tmp:
        os.environ.setdefault("HARNESS_CACHE_DIR", str(Path(tmp) / "cache"))
        repo = cost_service.make_repo(
            Path(tmp) / "repo", queries=args.queries, cost_ms=args.cost_ms, sleep_ms=args.sleep_ms
        )
        width = max(3, len(str(args.queries)))
        paths = [
            f"/search?q=topic+q{n:0{width}d}&k=10".encode() for n in range(1, args.queries + 1)
        ]
        with harness_rounds(repo, Path(tmp) / "results") as play:
            from harness.driver import pairs

            variants: dict[str, Round] = {
                "harness": play,
                "harness-fixed-warm": with_patch(play, pairs, "WARM_IN_PAIRS", False),
                "harness-gc": with_patch(play, pairs, "GC_OFF", False),
                "bare": bare_round(repo, paths),
                "bare-fixed-warm": bare_round(repo, paths, warm_in_pairs=False),
                "bare-warm0": bare_round(repo, paths, warmup=0),
                "bare-warm20": bare_round(repo, paths, warmup=20),
                "bare-hashseed": bare_round(repo, paths, hashseed="0"),
                "bare-pin": bare_round(repo, paths, pin=True),
            }
            unknown = [v for v in chosen if v not in variants]
            if unknown:
                raise SystemExit(f"unknown variants {unknown}: choose from {sorted(variants)}")
            tallies = {v: Tally(v) for v in chosen}
            shuffle = random.Random(args.seed)
            loads = []
            for index in range(args.rounds):
                todo = list(chosen)
                shuffle.shuffle(todo)
                for name in todo:
                    started = time.monotonic()
                    base, cand = variants[name](index)
                    est = round_estimate(base, cand)
                    tally = tallies[name]
                    tally.logs.append(est.log_ratio)
                    tally.within.append(est.within_var)
                    tally.seconds += time.monotonic() - started
                loads.append(os.getloadavg()[0])
                if (index + 1) % 10 == 0:
                    print(f"  {index + 1} rounds, load {loads[-1]:.1f}", flush=True)
                    gc.collect()
    print(f"load average (1 min) over the run: {min(loads):.1f}-{max(loads):.1f}")
    summary(list(tallies.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

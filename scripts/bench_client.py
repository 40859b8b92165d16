#!/usr/bin/env python
"""What the harness's timed path adds over a native client, per query, at concurrency 1.

    python scripts/bench_client.py [--queries 2000] [--seed 0]

Boots the bundled demo service once (harness.demo.materialise, then the project's own
harness.boot.service.running_service, in isolation, on 127.0.0.1), warms it up, then sends every
query of its gold set, cycled to --queries, through three clients in an order drawn afresh for
each query, so that a burst of machine load hits all three alike (the same time-pairing as
`compare`):

    raw      a raw-socket loop: one keep-alive socket, TCP_NODELAY, the request bytes encoded
             beforehand, recv until Content-Length bytes of body are in; nothing else
    harness  harness.replay.client.Channel.ask: the path `compare` times (answer parsing is
             outside the clock, as in compare)
    httpx    harness.replay.client.ask over an httpx.Client: the timed path before issue 12

The raw loop is timed by time.perf_counter_ns around its send and receive; the other two report
the latency_ns they record themselves, which is what `compare` pairs.  The
overhead of a client is the median over queries of its latency minus the raw loop's for the same
query (paired), with a 95% bootstrap interval over queries.  `wrk` measures throughput rather
than per-query latency at concurrency 1 and is not needed: the raw loop is the native client.
Exits 1 when the harness's overhead is above 0.3 ms (the issue's bound), else 0.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np

from harness.boot.service import running_service
from harness.config import load_config
from harness.demo import materialise
from harness.gold import load_gold
from harness.replay.client import Channel, ask
from harness.replay.request import encode_request, make_request

BOUND_MS = 0.3


class RawLoop:
    """The native client: bytes out, bytes in, on one keep-alive socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock  # RunningService.connect(): plain loopback, or into the sandbox
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def exchange(self, raw: bytes) -> int:
        self.sock.sendall(raw)
        data = b""
        while b"\r\n\r\n" not in data:
            data += self.sock.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        while len(body) < length:
            body += self.sock.recv(65536)
        return len(body)

    def close(self) -> None:
        self.sock.close()


def _interval(diffs: np.ndarray, rng: np.random.Generator) -> tuple[float, float, float]:
    idx = rng.integers(0, diffs.size, size=(2000, diffs.size))
    medians = np.median(diffs[idx], axis=1)
    lo, hi = np.percentile(medians, [2.5, 97.5])
    return float(np.median(diffs)), float(lo), float(hi)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)

    with tempfile.TemporaryDirectory(prefix="bench-client-") as tmp:
        repo = materialise(Path(tmp) / "demo")
        config = load_config(repo / "harness.toml", repo=repo)
        gold = load_gold(config.gold, corpus=config.corpus)
        side = config.side("baseline")
        texts = [q.text for q in gold.queries]
        items = [(f"q{i}", texts[i % len(texts)]) for i in range(args.queries)]
        with running_service(side.service, repo, log_path=Path(tmp) / "svc.log") as svc:
            prepared = {t: encode_request(svc.url, make_request(side.query, t)) for t in texts}
            raw = RawLoop(svc.connect())
            lean = Channel(svc.url, side.query, items, open_socket=svc.open_socket)
            client = httpx.Client(trust_env=False, http2=False, transport=svc.transport())

            def raw_ns(qid: str, text: str) -> int:
                started = time.perf_counter_ns()
                raw.exchange(prepared[text])
                return time.perf_counter_ns() - started

            clients: dict[str, Callable[[str, str], int]] = {
                "raw": raw_ns,
                "harness": lambda qid, text: lean.ask(qid, text).latency_ns,
                "httpx": lambda qid, text: ask(client, svc.url, side.query, qid, text).latency_ns,
            }
            for qid, text in items[:50]:  # warm-up, untimed
                for call in clients.values():
                    call(qid, text)
            ns: dict[str, list[int]] = {name: [] for name in clients}
            load_before = os.getloadavg()[0]
            for qid, text in items:
                for name in rng.sample(list(clients), len(clients)):
                    ns[name].append(clients[name](qid, text))
            load_after = os.getloadavg()[0]
            raw.close()
            lean.close()
            client.close()

    ms = {name: np.asarray(v, dtype=np.float64) / 1e6 for name, v in ns.items()}
    boot = np.random.default_rng(args.seed)
    print(
        f"bench_client: {args.queries} queries of the demo service at concurrency 1, "
        f"each sent through all three clients in a random order; load average "
        f"{load_before:.2f} -> {load_after:.2f} on {os.cpu_count()} CPUs"
    )
    print(f"{'client':<8} {'p50 ms':>8} {'p95 ms':>8}  over raw: median per query (95% CI)")
    verdict = 0
    for name in ("raw", "harness", "httpx"):
        p50, p95 = np.percentile(ms[name], [50, 95])
        if name == "raw":
            print(f"{name:<8} {p50:8.3f} {p95:8.3f}  -")
            continue
        mid, lo, hi = _interval(ms[name] - ms["raw"], boot)
        print(f"{name:<8} {p50:8.3f} {p95:8.3f}  {mid:+.3f} ms ({lo:+.3f} to {hi:+.3f})")
        if name == "harness" and mid > BOUND_MS:
            verdict = 1
    word = "within" if verdict == 0 else "OVER"
    print(f"harness timed path: {word} the {BOUND_MS} ms bound over the native client")
    return verdict


if __name__ == "__main__":
    sys.exit(main())

"""The open-loop client of compare --rate: requests sent on a fixed schedule, however slowly the
service answers, each timed from when it was DUE.

    shots = fire(url, payloads, schedule, query, open_socket=svc.open_socket, warm=8)
    # one Shot per request: latency from the intended send time, the client's own send lag

An asyncio loop over raw streams: every request due is sent at its time on a free keep-alive
connection, or on a new one when all are busy (its connect is then on the clock, as it would be
for a real client), so the number in flight grows as the service falls behind, and the queue the
service builds shows in the latencies.  The requests are the project's own bytes
(`harness.replay.request.Requests.for_url`), the same the timed rounds send.

The client checks itself: `Shot.lag_ms` is how late it sent each request behind its due time
(the loop woke late: the client, not the service).  On a small machine the client and the
service share the cores; `harness.verdict.load` says when the lag was too large for the
numbers at that rate to be the service's alone.  Answers are not read for ids: only the status
and the whole body, under `query.timeout` (counted from the due time) and `query.max_bytes`.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from harness.boot.probe import OpenSocket
from harness.config import QueryConfig

MOST_CONNECTIONS = 2048
"""Connections open at once: beyond this the service's backlog, not the client, is the story;
a request due with none free waits for one (its latency still counts from its due time)."""


@dataclass(frozen=True)
class Shot:
    """One request: `latency_ms` from its due time to the last byte of the answer (to the
    failure when it failed), `lag_ms` from its due time to when the client started sending it,
    `outcome` "ok", "timeout" or "error" (a non-2xx status, a broken connection)."""

    latency_ms: float
    lag_ms: float
    outcome: str


class _Bad(Exception):
    pass


class _Pool:
    """Idle keep-alive connections, and how to open another."""

    def __init__(self, address: tuple[str, int], open_socket: OpenSocket | None) -> None:
        self.address, self.open_socket = address, open_socket
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self.count = 0
        self.free = asyncio.Condition()

    async def take(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.idle:
            return self.idle.pop()
        async with self.free:
            while not self.idle and self.count >= MOST_CONNECTIONS:
                await self.free.wait()
        if self.idle:
            return self.idle.pop()
        self.count += 1
        try:
            return await self._open()
        except BaseException:
            self.count -= 1
            raise

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.open_socket is None:
            reader, writer = await asyncio.open_connection(*self.address)
        else:  # a socket of the service's sandbox, made and connected off the loop
            sock = await asyncio.get_running_loop().run_in_executor(None, self._sandboxed)
            reader, writer = await asyncio.open_connection(sock=sock)
        sock_ = writer.get_extra_info("socket")
        if sock_ is not None:
            sock_.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return reader, writer

    def _sandboxed(self) -> socket.socket:
        assert self.open_socket is not None
        sock = self.open_socket()
        try:
            sock.connect(self.address)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        return sock

    async def give(
        self, conn: tuple[asyncio.StreamReader, asyncio.StreamWriter], reusable: bool
    ) -> None:
        if reusable:
            self.idle.append(conn)
        else:
            self.count -= 1
            conn[1].close()
        async with self.free:
            self.free.notify()

    def close(self) -> None:
        for _, writer in self.idle:
            writer.close()
        self.idle.clear()


async def _answer(reader: asyncio.StreamReader, most: int) -> tuple[int, bool]:
    """(status, whether the connection can carry another request) of one HTTP/1.1 answer,
    its whole body read."""
    head = await reader.readuntil(b"\r\n\r\n")
    if len(head) > most:
        raise _Bad("headers too large")
    lines = head.decode("latin-1").split("\r\n")
    try:
        status = int(lines[0].split(" ", 2)[1])
    except (IndexError, ValueError):
        raise _Bad(f"no status line: {lines[0][:80]!r}") from None
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    keep = headers.get("connection", "").lower() != "close"
    if "chunked" in headers.get("transfer-encoding", "").lower():
        size = 0
        while True:
            size_line = await reader.readuntil(b"\r\n")
            chunk = int(size_line.split(b";")[0].strip() or b"0", 16)
            size += chunk
            if size > most:
                raise _Bad("answer too large")
            await reader.readexactly(chunk + 2)
            if chunk == 0:  # trailers are not expected from a search service: none read
                return status, keep
    if "content-length" in headers:
        length = int(headers["content-length"])
        if length > most:
            raise _Bad("answer too large")
        await reader.readexactly(length)
        return status, keep
    await reader.read(most + 1)  # until close
    return status, False


async def _one(
    pool: _Pool, raw: bytes, due: float, query: QueryConfig, shots: list[Shot | None], i: int
) -> None:
    started = time.perf_counter()
    lag = started - due
    conn = None
    reusable = False
    outcome = "error"
    try:
        async with asyncio.timeout(max(query.timeout - lag, 0.0)):
            conn = await pool.take()
            reader, writer = conn
            writer.write(raw)
            await writer.drain()
            status, reusable = await _answer(reader, query.max_bytes)
            outcome = "ok" if 200 <= status < 300 else "error"
    except TimeoutError:
        outcome, reusable = "timeout", False
    except (OSError, _Bad, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        outcome, reusable = "error", False
    done = time.perf_counter()
    if conn is not None:
        await pool.give(conn, reusable)
    shots[i] = Shot(latency_ms=(done - due) * 1e3, lag_ms=lag * 1e3, outcome=outcome)


async def _fire(
    address: tuple[str, int],
    payloads: Sequence[bytes],
    schedule: Sequence[float],
    query: QueryConfig,
    open_socket: OpenSocket | None,
    warm: int,
) -> list[Shot]:
    pool = _Pool(address, open_socket)
    shots: list[Shot | None] = [None] * len(schedule)
    try:
        # Connections opened and warmed off the clock, one request each, in turn.
        for i in range(warm):
            scratch: list[Shot | None] = [None]
            await _one(pool, payloads[i % len(payloads)], time.perf_counter(), query, scratch, 0)
        tasks = []
        start = time.perf_counter() + 0.005  # a few ms to settle: the first request is due then
        for i, at in enumerate(schedule):
            due = start + at
            wait = due - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            raw = payloads[i % len(payloads)]
            tasks.append(asyncio.create_task(_one(pool, raw, due, query, shots, i)))
        await asyncio.gather(*tasks)
    finally:
        pool.close()
    return [s if s is not None else Shot(0.0, 0.0, "error") for s in shots]


def fire(
    base_url: str,
    payloads: Sequence[bytes],
    schedule: Sequence[float],
    query: QueryConfig,
    *,
    open_socket: OpenSocket | None = None,
    warm: int = 8,
) -> list[Shot]:
    """Send request i (`payloads` cycled) at `schedule[i]` seconds from the start, open loop;
    `warm` requests first, off the clock, to open connections.  One Shot per scheduled request,
    in schedule order.  Runs its own event loop (never inside a running one)."""
    url = urlsplit(base_url)
    if url.scheme != "http":
        raise ValueError(f"compare --rate speaks plain http to a booted service, not {base_url}")
    if not payloads:
        raise ValueError("no requests to send")
    address = (url.hostname or "127.0.0.1", url.port or 80)
    if _running_loop() is None:
        return _run(_fire(address, payloads, schedule, query, open_socket, warm))
    # A caller inside a running loop (a notebook, a host driving a browser with asyncio): the
    # client gets a thread of its own, whose loop nothing else runs on.
    done: list[list[Shot]] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            done.append(_run(_fire(address, payloads, schedule, query, open_socket, warm)))
        except BaseException as exc:  # re-raised in the caller's thread
            failed.append(exc)

    thread = threading.Thread(target=run, name="harness-open-loop", daemon=True)
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return done[0]


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _run(work: Coroutine[Any, Any, list[Shot]]) -> list[Shot]:
    """`work` to completion on a new event loop of this thread, closed after it."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(work)
    finally:
        with contextlib.suppress(Exception):
            loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()

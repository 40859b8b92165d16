"""Under --concurrency (issue 28, item 4): the demo service takes 16 simultaneous connections
without a stall, and a replay's throughput window starts once every connection is open.

Both are checked by order of events on real sockets on 127.0.0.1, never by a duration: the
deadlines below only stop a hang.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from serve_support import Quiet, send_json, serving

from harness.config import QueryConfig
from harness.demo import svc
from harness.replay.client import replay

SIMULTANEOUS = 16
HANG_S = 20.0  # a safeguard against a hang, not a measurement


def test_the_demo_service_takes_16_simultaneous_connects_before_it_answers_any() -> None:
    # Bound and listening, accepting nothing yet: every connect the kernel completes is held
    # in the listen backlog. Python's default backlog of 5 completes 6; the others wait for
    # a SYN retry (about 1 s each, at --concurrency 16), or here for ever.
    server = svc.Server(("127.0.0.1", 0), svc.Index("hybrid"))
    clients = [socket.socket() for _ in range(SIMULTANEOUS)]
    server_thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    try:
        for client in clients:
            client.setblocking(False)
            assert client.connect_ex(server.server_address) in (0, 115)  # 115: EINPROGRESS
        pending, deadline = set(clients), time.monotonic() + HANG_S
        while pending and time.monotonic() < deadline:
            _, done, _ = select.select([], list(pending), [], 0.1)
            for client in done:
                assert client.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
                pending.discard(client)
        assert not pending, (
            f"{len(pending)} of {SIMULTANEOUS} connects not completed while the server had "
            "accepted none: its listen backlog (request_queue_size) is too small"
        )
        # Then every one of them is served (the index is still loading: 503, as designed).
        server_thread.start()
        for client in clients:
            client.setblocking(True)
            client.settimeout(HANG_S)
            client.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert all(c.recv(64).startswith(b"HTTP/1.1 503") for c in clients)
    finally:
        for client in clients:
            client.close()
        if server_thread.is_alive():
            server.shutdown()
        server.server_close()


# --------------------------------------------------------------------------- the window

QUERY = QueryConfig(path="/search", ids="results[].id", params={"q": "{query}"}, warmup=2)
ITEMS = [(f"id{i}", f"q{i}") for i in range(40)]


class _Echo(Quiet):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        q = parse_qs(urlsplit(self.path).query)["q"][0]
        send_json(self, {"results": [{"id": q}]})


@pytest.fixture
def echo() -> Iterator[str]:
    with serving(_Echo) as url:
        yield url


@pytest.mark.parametrize("concurrency", [1, 4, SIMULTANEOUS])
def test_the_throughput_window_starts_after_every_connect(echo: str, concurrency: int) -> None:
    events: list[str] = []
    lock = threading.Lock()

    def open_socket() -> socket.socket:  # every connection of the replay is made here
        with lock:
            events.append("connect")
        return socket.socket()

    def answered(done: int, total: int, result: object) -> None:
        with lock:
            events.append("answer")

    results = replay(
        echo,
        QUERY,
        ITEMS,
        concurrency=concurrency,
        open_socket=open_socket,
        on_result=answered,
        on_start=lambda: events.append("start"),
    )
    assert [r.ids for r in results] == [(q,) for _, q in ITEMS] and all(r.ok for r in results)
    assert events.count("start") == 1
    start = events.index("start")
    after = events[start + 1 :]
    assert "connect" not in after, "a connection was opened inside the throughput window"
    assert events[:start].count("connect") == (1 if concurrency == 1 else 1 + concurrency)
    assert after.count("answer") == len(ITEMS) and "answer" not in events[:start]

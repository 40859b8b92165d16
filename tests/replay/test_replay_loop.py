"""The replay loop's lean paths (issue 42) keep its behaviour: a plain-TCP connection whose reads
wait in a blocking recv under SO_RCVTIMEO reads every answer as a timed socket did (the head in any
segments, 1xx first, a bad status line at once, a request larger than the send buffer), the
answer cache builds every field of a QueryResult, and sessions that share their requests and
answers send the same bytes and read the same results as their own would."""

from __future__ import annotations

import fcntl
import socket
import struct
import termios
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest

from harness.config import QueryConfig
from harness.driver.plan import SharedReading
from harness.replay.client import AnswerCache
from harness.replay.request import Requests, encode_request, make_request
from harness.replay.wire import Answer, Connection, Failure
from harness.values.types import ErrorKind, QueryResult

GET = QueryConfig(path="/search", ids="results[].id", params={"q": "{query}"}, limit=10)
BODY = b'{"results": [{"id": "a"}, {"id": "b"}]}'
OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
    len(BODY),
    BODY,
)


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[socket.socket], None]], str]]:
    """serve(handler) -> base URL: one connection accepted and handed to `handler` in a thread
    (the listening socket stays bound: no port is picked and given up)."""
    listeners: list[socket.socket] = []
    threads: list[threading.Thread] = []

    def start(handler: Callable[[socket.socket], None]) -> str:
        listener = socket.create_server(("127.0.0.1", 0))
        listeners.append(listener)

        def run() -> None:
            conn, _ = listener.accept()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with conn:
                handler(conn)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        threads.append(thread)
        return f"http://127.0.0.1:{listener.getsockname()[1]}"

    yield start
    for listener in listeners:
        listener.close()
    for thread in threads:
        thread.join(timeout=10)
    assert not any(thread.is_alive() for thread in threads)


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        try:
            chunk = conn.recv(65536)
        except ConnectionResetError:  # the client closed with our answer unread: its choice
            return data
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
            while len(body) < length:
                body += conn.recv(65536)
    return head + b"\r\n\r\n" + body


def _in_pieces(answer: bytes, cuts: list[int]) -> Callable[[socket.socket], None]:
    def handler(conn: socket.socket) -> None:
        _read_request(conn)
        start = 0
        for cut in [*cuts, len(answer)]:
            conn.sendall(answer[start:cut])
            start = cut
            time.sleep(0.002)  # a segment of its own
        if b"content-length" in answer.lower():
            _read_request(conn)  # until the client closes
        # else: closed here, which ends the body

    return handler


HEADS = {
    "plain": OK,
    "1xx first": b"HTTP/1.1 100 Continue\r\n\r\n" + OK,
    "no header lines, closed": b"HTTP/1.1 200 OK\r\n\r\n" + BODY,
    "spaces and case": (
        b"HTTP/1.1 200 OK\r\ncontent-TYPE :  application/json \r\nCONTENT-LENGTH: %d\r\n\r\n%s"
        % (len(BODY), BODY)
    ),
}


@pytest.mark.parametrize("name", sorted(HEADS))
def test_an_answer_reads_the_same_whatever_its_segments(
    serve: Callable[[Callable[[socket.socket], None]], str], name: str
) -> None:
    answer = HEADS[name]
    head_end = answer.index(b"\r\n\r\n")
    # Cut inside the status line, at its CRLF, inside the blank line, and between head and body.
    for cuts in (
        [],
        [5],
        [answer.index(b"\r\n") + 1],
        [head_end + 2],
        [head_end + 4, head_end + 6],
    ):
        url = serve(_in_pieces(answer, cuts))
        connection = Connection(url)
        raw = encode_request(url, make_request(GET, "q"))
        try:
            got = connection.exchange(raw, GET)
        finally:
            connection.close()
        content_type = "" if name.startswith("no header") else "application/json"
        assert got == Answer(200, content_type, BODY), (name, cuts)


def _head_of(lines: list[bytes], body: bytes = BODY, status: bytes = b"HTTP/1.1 200 OK") -> bytes:
    return b"\r\n".join([status, *lines]) + b"\r\n\r\n" + body


LENGTH = b"Content-Length: %d" % len(BODY)
CHUNKED = b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY), BODY)
ODD_HEADS = {
    "plain": OK,
    "1xx first": b"HTTP/1.1 100 Continue\r\n\r\n" + OK,
    "HTTP/1.0": _head_of([LENGTH], status=b"HTTP/1.0 200 OK"),
    "connection close": _head_of([b"Connection: Close", LENGTH]),
    "connection keep-alive": _head_of([b"Connection: keep-alive", LENGTH]),
    "chunked and a length": _head_of([b"Transfer-Encoding: chunked", LENGTH], CHUNKED),
    "identity coding": _head_of([b"Content-Encoding: identity", LENGTH]),
    "two lengths, the last wins": _head_of([b"Content-Length: 3", LENGTH]),
    "a length with a letter": _head_of([b"Content-Length: 1x"]),
    "a superscript length": _head_of([b"Content-Length: \xb2"]),
    "a length past max_bytes": _head_of([b"Content-Length: 99999999"]),
    "a line without a colon": _head_of([b"Odd", b"Content-Type: text/plain", LENGTH]),
    "a name in odd space": _head_of([b" content-length\xa0: %d" % len(BODY)]),
    "204 with a length": _head_of([b"Content-Length: 0"], b"", b"HTTP/1.1 204 No Content"),
    "more after the body": _head_of([LENGTH], BODY + b"HTTP/1.1"),
    "status 099": _head_of([LENGTH], status=b"HTTP/1.1 099 Odd"),
}


def _outcome(connection: Connection, url: str) -> tuple[object, bool]:
    raw = encode_request(url, make_request(GET, "q"))
    try:
        got: object = connection.exchange(raw, replace(GET, timeout=2.0, max_bytes=1 << 20))
    except Failure as failure:
        got = (failure.kind, failure.detail)
    kept = connection._sock is not None
    connection.close()
    return got, kept


@pytest.mark.parametrize("name", sorted(ODD_HEADS))
@pytest.mark.parametrize("whole", [True, False], ids=["one segment", "head apart"])
def test_the_usual_answers_reader_reads_as_the_general_one(
    serve: Callable[[Callable[[socket.socket], None]], str],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    whole: bool,
) -> None:
    """`Connection._usual` (the usual answer in one pass) gives what `_response` gives for the
    same bytes: the same Answer or the same Failure, the connection kept or closed alike."""
    answer = ODD_HEADS[name]
    cuts = [] if whole else [answer.index(b"\r\n\r\n") + 4]
    url = serve(_in_pieces(answer, cuts))
    fast = _outcome(Connection(url), url)
    monkeypatch.setattr(Connection, "_usual", lambda *args: None)
    url = serve(_in_pieces(answer, cuts))
    assert _outcome(Connection(url), url) == fast, name


def test_an_answer_after_nine_tenths_of_the_timeout_is_read_and_the_timeout_kept(
    serve: Callable[[Callable[[socket.socket], None]], str],
) -> None:
    """SO_RCVTIMEO is set to 9/10 of the time left and kept across exchanges (the next one
    does not set it again); a read it wakes before the deadline waits again for exactly the
    rest: an answer at 37/40 of the timeout is an answer."""
    query = replace(GET, timeout=2.0)

    def handler(conn: socket.socket) -> None:
        for delay in (0.0, 0.0, 1.85):
            _read_request(conn)
            time.sleep(delay)
            conn.sendall(OK)

    url = serve(handler)
    connection = Connection(url)
    raw = encode_request(url, make_request(query, "q"))
    try:
        set_to = []
        for _ in range(2):
            assert connection.exchange(raw, query).body == BODY
            sock = connection._sock
            assert sock is not None
            set_to.append(sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, 16))
        assert set_to[0] == set_to[1]  # kept, not set anew from the second exchange's time
        assert connection.exchange(raw, query).body == BODY  # woken at 1.8 s, then read
    finally:
        connection.close()


def _until_read(connection: Connection) -> None:
    """Until the client's socket holds nothing unread (FIONREAD): what was sent to it has been
    read, so what is sent next comes in a read of its own. A 10 ms sleep instead was not enough
    at load 7: both pieces came in one read."""
    sock = connection._sock  # open: the client has sent its request
    assert sock is not None
    deadline = time.monotonic() + 10  # a safeguard, not a timing
    while time.monotonic() < deadline:
        try:
            unread = fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0")
        except OSError:  # closed under us: the client gave up
            return
        if struct.unpack("i", unread)[0] == 0:
            return
        time.sleep(0.001)


def test_quick_acks_start_with_the_first_answer_that_takes_two_reads(
    serve: Callable[[Callable[[socket.socket], None]], str],
) -> None:
    """A service whose answers come whole in one read gets no quick ACK (the next request
    carries the ACK); one whose answer came in pieces gets one before every read from its
    second read on, for the rest of the connection (`wire._quickack`)."""

    def answers(pieces: bool, client: list[Connection]) -> Callable[[socket.socket], None]:
        def handler(conn: socket.socket) -> None:
            for _ in range(3):
                _read_request(conn)
                if pieces:
                    conn.sendall(OK[:20])
                    _until_read(client[0])  # a read of its own, however loaded the machine
                    conn.sendall(OK[20:])
                else:
                    conn.sendall(OK)

        return handler

    for pieces in (False, True):
        client: list[Connection] = []
        url = serve(answers(pieces, client))
        connection = Connection(url)
        client.append(connection)
        raw = encode_request(url, make_request(GET, "q"))
        try:
            for _ in range(3):
                assert connection.exchange(raw, GET) == Answer(200, "application/json", BODY)
                assert connection._acking is pieces
        finally:
            connection.close()


def test_a_bad_status_line_fails_at_once_not_at_the_deadline(
    serve: Callable[[Callable[[socket.socket], None]], str],
) -> None:
    """The status line is checked as soon as it is in: a service that sends a bad one and then
    nothing is a protocol error, not a timeout waiting for headers that never come."""
    url = serve(_in_pieces(b"SSH-2.0-OpenSSH\r\n", []))
    query = replace(GET, timeout=5.0)
    connection = Connection(url)
    with pytest.raises(Failure) as failed:
        connection.exchange(encode_request(url, make_request(query, "q")), query)
    connection.close()
    assert failed.value.kind is ErrorKind.CONNECTION
    assert "bad status line b'SSH-2.0-OpenSSH'" in failed.value.detail


def test_a_request_larger_than_the_send_buffer_goes_whole_and_the_socket_stays_usable(
    serve: Callable[[Callable[[socket.socket], None]], str],
) -> None:
    """The first, non-blocking send writes what fits; the rest goes by a timed sendall, after
    which the socket is blocking again (its reads wait in recv) for the next exchange on it."""
    seen: list[int] = []

    def handler(conn: socket.socket) -> None:
        for _ in range(2):
            time.sleep(0.05)  # let the client's send buffer fill first
            seen.append(len(_read_request(conn)))
            conn.sendall(OK)

    url = serve(handler)
    query = QueryConfig(method="POST", path="/s", ids="results[].id", json={"q": "{query}"})
    big = "x" * (8 << 20)
    connection = Connection(url)
    try:
        for text in (big, "small"):
            raw = encode_request(url, make_request(query, text))
            assert connection.exchange(raw, query).body == BODY
        sock = connection._sock
        assert sock is not None and sock.gettimeout() is None
    finally:
        connection.close()
    assert seen[0] > 8 << 20


def test_the_answer_cache_builds_every_field_of_a_query_result() -> None:
    """AnswerCache.read builds a QueryResult field by field (faster than dataclasses.replace):
    a field added to QueryResult must be added there too, and this test says so."""
    assert [f.name for f in fields(QueryResult)] == [
        "query_id",
        "ids",
        "scores",
        "status",
        "error",
        "detail",
        "latency_ns",
        "texts",
    ]
    query = replace(GET, scores="results[].score", texts="results[].text")
    body = (
        b'{"results": [{"id": "a", "score": 2.5, "text": "t"}, {"id": 7, "score": 1, "text": "u"}]}'
    )
    cache = AnswerCache(query)
    first = cache.read(Answer(200, "application/json", body), "q1", 11)
    again = cache.read(Answer(200, "application/json", body), "q2", 22)
    assert again == replace(first, query_id="q2", latency_ns=22)
    assert first == QueryResult("q1", ("a", "7"), (2.5, 1.0), 200, None, None, 11, ("t", "u"))


CONFIGS: dict[str, dict[str, Any]] = {
    "params": {"params": {"q": "{query}", "k": "{limit}", "lit": "a&b={x}"}},
    "post json": {
        "method": "POST",
        "json": {"query": "{query}", "k": "{limit}", "n": [1, "{query}!"]},
    },
    "form": {"method": "POST", "form": {"q": "{query}", "k": "{limit}"}},
    "headers": {
        "headers": {"X-Q": "{query}", "Authorization": "Bearer t"},
        "params": {"q": "{query}"},
    },
    "path with braces": {"path": "/v1/{query}/s", "params": {"q": "{query}"}},
}
TEXTS = ["plain", "spaces and + & = ?", "ünïcødé ☃", "{query} {limit} %20", 'quote " \\ back']


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_shared_requests_are_the_bytes_each_request_encodes_to(name: str) -> None:
    """Both sides of a compare share one Requests when their settings and queries are equal:
    each request is still `encode_request(make_request(...))`'s bytes, byte for byte."""
    settings = CONFIGS[name]
    query = QueryConfig(ids="results[].id", **{"path": "/search", **settings})
    items = [(f"q{i}", text) for i, text in enumerate(TEXTS)]
    reading = SharedReading()
    requests, answers = reading.of(query, items)
    assert reading.of(query, list(items)) == (requests, answers)
    for url in ("http://127.0.0.1:8123", "http://user:pw@127.0.0.1:9/prefix/"):
        prepared = requests.for_url(url)
        for text in TEXTS:
            assert prepared[text] == encode_request(url, make_request(query, text)), text
    other, other_answers = reading.of(query, items[:2])  # other queries: its own
    assert other is not requests and other_answers is not answers
    mine, _ = reading.of(replace(query, limit=11), items)  # other settings: its own
    assert mine is not requests
    assert SharedReading().known == []  # each run of sessions (a Ray worker's) starts afresh
    assert isinstance(requests, Requests)


@pytest.mark.slow
def test_the_loop_benchmark_runs_and_prints_its_figures(tmp_path: Path) -> None:
    """`bench_client.py --loop` on the tiny service: its figures' lines, against the target
    (their numbers are not judged here: a busy test machine would fail any bound)."""
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "scripts" / "bench_client.py"
    done = subprocess.run(
        [sys.executable, str(script), "--loop", "--runs", "1", "--skip-demo"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "  tiny    this " in done.stdout
    assert "tiny this: loop/raw median" in done.stdout and "target <= 2x" in done.stdout
    assert "load average" in done.stdout

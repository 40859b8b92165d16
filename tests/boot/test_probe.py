"""The readiness probe (harness.boot.probe) against real one-connection servers on 127.0.0.1:
the status of a whole answer, promptly even when the server keeps the connection open, and each
failure named as httpx names it."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest

from harness.boot.probe import ProbeError, get_status

# Serves each connection once, per mode; keeps it open after answering (keep-alive ignoring
# our `Connection: close`), so a probe that waited for the close would time out.
SERVER = r"""
import socket, sys, time
mode = sys.argv[1]
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(8)
print(listener.getsockname()[1], flush=True)
answers = {
    "ok": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello",
    "split": b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\n",
    "chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    "empty": b"HTTP/1.1 204 No Content\r\n\r\n",
    "garbage": b"SPDY/3 what\r\n\r\n",
    "close": b"",
}
held = []
while True:
    conn, _ = listener.accept()
    held.append(conn)
    request = b""
    while b"\r\n\r\n" not in request:
        request += conn.recv(4096)
    assert request.startswith(b"GET /health?x=1 HTTP/1.1\r\n"), request
    assert b"\r\nConnection: close\r\n" in request, request
    if mode == "hang":
        continue
    conn.sendall(answers[mode])
    if mode == "split":
        time.sleep(0.2)
        conn.sendall(b"down")
    if mode in ("close", "garbage"):
        conn.close()
"""


@pytest.fixture
def server() -> Iterator[Callable[[str], str]]:
    started: list[subprocess.Popen[str]] = []

    def start(mode: str) -> str:
        proc = subprocess.Popen(
            [sys.executable, "-c", SERVER, mode], stdout=subprocess.PIPE, text=True
        )
        started.append(proc)
        assert proc.stdout is not None
        return f"http://127.0.0.1:{int(proc.stdout.readline())}/health?x=1"

    yield start
    for proc in started:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        assert proc.returncode is not None


@pytest.mark.parametrize(
    ("mode", "status"), [("ok", 200), ("split", 503), ("chunked", 200), ("empty", 204)]
)
def test_the_status_of_a_whole_answer_without_waiting_for_the_close(
    server: Callable[[str], str], mode: str, status: int
) -> None:
    t0 = time.monotonic()
    assert get_status(server(mode), timeout=5.0) == status
    assert time.monotonic() - t0 < 4.0  # not the 5 s deadline: the answer's end was seen


def test_a_silent_server_is_a_read_timeout(server: Callable[[str], str]) -> None:
    with pytest.raises(ProbeError) as caught:
        get_status(server("hang"), timeout=0.3)
    assert caught.value.name == "ReadTimeout" and caught.value.timed_out


@pytest.mark.parametrize("mode", ["close", "garbage"])
def test_no_status_line_is_a_protocol_error(server: Callable[[str], str], mode: str) -> None:
    with pytest.raises(ProbeError) as caught:
        get_status(server(mode), timeout=5.0)
    assert caught.value.name == "RemoteProtocolError" and not caught.value.timed_out


def test_nothing_listening_is_a_connect_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: connections are refused
        with pytest.raises(ProbeError) as caught:
            get_status(f"http://127.0.0.1:{port}/", timeout=2.0)
    assert caught.value.name == "ConnectError" and not caught.value.timed_out


def test_a_socket_that_cannot_be_made_is_a_connect_error() -> None:
    def broken() -> socket.socket:
        raise ConnectionError("the sandbox has ended (the service exited)")

    with pytest.raises(ProbeError) as caught:
        get_status("http://127.0.0.1:9/", timeout=2.0, open_socket=broken)
    assert caught.value.name == "ConnectError" and "sandbox has ended" in str(caught.value)


def test_only_plain_http_is_probed() -> None:
    with pytest.raises(ValueError, match="plain http"):
        get_status("https://127.0.0.1:9/", timeout=1.0)

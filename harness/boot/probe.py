"""The readiness GET of a booted service, over a plain socket.

    status = get_status("http://127.0.0.1:PORT/health", timeout=2.0, open_socket=None)

One HTTP/1.1 GET with `Connection: close`, each step of it (connect, send, every read) within
`timeout` seconds, as httpx applies a timeout; the answer's status code. Only the status decides
readiness, but the body is read to its end (as any client would) before the socket is closed.
In bubblewrap mode every connection is a socket from `open_socket`
(`harness.boot.sandbox.SandboxLink.open_socket`).

Why not httpx: the probe is the only HTTP a compare does outside the timed replay client
(`harness.replay.client`), and importing httpx (and its command line's libraries) cost a demo
compare about 0.1 s of CPU, and its client objects another 0.1 s over ten boots. A failure is a
ProbeError named as httpx names its transport errors (ConnectError, ConnectTimeout, ReadTimeout,
WriteTimeout, ReadError, WriteError, RemoteProtocolError), which the boot quotes as the last
answer in "service not ready after N s: GET URL gave ConnectError".
"""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from harness.boot.sandbox import OpenSocket

_MAX_READ = 1 << 20  # bytes of an answer read before the probe stops reading (status known)


def ready_advice(ready: str, last: str) -> str | None:
    """What to do when `service.ready` never answered 2xx, its last answer being `last` ("HTTP
    404", "ConnectError", ...); None when there is nothing better to say than the message."""
    if last.startswith("HTTP 4"):
        return (
            f"the service answers, but GET {ready} gave {last.removeprefix('HTTP ')}: set "
            "service.ready to a path it serves with 2xx once it can take queries (FastAPI "
            'serves "/openapi.json" and "/docs" without a route of yours; many servers "/")'
        )
    if last == "ConnectError":
        return (
            "nothing accepted a connection on the port: check that start makes the service "
            "listen on 127.0.0.1 (or 0.0.0.0) at {port}"
        )
    return None


class ProbeError(Exception):
    """A readiness GET that got no status: `name` says how (httpx's name for it); `timed_out`
    when it ran out of time."""

    def __init__(self, name: str, detail: str = "") -> None:
        super().__init__(f"{name}: {detail}" if detail else name)
        self.name = name
        self.timed_out = name.endswith("Timeout")


def _connect(
    address: tuple[str, int], timeout: float, open_socket: OpenSocket | None
) -> socket.socket:
    try:
        if open_socket is None:
            return socket.create_connection(address, timeout=timeout)
        sock = open_socket()  # a socket of the sandbox's network namespace
    except TimeoutError:
        raise ProbeError("ConnectTimeout") from None
    except OSError as exc:  # refused, unreachable, or the sandbox did not answer
        raise ProbeError("ConnectError", str(exc)) from None
    try:
        sock.settimeout(timeout)
        sock.connect(address)
    except BaseException as exc:
        sock.close()
        if isinstance(exc, TimeoutError):
            raise ProbeError("ConnectTimeout") from None
        if isinstance(exc, OSError):
            raise ProbeError("ConnectError", str(exc)) from None
        raise
    return sock


def get_status(url: str, timeout: float, open_socket: OpenSocket | None = None) -> int:
    """The HTTP status of GET `url` (http://host:port/path?query), each step within `timeout`
    seconds; raises ProbeError when no status line arrives in time or in shape."""
    parts = urlsplit(url)
    if parts.scheme != "http" or parts.hostname is None:
        raise ValueError(f"the readiness probe speaks plain http, not {url}")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    request = (
        f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    ).encode()
    sock = _connect((parts.hostname, parts.port or 80), timeout, open_socket)
    try:
        try:
            sock.sendall(request)  # the socket's timeout, set at connect, bounds each step
        except TimeoutError:
            raise ProbeError("WriteTimeout") from None
        except OSError as exc:
            raise ProbeError("WriteError", str(exc)) from None
        answer = b""
        while not _complete(answer):
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                raise ProbeError("ReadTimeout") from None
            except OSError as exc:
                if b"\r\n" in answer:  # the status is in: a reset after it changes nothing
                    break
                raise ProbeError("ReadError", str(exc)) from None
            answer += chunk
            if not chunk or len(answer) > _MAX_READ:
                break
        return _status(answer)
    finally:
        sock.close()


def _complete(answer: bytes) -> bool:
    """Whether `answer` holds the whole response: its headers and, when they give a
    Content-Length, that many bytes of body (else the body ends when the service closes; a
    chunked one at its last chunk; a 204 or 304 has none)."""
    head, found, body = answer.partition(b"\r\n\r\n")
    if not found:
        return False
    lines = head.split(b"\r\n")
    status = lines[0].split(None, 2)[1:2]
    if status and status[0] in (b"204", b"304"):  # no body, whatever the headers say
        return True
    length = None
    chunked = False
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length" and value.strip().isdigit():
            length = int(value)
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if chunked:
        return body.endswith(b"0\r\n\r\n")
    return length is not None and len(body) >= length


def _status(answer: bytes) -> int:
    line, found, _ = answer.partition(b"\r\n")
    if not found:
        raise ProbeError("RemoteProtocolError", "the service closed the connection")
    fields = line.split(None, 2)
    if len(fields) < 2 or not fields[0].startswith(b"HTTP/") or not fields[1].isdigit():
        raise ProbeError("RemoteProtocolError", f"bad status line {line!r}")
    return int(fields[1])

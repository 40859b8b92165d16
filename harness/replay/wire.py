"""One persistent keep-alive HTTP/1.1 connection, and the exchange of one request over it on the
clock: the bytes sent, the status line, headers and body read back (Content-Length, chunked or
until close), decoded of any Content-Encoding, each read within `query.timeout`, the answer
within `query.max_bytes`. What `harness.replay.client` times; it reads no answer's ids.

    conn = Connection(base_url, open_socket); conn.connect(query)   # off the clock
    answer = conn.exchange(raw, query)       # Answer(status, content_type, body), or Failure
"""

from __future__ import annotations

import math
import socket
import ssl
import struct
import time
import zlib
from collections.abc import Mapping
from typing import NamedTuple
from urllib.parse import urlsplit

from harness.boot.deployed import tls_context
from harness.boot.probe import OpenSocket
from harness.config import QueryConfig
from harness.values.types import ErrorKind


class Failure(Exception):
    """A query that failed on the wire: its ErrorKind and the words of its detail."""

    def __init__(self, kind: ErrorKind, detail: str) -> None:
        super().__init__(detail)
        self.kind, self.detail = kind, detail


class Answer(NamedTuple):  # a tuple: built once per exchange, cheaply
    status: int
    content_type: str
    body: bytes  # decoded of any Content-Encoding


def timeout_detail(query: QueryConfig, what: str) -> str:
    return f"no answer within query.timeout = {query.timeout:g} s ({what})"


def check_late(query: QueryConfig, latency_ns: int) -> None:
    """An answer that came whole, but after `query.timeout`, is a timeout all the same: every
    read kept to the deadline, yet the exchange as timed did not (a read that found its bytes
    waiting after the process was descheduled past the deadline; decoding a large body)."""
    if latency_ns > query.timeout * 1e9:  # a float: no overflow for any timeout
        raise Failure(
            ErrorKind.TIMEOUT,
            timeout_detail(query, f"the answer came whole after {latency_ns / 1e6:.1f} ms"),
        )


def too_large(query: QueryConfig) -> Failure:
    return Failure(
        ErrorKind.TOO_LARGE,
        f"the answer is longer than query.max_bytes = {query.max_bytes} bytes; "
        "raise query.max_bytes if the service is right to send that much",
    )


class Connection:
    """One persistent keep-alive HTTP/1.1 connection to a service, TCP_NODELAY set; over TLS
    (`harness.boot.deployed.tls_context`, certificate verified) for an https URL.

    `connect(query)` opens the connection ahead of a request (the Channel does so before its
    clock starts).  `exchange(raw, query)` writes a prepared request and reads the whole answer
    under one deadline (`query.timeout`, counted from the call: send and every byte of the body,
    and the connect when none was open, so a body dripped a byte at a time fails at the
    deadline) and one cap (`query.max_bytes`,
    headers and body).  Content-Length, chunked and read-until-close bodies are read; gzip and
    deflate bodies are decoded.  A kept-alive connection that the service had closed before our
    request reached it is reopened once (the service never saw that request); nothing else is
    retried.
    """

    def __init__(self, base_url: str, open_socket: OpenSocket | None = None) -> None:
        url = urlsplit(base_url)
        self._tls = url.scheme == "https"
        self.address = (url.hostname or "127.0.0.1", url.port or (443 if self._tls else 80))
        self._open_socket = open_socket
        self._sock: socket.socket | None = None
        self._buffer = b""
        self._fresh = False  # the open socket has carried no request yet (`connect`)
        # Plain TCP: a blocking socket whose every read waits in recv itself, under the
        # kernel's receive timeout (SO_RCVTIMEO) set to the time left; a timed Python socket
        # polls before each call and costs an ioctl per `settimeout` (a poll cost 8 us more per
        # read than a blocking recv on the demo's sandboxed loopback).
        self._plain = False
        # The SO_RCVTIMEO now set on the plain socket, in seconds (inf: none): a read needs a new
        # one only when this one would outlast its deadline, or wake it long before (`_recv`).
        self._rcvtimeo = math.inf
        # Plain TCP: acknowledge every segment at once (`_quickack`) only once an answer of
        # this service has taken more than one read: kept across reconnects, as it is the
        # service's way of writing, not the connection's.
        self._acking = False
        self._read_once = False  # this exchange has read from the socket
        self._heads: dict[bytes, tuple[int, int, str]] = {}  # `_usual`'s heads, read

    def connect(self, query: QueryConfig) -> None:
        """Open the connection now, unless one is open: called before the clock starts, so the
        TCP (and TLS) handshake, and in a sandbox fetching the socket from its helper, is never
        part of a query's latency, for a service that closes every connection as for one that
        keeps it alive.  Its own deadline, `query.timeout`; a failure is the query's Failure."""
        if self._sock is not None:
            return
        try:
            self._open(time.monotonic() + query.timeout)
        except TimeoutError:
            detail = timeout_detail(query, "connecting")
            raise Failure(ErrorKind.TIMEOUT, detail) from None
        except OSError as error:
            raise Failure(ErrorKind.CONNECTION, f"{type(error).__name__}: {error}") from None

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._buffer, self._plain, self._rcvtimeo = b"", False, math.inf

    def _open(self, deadline: float) -> socket.socket:
        if self._open_socket is None:
            sock = socket.create_connection(self.address, timeout=_left(deadline))
        else:  # a socket made inside the service's sandbox (harness.boot.inside), then connected
            sock = self._open_socket()
            try:
                sock.settimeout(_left(deadline))
                sock.connect(self.address)
            except BaseException:
                sock.close()
                raise
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        plain = not self._tls
        if self._tls:
            try:
                sock = tls_context().wrap_socket(sock, server_hostname=self.address[0])
            except BaseException:
                sock.close()
                raise
        else:
            sock.settimeout(None)
        self._sock, self._buffer, self._fresh, self._plain = sock, b"", True, plain
        self._rcvtimeo = math.inf
        return sock

    def exchange(self, raw: bytes, query: QueryConfig) -> Answer:
        deadline = _monotonic() + query.timeout
        sock = self._sock
        # Only a socket that carried an earlier request can be a stale keep-alive one.
        reused = sock is not None and not self._fresh
        try:
            try:
                if sock is None:
                    sock = self._open(deadline)
                self._fresh = False
                self._read_once = False
                if self._plain and not self._buffer:  # the usual exchange, its calls inline
                    try:
                        sent = sock.send(raw, _DONTWAIT)
                    except BlockingIOError:
                        sent = 0
                    if sent < len(raw):
                        self._send_rest(sock, raw, sent, deadline)
                    left = deadline - _monotonic()
                    if left * 0.5 <= self._rcvtimeo <= left:
                        if self._acking and _QUICKACK is not None:  # `_quickack`, inline
                            try:  # noqa: SIM105 (see `_quickack`)
                                sock.setsockopt(_TCP, _QUICKACK, 1)
                            except OSError:
                                pass
                        try:
                            chunk = sock.recv(65536)
                        except BlockingIOError:  # SO_RCVTIMEO ran out, before the deadline
                            chunk = self._recv_rest(sock, deadline)
                        self._read_once = True
                    else:
                        chunk = self._recv(sock, deadline)
                    if not chunk:
                        raise _Closed
                    self._buffer = chunk
                    if len(chunk) > query.max_bytes + _HEAD_ALLOWANCE:
                        raise too_large(query)
                else:
                    self._send(sock, raw, deadline)
                    self._fill(sock, deadline, query, 1)
            except (ConnectionError, ssl.SSLEOFError, _Closed):
                if not reused:
                    raise
                self.close()  # a stale keep-alive connection: the request never arrived
                sock = self._open(deadline)
                self._fresh = self._read_once = False
                self._send(sock, raw, deadline)
                self._fill(sock, deadline, query, 1)
            return self._usual(sock, deadline, query) or self._response(sock, deadline, query)
        except Failure:
            self.close()
            raise
        except TimeoutError:
            self.close()
            detail = timeout_detail(query, "the whole request's deadline")
            raise Failure(ErrorKind.TIMEOUT, detail) from None
        except _Closed:
            self.close()
            raise Failure(
                ErrorKind.CONNECTION, "RemoteProtocolError: the service closed the connection"
            ) from None
        except ssl.SSLEOFError:
            self.close()
            raise Failure(
                ErrorKind.CONNECTION, "SSLEOFError: the service closed the TLS connection"
            ) from None
        except OSError as error:
            self.close()
            raise Failure(ErrorKind.CONNECTION, f"{type(error).__name__}: {error}") from None

    def _usual(self, sock: socket.socket, deadline: float, query: QueryConfig) -> Answer | None:
        """The usual answer, read as `_response` reads it, in one pass and without its calls:
        its head whole in the buffer, a final status on a keep-alive connection, a
        Content-Length and neither a Transfer-Encoding nor a Content-Encoding.  The same
        checks, the same header rule, the same Failures; the body taken as `_response` takes
        it.  None, the buffer untouched, for any other answer: `_response` reads it.  What a
        head reads as (status, length, content type) is kept by its bytes (`_heads`): a
        service's heads repeat, and one seen before is not parsed again."""
        buffer = self._buffer
        end = buffer.find(b"\r\n\r\n")  # the first CRLF's or after: as `_head` finds it
        if end < 0:
            return None
        head = buffer[:end]
        known = self._heads.get(head)
        if known is None:
            known = self._read_head(head)
            if known is None:
                return None
        status, length, content_type = known
        if length > query.max_bytes:
            raise too_large(query)
        if len(buffer) - end - 4 == length:  # all in, nothing after it
            body, self._buffer = buffer[end + 4 :], b""
        else:
            self._buffer = buffer[end + 4 :]
            body = self._take(sock, deadline, query, length)
        # Answer(status, content type, body), without the NamedTuple's Python-level __new__
        return _new_tuple(Answer, (status, content_type, body))

    def _read_head(self, head: bytes) -> tuple[int, int, str] | None:
        """`_usual`'s head, read: its status, Content-Length and content type, kept in `_heads`
        (at most _HEADS_KEPT heads, then forgotten all at once); None when the answer is not
        the usual one. A bad Content-Length is `_response`'s Failure, and is not kept."""
        eol = head.find(b"\r\n")
        parts = head[: eol if eol >= 0 else len(head)].split(None, 2)
        if (
            len(parts) < 2
            or parts[0] == b"HTTP/1.0"
            or not parts[0].startswith(b"HTTP/")
            or not parts[1].isdigit()
        ):
            return None  # HTTP/1.0 closes; a bad status line's Failure is `_response`'s
        status = int(parts[1])
        if 100 <= status < 200 or eol < 0:
            return None  # no header line: no Content-Length
        headers: dict[str, str] = {}
        for line in head[eol + 2 :].decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        text = headers.get("content-length")
        if (
            text is None
            or "transfer-encoding" in headers
            or "content-encoding" in headers
            or headers.get("connection", "").lower() == "close"
        ):
            return None
        known = (status, _framing(text, 10, "Content-Length"), headers.get("content-type", ""))
        if len(self._heads) >= _HEADS_KEPT:
            self._heads.clear()
        self._heads[head] = known
        return known

    def _send(self, sock: socket.socket, raw: bytes, deadline: float) -> None:
        """Write `raw` within the deadline. A request fits the socket's send buffer: over plain
        TCP it is written at once (one non-blocking send), without the readiness poll of a
        timed `sendall`; what did not fit goes by a timed `sendall`."""
        if self._tls:
            sock.settimeout(_left(deadline))
            sock.sendall(raw)
            return
        try:
            sent = sock.send(raw, _DONTWAIT)
        except BlockingIOError:
            sent = 0
        if sent < len(raw):
            self._send_rest(sock, raw, sent, deadline)

    def _send_rest(self, sock: socket.socket, raw: bytes, sent: int, deadline: float) -> None:
        """What the first send did not write, by a timed `sendall`; blocking again after."""
        sock.settimeout(_left(deadline))
        try:
            sock.sendall(raw[sent:] if sent else raw)
        finally:
            sock.settimeout(None)  # blocking again, for `_fill`

    def _fill(self, sock: socket.socket, deadline: float, query: QueryConfig, size: int) -> int:
        """Read until the buffer holds at least `size` bytes; raise _Closed at end of stream.
        Every segment is acknowledged at once (`_quickack`)."""
        plain = self._plain
        while len(self._buffer) < size:
            if plain:  # a blocking recv, within the time left
                chunk = self._recv(sock, deadline)
            else:  # TLS: a timed socket
                sock.settimeout(_left(deadline))
                _quickack(sock)
                chunk = sock.recv(65536)
            if not chunk:
                raise _Closed
            self._buffer += chunk
            if len(self._buffer) > query.max_bytes + _HEAD_ALLOWANCE:
                raise too_large(query)
        return len(self._buffer)

    def _recv(self, sock: socket.socket, deadline: float) -> bytes:
        """One read of the plain socket, blocking in recv under SO_RCVTIMEO, never past the
        deadline.  The receive timeout is set anew only when the one set would outlast the time
        left, or end the wait before half of it (then to 9/10 of it): kept as it is across
        reads and exchanges, it costs no call per read.  A read it ends before the deadline
        waits again with exactly the time left; one that ends at the deadline is a timeout.

        An exchange's second read turns `_acking` on for good (see `_quickack`): the pending
        ACK of what came is sent at once, and every later segment is acknowledged as it comes.
        """
        if self._read_once:
            self._acking = True
        left = _left(deadline)
        if not left * 0.5 <= self._rcvtimeo <= left:
            self._rcvtimeo = _set_rcvtimeo(sock, left * 0.9)
        if self._acking:
            _quickack(sock)
        try:
            chunk = sock.recv(65536)
        except BlockingIOError:  # SO_RCVTIMEO ran out, before the deadline
            chunk = self._recv_rest(sock, deadline)
        self._read_once = True
        return chunk

    def _recv_rest(self, sock: socket.socket, deadline: float) -> bytes:
        """`_recv`'s read again, SO_RCVTIMEO ended before the deadline: with exactly the time
        left; the timeout at the deadline."""
        self._rcvtimeo = _set_rcvtimeo(sock, _left(deadline))
        if self._acking:
            _quickack(sock)
        try:
            return sock.recv(65536)
        except BlockingIOError:  # SO_RCVTIMEO ran out: the deadline
            raise TimeoutError from None

    def _take(self, sock: socket.socket, deadline: float, query: QueryConfig, size: int) -> bytes:
        self._fill(sock, deadline, query, size)
        taken, self._buffer = self._buffer[:size], self._buffer[size:]
        return taken

    def _line(self, sock: socket.socket, deadline: float, query: QueryConfig) -> bytes:
        while (end := self._buffer.find(b"\r\n")) < 0:
            self._fill(sock, deadline, query, len(self._buffer) + 1)
        line, self._buffer = self._buffer[:end], self._buffer[end + 2 :]
        return line

    def _head(
        self, sock: socket.socket, deadline: float, query: QueryConfig
    ) -> tuple[bytes, list[bytes], dict[str, str]]:
        """The status line (its parts checked as soon as it is in) and the header lines after
        it, up to the first blank line, parsed as one block once it is all in (names
        lower-cased, names and values stripped; the last of a name wins)."""
        while (eol := self._buffer.find(b"\r\n")) < 0:
            self._fill(sock, deadline, query, len(self._buffer) + 1)
        status_line = self._buffer[:eol]
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
            raise Failure(
                ErrorKind.CONNECTION, f"RemoteProtocolError: bad status line {status_line!r}"
            )
        # The blank line that ends the head: the status line's own CRLF when no header line
        # follows; no header line holds one.
        start = eol
        while (end := self._buffer.find(b"\r\n\r\n", start)) < 0:
            start = max(eol, len(self._buffer) - 3)
            self._fill(sock, deadline, query, len(self._buffer) + 1)
        headers: dict[str, str] = {}
        if end > eol:
            for line in self._buffer[eol + 2 : end].decode("latin-1").split("\r\n"):
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        self._buffer = self._buffer[end + 4 :]
        return status_line, parts, headers

    def _response(self, sock: socket.socket, deadline: float, query: QueryConfig) -> Answer:
        while True:  # 1xx answers come before the real one
            _, parts, headers = self._head(sock, deadline, query)
            status = int(parts[1])
            if not 100 <= status < 200:
                break
        close = headers.get("connection", "").lower() == "close" or parts[0] == b"HTTP/1.0"
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = self._chunked(sock, deadline, query)
        elif "content-length" in headers:
            length = _framing(headers["content-length"], 10, "Content-Length")
            if length > query.max_bytes:
                raise too_large(query)
            if len(self._buffer) == length:  # the usual answer: all in, nothing after it
                body, self._buffer = self._buffer, b""
            else:
                body = self._take(sock, deadline, query, length)
        elif status in (204, 304):
            body = b""
        else:
            body = self._until_close(sock, deadline, query)
            close = True
        if close:
            self.close()
        if "content-encoding" in headers:
            body = _decode(body, headers, query)
        return Answer(status, headers.get("content-type", ""), body)

    def _chunked(self, sock: socket.socket, deadline: float, query: QueryConfig) -> bytes:
        body = bytearray()
        while True:
            line = self._line(sock, deadline, query).split(b";")[0].strip() or b"0"
            size = _framing(line.decode("latin-1"), 16, "chunk size")
            if size == 0:
                while self._line(sock, deadline, query):  # trailers, then the empty line
                    pass
                return bytes(body)
            if len(body) + size > query.max_bytes:
                raise too_large(query)
            body += self._take(sock, deadline, query, size)
            self._take(sock, deadline, query, 2)

    def _until_close(self, sock: socket.socket, deadline: float, query: QueryConfig) -> bytes:
        try:
            while True:
                self._fill(sock, deadline, query, len(self._buffer) + 1)
                if len(self._buffer) > query.max_bytes:
                    raise too_large(query)
        except _Closed:
            body, self._buffer = self._buffer, b""
            return body


_new_tuple = tuple.__new__
_HEADS_KEPT = 256  # heads a connection keeps read (`Connection._usual`)
_HEAD_ALLOWANCE = 65536  # bytes of status line and headers read beyond max_bytes


class _Closed(Exception):
    """The service closed the connection."""


_DIGITS = {10: "0123456789", 16: "0123456789abcdefABCDEF"}


def _framing(text: str, base: int, what: str) -> int:
    """A Content-Length or chunk size: digits only (no sign, no spaces, no underscores)."""
    if not text or text.strip(_DIGITS[base]):
        raise Failure(ErrorKind.CONNECTION, f"RemoteProtocolError: bad {what} {text[:40]!r}")
    return int(text, base)


_QUICKACK = getattr(socket, "TCP_QUICKACK", None)  # Linux
_TCP, _DONTWAIT = socket.IPPROTO_TCP, socket.MSG_DONTWAIT
_monotonic = time.monotonic


def _quickack(sock: socket.socket) -> None:
    """Acknowledge what arrives at once, not after the delayed-ACK timer (40 ms on Linux).  A
    service that writes its headers and its body in two writes without TCP_NODELAY (Python's
    http.server does) holds the body back under Nagle's algorithm until the headers are
    acknowledged; with the client's ACK delayed, one side of a pair then waited 40 ms on top of
    its answer (a 4 ms handler measured 46 ms), and a handler 25% slower read as 1.11x.  The
    kernel leaves quick-ack mode on its own, so it is set again before every read.

    Over plain TCP, only once one of the service's answers has taken a second read
    (`Connection._acking`): an answer that comes whole in one read needs no ACK of its own (the
    next request carries it, as with any client), and setting quick-ack and sending that ACK
    cost about 4 us of CPU per exchange.  The second read of the first answer that comes in
    pieces sends the pending ACK at once; a service that holds its body for it waits for that
    read once (about 30 us, in the warm-up or adapter probe when there is one), never again.
    TLS connections set it before every read."""
    if _QUICKACK is not None:
        try:  # noqa: SIM105 (contextlib.suppress builds an object per read, on the clock)
            sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
        except OSError:
            pass


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def _set_rcvtimeo(sock: socket.socket, seconds: float) -> float:
    """SO_RCVTIMEO set to `seconds` as a struct timeval, rounded up to the microsecond and never
    0 (which would mean no timeout at all); the seconds set."""
    micros = max(1, math.ceil(seconds * 1e6))
    timeval = struct.pack("@ll", micros // 1_000_000, micros % 1_000_000)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeval)
    return micros / 1e6


# The Content-Encodings decoded (zlib's window bits for each). The lean path sends no
# Accept-Encoding: a service that compresses anyway is read all the same; any other coding (br,
# zstd) is read as sent, and is then not JSON.
_DECODED = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
_TRUNCATED = "Error -5 while decompressing data: incomplete or truncated stream"  # zlib's words


def _decode(body: bytes, headers: Mapping[str, str], query: QueryConfig) -> bytes:
    """`body` decoded of its Content-Encoding, never to more than `query.max_bytes`.

    One decompressobj call whose output is capped at max_bytes + 1 (`max_length`): a bomb (a
    small gzip body that decodes to gigabytes) stops there, so decoding holds at most the
    compressed body (itself within max_bytes) and max_bytes + 1 decoded bytes. An identity body
    is returned as it is, untouched."""
    wbits = _DECODED.get(headers.get("content-encoding", "identity").lower())
    if wbits is None:
        return body
    decoder = zlib.decompressobj(wbits)
    try:
        decoded = decoder.decompress(body, query.max_bytes + 1)
    except zlib.error as error:
        raise Failure(ErrorKind.NOT_JSON, f"undecodable body: {error}") from None
    if len(decoded) > query.max_bytes:
        encoding = headers.get("content-encoding", "").lower()
        raise Failure(
            ErrorKind.TOO_LARGE,
            f"the answer is too large after decoding: its {len(body)}-byte {encoding} body "
            f"decodes to more than query.max_bytes = {query.max_bytes} bytes; raise "
            "query.max_bytes if the service is right to send that much",
        )
    if not decoder.eof:  # what zlib.decompress says of a body cut short
        raise Failure(ErrorKind.NOT_JSON, f"undecodable body: {_TRUNCATED}")
    return decoded

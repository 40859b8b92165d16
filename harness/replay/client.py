"""How we ask: one gold query over HTTP, timed, and the ranked ids read from the answer.

    make_request(query, text) -> RequestSpec                 pure: the request for one query
    Channel(base_url, query, items).ask(query_id, text)      the timed path: one persistent
                                                             keep-alive socket (any new one
                                                             connected off the clock), requests
                                                             encoded before the clock starts
    channel.send(query_id, text) -> Sent; channel.read(sent) the same in two steps: the timed
                                                             exchange, then the answer read
    Requests(query, items), AnswerCache(query)               kept per ref across its boots:
                                                             requests encoded once, each
                                                             distinct answer read once
    ask(client, base_url, query, query_id, text)             the same over httpx (MockTransport)
    replay(base_url, query, items, *, warmup_items=None, concurrency=1, on_result=None)

Why not httpx on the clock: it adds about 0.4 ms per request at concurrency 1 (request and URL
objects, header models, its connection pool), which on a 0.5 ms service reads a 1.6x slowdown
as 1.35x; `scripts/bench_client.py` measures the lean path against a raw-socket loop.
`query.timeout` is the whole request's deadline (an answer that comes whole after it is a
TIMEOUT too) and `query.max_bytes` caps an answer, as sent and as decoded (TOO_LARGE);
`query.max_consecutive_failures` timeouts or connection failures in a row stop a replay
(`Stopped`).

A query either yields a ranking (possibly empty: a valid answer to an unanswerable query) or fails
with an ErrorKind and a detail; a failure is never turned into an empty ranking, and nothing is
retried: a flaky service shows up as errors, not as a slower average.
"""

from __future__ import annotations

import json
import math
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, unquote, urlencode, urlsplit

from harness.boot.deployed import tls_context
from harness.boot.sandbox import OpenSocket
from harness.config import QueryConfig, substitute
from harness.replay.answers import html_document
from harness.replay.paths import compile_path
from harness.scrub import basic_token
from harness.types import ErrorKind, QueryResult

if TYPE_CHECKING:  # httpx is imported on use: only tests (MockTransport) ask through it
    import httpx

EXCERPT = 200  # characters of a response body quoted in an error detail
READ_BATCH = 32
"""Queries sent (and timed) before their answers are read, together: reading ids is off the
clock either way, and a batch of answers read in a row costs the harness about half the CPU of
each read right after its exchange (`scripts/bench_replay_cpu.py`)."""

OnResult = Callable[[int, int, QueryResult], None]  # (done, total, result)


@dataclass(frozen=True)
class RequestSpec:
    """One concrete request: the config's templates with {query} and {limit} filled in."""

    method: str
    path: str
    params: Mapping[str, str] = field(default_factory=dict)
    json: object | None = None  # the body, sent as JSON when not None
    form: Mapping[str, str] | None = None  # the body, form-urlencoded, when not None
    headers: Mapping[str, str] = field(default_factory=dict)


def make_request(query: QueryConfig, text: str) -> RequestSpec:
    """Fill the request templates of `query` for the query `text`.

    Substitution is literal and single-pass (see config.substitute): braces in the query text are
    sent as typed and never expanded. In the JSON template a string that is exactly "{limit}"
    becomes the integer limit and one that is exactly "{query}" the text; any other string has
    its placeholders replaced inside it. `form` values are filled like `params`. `path` is sent
    as written.
    """
    values = {"query": text, "limit": str(query.limit)}
    return RequestSpec(
        method=query.method,
        path=query.path,
        params={name: substitute(value, values) for name, value in query.params.items()},
        json=None if query.json is None else _fill(query.json, values, query.limit),
        form=None
        if query.form is None
        else {name: substitute(value, values) for name, value in query.form.items()},
        headers={name: substitute(value, values) for name, value in query.headers.items()},
    )


def _fill(template: object, values: Mapping[str, str], limit: int) -> object:
    if isinstance(template, str):
        if template == "{limit}":
            return limit
        return values["query"] if template == "{query}" else substitute(template, values)
    if isinstance(template, Mapping):
        return {key: _fill(item, values, limit) for key, item in template.items()}
    if isinstance(template, list | tuple):
        return [_fill(item, values, limit) for item in template]
    return template


class _Failure(Exception):
    """A query that failed on the wire: its ErrorKind and the words of its detail."""

    def __init__(self, kind: ErrorKind, detail: str) -> None:
        super().__init__(detail)
        self.kind, self.detail = kind, detail


@dataclass(frozen=True)
class _Answer:
    status: int
    content_type: str
    body: bytes  # decoded of any Content-Encoding


def _timeout_detail(query: QueryConfig, what: str) -> str:
    return f"no answer within query.timeout = {query.timeout:g} s ({what})"


def _check_late(query: QueryConfig, latency_ns: int) -> None:
    """An answer that came whole, but after `query.timeout`, is a timeout all the same: every
    read kept to the deadline, yet the exchange as timed did not (a read that found its bytes
    waiting after the process was descheduled past the deadline; decoding a large body)."""
    if latency_ns > query.timeout * 1e9:  # a float: no overflow for any timeout
        raise _Failure(
            ErrorKind.TIMEOUT,
            _timeout_detail(query, f"the answer came whole after {latency_ns / 1e6:.1f} ms"),
        )


def _too_large(query: QueryConfig) -> _Failure:
    return _Failure(
        ErrorKind.TOO_LARGE,
        f"the answer is longer than query.max_bytes = {query.max_bytes} bytes; "
        "raise query.max_bytes if the service is right to send that much",
    )


def ask(
    client: httpx.Client, base_url: str, query: QueryConfig, query_id: str, text: str
) -> QueryResult:
    """Send one query through an httpx client and read its ranking; never raises for what the
    service does.  The path for `httpx.MockTransport` in tests; measured replays use `Channel`,
    which reads answers the same way (`_interpret`) over a lean socket.

    `latency_ns` is time.perf_counter_ns around the complete request, from before it is sent to
    after the last byte of the body is read (JSON parsing excluded); a failed query records the
    time until it failed. `query.timeout` is the whole request's deadline (connect, send and
    every byte of the body); `query.max_bytes` caps the body. Outcomes: TIMEOUT, CONNECTION (any
    other transport failure), TOO_LARGE, HTTP_STATUS (not 2xx; the detail quotes the body's
    first 200 characters), NOT_JSON, NO_MATCH (the ids path finds nothing), BAD_SHAPE (ids not
    a list of strings or integers, a null among them, scores that are not finite numbers one
    per id, or `query.texts` not one string or null per id). Integer ids become strings.
    JMESPath projections such as `results[].id` silently drop results without an id; set
    `scores` with the same projection to have such answers caught as BAD_SHAPE by the length
    check.
    """
    import httpx

    spec = make_request(query, text)
    started = time.perf_counter_ns()
    deadline = time.monotonic() + query.timeout
    try:
        with client.stream(
            spec.method,
            base_url.rstrip("/") + spec.path,
            params=spec.params,
            json=spec.json,
            data=spec.form,
            headers=spec.headers,
            timeout=query.timeout,
        ) as response:
            body = bytearray()
            for chunk in response.iter_bytes():  # decoded by httpx: only tests come this way
                body += chunk
                if len(body) > query.max_bytes:
                    raise _too_large(query)
                if time.monotonic() > deadline:
                    raise _Failure(ErrorKind.TIMEOUT, _timeout_detail(query, "body"))
            answer = _Answer(
                response.status_code, response.headers.get("content-type", ""), bytes(body)
            )
        _check_late(query, time.perf_counter_ns() - started)
    except _Failure as failure:
        return _failed(query_id, failure.kind, failure.detail, time.perf_counter_ns() - started)
    except httpx.TimeoutException as error:
        kind, detail = ErrorKind.TIMEOUT, _timeout_detail(query, type(error).__name__)
    except httpx.DecodingError as error:  # a body that its Content-Encoding cannot decode
        kind, detail = ErrorKind.NOT_JSON, f"undecodable body: {error}"
    except httpx.RequestError as error:
        kind = ErrorKind.CONNECTION
        detail = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    else:
        return _interpret(answer, query, query_id, time.perf_counter_ns() - started)
    return _failed(query_id, kind, detail, time.perf_counter_ns() - started)


def _failed(
    query_id: str, kind: ErrorKind, detail: str, latency_ns: int, status: int | None = None
) -> QueryResult:
    return QueryResult(query_id, status=status, error=kind, detail=detail, latency_ns=latency_ns)


def _interpret(answer: _Answer, query: QueryConfig, query_id: str, latency_ns: int) -> QueryResult:
    status = answer.status

    def failed(kind: ErrorKind, detail: str) -> QueryResult:
        return _failed(query_id, kind, detail, latency_ns, status)

    excerpt = answer.body[: 4 * EXCERPT].decode("utf-8", errors="replace")[:EXCERPT]
    if not 200 <= status < 300:
        return failed(ErrorKind.HTTP_STATUS, f"HTTP {status}: {excerpt}")
    try:
        decoded = (
            html_document(answer.body, query.select) if query.select else json.loads(answer.body)
        )
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python recurses
        return failed(ErrorKind.NOT_JSON, f"{answer.content_type or 'no content-type'}: {excerpt}")
    found = compile_path(query.ids).search(decoded)
    if found is None:
        return failed(ErrorKind.NO_MATCH, f"ids path {query.ids!r} matched nothing in {excerpt}")
    ids, problem = _ids(found, query.ids)
    if problem:
        return failed(ErrorKind.BAD_SHAPE, problem)
    scores = None
    if query.scores is not None:
        found_scores = compile_path(query.scores).search(decoded)
        scores, problem = _scores(found_scores, query.scores, len(ids))
        if problem:
            return failed(ErrorKind.BAD_SHAPE, problem)
    texts = None
    if query.texts is not None:
        found_texts = compile_path(query.texts).search(decoded)
        texts, problem = _texts(found_texts, query.texts, len(ids))
        if problem:
            return failed(ErrorKind.BAD_SHAPE, problem)
    return QueryResult(
        query_id, ids=ids, scores=scores, status=status, latency_ns=latency_ns, texts=texts
    )


# --------------------------------------------------------------------------- the timed path


def encode_request(base_url: str, spec: RequestSpec) -> bytes:
    """The bytes of `spec` as one HTTP/1.1 request to `base_url` (http or https), keep-alive.

    Built before the clock starts: the timed path only writes these bytes and reads the answer.
    Params are form-encoded onto the path (spaces as "+", as httpx and browsers send them); a
    JSON body is compact UTF-8, a form body `application/x-www-form-urlencoded` (UTF-8, as
    browsers and httpx encode it), each with its Content-Length. A Content-Type in
    `query.headers` replaces the harness's own.
    """
    url = _http_url(base_url)
    start, rest = _encode_parts(url.path, spec)
    return start + _host(url, spec.headers) + rest


def _host(url: SplitResult, headers: Mapping[str, str]) -> bytes:
    """The Host header's value: the URL's host and port, never its userinfo, which becomes
    HTTP Basic credentials instead (as curl and httpx send them), unless query.headers names
    an Authorization of its own."""
    host = url.netloc.rpartition("@")[2]
    if "@" in url.netloc and not any(name.lower() == "authorization" for name in headers):
        user, password = unquote(url.username or ""), unquote(url.password or "")
        host += "\r\nAuthorization: " + basic_token(user, password)
    return host.encode("utf-8")


def _http_url(base_url: str) -> SplitResult:
    url = urlsplit(base_url)
    if url.scheme not in ("http", "https") or url.hostname is None:
        raise ValueError(f"the timed client speaks http(s), not {base_url}")
    return url


def _encode_parts(prefix: str, spec: RequestSpec) -> tuple[bytes, bytes]:
    """The request of `spec` under the URL path `prefix`, split where the Host value goes: every
    byte but the host, which changes with each boot's port (`Requests`)."""
    target = prefix.rstrip("/") + spec.path
    if spec.params:
        target += ("&" if "?" in target else "?") + urlencode(dict(spec.params))
    lines = ["Accept: */*"]
    body = b""
    content_type = None
    if spec.json is not None:
        body = json.dumps(spec.json, ensure_ascii=False, separators=(",", ":")).encode()
        content_type = "application/json"
    elif spec.form is not None:
        body = urlencode(dict(spec.form)).encode("ascii")
        content_type = "application/x-www-form-urlencoded"
    if content_type and not any(name.lower() == "content-type" for name in spec.headers):
        lines.append(f"Content-Type: {content_type}")
    if body or spec.method not in ("GET", "HEAD"):
        lines.append(f"Content-Length: {len(body)}")
    lines += [f"{name}: {value}" for name, value in spec.headers.items()]
    start = f"{spec.method} {target} HTTP/1.1\r\nHost: ".encode()
    return start, ("\r\n" + "\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + body


class Requests:
    """Every request of one query configuration, encoded once and reused for each boot.

        requests = Requests(query, items)          # once per ref (query.rewrite already applied)
        requests.for_url("http://127.0.0.1:PORT")  # {text: bytes}: encode_request's, per text

    A boot differs only in its port, which is the Host header's value: the rest of each request
    is encoded here once (`make_request`, `encode_request`'s rules) and joined around the host.
    """

    def __init__(self, query: QueryConfig, items: Sequence[tuple[str, str]] = ()) -> None:
        self.query = query
        self._texts = list(dict.fromkeys(text for _, text in items))
        self._parts: dict[str, dict[str, tuple[bytes, bytes]]] = {}  # URL path -> text -> parts

    def for_url(self, base_url: str) -> dict[str, bytes]:
        url = _http_url(base_url)
        parts = self._parts.get(url.path)
        if parts is None:
            parts = self._parts[url.path] = {
                text: _encode_parts(url.path, make_request(self.query, text))
                for text in self._texts
            }
        host = _host(url, self.query.headers)
        return {text: start + host + rest for text, (start, rest) in parts.items()}


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

    def connect(self, query: QueryConfig) -> None:
        """Open the connection now, unless one is open: called before the clock starts, so the
        TCP (and TLS) handshake, and in a sandbox fetching the socket from its helper, is never
        part of a query's latency, for a service that closes every connection as for one that
        keeps it alive.  Its own deadline, `query.timeout`; a failure is the query's _Failure."""
        if self._sock is not None:
            return
        try:
            self._open(time.monotonic() + query.timeout)
        except TimeoutError:
            detail = _timeout_detail(query, "connecting")
            raise _Failure(ErrorKind.TIMEOUT, detail) from None
        except OSError as error:
            raise _Failure(ErrorKind.CONNECTION, f"{type(error).__name__}: {error}") from None

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._buffer = b""

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
        if self._tls:
            try:
                sock = tls_context().wrap_socket(sock, server_hostname=self.address[0])
            except BaseException:
                sock.close()
                raise
        self._sock, self._buffer, self._fresh = sock, b"", True
        return sock

    def exchange(self, raw: bytes, query: QueryConfig) -> _Answer:
        deadline = time.monotonic() + query.timeout
        # Only a socket that carried an earlier request can be a stale keep-alive one.
        reused = self._sock is not None and not self._fresh
        try:
            try:
                sock = self._sock or self._open(deadline)
                self._fresh = False
                self._send(sock, raw, deadline)
                self._fill(sock, deadline, query, 1)
            except (ConnectionError, ssl.SSLEOFError, _Closed):
                if not reused:
                    raise
                self.close()  # a stale keep-alive connection: the request never arrived
                sock = self._open(deadline)
                self._fresh = False
                self._send(sock, raw, deadline)
                self._fill(sock, deadline, query, 1)
            return self._response(sock, deadline, query)
        except _Failure:
            self.close()
            raise
        except TimeoutError:
            self.close()
            detail = _timeout_detail(query, "the whole request's deadline")
            raise _Failure(ErrorKind.TIMEOUT, detail) from None
        except _Closed:
            self.close()
            raise _Failure(
                ErrorKind.CONNECTION, "RemoteProtocolError: the service closed the connection"
            ) from None
        except ssl.SSLEOFError:
            self.close()
            raise _Failure(
                ErrorKind.CONNECTION, "SSLEOFError: the service closed the TLS connection"
            ) from None
        except OSError as error:
            self.close()
            raise _Failure(ErrorKind.CONNECTION, f"{type(error).__name__}: {error}") from None

    def _send(self, sock: socket.socket, raw: bytes, deadline: float) -> None:
        """Write `raw` within the deadline. A request fits the socket's send buffer: over plain
        TCP it is written at once, without the readiness poll of a timed `sendall`."""
        sent = 0
        if not self._tls:
            sock.settimeout(0.0)
            try:
                sent = sock.send(raw)
            except BlockingIOError:
                sent = 0
        if sent < len(raw):
            sock.settimeout(_left(deadline))
            sock.sendall(raw[sent:] if sent else raw)

    def _fill(self, sock: socket.socket, deadline: float, query: QueryConfig, size: int) -> int:
        """Read until the buffer holds at least `size` bytes; raise _Closed at end of stream."""
        while len(self._buffer) < size:
            sock.settimeout(_left(deadline))
            chunk = sock.recv(65536)
            if not chunk:
                raise _Closed
            self._buffer += chunk
            if len(self._buffer) > query.max_bytes + _HEAD_ALLOWANCE:
                raise _too_large(query)
        return len(self._buffer)

    def _take(self, sock: socket.socket, deadline: float, query: QueryConfig, size: int) -> bytes:
        self._fill(sock, deadline, query, size)
        taken, self._buffer = self._buffer[:size], self._buffer[size:]
        return taken

    def _line(self, sock: socket.socket, deadline: float, query: QueryConfig) -> bytes:
        while (end := self._buffer.find(b"\r\n")) < 0:
            self._fill(sock, deadline, query, len(self._buffer) + 1)
        line, self._buffer = self._buffer[:end], self._buffer[end + 2 :]
        return line

    def _headers(self, sock: socket.socket, deadline: float, query: QueryConfig) -> dict[str, str]:
        """The header lines after a status line, up to the empty line, parsed as one block once
        it is all in (names lower-cased, names and values stripped; the last of a name wins)."""
        self._fill(sock, deadline, query, 2)
        if self._buffer.startswith(b"\r\n"):  # no header lines at all
            self._buffer = self._buffer[2:]
            return {}
        start = 0  # the first blank line ends the block: no header line holds one
        while (end := self._buffer.find(b"\r\n\r\n", start)) < 0:
            start = max(0, len(self._buffer) - 3)
            self._fill(sock, deadline, query, len(self._buffer) + 1)
        block, self._buffer = self._buffer[:end], self._buffer[end + 4 :]
        headers: dict[str, str] = {}
        for line in block.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return headers

    def _response(self, sock: socket.socket, deadline: float, query: QueryConfig) -> _Answer:
        while True:  # 1xx answers come before the real one
            status_line = self._line(sock, deadline, query)
            parts = status_line.split(None, 2)
            if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
                raise _Failure(
                    ErrorKind.CONNECTION, f"RemoteProtocolError: bad status line {status_line!r}"
                )
            status = int(parts[1])
            headers = self._headers(sock, deadline, query)
            if not 100 <= status < 200:
                break
        close = headers.get("connection", "").lower() == "close" or parts[0] == b"HTTP/1.0"
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = self._chunked(sock, deadline, query)
        elif "content-length" in headers:
            length = _framing(headers["content-length"], 10, "Content-Length")
            if length > query.max_bytes:
                raise _too_large(query)
            body = self._take(sock, deadline, query, length)
        elif status in (204, 304):
            body = b""
        else:
            body = self._until_close(sock, deadline, query)
            close = True
        if close:
            self.close()
        return _Answer(status, headers.get("content-type", ""), _decode(body, headers, query))

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
                raise _too_large(query)
            body += self._take(sock, deadline, query, size)
            self._take(sock, deadline, query, 2)

    def _until_close(self, sock: socket.socket, deadline: float, query: QueryConfig) -> bytes:
        try:
            while True:
                self._fill(sock, deadline, query, len(self._buffer) + 1)
                if len(self._buffer) > query.max_bytes:
                    raise _too_large(query)
        except _Closed:
            body, self._buffer = self._buffer, b""
            return body


_HEAD_ALLOWANCE = 65536  # bytes of status line and headers read beyond max_bytes


class _Closed(Exception):
    """The service closed the connection."""


_DIGITS = {10: "0123456789", 16: "0123456789abcdefABCDEF"}


def _framing(text: str, base: int, what: str) -> int:
    """A Content-Length or chunk size: digits only (no sign, no spaces, no underscores)."""
    if not text or text.strip(_DIGITS[base]):
        raise _Failure(ErrorKind.CONNECTION, f"RemoteProtocolError: bad {what} {text[:40]!r}")
    return int(text, base)


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


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
        raise _Failure(ErrorKind.NOT_JSON, f"undecodable body: {error}") from None
    if len(decoded) > query.max_bytes:
        encoding = headers.get("content-encoding", "").lower()
        raise _Failure(
            ErrorKind.TOO_LARGE,
            f"the answer is too large after decoding: its {len(body)}-byte {encoding} body "
            f"decodes to more than query.max_bytes = {query.max_bytes} bytes; raise "
            "query.max_bytes if the service is right to send that much",
        )
    if not decoder.eof:  # what zlib.decompress says of a body cut short
        raise _Failure(ErrorKind.NOT_JSON, f"undecodable body: {_TRUNCATED}")
    return decoded


class AnswerCache:
    """What each distinct answer of one query configuration reads as, kept across boots.

        answers = AnswerCache(query)           # once per ref, beside its Requests
        Channel(url, query, items, answers=answers)

    Reading an answer (`_interpret`: JSON, the ids/scores/texts paths, their checks) depends on
    nothing but the query configuration and the answer's status, content type and body, so a
    service that answers a query as it did in an earlier round is read once: the same result,
    with this query's id and latency. Bodies up to MAX_BYTES in all are kept (a body is the key:
    a hit is an exact match); past that, answers are read as if there were no cache.
    """

    MAX_BYTES = 32 << 20

    def __init__(self, query: QueryConfig) -> None:
        self.query = query
        self._read: dict[tuple[int, str, bytes], QueryResult] = {}
        self._bytes = 0

    def read(self, answer: _Answer, query_id: str, latency_ns: int) -> QueryResult:
        key = (answer.status, answer.content_type, answer.body)
        known = self._read.get(key)
        if known is None:
            known = _interpret(answer, self.query, "", 0)
            if self._bytes + len(answer.body) <= self.MAX_BYTES:
                self._read[key] = known
                self._bytes += len(answer.body)
        return replace(known, query_id=query_id, latency_ns=latency_ns)


@dataclass(frozen=True, slots=True)
class Sent:
    """One timed exchange, its answer not yet read (`Channel.send`, then `Channel.read`)."""

    query_id: str
    latency_ns: int
    answer: _Answer | None = None  # None when it failed on the wire
    failure: _Failure | None = None
    result: QueryResult | None = None  # already read (the httpx path of tests)


_ON_THE_WIRE = frozenset({ErrorKind.TIMEOUT, ErrorKind.CONNECTION})


class Stopped(Exception):
    """`query.max_consecutive_failures` queries in a row timed out or could not connect: the
    round stops (`replay`, and the runner's paired rounds), its `results` so far kept, and the
    run is invalid.  `message` names the key and the last failure."""

    def __init__(self, message: str, results: tuple[QueryResult, ...] = ()) -> None:
        super().__init__(message)
        self.message, self.results = message, results


class Streak:
    """Failures on the wire in a row on one side (TIMEOUT, CONNECTION; any answer, even an
    error status, ends a streak): a service that stalls costs `limit` timeouts, not one per
    gold query.  `limit` 0 never stops."""

    __slots__ = ("count", "limit")

    def __init__(self, query: QueryConfig) -> None:
        self.limit, self.count = query.max_consecutive_failures, 0

    def stops(self, sent: Sent) -> str | None:
        """Count `sent`; the reason to stop the round when this makes `limit` in a row."""
        failure = sent.failure
        if failure is not None:
            kind, detail = failure.kind, failure.detail
        elif sent.result is not None and sent.result.error is not None:  # the httpx path
            kind, detail = sent.result.error, sent.result.detail or ""
        else:
            self.count = 0
            return None
        if kind not in _ON_THE_WIRE:
            self.count = 0
            return None
        self.count += 1
        if not self.limit or self.count < self.limit:
            return None
        return (
            f"{self.count} queries in a row failed ({kind.value}; the last: {detail}); "
            f"stopped at query.max_consecutive_failures = {self.limit}: is the service "
            "stalled? raise query.max_consecutive_failures (0: never stop) if it is right"
        )


class Channel:
    """The timed path to one service: a persistent connection (or, in tests, an httpx client
    over `transport`) and every request prepared before the clock starts.

        channel = Channel(base_url, query, items)   # encodes every request once
        result = channel.ask(query_id, text)        # one timed exchange -> QueryResult
        sent = channel.send(query_id, text)         # or: the timed exchange now...
        result = channel.read(sent)                 # ...and its answer read later
        channel.close()

    On the clock: write the prepared bytes, read the answer; nothing else is built per query,
    and the connection is open before the clock starts (`Connection.connect`).
    `send` stops there: reading ids out of the answer (`read`) is the harness's own work, done
    after the clock in either case, and cheaper for a batch of answers read together (the
    runner reads a round's answers every READ_BATCH queries). `requests` (a `Requests` of the
    same query) reuses requests encoded for an earlier boot, `answers` (an `AnswerCache` of the
    same query) what earlier boots' answers read as. The client never reads proxies or
    certificates from the environment, speaks HTTP/1.1 only and makes no TLS context (the
    service is plain http on 127.0.0.1).
    """

    def __init__(
        self,
        base_url: str,
        query: QueryConfig,
        items: Sequence[tuple[str, str]] = (),
        *,
        transport: httpx.BaseTransport | None = None,
        open_socket: OpenSocket | None = None,
        requests: Requests | None = None,
        answers: AnswerCache | None = None,
    ) -> None:
        self.base_url, self.query = base_url, query
        self._answers = answers if answers is not None and answers.query == query else None
        self._client = None
        if transport is not None:
            import httpx

            self._client = httpx.Client(trust_env=False, http2=False, transport=transport)
        self._connection = Connection(base_url, open_socket) if transport is None else None
        self._prepared: dict[str, bytes] = {}
        if self._connection is not None:
            if requests is None or requests.query != query:
                requests = Requests(query, items)
            self._prepared = requests.for_url(base_url)

    def ask(self, query_id: str, text: str) -> QueryResult:
        """One timed exchange and its answer read: `read(send(query_id, text))`."""
        return self.read(self.send(query_id, text))

    def send(self, query_id: str, text: str) -> Sent:
        """Send one query and read its whole answer, timed (`ask`'s latency); no ids read yet."""
        if self._client is not None:
            result = ask(self._client, self.base_url, self.query, query_id, text)
            return Sent(query_id, result.latency_ns, result=result)
        assert self._connection is not None
        raw = self._prepared.get(text)
        if raw is None:
            raw = self._prepared[text] = encode_request(
                self.base_url, make_request(self.query, text)
            )
        try:
            self._connection.connect(self.query)  # off the clock: see Connection.connect
        except _Failure as failure:
            return Sent(query_id, 0, failure=failure)
        # On the clock: from the first byte written to the last byte of the answer read.
        started = time.perf_counter_ns()
        try:
            answer = self._connection.exchange(raw, self.query)
            latency_ns = time.perf_counter_ns() - started
            _check_late(self.query, latency_ns)
        except _Failure as failure:
            return Sent(query_id, time.perf_counter_ns() - started, failure=failure)
        return Sent(query_id, latency_ns, answer=answer)

    def read(self, sent: Sent) -> QueryResult:
        """The QueryResult of a `send`: the ranking read from its answer, or its failure."""
        if sent.result is not None:
            return sent.result
        if sent.answer is None:
            assert sent.failure is not None
            failure = sent.failure
            return _failed(sent.query_id, failure.kind, failure.detail, sent.latency_ns)
        if self._answers is not None:
            return self._answers.read(sent.answer, sent.query_id, sent.latency_ns)
        return _interpret(sent.answer, self.query, sent.query_id, sent.latency_ns)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        if self._connection is not None:
            self._connection.close()

    def __enter__(self) -> Channel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_STR, _FLOAT = frozenset({str}), frozenset({float})  # exact types: what json.loads makes


def _kind(value: object) -> str:
    """The JSON type of a decoded value, as a reader of the service's answer would name it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _ids(found: object, path: str) -> tuple[tuple[str, ...], str | None]:
    if not isinstance(found, list):
        return (), f"ids path {path!r} matched {_kind(found)}, not an array"
    if set(map(type, found)) <= _STR:  # the usual answer, checked without a Python loop
        return tuple(found), None
    for index, item in enumerate(found):
        if isinstance(item, bool) or not isinstance(item, str | int):
            return (), f"ids[{index}] is {_kind(item)}; ids must be strings or integers"
    return tuple(str(item) for item in found), None


def _scores(found: object, path: str, count: int) -> tuple[tuple[float, ...] | None, str | None]:
    if not isinstance(found, list):
        return None, f"scores path {path!r} matched {_kind(found)}, not an array"
    if len(found) == count and set(map(type, found)) <= _FLOAT and all(map(math.isfinite, found)):
        return tuple(found), None  # the usual answer, checked without a Python loop
    for index, item in enumerate(found):
        number = isinstance(item, int | float) and not isinstance(item, bool)
        if not number or not math.isfinite(item):
            return None, f"scores[{index}] is {_kind(item)}; scores must be finite numbers"
    if len(found) != count:
        return None, f"{len(found)} scores for {count} ids; each id needs one score"
    return tuple(float(item) for item in found), None


def _texts(
    found: object, path: str, count: int
) -> tuple[tuple[str | None, ...] | None, str | None]:
    if not isinstance(found, list):
        return None, f"texts path {path!r} matched {_kind(found)}, not an array"
    for index, item in enumerate(found):
        if item is not None and not isinstance(item, str):
            return None, f"texts[{index}] is {_kind(item)}; texts must be strings (or null)"
    if len(found) != count:
        return None, f"{len(found)} texts for {count} ids; each id needs one text (or null)"
    return tuple(found), None


def replay(
    base_url: str,
    query: QueryConfig,
    items: Sequence[tuple[str, str]],
    *,
    warmup_items: Sequence[tuple[str, str]] | None = None,
    concurrency: int = 1,
    on_result: OnResult | None = None,
    transport: httpx.BaseTransport | None = None,
    open_socket: OpenSocket | None = None,
    requests: Requests | None = None,
    answers: AnswerCache | None = None,
) -> tuple[QueryResult, ...]:
    """Send `query.warmup` unrecorded requests, then every (query_id, text) once, in order.

    Warm-up texts cycle through `warmup_items` (default: `items`; none when empty). Both refs
    warm up alike, but a service that caches answers serves those first items from its cache:
    pass texts outside the measured set then. Warm-up outcomes are ignored, even when every
    one fails: the measured queries then record the errors themselves. Sequential by default,
    for latency fidelity, over one `Channel`; `concurrency > 1` sends through a thread pool,
    one Channel (connection) per thread, and still returns results in item order: its
    latencies include the client's own queueing. `on_result(done, total, result)` is called in
    this thread for each result in item order as it is read (sequentially: every READ_BATCH
    queries, after their exchanges). `transport` is for tests (an httpx transport).
    `open_socket` is `RunningService.open_socket`: in a bubblewrap sandbox every connection is a
    socket made in the service's network namespace (None: plain loopback connections).
    `requests` and `answers` are the ref's, kept across its boots (see `Channel`).
    `query.max_consecutive_failures` timeouts or connection failures in a row (`Streak`) raise
    `Stopped` with the results so far: nothing more is sent.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, not {concurrency}")
    warm = items if warmup_items is None else warmup_items
    with Channel(
        base_url,
        query,
        items,
        transport=transport,
        open_socket=open_socket,
        requests=requests,
        answers=answers,
    ) as channel:
        warm_up(channel, warm)
        if concurrency == 1:
            return _sequential(channel, items, on_result)
    return _concurrent(base_url, query, items, concurrency, on_result, transport, open_socket)


def warm_up(channel: Channel, items: Sequence[tuple[str, str]], *, skip: int = 0) -> None:
    """`query.warmup` unrecorded requests through `channel`, cycling through `items` (each
    answer read off the wire whole, never interpreted: its outcome is ignored); the first
    `skip` of them are left out (sent already: the runner's adapter probe)."""
    for index in range(skip, channel.query.warmup if items else 0):
        query_id, text = items[index % len(items)]
        channel.send(query_id, text)


def _sequential(
    channel: Channel, items: Sequence[tuple[str, str]], on_result: OnResult | None
) -> tuple[QueryResult, ...]:
    results: list[QueryResult] = []
    sent: list[Sent] = []
    streak = Streak(channel.query)
    for done, (query_id, text) in enumerate(items, start=1):
        sent.append(channel.send(query_id, text))
        stop = streak.stops(sent[-1])
        if len(sent) == READ_BATCH or done == len(items) or stop:
            for one in sent:
                results.append(channel.read(one))
                if on_result is not None:
                    on_result(len(results), len(items), results[-1])
            sent.clear()
        if stop:
            raise Stopped(stop, tuple(results))
    return tuple(results)


def _concurrent(
    base_url: str,
    query: QueryConfig,
    items: Sequence[tuple[str, str]],
    concurrency: int,
    on_result: OnResult | None,
    transport: httpx.BaseTransport | None,
    open_socket: OpenSocket | None = None,
) -> tuple[QueryResult, ...]:
    local = threading.local()
    opened: list[Channel] = []
    lock = threading.Lock()

    def one(query_id: str, text: str) -> QueryResult:
        channel = getattr(local, "channel", None)
        if channel is None:
            channel = local.channel = Channel(
                base_url, query, transport=transport, open_socket=open_socket
            )
            with lock:
                opened.append(channel)
        result: QueryResult = channel.ask(query_id, text)
        return result

    slots: dict[int, QueryResult] = {}
    streak = Streak(query)  # in the order answers complete: the service's order
    try:
        with ThreadPoolExecutor(concurrency, thread_name_prefix="harness-query") as pool:
            futures = {
                pool.submit(one, query_id, text): index
                for index, (query_id, text) in enumerate(items)
            }
            try:
                for future in as_completed(futures):
                    result = slots[futures[future]] = future.result()
                    if on_result is not None:
                        on_result(len(slots), len(items), result)
                    stop = streak.stops(Sent(result.query_id, result.latency_ns, result=result))
                    if stop:
                        kept = tuple(slots[index] for index in sorted(slots))
                        raise Stopped(stop, kept)
            except BaseException:  # Ctrl-C, a failing callback, a stall: send nothing more
                for future in futures:
                    future.cancel()
                raise
    finally:
        for channel in opened:
            channel.close()
    return tuple(slots[index] for index in range(len(items)))

"""The local judging page of `harness judge`: a person grades (query, document) pairs 0-3.

    serve(pairs_path, labels_path, by="alice", on_ready=print) -> 0

In: a pairs file (`harness judge pairs` writes it, JSONL or CSV; read by
`harness.judge.pairs_file.read_pairs`) and a labels file (`harness.judge.labels`), read once so
that reopening resumes with this judge's latest grades (other judges' lines are left alone).
Out: one label a line appended to the labels file per grade (`append_label`), fsynced (and the
folder, for a new file) before the page is told it is saved.  Never: listens anywhere but the
loopback interface, loads anything from another host (the page is one document, its script and
style inline and allowed by hash), or answers a request whose Host is not the address it
listens on (a DNS-rebinding page would otherwise read and write labels from the browser), or a
POST whose Origin is another page's.

Routes: GET / (the page), GET /pairs (the pairs with this judge's current grades), POST /label
{"query_id", "doc_id", "grade"}, POST /done (stop serving; Ctrl-C does the same).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import html
import json
import os
import socket
import socketserver
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any

from harness.errors import ConfigError, HarnessError
from harness.judge.labels import GRADES, Label, append_label, latest, now_utc, read_labels
from harness.judge.pairs_file import COLUMNS, read_pairs

MAX_BODY = 64 * 1024  # a label is ~100 bytes; anything near this is not the page talking
DRAIN = 4 << 20  # bytes of an oversize body read (and dropped) so that its 413 is not a reset
READ_TIMEOUT = 10.0  # seconds a connection may take to send its request: a stalled one gives up
LOOPBACK = {"127.0.0.1": socket.AF_INET, "localhost": socket.AF_INET, "::1": socket.AF_INET6}


@dataclass(frozen=True)
class Pair:
    """One (query, document) pair to judge, as the pairs file gives it."""

    query_id: str
    query: str
    doc_id: str
    title: str
    text: str
    baseline_rank: int | None  # None: the side did not return the document
    candidate_rank: int | None
    why: str
    order: int  # most decisive first
    comparison: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.query_id, self.doc_id)


# --------------------------------------------------------------------------- the files


def load_pairs(path: Path) -> tuple[Pair, ...]:
    """The pairs of the file (`read_pairs`, every column checked), in `order`, then file order."""
    rows = read_pairs(path, complete=True)
    # complete=True checked each column's type; mypy sees only dict[str, object].
    pairs = [Pair(**{name: row[name] for name in COLUMNS}) for row in rows]  # type: ignore[arg-type]
    return tuple(sorted(pairs, key=lambda p: p.order))  # a stable sort keeps file order on ties


def current_grades(path: Path, by: str) -> dict[tuple[str, str], int]:
    """The standing grade by `by` of each pair the labels file holds ({} when there is none)."""
    if not path.exists():
        return {}
    return {label.pair: label.grade for label in latest(read_labels(path)) if label.by == by}


def _append(path: Path, label: Label) -> None:
    """`append_label`, and for a new file its folder fsynced too: the file's name is as durable
    as the line in it before the page hears "saved"."""
    created = not path.exists()
    append_label(path, label)
    if created:
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


# --------------------------------------------------------------------------- the server


@dataclass
class _State:
    """What the handlers share; `grades` and the labels file change under `lock`."""

    pairs: tuple[Pair, ...]
    labels: Path
    by: str
    source: str  # the pairs file's name: each label's "from"
    page: bytes
    policy: str  # the page's Content-Security-Policy
    host: str = ""  # "127.0.0.1:8080": the only Host header answered
    grades: dict[tuple[str, str], int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def keys(self) -> frozenset[tuple[str, str]]:
        return frozenset(p.key for p in self.pairs)

    @property
    def origin(self) -> str:
        return f"http://{self.host}"


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], family: socket.AddressFamily, state: _State):
        self.address_family = family
        self.state = state
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer's own looks the host's name up (socket.getfqdn): a DNS wait for nothing.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), self.server_address[1]


class _Handler(BaseHTTPRequestHandler):
    server_version = "harness-judge"
    sys_version = ""
    timeout = READ_TIMEOUT
    protocol_version = "HTTP/1.0"  # one request a connection: a refused body never lingers
    stopping = False  # answering POST /done: stop serving after the answer is written

    @property
    def state(self) -> _State:
        server = self.server
        if not isinstance(server, _Server):
            raise TypeError("the judging handler runs only in its own server")
        return server.state

    def log_message(self, format: str, *args: Any) -> None:
        pass  # request lines are noise on the judge's terminal; errors go through log_error

    def log_error(self, format: str, *args: Any) -> None:
        sys.stderr.write(f"harness judge: {format % args}\n")

    def do_GET(self) -> None:
        self._answer(self._get)

    def do_POST(self) -> None:
        self._answer(self._post)

    def _answer(self, route: Callable[[], tuple[int, bytes, str]]) -> None:
        try:
            if self.headers.get("Host") != self.state.host:
                raise _Refused(403, f"Host {self.headers.get('Host')!r} is not {self.state.host}"
                               "; open the address `harness judge` printed")
            status, body, kind = route()
        except _Refused as refused:
            self.log_error("%s %s refused: %d %s", self.command, self.path[:200],
                           refused.status, refused.message)
            status, body, kind = refused.status, _json({"error": refused.message}), "json"
        self.send_response(status)
        if kind == "html":
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Security-Policy", self.state.policy)
            self.send_header("X-Frame-Options", "DENY")
        elif kind == "json":
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)  # unbuffered: with the kernel once this returns
        if self.stopping:
            threading.Thread(target=self.server.shutdown, daemon=True).start()

    def _get(self) -> tuple[int, bytes, str]:
        state = self.state
        if self.path == "/":
            return 200, state.page, "html"
        if self.path == "/pairs":
            with state.lock:
                listed = [{**asdict(p), "grade": state.grades.get(p.key)} for p in state.pairs]
            return 200, _json(listed), "json"
        if self.path == "/favicon.ico":
            return 204, b"", ""
        raise _Refused(404, f"no page {self.path[:200]!r}")

    def _post(self) -> tuple[int, bytes, str]:
        origin = self.headers.get("Origin")
        if origin is not None and origin != self.state.origin:
            raise _Refused(403, f"a page of {origin[:200]!r} may not post here")
        if self.path not in ("/label", "/done"):
            raise _Refused(404, f"no route POST {self.path[:200]!r}")
        body = self._body()
        if self.path == "/done":
            self.stopping = True  # once the answer is sent: the CLI's process ends with serve()
            return 200, _json({"stopped": True}), "json"
        return self._label(body)

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding"):
            raise _Refused(411, "send the body with a Content-Length, not chunked")
        length = self.headers.get("Content-Length", "")
        if not length.isdigit():
            raise _Refused(411, "a POST needs a Content-Length")
        size = int(length)
        if size > MAX_BODY:
            self.rfile.read(min(size, DRAIN))
            raise _Refused(413, f"the body is {size} bytes; a label takes under {MAX_BODY}")
        return self.rfile.read(size)

    def _label(self, body: bytes) -> tuple[int, bytes, str]:
        state = self.state
        if not self.headers.get("Content-Type", "").startswith("application/json"):
            raise _Refused(415, "send the label as application/json")
        try:
            label = json.loads(body)
        except ValueError as error:
            raise _Refused(400, f"the body is not JSON: {error}") from None
        if not isinstance(label, dict) or set(label) != {"query_id", "doc_id", "grade"}:
            raise _Refused(400, 'send {"query_id": ..., "doc_id": ..., "grade": 0-3}')
        if not (type(label["grade"]) is int and label["grade"] in GRADES):
            raise _Refused(400, f"grade must be 0, 1, 2 or 3, not {str(label['grade'])[:50]}")
        key = (label["query_id"], label["doc_id"])
        if not all(isinstance(part, str) for part in key) or key not in state.keys:
            raise _Refused(404, f"no pair ({str(key[0])[:80]!r}, {str(key[1])[:80]!r}) in "
                           f"{state.source}")
        record = Label(key[0], key[1], label["grade"], state.by, "person", now_utc(),
                       state.source)
        with state.lock:
            try:
                _append(state.labels, record)
            except OSError as error:
                raise _Refused(500, f"could not write {state.labels}: {error.strerror}") from None
            state.grades[key] = label["grade"]
            judged = sum(p.key in state.grades for p in state.pairs)
        return 200, _json({**record.to_json(), "judged": judged}), "json"


def _json(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


def _page(by: str, labels: Path, source: str) -> tuple[bytes, str]:
    """The page, its script and style inline, and a policy that allows exactly those two."""
    files = resources.files("harness.judge")
    script = files.joinpath("page.js").read_text(encoding="utf-8")
    style = files.joinpath("page.css").read_text(encoding="utf-8")
    template = files.joinpath("page.html").read_text(encoding="utf-8")
    for name, value in (("__BY__", by), ("__LABELS__", str(labels)), ("__SOURCE__", source)):
        template = template.replace(name, html.escape(value))
    page = template.replace("__STYLE__", style).replace("__SCRIPT__", script)

    def digest(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    policy = (f"default-src 'none'; script-src {digest(script)}; style-src {digest(style)}; "
              "connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; "
              "frame-ancestors 'none'")  # fmt: skip
    return page.encode("utf-8"), policy


def serve(
    pairs_path: Path,
    labels_path: Path,
    *,
    by: str,
    port: int = 0,
    host: str = "127.0.0.1",
    on_ready: Callable[[str], None] | None = None,
) -> int:
    """Serve the judging page on host:port (0: a free port) until Ctrl-C or the page's "stop";
    `on_ready(url)` once it listens.  Returns 0.  Raises ConfigError for a host that is not the
    loopback's or an empty `by`, GoldError for a bad pairs or labels file, HarnessError when
    the port cannot be had."""
    if host not in LOOPBACK:
        raise ConfigError(f"--host {host!r}: the judging page listens only on this machine "
                          "(127.0.0.1, ::1 or localhost); use an SSH tunnel to judge from "
                          "another one")  # fmt: skip
    if not by.strip():
        raise ConfigError("--by is empty: say who judges (a name or an email address)")
    pairs = load_pairs(pairs_path)
    grades = current_grades(labels_path, by)
    page, policy = _page(by, labels_path, pairs_path.name)
    state = _State(pairs, labels_path, by, pairs_path.name, page, policy, grades=grades)
    bind = "127.0.0.1" if host == "localhost" else host
    try:
        server = _Server((bind, port), LOOPBACK[host], state)
    except OSError as error:
        raise HarnessError(f"cannot listen on {host}:{port}: {error.strerror or error}; "
                           "choose another --port, or 0 for any free one") from None
    with server:
        shown = f"[{host}]" if ":" in host else host
        state.host = f"{shown}:{server.server_address[1]}"
        if on_ready is not None:
            on_ready(f"http://{state.host}/")
        # Ctrl-C stops it as cleanly as the page's "stop": every grade shown saved is on disk.
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
    return 0

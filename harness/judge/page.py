"""The local judging page of `harness judge`: a person grades (query, document) pairs 0-3.

    serve(pairs_path, labels_path, by="alice", on_ready=print) -> 0
    read_pairs(path) -> tuple[Pair, ...]      the pairs file, JSONL or CSV, every problem listed

In: a pairs file (`harness judge pairs` writes it: one pair a JSONL line, or CSV with the same
header) and a labels file, read once so that reopening resumes where the judge stopped.
Out: one label a JSONL line appended to the labels file per grade, fsynced before the page is
told it is saved.  Never: listens anywhere but the loopback interface, loads anything from
another host (the page is one document, its script and style inline and allowed by hash), or
answers a request whose Host is not the address it listens on (a DNS-rebinding page would
otherwise read and write labels from the browser), or a POST whose Origin is another page's.

Routes: GET / (the page), GET /pairs (the pairs with this judge's current grades), POST /label
{"query_id", "doc_id", "grade"}, POST /done (stop serving; Ctrl-C does the same).
"""

from __future__ import annotations

import base64
import contextlib
import csv
import hashlib
import html
import io
import json
import os
import socket
import socketserver
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any

from harness.errors import ConfigError, GoldError, HarnessError, Problem
from harness.inputs import GiB, Kind, read_input

PAIRS = Kind("pairs file", GiB, GoldError)
LABELS = Kind("labels file", 4 * GiB, GoldError)
MAX_BODY = 64 * 1024  # a label is ~100 bytes; anything near this is not the page talking
DRAIN = 4 << 20  # bytes of an oversize body read (and dropped) so that its 413 is not a reset
READ_TIMEOUT = 10.0  # seconds a connection may take to send its request: a stalled one gives up
GRADES = range(4)  # 0 not relevant, 1 relevant, 2 highly relevant, 3 perfectly relevant
LOOPBACK = {"127.0.0.1": socket.AF_INET, "localhost": socket.AF_INET, "::1": socket.AF_INET6}
FIELDS = ("query_id", "query", "doc_id", "title", "text", "baseline_rank", "candidate_rank",
          "why", "order", "comparison")  # fmt: skip
_TEXT = ("query", "title", "text", "why", "comparison")
_RANKS = ("baseline_rank", "candidate_rank")


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


# --------------------------------------------------------------------------- the pairs file


def read_pairs(path: Path) -> tuple[Pair, ...]:
    """The pairs of a JSONL (or, by its .csv suffix, CSV) file, in `order`, then file order.

    Raises GoldError listing every problem (file:line: field: what and how to fix it)."""
    try:
        data = read_input(path, PAIRS)
    except OSError as error:
        raise GoldError(f"{path}: cannot read the pairs file: {error.strerror or error}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise GoldError(
            f"{path}: the pairs file is not UTF-8 (byte {error.start}); write it as UTF-8"
        ) from None
    rows = _csv_rows(path, text) if path.suffix.lower() == ".csv" else _jsonl_rows(path, text)
    problems: list[Problem] = []
    pairs: list[Pair] = []
    first_line: dict[tuple[str, str], int] = {}
    for line, row in rows:
        if isinstance(row, Problem):
            problems.append(row)
            continue
        pair = _pair(path, line, row, problems)
        if pair is None:
            continue
        if pair.key in first_line:
            problems.append(Problem(str(path), f"the pair {pair.key} is also on line "
                                    f"{first_line[pair.key]}; keep one of them", line))
            continue
        first_line[pair.key] = line
        pairs.append(pair)
    if not pairs and not problems:
        problems.append(Problem(str(path), "holds no pair; run `harness judge pairs` again"))
    if problems:
        raise GoldError(f"{path}: the pairs file has {len(problems)} problem(s)", problems,
                        hint="fix those lines, or write the file again with `harness judge pairs`")
    return tuple(sorted(pairs, key=lambda p: p.order))  # a stable sort keeps file order on ties


_Row = tuple[int, "Mapping[str, Any] | Problem"]


def _jsonl_rows(path: Path, text: str) -> Iterator[_Row]:
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as error:
            yield number, Problem(str(path), f"not JSON ({error}); one JSON object a line", number)
            continue
        if not isinstance(row, dict):
            yield number, Problem(str(path), "not a JSON object; one object a line", number)
        else:
            yield number, row


def _csv_rows(path: Path, text: str) -> Iterator[_Row]:
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    try:
        missing = [name for name in FIELDS if name not in (reader.fieldnames or ())]
        if missing:
            yield 1, Problem(str(path), f"the header lacks {', '.join(missing)}; the header is "
                             f"{','.join(FIELDS)}", 1)
            return
        start = reader.line_num + 1
        for row in reader:
            if None in row or None in row.values():
                yield start, Problem(str(path), f"has {len(row) - 1 + len(row.get(None) or ())} "
                                     f"cells, the header {len(reader.fieldnames or ())}", start)
            else:
                ranks = {n: None if row[n] == "" else _integer(row[n]) for n in _RANKS}
                yield start, {**row, **ranks, "order": _integer(row["order"])}
            start = reader.line_num + 1
    except csv.Error as error:
        yield reader.line_num, Problem(str(path), f"not CSV ({error})", reader.line_num)


def _integer(cell: str) -> int | str:
    """A CSV cell as an int when it is one, else as written (then reported as not a number)."""
    try:
        return int(cell.strip())
    except ValueError:
        return cell


def _pair(path: Path, line: int, row: Mapping[str, Any], problems: list[Problem]) -> Pair | None:
    found = len(problems)

    def bad(name: str, message: str) -> None:
        problems.append(Problem(str(path), message, line, name))

    for name in FIELDS:
        if name not in row:
            bad(name, f"missing; each pair has {', '.join(FIELDS)}")
    for name in ("query_id", "doc_id"):
        if name in row and (not isinstance(row[name], str) or not row[name]):
            bad(name, f"must be a non-empty string, not {row[name]!r}")
    for name in _TEXT:
        if name in row and not isinstance(row[name], str):
            bad(name, f"must be a string, not {row[name]!r}")
    for name in _RANKS:
        value = row.get(name)
        if name in row and value is not None and not (_is_int(value) and value >= 1):
            bad(name, f"must be a rank of 1 or more, or null (not returned), not {value!r}")
    if "order" in row and not _is_int(row["order"]):
        bad("order", f"must be a whole number, not {row['order']!r}")
    if len(problems) > found:
        return None
    return Pair(**{name: row[name] for name in FIELDS})


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# --------------------------------------------------------------------------- the labels file
# A private reader and writer of the labels JSONL, until harness.judge.labels is in: one object a
# line, {"query_id", "doc_id", "grade", "by", "kind", "at", "from"}; a later line for the same
# (query_id, doc_id, by) supersedes an earlier one.


def _read(path: Path, by: str) -> dict[tuple[str, str], int]:
    """The current grade by `by` of each pair the labels file holds ({} when there is none)."""
    if not path.exists():
        return {}
    try:
        data = read_input(path, LABELS)
    except OSError as error:
        raise GoldError(f"{path}: cannot read the labels file: {error.strerror or error}") from None
    grades: dict[tuple[str, str], int] = {}
    problems: list[Problem] = []
    for number, line in enumerate(data.decode("utf-8", "replace").split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if not (isinstance(row, dict) and isinstance(row.get("query_id"), str)
                and isinstance(row.get("doc_id"), str) and isinstance(row.get("by"), str)
                and _is_int(row.get("grade")) and row["grade"] in GRADES):  # fmt: skip
            problems.append(Problem(str(path), "not a label (a JSON object with query_id, "
                                    "doc_id, by and a grade 0-3)", number))
        elif row["by"] == by:
            grades[(row["query_id"], row["doc_id"])] = row["grade"]
    if problems:
        raise GoldError(f"{path}: the labels file has {len(problems)} unreadable line(s)",
                        problems, hint="fix or delete those lines (a label is one JSON line)")
    return grades


def _append(path: Path, label: Mapping[str, object]) -> None:
    """Add one label line to `path` and make it durable (file, and the folder for a new file)."""
    line = (json.dumps(label, ensure_ascii=False) + "\n").encode("utf-8")
    created = not path.exists()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(line)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
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
        self.wfile.write(body)

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
            threading.Thread(target=self.server.shutdown, daemon=True).start()
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
        if not (_is_int(label["grade"]) and label["grade"] in GRADES):
            raise _Refused(400, f"grade must be 0, 1, 2 or 3, not {str(label['grade'])[:50]}")
        key = (label["query_id"], label["doc_id"])
        if not all(isinstance(part, str) for part in key) or key not in state.keys:
            raise _Refused(404, f"no pair ({str(key[0])[:80]!r}, {str(key[1])[:80]!r}) in "
                           f"{state.source}")
        at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        record = {"query_id": key[0], "doc_id": key[1], "grade": label["grade"],
                  "by": state.by, "kind": "person", "at": at, "from": state.source}  # fmt: skip
        with state.lock:
            try:
                _append(state.labels, record)
            except OSError as error:
                raise _Refused(500, f"could not write {state.labels}: {error.strerror}") from None
            state.grades[key] = label["grade"]
            judged = sum(p.key in state.grades for p in state.pairs)
        return 200, _json({**record, "judged": judged}), "json"


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
    pairs = read_pairs(pairs_path)
    grades = _read(labels_path, by)
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

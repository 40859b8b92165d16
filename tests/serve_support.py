"""Small HTTP services for tests on 127.0.0.1: program texts that a test writes out and boots as
a service of their own (standard library only, so that they run in any sandbox and venv), and an
in-process server for a client's tests."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# A service that answers every GET with 200 "ok": `python3 service.py PORT`.
OK_SERVICE_PY = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""

# The head of a service program: serve_json(port, answer) answers every GET with answer as JSON
# (dumped at each request, so a dict the program fills in later is served as it is then),
# forever; `server` is the HTTPServer class to serve with.
SERVE_JSON_PY = '''
import http.server, json


def serve_json(port, answer, server=http.server.HTTPServer):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            raw = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *a):
            pass

    server(("127.0.0.1", port), Handler).serve_forever()
'''


def send_json(
    handler: BaseHTTPRequestHandler, answer: object, headers: Iterable[tuple[str, str]] = ()
) -> None:
    """Answers `handler`'s request with 200 and `answer` as JSON (its Content-Type and
    Content-Length, then `headers`)."""
    body = json.dumps(answer).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    for name, value in headers:
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)


class Quiet(BaseHTTPRequestHandler):
    """A request handler that logs nothing."""

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """An in-process server of `handler` on 127.0.0.1 (its port held open), its base URL; shut
    down, closed and its thread ended on leaving."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
    assert not thread.is_alive()

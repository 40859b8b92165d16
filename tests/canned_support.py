"""A canned raw service (tests/fixtures/canned/svc.py) per test, on 127.0.0.1: a test's `canned`
fixture (`canned_services`) starts any number of them and ends each after the test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

CANNED = Path(__file__).parent / "fixtures" / "canned" / "svc.py"
Start = Callable[..., str]  # start(*svc.py arguments) -> the service's base URL
BODY = b'{"results": [{"id": "a"}, {"id": "b"}]}'
STALL = b"HTTP/1.1 2"  # ten bytes, then nothing: the client waits for the rest of the head


def start_listening(argv: list[str]) -> tuple[subprocess.Popen[str], str]:
    """A service program (canned, misbehaving) started in a session of its own: the process and
    the base URL it says it listens on (its first line, "listening on URL")."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("listening on "), line
    return process, line.split()[-1]


def end_listening(process: subprocess.Popen[str]) -> None:
    """Ends a service start_listening started, with all its session."""
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=10)
    if process.stdout is not None:
        process.stdout.close()
    assert process.poll() is not None


def canned_services() -> Iterator[Start]:
    """The body of a `canned` fixture: yields start(*args) -> the base URL of a canned service,
    and ends every one started when resumed."""
    started: list[subprocess.Popen[str]] = []

    def start(*args: str) -> str:
        process, url = start_listening([sys.executable, str(CANNED), *args])
        started.append(process)
        return url

    try:
        yield start
    finally:
        for process in started:
            end_listening(process)


def ok(body: bytes = BODY, head: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\n" + head + b"Content-Length: %d\r\n\r\n" % len(body) + body


def requests_seen(count: Path) -> int:
    """How many requests a service started with `--count PATH` received."""
    return len(count.read_text().splitlines()) if count.exists() else 0

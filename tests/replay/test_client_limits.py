"""harness.replay.client against services that misbehave on purpose, over real sockets on
127.0.0.1 (tests/fixtures/canned/svc.py): a decompression bomb is too large after decoding and
costs bounded memory; an answer that completes after query.timeout is a timeout; a stalled
service stops the replay after query.max_consecutive_failures failures in a row, an
intermittent one does not."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from canned_support import STALL, Start, canned_services, ok, requests_seen

from harness.config import QueryConfig
from harness.replay import wire
from harness.replay.client import AnswerCache, Channel, Stopped, replay
from harness.values.types import ErrorKind

GET = QueryConfig(path="/search", ids="results[].id", params={"q": "{query}"}, limit=10)
BOMB_BYTES = 200 << 20  # what the bomb decodes to
MAX_BYTES = 1 << 20


@pytest.fixture
def canned() -> Iterator[Start]:
    yield from canned_services()


def compressed(wbits: int, size: int = BOMB_BYTES) -> bytes:
    """A JSON answer that decodes to `size` bytes (a valid ranking padded with spaces), made
    a megabyte at a time so the test never holds the decoded body either."""
    squeeze = zlib.compressobj(9, zlib.DEFLATED, wbits)
    prefix, suffix = b'{"results": [{"id": "a"}], "pad": "', b'"}'
    parts = [squeeze.compress(prefix)]
    left, block = size - len(prefix) - len(suffix), b" " * (1 << 20)
    while left > 0:
        parts.append(squeeze.compress(block[: min(left, len(block))]))
        left -= len(block)
    parts += [squeeze.compress(suffix), squeeze.flush()]
    return b"".join(parts)


GZIP, DEFLATE = 16 + zlib.MAX_WBITS, zlib.MAX_WBITS


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, int]]:
    """Answer files: a gzip bomb, a deflate bomb, the gzip bomb chunked (16 KiB chunks); each
    with the length of its compressed body."""
    folder = tmp_path_factory.mktemp("bombs")
    gzip, deflate = compressed(GZIP), compressed(DEFLATE)
    chunks = b"".join(
        b"%x\r\n%s\r\n" % (len(gzip[i : i + 16384]), gzip[i : i + 16384])
        for i in range(0, len(gzip), 16384)
    )
    answers = {
        "gzip": ok(gzip, b"Content-Encoding: gzip\r\n"),
        "deflate": ok(deflate, b"Content-Encoding: deflate\r\n"),
        "chunked-gzip": b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n",
    }
    paths = {}
    for name, answer in answers.items():
        (folder / name).write_bytes(answer)
        paths[name] = (folder / name, len(deflate if name == "deflate" else gzip))
    return paths


# --------------------------------------------------------------------------- bounded decoding


@pytest.mark.parametrize(
    ("name", "encoding"), [("gzip", "gzip"), ("deflate", "deflate"), ("chunked-gzip", "gzip")]
)
def test_a_decompression_bomb_is_too_large_after_decoding(
    canned: Start, bombs: dict[str, tuple[Path, int]], name: str, encoding: str
) -> None:
    path, wire = bombs[name]
    url = canned(f"@{path}")
    query = replace(GET, max_bytes=MAX_BYTES)
    assert wire < MAX_BYTES  # as sent, the bomb is well within max_bytes
    with Channel(url, query) as channel:
        result = channel.ask("q1", "tea")
        assert result.error is ErrorKind.TOO_LARGE, result
        assert result.detail == (
            f"the answer is too large after decoding: its {wire}-byte {encoding} body decodes "
            f"to more than query.max_bytes = {MAX_BYTES} bytes; raise query.max_bytes if the "
            "service is right to send that much"
        )
        # The body was read whole before it was refused: the connection goes on, no error.
        assert channel.ask("q2", "tea").error is ErrorKind.TOO_LARGE
    # (That a body decoding to max_bytes is read: the next test, on a smaller one.)


@pytest.mark.parametrize("wbits", [GZIP, DEFLATE], ids=["gzip", "deflate"])
def test_a_body_decoding_to_exactly_max_bytes_is_read_one_byte_more_is_not(
    canned: Start, tmp_path: Path, wbits: int
) -> None:
    size = 300_000
    answer = tmp_path / "answer"
    coding = b"gzip" if wbits == GZIP else b"deflate"
    answer.write_bytes(ok(compressed(wbits, size), b"Content-Encoding: " + coding + b"\r\n"))
    url = canned(f"@{answer}")
    with Channel(url, replace(GET, max_bytes=size)) as channel:
        assert channel.ask("q1", "tea").ids == ("a",)
    with Channel(url, replace(GET, max_bytes=size - 1)) as channel:
        assert channel.ask("q1", "tea").error is ErrorKind.TOO_LARGE


def test_a_gzip_body_cut_short_is_undecodable(canned: Start) -> None:
    body = compressed(GZIP, 10_000)[:-6]
    url = canned(ok(body, b"Content-Encoding: gzip\r\n").hex())
    with Channel(url, GET) as channel:
        result = channel.ask("q1", "tea")
    assert result.error is ErrorKind.NOT_JSON
    assert result.detail == (
        "undecodable body: Error -5 while decompressing data: incomplete or truncated stream"
    )


_MEASURE = """
import json, sys
from harness.config import QueryConfig
from harness.replay.client import Channel
query = QueryConfig(path="/search", ids="results[].id", max_bytes=int(sys.argv[2]))
with Channel(sys.argv[1], query) as channel:
    result = channel.ask("q1", "tea")
# VmHWM: this process's peak resident memory since its exec (getrusage's ru_maxrss is kept
# across exec, so it would say the parent's peak too)
peak = next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1]
print(json.dumps({"error": result.error and result.error.value, "max_rss_kib": int(peak)}))
"""


def test_decoding_a_200_mb_bomb_stays_within_bounded_memory(
    canned: Start, bombs: dict[str, tuple[Path, int]]
) -> None:
    """In a process of its own, so that its peak resident memory is the client's alone: with
    max_bytes = 1 MiB, a 200 MiB bomb must not be decoded whole (the bound is 150 MiB, a fresh
    interpreter with the client imported taking some 30)."""
    url = canned(f"@{bombs['gzip'][0]}")
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, url, str(MAX_BYTES)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    measured = json.loads(done.stdout)
    assert measured["max_rss_kib"] < 150 * 1024, measured
    assert measured["error"] == "too_large"


# --------------------------------------------------------------------------- deadlines


def test_an_answer_dripped_a_byte_every_10_ms_is_a_timeout_at_the_deadline(canned: Start) -> None:
    url = canned(ok().hex(), "--drip-every", "0.01")  # about 80 bytes: some 0.8 s in all
    with Channel(url, replace(GET, timeout=0.05)) as channel:
        result = channel.ask("q1", "tea")
    # Every byte came well within 0.05 s of the one before: only the whole exchange's deadline
    # cuts it off.
    assert result.error is ErrorKind.TIMEOUT, result
    assert result.detail == (
        "no answer within query.timeout = 0.05 s (the whole request's deadline)"
    )


def test_an_answer_that_came_whole_but_after_the_timeout_is_a_timeout(
    canned: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every read within the deadline, the last one done, and yet the exchange as timed ended
    after it (as when the client was descheduled after its last read): not an answer."""
    response, usual = wire.Connection._response, wire.Connection._usual

    def late(self: wire.Connection, *args: Any) -> Any:
        answer = response(self, *args)
        time.sleep(0.1)  # the process descheduled past the deadline, the body read whole
        return answer

    def late_usual(self: wire.Connection, *args: Any) -> Any:  # the usual answer's reader
        answer = usual(self, *args)
        if answer is not None:
            time.sleep(0.1)
        return answer

    url = canned(ok().hex())
    query = replace(GET, timeout=0.05)
    answers = AnswerCache(query)  # the same answer read before: never a ranking when late
    with Channel(url, query, answers=answers) as channel:
        assert channel.ask("q1", "tea").ids == ("a", "b")  # on time: an answer
        monkeypatch.setattr(wire.Connection, "_response", late)
        monkeypatch.setattr(wire.Connection, "_usual", late_usual)
        result = channel.ask("q2", "tea")
        monkeypatch.undo()
        again = channel.ask("q3", "tea")  # on time again, on the same connection
    assert result.error is ErrorKind.TIMEOUT, result
    assert result.detail is not None
    assert result.detail.startswith(
        "no answer within query.timeout = 0.05 s (the answer came whole after "
    )
    assert result.ids == ()
    assert (again.query_id, again.ids, again.error) == ("q3", ("a", "b"), None)


# --------------------------------------------------------------------------- failing fast


@pytest.mark.parametrize("concurrency", [1, 2])
def test_a_stalled_service_is_given_up_after_max_consecutive_failures(
    canned: Start, tmp_path: Path, concurrency: int
) -> None:
    count = tmp_path / "count"
    url = canned(STALL.hex(), "--count", str(count))
    query = replace(GET, timeout=0.05, warmup=0, max_consecutive_failures=3)
    items = [(f"q{i}", f"text {i}") for i in range(20)]
    told: list[int] = []
    with pytest.raises(Stopped) as stopped:
        replay(url, query, items, concurrency=concurrency, on_result=lambda d, t, r: told.append(d))
    message = stopped.value.message
    assert message.startswith("3 queries in a row failed (timeout; the last: no answer within")
    assert "stopped at query.max_consecutive_failures = 3" in message
    kept = stopped.value.results
    assert len(kept) >= 3 and all(r.error is ErrorKind.TIMEOUT for r in kept)
    if concurrency == 1:
        assert requests_seen(count) == 3  # the service saw three queries, not twenty
        assert [r.query_id for r in kept] == ["q0", "q1", "q2"] and told == [1, 2, 3]
    else:  # the queries already in flight on the other connection complete
        assert requests_seen(count) < len(items)


def test_failures_that_are_not_in_a_row_do_not_stop_the_replay(
    canned: Start, tmp_path: Path
) -> None:
    count = tmp_path / "count"
    url = canned(ok().hex(), STALL.hex(), "--count", str(count))  # answers, stalls, answers...
    query = replace(GET, timeout=0.05, warmup=0, max_consecutive_failures=2)
    items = [(f"q{i}", f"text {i}") for i in range(10)]
    results = replay(url, query, items)
    assert [r.error for r in results] == [None, ErrorKind.TIMEOUT] * 5
    assert requests_seen(count) == 10
    # An error answer (here an HTTP 500) is an answer: it ends a streak, it starts none.
    url = canned(STALL.hex(), ok(b"oops").replace(b"200 OK", b"500 Oops").hex())
    results = replay(url, query, items)
    assert len(results) == 10


def test_max_consecutive_failures_0_never_stops(canned: Start, tmp_path: Path) -> None:
    count = tmp_path / "count"
    url = canned(STALL.hex(), "--count", str(count))
    query = replace(GET, timeout=0.05, warmup=0, max_consecutive_failures=0)
    results = replay(url, query, [(f"q{i}", f"t{i}") for i in range(6)])
    assert [r.error for r in results] == [ErrorKind.TIMEOUT] * 6
    assert requests_seen(count) == 6

"""harness.replay.client, the lean path's own work per query: requests encoded once per ref
(`Requests`), answers read after their exchanges (`Channel.send`, `Channel.read`, in batches of
READ_BATCH), the header block parsed at once, and the ids/scores checks' fast paths: each gives
exactly what the per-query path gave."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from canned_support import BODY, CANNED, end_listening, start_listening
from hypothesis import given
from hypothesis import strategies as st

from harness.config import QueryConfig
from harness.driver import pairs
from harness.replay.client import (
    READ_BATCH,
    AnswerCache,
    Channel,
    Sent,
    _ids,
    _interpret,
    _kind,
    _scores,
    replay,
    warm_up,
)
from harness.replay.request import Requests, encode_request, make_request
from harness.replay.wire import Answer
from harness.values.types import ErrorKind, QueryResult

GET = QueryConfig(
    path="/search", ids="results[].id", params={"q": "{query}", "k": "{limit}"}, limit=10
)
POST = QueryConfig(
    path="/v1/search",
    ids="hits",
    method="POST",
    json={"q": "{query}", "k": "{limit}"},
    headers={"X-Limit": "{limit}"},
    limit=7,
)
FORM = QueryConfig(path="/f", ids="hits", method="POST", form={"q": "{query}"})
TEXTS = ["tea", "a b&c", "ünïcode ✓", "{query} {limit}", "x?y=z#frag"]

MISBEHAVING = Path(__file__).parents[1] / "fixtures" / "misbehaving" / "svc.py"


@pytest.mark.parametrize("query", [GET, POST, FORM], ids=["get", "post", "form"])
@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:8080", "http://127.0.0.1:9", "https://example.org", "http://h:1/api/"],
)
def test_requests_for_a_boot_are_encode_requests_bytes(query: QueryConfig, url: str) -> None:
    requests = Requests(query, [(f"id{i}", t) for i, t in enumerate(TEXTS)])
    assert requests.for_url(url) == {t: encode_request(url, make_request(query, t)) for t in TEXTS}
    other = "http://127.0.0.1:8081"  # the next boot: only its Host differs
    assert requests.for_url(other) == {
        t: encode_request(other, make_request(query, t)) for t in TEXTS
    }
    with pytest.raises(ValueError, match="speaks http"):
        requests.for_url("ftp://example.org")


def test_a_channel_reuses_requests_of_its_own_query_only() -> None:
    items = [("q1", "tea")]
    shared = Requests(GET, items)
    with Channel("http://127.0.0.1:8080", GET, items, requests=shared) as channel:
        assert channel._prepared == {
            "tea": encode_request(channel.base_url, make_request(GET, "tea"))
        }
    other = replace(GET, limit=5)  # another query's requests are never sent for this one
    with Channel("http://127.0.0.1:8080", other, items, requests=shared) as channel:
        assert channel._prepared == {
            "tea": encode_request(channel.base_url, make_request(other, "tea"))
        }


# --------------------------------------------------------------------------- real services


@pytest.fixture(scope="module")
def misbehaving() -> Iterator[str]:
    process, url = start_listening([sys.executable, str(MISBEHAVING), "--port", "0"])
    try:
        yield url
    finally:
        end_listening(process)


def canned(answer: bytes, *, drip: bool = False) -> tuple[subprocess.Popen[str], str]:
    drip_flag = ["--drip"] if drip else []
    return start_listening([sys.executable, str(CANNED), answer.hex(), *drip_flag])


def ask_canned(answer: bytes, *, drip: bool = False, query: QueryConfig = GET) -> QueryResult:
    process, url = canned(answer, drip=drip)
    try:
        with Channel(url, query) as channel:
            return channel.ask("q1", "tea")
    finally:
        end_listening(process)




def ok(body: bytes = BODY, head: bytes = b"Content-Type: application/json\r\n") -> bytes:
    return b"HTTP/1.1 200 OK\r\n" + head + b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_a_head_dripped_a_byte_at_a_time_reads_as_one_sent_at_once() -> None:
    for drip in (False, True):
        got = ask_canned(ok(), drip=drip)
        assert (got.ids, got.status, got.error) == (("a", "b"), 200, None)


def test_an_answer_with_no_header_lines_is_read_as_such() -> None:
    for drip in (False, True):  # a 204 has no body: the next answer follows on the connection
        got = ask_canned(b"HTTP/1.1 204 No Content\r\n\r\n", drip=drip)
        assert (got.status, got.error, got.detail) == (204, ErrorKind.NOT_JSON, "no content-type: ")


def test_interim_answers_are_skipped_and_the_last_header_of_a_name_wins() -> None:
    head = b"content-type: text/plain\r\nContent-Type :  application/json \r\n"
    got = ask_canned(b"HTTP/1.1 100 Continue\r\n\r\n" + ok(b"not json", head))
    assert got.error is ErrorKind.NOT_JSON
    assert got.detail == "application/json: not json"


def test_a_bad_status_line_fails_at_once_without_waiting_for_the_head() -> None:
    # The service never sends a blank line and keeps the connection open: the status line alone
    # says it is not HTTP (a wait for the whole head would end at the 30 s deadline instead).
    got = ask_canned(b"SSH-2.0-OpenSSH\r\nmore", query=replace(GET, timeout=30.0))
    assert got.error is ErrorKind.CONNECTION
    assert got.detail == "RemoteProtocolError: bad status line b'SSH-2.0-OpenSSH'"


def test_send_then_read_is_ask(misbehaving: str) -> None:
    query = replace(GET, scores=None)
    items = [(f"id{i}", f"q {i}&x") for i in range(5)]
    with Channel(misbehaving, query, items) as channel:
        asked = [channel.ask(qid, text) for qid, text in items]
        sent = [channel.send(qid, text) for qid, text in items]
        read = [channel.read(one) for one in sent]
    strip = [replace(r, latency_ns=0) for r in asked]
    assert [replace(r, latency_ns=0) for r in read] == strip
    pairs = zip(read, sent, strict=True)
    assert all(r.latency_ns > 0 and r.latency_ns == s.latency_ns for r, s in pairs)
    failing = replace(query, path="/nowhere")  # a 404: the failure is read the same way
    with Channel(misbehaving, failing, items) as channel:
        one = channel.read(channel.send("id0", "q"))
        assert (one.error, one.status) == (channel.ask("id0", "q").error, 404)


def test_warm_up_answers_are_never_read(misbehaving: str, monkeypatch: pytest.MonkeyPatch) -> None:
    query = replace(GET, scores=None, warmup=3)
    with Channel(misbehaving, query) as channel:
        monkeypatch.setattr(channel, "read", lambda sent: pytest.fail("a warm-up was read"))
        warm_up(channel, [("id0", "tea")])
    before = httpx.get(misbehaving + "/connections", trust_env=False).json()["connections"]
    assert before >= 1  # it sent them (over one connection)


# --------------------------------------------------------------------------- batches


def test_a_sequential_replay_reports_every_result_in_order_across_batches() -> None:
    n = 2 * READ_BATCH + 5

    def handler(request: httpx.Request) -> httpx.Response:
        q = request.url.params["q"]
        if int(q) % 7 == 3:
            return httpx.Response(500, text="boom")
        return httpx.Response(200, json={"results": [{"id": q}]})

    items = [(f"id{i}", str(i)) for i in range(n)]
    told: list[tuple[int, int, str]] = []
    results = replay(
        "http://127.0.0.1:1",
        replace(GET, warmup=0),
        items,
        transport=httpx.MockTransport(handler),
        on_result=lambda done, total, r: told.append((done, total, r.query_id)),
    )
    assert [r.query_id for r in results] == [qid for qid, _ in items]
    assert [r.error is ErrorKind.HTTP_STATUS for r in results] == [i % 7 == 3 for i in range(n)]
    assert told == [(i + 1, n, f"id{i}") for i in range(n)]


class _Reading:
    """A channel whose answers are given: read() returns the next one."""

    def __init__(self, results: list[QueryResult]) -> None:
        self.results = iter(results)

    def read(self, sent: object) -> QueryResult:
        return next(self.results)


def test_a_rounds_batch_is_read_query_by_query_and_told_as_when_asked() -> None:
    good, bad = QueryResult("x", ids=("a",)), QueryResult("x", error=ErrorKind.TIMEOUT)
    a = pairs.PairedSide(session=None, log_path=Path("a"))  # type: ignore[arg-type]
    b = pairs.PairedSide(session=None, log_path=Path("b"))  # type: ignore[arg-type]
    a.channel = _Reading([good, bad, good])  # type: ignore[assignment]
    b.channel = _Reading([bad, good, good])  # type: ignore[assignment]
    sent: Any = [[(a, 1), (b, 2)], [(b, 3), (a, 4)], [(a, 5), (b, 6)]]  # order drawn per query
    told: list[tuple[str, int, int, int, QueryResult | None]] = []
    errors = pairs.drain(sent, 10, 13, 4, lambda *args: told.append(args), "round 1/5")
    assert errors == 4 + 2
    assert a.results == [good, bad, good] and b.results == [bad, good, good]
    # each query's progress: its number, the errors so far, the last side asked's result
    assert told == [
        ("round 1/5", 11, 13, 5, bad),
        ("round 1/5", 12, 13, 6, bad),
        ("round 1/5", 13, 13, 6, good),
    ]


# --------------------------------------------------------------------------- fast paths


def _ids_reference(found: object, path: str) -> tuple[tuple[str, ...], str | None]:
    """`_ids` before its fast path: the check item by item."""
    if not isinstance(found, list):
        return (), f"ids path {path!r} matched {_kind(found)}, not an array"
    for index, item in enumerate(found):
        if isinstance(item, bool) or not isinstance(item, str | int):
            return (), f"ids[{index}] is {_kind(item)}; ids must be strings or integers"
    return tuple(str(item) for item in found), None


def _scores_reference(
    found: object, path: str, count: int
) -> tuple[tuple[float, ...] | None, str | None]:
    if not isinstance(found, list):
        return None, f"scores path {path!r} matched {_kind(found)}, not an array"
    for index, item in enumerate(found):
        number = isinstance(item, int | float) and not isinstance(item, bool)
        if not number or not math.isfinite(item):
            return None, f"scores[{index}] is {_kind(item)}; scores must be finite numbers"
    if len(found) != count:
        return None, f"{len(found)} scores for {count} ids; each id needs one score"
    return tuple(float(item) for item in found), None


JSONISH = st.one_of(
    st.text(max_size=3),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
)


@given(
    st.one_of(st.lists(JSONISH, max_size=6), st.lists(st.text(max_size=3)), JSONISH),
    st.one_of(st.lists(st.floats(), max_size=6), st.lists(JSONISH, max_size=6), JSONISH),
    st.integers(0, 7),
)
def test_the_fast_paths_decide_as_the_item_by_item_checks(
    ids: object, scores: object, count: int
) -> None:
    assert _ids(ids, "p") == _ids_reference(ids, "p")
    got, want = _scores(scores, "s", count), _scores_reference(scores, "s", count)
    assert got[1] == want[1]
    assert got[0] == want[0] and [type(x) for x in got[0] or ()] == [float] * len(got[0] or ())


# --------------------------------------------------------------------------- answers read once


ANSWERS = [
    Answer(200, "application/json", b'{"results": [{"id": "a", "score": 1.5}, {"id": 7}]}'),
    Answer(200, "application/json", b'{"results": [{"id": "b", "score": 2}]}'),
    Answer(200, "application/json", b'{"results": [{"id": "a", "score": NaN}]}'),
    Answer(200, "text/html", b"<p>no</p>"),
    Answer(503, "text/plain", b"busy"),
    Answer(200, "application/json", b'{"hits": 3}'),
]


def test_an_answer_seen_before_reads_as_it_did_with_this_querys_id_and_latency() -> None:
    query = replace(GET, scores="results[].score")
    answers = AnswerCache(query)
    for boot in range(3):  # a channel per boot, one cache for the ref
        with Channel(f"http://127.0.0.1:{8000 + boot}", query, answers=answers) as channel:
            for i, answer in enumerate(ANSWERS):
                qid, latency = f"q{boot}.{i}", 1000 * boot + i + 1
                got = channel.read(Sent(qid, latency, answer=answer))
                assert got == _interpret(answer, query, qid, latency)
    assert len(answers._read) == len(ANSWERS)  # each read once


def test_the_cache_of_another_query_is_not_used() -> None:
    answers = AnswerCache(GET)
    answer = ANSWERS[0]
    with Channel("http://127.0.0.1:1", GET, answers=answers) as channel:
        assert channel.read(Sent("q1", 5, answer=answer)).ids == ("a", "7")
    other = replace(GET, ids="results[0].id")  # reads the same body otherwise
    with Channel("http://127.0.0.1:1", other, answers=answers) as channel:
        assert channel.read(Sent("q1", 5, answer=answer)).ids != ("a", "7")


def test_past_its_bound_the_cache_keeps_nothing_more_and_reads_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(AnswerCache, "MAX_BYTES", len(ANSWERS[0].body))
    answers = AnswerCache(GET)
    for _ in range(2):
        for i, answer in enumerate(ANSWERS):
            assert answers.read(answer, f"q{i}", 9) == _interpret(answer, GET, f"q{i}", 9)
    assert list(answers._read) == [(200, "application/json", ANSWERS[0].body)]


@pytest.mark.parametrize(
    ("answer", "detail"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n{}", "bad Content-Length 'abc'"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n{}", "bad Content-Length '-5'"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n{}", "bad Content-Length ''"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n",
            "bad chunk size 'zz'",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n+2\r\n{}\r\n",
            "bad chunk size '+2'",
        ),
    ],
)
def test_garbled_framing_is_a_connection_error_not_a_crash(answer: bytes, detail: str) -> None:
    got = ask_canned(answer)
    assert got.error is ErrorKind.CONNECTION
    assert got.detail == f"RemoteProtocolError: {detail}"


def test_json_nested_deeper_than_python_recurses_is_not_json_not_a_crash() -> None:
    body = b"[" * 5_000 + b"]" * 5_000
    got = ask_canned(ok(body))
    assert got.error is ErrorKind.NOT_JSON
    assert got.detail.startswith("application/json: [[[")

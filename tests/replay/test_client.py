"""harness.replay.client: request templates, every outcome of one query, and replay order and
warm-up."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from serve_support import Quiet, send_json, serving

from harness.config import QueryConfig
from harness.replay.client import Channel, ask, replay
from harness.replay.request import RequestSpec, encode_request, make_request
from harness.values.types import ErrorKind, QueryResult

BASE = "http://127.0.0.1:1"  # never reached: MockTransport answers
GET = QueryConfig(
    path="/search",
    ids="results[].id",
    params={"q": "{query}", "k": "{limit}"},
    scores="results[].score",
    limit=10,
)
POST = QueryConfig(
    path="/v1/search",
    ids="hits",
    method="POST",
    json={"q": "{query}", "k": "{limit}", "opts": {"note": "top {limit} for {query}"}},
    headers={"X-Limit": "{limit}"},
    limit=7,
)

Handler = Callable[[httpx.Request], httpx.Response]


def client_for(handler: Handler) -> httpx.Client:
    return httpx.Client(transport=httpx.MockTransport(handler))


def answer(body: object, status: int = 200) -> Handler:
    return lambda request: httpx.Response(status, json=body)


def ask_with(handler: Handler, query: QueryConfig = GET, text: str = "tea") -> QueryResult:
    with client_for(handler) as client:
        return ask(client, BASE, query, "q1", text)


# --------------------------------------------------------------------------- make_request


def test_get_request_fills_params() -> None:
    assert make_request(GET, "green tea") == RequestSpec(
        method="GET", path="/search", params={"q": "green tea", "k": "10"}
    )


def test_post_template_makes_limit_an_int_and_fills_strings_inside() -> None:
    spec = make_request(POST, "tea")
    assert spec.json == {"q": "tea", "k": 7, "opts": {"note": "top 7 for tea"}}
    assert spec.headers == {"X-Limit": "7"}
    assert spec.params == {}


@given(st.text())
def test_query_text_is_sent_exactly_as_typed(text: str) -> None:
    # braces, "{limit}" and "{query}" inside the text are data, never placeholders
    assert make_request(GET, text).params["q"] == text
    assert make_request(POST, text).json == {
        "q": text,
        "k": 7,
        "opts": {"note": "top 7 for " + text},
    }


def test_braces_in_query_text_reach_the_service_unchanged() -> None:
    text = "{limit} {query} {} {{x}} %s {0}"
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            seen.append(request.url.params["q"])
        else:
            seen.append(json.loads(request.content)["q"])
        return httpx.Response(200, json={"results": [], "hits": []})

    with client_for(handler) as client:
        ask(client, BASE, GET, "q1", text)
        ask(client, BASE, POST, "q1", text)
    assert seen == [text, text]


# --------------------------------------------------------------------------- ask: rankings


def test_ok_get_sends_params_and_reads_ids_and_scores() -> None:
    requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        results = [{"id": "d3", "score": 2.5}, {"id": "d1", "score": 1}]
        return httpx.Response(200, json={"results": results})

    result = ask_with(handler, text="green tea")
    assert result == QueryResult(
        "q1", ids=("d3", "d1"), scores=(2.5, 1.0), status=200, latency_ns=result.latency_ns
    )
    assert result.latency_ns >= 0
    (request,) = requests
    assert request.method == "GET"
    assert request.url.path == "/search"
    assert dict(request.url.params) == {"q": "green tea", "k": "10"}
    assert request.content == b""


def test_post_sends_the_json_body_with_an_integer_limit() -> None:
    bodies: list[object] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        assert request.headers["x-limit"] == "7"
        return httpx.Response(200, json={"hits": ["a", "b"]})

    result = ask_with(handler, POST)
    assert result.ids == ("a", "b")
    assert bodies == [{"q": "tea", "k": 7, "opts": {"note": "top 7 for tea"}}]


def test_post_sends_a_form_body_urlencoded_through_httpx_too() -> None:
    form = replace(POST, json=None, form={"q": "{query}", "k": "{limit}"})
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"hits": ["a"]})

    assert ask_with(handler, form, "tea & cake").ids == ("a",)
    (request,) = seen
    assert request.headers["content-type"] == "application/x-www-form-urlencoded"
    assert parse_qs(request.content.decode()) == {"q": ["tea & cake"], "k": [str(POST.limit)]}


def test_integer_ids_become_strings() -> None:
    body = {"results": [{"id": 17, "score": 0.5}, {"id": 4, "score": 0.25}]}
    assert ask_with(answer(body)).ids == ("17", "4")


def test_an_empty_list_is_a_valid_empty_ranking() -> None:
    result = ask_with(answer({"results": []}))
    assert result.ok
    assert result.ids == ()
    assert result.scores == ()


def test_duplicates_are_kept_as_returned() -> None:
    result = ask_with(answer({"hits": ["a", "a", "b"]}), replace(POST, ids="hits"))
    assert result.ids == ("a", "a", "b")


# --------------------------------------------------------------------------- ask: failures


def raising(error: type[httpx.TransportError]) -> Handler:
    def handler(request: httpx.Request) -> httpx.Response:
        raise error("simulated", request=request)

    return handler


@pytest.mark.parametrize(
    ("handler", "query", "kind", "phrase"),
    [
        pytest.param(
            answer({"hits": []}), GET, ErrorKind.NO_MATCH, "matched nothing", id="no match"
        ),
        pytest.param(
            answer({"ids": ["a", None]}),
            replace(GET, ids="ids", scores=None),
            ErrorKind.BAD_SHAPE,
            "ids[1] is null",
            id="null among ids",
        ),
        pytest.param(
            answer({"results": {"id": "a"}}),
            replace(GET, ids="results", scores=None),
            ErrorKind.BAD_SHAPE,
            "matched an object, not an array",
            id="object instead of list",
        ),
        pytest.param(
            answer({"ids": [1.5]}),
            replace(GET, ids="ids", scores=None),
            ErrorKind.BAD_SHAPE,
            "ids[0] is a number (1.5)",
            id="float id",
        ),
        pytest.param(
            answer({"ids": [True]}),
            replace(GET, ids="ids", scores=None),
            ErrorKind.BAD_SHAPE,
            "ids[0] is a boolean",
            id="boolean id",
        ),
        pytest.param(
            # the projection drops the result without an id: one id, two scores
            answer({"results": [{"id": "a", "score": 1}, {"score": 0.5}]}),
            GET,
            ErrorKind.BAD_SHAPE,
            "2 scores for 1 ids",
            id="scores length mismatch",
        ),
        pytest.param(
            answer({"results": [{"id": "a", "score": "high"}]}),
            GET,
            ErrorKind.BAD_SHAPE,
            "scores[0] is a string",
            id="score not a number",
        ),
        pytest.param(
            answer({"results": [{"id": "a"}], "scores": None}),
            replace(GET, scores="scores"),
            ErrorKind.BAD_SHAPE,
            "matched null",
            id="scores path matches nothing",
        ),
        pytest.param(
            lambda request: httpx.Response(200, text="<html>oops</html>"),
            GET,
            ErrorKind.NOT_JSON,
            "text/plain; charset=utf-8: <html>oops</html>",
            id="not json",
        ),
        pytest.param(
            raising(httpx.ReadTimeout),
            GET,
            ErrorKind.TIMEOUT,
            "no answer within query.timeout = 10 s (ReadTimeout)",
            id="timeout",
        ),
        pytest.param(
            raising(httpx.ConnectError),
            GET,
            ErrorKind.CONNECTION,
            "ConnectError: simulated",
            id="connection",
        ),
    ],
)
def test_a_failed_query_is_recorded_as_failed_not_as_empty(
    handler: Handler, query: QueryConfig, kind: ErrorKind, phrase: str
) -> None:
    result = ask_with(handler, query)
    assert result.error is kind
    assert not result.ok
    assert result.ids == ()
    assert result.scores is None
    assert result.detail is not None
    assert phrase in result.detail


def test_http_error_quotes_status_and_the_first_200_characters() -> None:
    body = "Traceback: " + "x" * 300

    result = ask_with(lambda request: httpx.Response(500, text=body))
    assert result.error is ErrorKind.HTTP_STATUS
    assert result.status == 500
    assert result.detail == "HTTP 500: " + body[:200]
    assert result.ids == ()


def test_a_3xx_is_not_followed_and_not_a_ranking() -> None:
    redirect = httpx.Response(302, headers={"location": "/elsewhere"}, json={"results": []})
    result = ask_with(lambda request: redirect)
    assert result.error is ErrorKind.HTTP_STATUS
    assert result.status == 302


# --------------------------------------------------------------------------- replay


def test_replay_warms_up_then_sends_each_item_once_in_order() -> None:
    sent: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.url.params["q"])
        return httpx.Response(200, json={"results": [{"id": request.url.params["q"], "score": 1}]})

    progress: list[tuple[int, int, str]] = []
    results = replay(
        BASE,
        replace(GET, warmup=3),
        [("q1", "one"), ("q2", "two")],
        warmup_items=[("w1", "warm a"), ("w2", "warm b")],
        on_result=lambda done, total, r: progress.append((done, total, r.query_id)),
        transport=httpx.MockTransport(handler),
    )
    assert sent == ["warm a", "warm b", "warm a", "one", "two"]
    assert [(r.query_id, r.ids) for r in results] == [("q1", ("one",)), ("q2", ("two",))]
    assert progress == [(1, 2, "q1"), (2, 2, "q2")]


def test_replay_warms_up_on_the_items_by_default() -> None:
    sent: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.url.params["q"])
        return httpx.Response(200, json={"results": []})

    results = replay(
        BASE,
        replace(GET, warmup=3),
        [("q1", "one"), ("q2", "two")],
        transport=httpx.MockTransport(handler),
    )
    assert sent == ["one", "two", "one", "one", "two"]
    assert len(results) == 2


def test_replay_goes_on_when_every_warm_up_fails() -> None:
    results = replay(
        BASE,
        GET,
        [("q1", "one"), ("q2", "two")],
        warmup_items=[("w", "warm")],
        transport=httpx.MockTransport(raising(httpx.ConnectError)),
    )
    assert [(r.query_id, r.error) for r in results] == [
        ("q1", ErrorKind.CONNECTION),
        ("q2", ErrorKind.CONNECTION),
    ]


def test_replay_rejects_a_concurrency_below_one() -> None:
    with pytest.raises(ValueError, match="concurrency"):
        replay(BASE, GET, [], warmup_items=[], concurrency=0)


# --------------------------------------------------------------------------- a real server


class _Search(Quiet):
    """GET /search?q=X answers {"results": [{"id": X}]}; "q0" waits until "q3" was served."""

    protocol_version = "HTTP/1.1"
    served: list[str]
    q3_served: threading.Event

    def do_GET(self) -> None:
        q = parse_qs(urlsplit(self.path).query)["q"][0]
        if q == "q0":
            self.q3_served.wait(timeout=10)  # a safeguard only; the test asserts the order
        # Recorded before the answer is written: once it is, the client may return and the test
        # read `served` before this thread gets the CPU again (under load it did).
        self.served.append(q)
        if q == "q3":
            self.q3_served.set()
        send_json(self, {"results": [{"id": q}]})
        self.wfile.flush()


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    served: list[str] = []
    handler = type("Search", (_Search,), {"served": served, "q3_served": threading.Event()})
    with serving(handler) as url:
        yield url, served


def test_concurrent_replay_on_a_real_server_keeps_item_order(
    server: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    base_url, served = server
    # a proxy the client must ignore: it would refuse every connection
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:9")
    items = [(f"id{i}", f"q{i}") for i in range(6)]
    done: list[int] = []
    results = replay(
        base_url,
        replace(GET, scores=None, warmup=0),
        items,
        warmup_items=[],
        concurrency=4,
        on_result=lambda n, total, r: done.append(n),
    )
    assert served.index("q3") < served.index("q0")  # answers really came back out of order
    assert [(r.query_id, r.ids, r.status) for r in results] == [
        (f"id{i}", (f"q{i}",), 200) for i in range(6)
    ]
    assert all(r.latency_ns > 0 for r in results)
    assert done == [1, 2, 3, 4, 5, 6]


# --------------------------------------------------------------------------- the timed path


MISBEHAVING = Path(__file__).parents[1] / "fixtures" / "misbehaving" / "svc.py"


@pytest.fixture(scope="module")
def misbehaving() -> Iterator[str]:
    """tests/fixtures/misbehaving/svc.py as a real subprocess on 127.0.0.1; its base URL."""
    process = subprocess.Popen(
        [sys.executable, str(MISBEHAVING), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("listening on "), line
        yield line.split()[-1]
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
    assert process.poll() is not None


def test_the_timed_path_keeps_one_connection_with_nodelay(misbehaving: str) -> None:
    query = replace(GET, scores=None, warmup=2)
    before = json.loads(httpx.get(misbehaving + "/connections", trust_env=False).text)
    items = [(f"id{i}", f"q {i}&x") for i in range(20)]
    results = replay(misbehaving, query, items)
    after = json.loads(httpx.get(misbehaving + "/connections", trust_env=False).text)
    assert [(r.query_id, r.ids) for r in results] == [(f"id{i}", (f"q {i}&x",)) for i in range(20)]
    # warm-up and 20 queries over one keep-alive connection (plus each /connections probe)
    assert after["connections"] - before["connections"] == 2
    with Channel(misbehaving, query, items) as channel:
        channel.ask("id0", "q 0&x")
        sock = channel._connection._sock if channel._connection else None
        assert sock is not None
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


def test_a_keep_alive_connection_the_service_closed_is_reopened_once(misbehaving: str) -> None:
    query = replace(GET, path="/once", scores=None)
    with Channel(misbehaving, query) as channel:
        results = [channel.ask(f"id{i}", f"q{i}") for i in range(3)]
    # each answer came on a new connection; none is an error, none was sent twice
    assert [(r.ids, r.error) for r in results] == [((f"q{i}",), None) for i in range(3)]


def test_a_body_dripped_a_byte_a_second_fails_at_the_whole_request_deadline(
    misbehaving: str,
) -> None:
    query = replace(GET, path="/drip", params={}, scores=None, timeout=2.5)
    with Channel(misbehaving, query) as channel:
        result = channel.ask("q1", "tea")
    # Every byte came within the per-read timeout a phase-by-phase deadline would allow; the
    # whole request's deadline still cuts it off.
    assert result.error is ErrorKind.TIMEOUT
    assert result.detail == "no answer within query.timeout = 2.5 s (the whole request's deadline)"
    assert result.latency_ns >= 2.5e9  # failed at the deadline, not before
    assert result.ids == ()


@pytest.mark.parametrize("path", ["/huge", "/huge-chunked"])
def test_an_answer_over_max_bytes_is_too_large(misbehaving: str, path: str) -> None:
    query = replace(GET, path=path, params={}, scores=None, max_bytes=10_000_000)
    with Channel(misbehaving, query) as channel:
        result = channel.ask("q1", "tea")
        after = channel.ask("q2", "tea")  # the connection is reopened, not left mid-body
    for r in (result, after):
        assert r.error is ErrorKind.TOO_LARGE
        assert r.detail is not None and "query.max_bytes = 10000000 bytes" in r.detail
    bigger = replace(query, max_bytes=20_000_000)
    with Channel(misbehaving, bigger) as channel:
        assert channel.ask("q1", "tea").ids == ("a",)  # a cap, not a corruption


def test_the_mock_transport_path_caps_the_body_too() -> None:
    body = json.dumps({"results": [{"id": "a"}], "pad": "x" * 2000})
    result = ask_with(
        lambda request: httpx.Response(200, text=body), replace(GET, scores=None, max_bytes=1000)
    )
    assert result.error is ErrorKind.TOO_LARGE


def test_the_timed_path_reads_a_real_answer_like_httpx_does(server: tuple[str, list[str]]) -> None:
    base_url, _ = server
    query = replace(GET, scores=None, warmup=0)
    with Channel(base_url, query) as channel:
        lean = channel.ask("id1", "q1")
    with httpx.Client(trust_env=False) as client:
        reference = ask(client, base_url, query, "id1", "q1")
    assert (lean.ids, lean.status, lean.error) == (reference.ids, reference.status, None)


def test_encode_request_builds_the_bytes_before_the_clock() -> None:
    raw = encode_request("http://127.0.0.1:8080", make_request(POST, "tea {x}"))
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.split(b"\r\n")[0] == b"POST /v1/search HTTP/1.1"
    assert b"Host: 127.0.0.1:8080" in head and b"X-Limit: 7" in head
    assert b"Content-Length: %d" % len(body) in head
    assert json.loads(body)["q"] == "tea {x}"
    get = encode_request("http://127.0.0.1:8080", make_request(GET, "a b&c"))
    assert get.startswith(b"GET /search?q=a+b%26c&k=10 HTTP/1.1\r\n")
    tls = encode_request("https://example.org", make_request(GET, "tea"))
    assert b"Host: example.org\r\n" in tls  # the default port is not named
    with pytest.raises(ValueError, match="speaks http"):
        encode_request("ftp://example.org", make_request(GET, "tea"))


# --------------------------------------------------------------------------- query.texts


def test_texts_are_read_beside_the_ids_and_a_wrong_shape_is_bad_shape() -> None:
    plain = replace(GET, scores=None)
    texts = replace(plain, texts="texts")
    body = {"results": [{"id": "a"}, {"id": "b"}], "texts": ["x y", None]}
    got = ask_with(answer(body), texts)
    assert got.ok and got.ids == ("a", "b") and got.texts == ("x y", None)
    assert ask_with(answer(body), plain).texts is None  # not asked for
    # A projection drops the results without a text, as for scores: caught by the length.
    projected = replace(plain, texts="results[].text")
    short = ask_with(answer({"results": [{"id": "a", "text": "x"}, {"id": "b"}]}), projected)
    assert short.error is ErrorKind.BAD_SHAPE and "1 texts for 2 ids" in (short.detail or "")
    number = ask_with(answer({"results": [{"id": "a"}], "texts": [3]}), texts)
    assert number.error is ErrorKind.BAD_SHAPE and "texts[0]" in (number.detail or "")

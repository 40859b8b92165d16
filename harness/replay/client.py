"""How we ask: one gold query over HTTP, timed, and the ranked ids read from the answer.

    Channel(base_url, query, items).ask(query_id, text)      the timed path: one persistent
                                                             keep-alive socket (any new one
                                                             connected off the clock), requests
                                                             encoded before the clock starts
    channel.send(query_id, text) -> Sent; channel.read(sent) the same in two steps: the timed
                                                             exchange, then the answer read
    Requests(query, items), AnswerCache(query)               kept per ref across its boots:
                                                             requests encoded once
                                                             (`harness.replay.request`), each
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
retried: a flaky service shows up as errors, not as a slower average. The request's bytes are
`harness.replay.request`'s, the exchange on the clock `harness.replay.wire`'s; here, what is
timed, in which order, and how each answer is read.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TYPE_CHECKING, NamedTuple

from harness.boot.probe import OpenSocket
from harness.config import QueryConfig
from harness.replay.ids import html_document
from harness.replay.paths import compile_path
from harness.replay.request import Requests, encode_request, make_request
from harness.replay.wire import Answer, Connection, Failure, check_late, timeout_detail, too_large
from harness.text.control_chars import one_line
from harness.values.types import ErrorKind, QueryResult

if TYPE_CHECKING:  # httpx is imported on use: only tests (MockTransport) ask through it
    import httpx

EXCERPT = 200  # characters of a response body quoted in an error detail
READ_BATCH = 32
"""Queries sent (and timed) before their answers are read, together: reading ids is off the
clock either way, and a batch of answers read in a row costs the harness about half the CPU of
each read right after its exchange (`scripts/bench_replay_cpu.py`)."""

OnResult = Callable[[int, int, QueryResult], None]  # (done, total, result)


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
                    raise too_large(query)
                if time.monotonic() > deadline:
                    raise Failure(ErrorKind.TIMEOUT, timeout_detail(query, "body"))
            answer = Answer(
                response.status_code, response.headers.get("content-type", ""), bytes(body)
            )
        check_late(query, time.perf_counter_ns() - started)
    except Failure as failure:
        return _failed(query_id, failure.kind, failure.detail, time.perf_counter_ns() - started)
    except httpx.TimeoutException as error:
        kind, detail = ErrorKind.TIMEOUT, timeout_detail(query, type(error).__name__)
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
    # A detail quotes the service (its body, its content type): made safe to show once, here,
    # for the record, the report and the terminal (harness.text.control_chars).
    detail = one_line(detail)
    return QueryResult(query_id, status=status, error=kind, detail=detail, latency_ns=latency_ns)


def _interpret(answer: Answer, query: QueryConfig, query_id: str, latency_ns: int) -> QueryResult:
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
        if problem:  # named: the ids were read, the scores are what is wrong
            return failed(ErrorKind.BAD_SHAPE, f"query.scores: {problem}")
    texts = None
    if query.texts is not None:
        found_texts = compile_path(query.texts).search(decoded)
        texts, problem = _texts(found_texts, query.texts, len(ids))
        if problem:
            return failed(ErrorKind.BAD_SHAPE, f"query.texts: {problem}")
    return QueryResult(
        query_id, ids=ids, scores=scores, status=status, latency_ns=latency_ns, texts=texts
    )


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

    def read(self, answer: Answer, query_id: str, latency_ns: int) -> QueryResult:
        key = (answer.status, answer.content_type, answer.body)
        known = self._read.get(key)
        if known is None:
            known = _interpret(answer, self.query, "", 0)
            if self._bytes + len(answer.body) <= self.MAX_BYTES:
                self._read[key] = known
                self._bytes += len(answer.body)
        # `replace(known, query_id=, latency_ns=)`, field by field (a third of its cost;
        # tests/replay/test_replay_loop.py holds the field list to QueryResult's)
        return QueryResult(
            query_id,
            known.ids,
            known.scores,
            known.status,
            known.error,
            known.detail,
            latency_ns,
            known.texts,
        )


class Sent(NamedTuple):  # a tuple: one is built per exchange
    """One timed exchange, its answer not yet read (`Channel.send`, then `Channel.read`)."""

    query_id: str
    latency_ns: int
    answer: Answer | None = None  # None when it failed on the wire
    failure: Failure | None = None
    result: QueryResult | None = None  # already read (the httpx path of tests)


_new_tuple = tuple.__new__
_ON_THE_WIRE = frozenset({ErrorKind.TIMEOUT, ErrorKind.CONNECTION})
STOP_HINTS = {
    ErrorKind.TIMEOUT: ": is the service stalled? raise query.max_consecutive_failures "
    "(0: never stop) if it is right",
    ErrorKind.CONNECTION: ": nothing takes its connections: see its log",
}
"""How a stopped round's message ends, by the kind of its failures; the session drops it for a
service that exited (`RefSession.stop`), whose exit status is the reason."""


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
            f"stopped at query.max_consecutive_failures = {self.limit}{STOP_HINTS[kind]}"
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
        # `check_late`'s bound, in whole nanoseconds: a latency above it is checked as late
        # (its own test is the float one, so no latency is judged differently)
        self._timeout_ns = math.floor(query.timeout * 1e9)
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

    def connect(self) -> None:
        """Open the connection now, if it is not open (a failure is left to the first query
        sent, which records it)."""
        if self._connection is not None:
            with contextlib.suppress(Failure):
                self._connection.connect(self.query)

    def ask(self, query_id: str, text: str) -> QueryResult:
        """One timed exchange and its answer read: `read(send(query_id, text))`."""
        return self.read(self.send(query_id, text))

    def send(self, query_id: str, text: str) -> Sent:
        """Send one query and read its whole answer, timed (`ask`'s latency); no ids read yet."""
        if self._client is not None:
            result = ask(self._client, self.base_url, self.query, query_id, text)
            return Sent(query_id, result.latency_ns, result=result)
        connection = self._connection
        assert connection is not None
        raw = self._prepared.get(text)
        if raw is None:
            raw = self._prepared[text] = encode_request(
                self.base_url, make_request(self.query, text)
            )
        try:
            connection.connect(self.query)  # off the clock: see Connection.connect
        except Failure as failure:
            return Sent(query_id, 0, None, failure)
        # On the clock: from the first byte written to the last byte of the answer read.
        started = time.perf_counter_ns()
        try:
            answer = connection.exchange(raw, self.query)
            latency_ns = time.perf_counter_ns() - started
            if latency_ns > self._timeout_ns:
                check_late(self.query, latency_ns)
        except Failure as failure:
            return Sent(query_id, time.perf_counter_ns() - started, None, failure)
        # Sent(query_id, latency_ns, answer), without the NamedTuple's Python-level __new__
        return _new_tuple(Sent, (query_id, latency_ns, answer, None, None))

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
    on_start: Callable[[], None] | None = None,
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
    `Stopped` with the results so far: nothing more is sent. `on_start()` is called when the
    measured queries begin: after the warm-up, with every connection they use already open
    (the window a throughput is measured over, `timings_s["queries"]`).
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
            channel.connect()
            if on_start is not None:
                on_start()
            return _sequential(channel, items, on_result)
    return _concurrent(
        base_url, query, items, concurrency, on_result, transport, open_socket, on_start
    )


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
    on_start: Callable[[], None] | None = None,
) -> tuple[QueryResult, ...]:
    local = threading.local()
    lock = threading.Lock()
    # One connection a worker, every one open before the measured queries begin (`on_start`):
    # connecting is not part of the throughput.
    opened = [
        Channel(base_url, query, transport=transport, open_socket=open_socket)
        for _ in range(min(concurrency, len(items)) or 1)
    ]
    free = list(opened)
    for channel in opened:
        channel.connect()
    if on_start is not None:
        on_start()

    def one(query_id: str, text: str) -> QueryResult:
        channel = getattr(local, "channel", None)
        if channel is None:
            with lock:
                channel = local.channel = free.pop()
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

"""How we ask: one gold query over HTTP, timed, and the ranked ids read from the answer.

    make_request(query, text) -> RequestSpec                 pure: the request for one query
    ask(client, base_url, query, query_id, text) -> QueryResult
    replay(base_url, query, items, *, warmup_items=None, concurrency=1, on_result=None)

A query either yields a ranking (possibly empty: a valid answer to an unanswerable query) or fails
with an ErrorKind and a detail; a failure is never turned into an empty ranking, and nothing is
retried: a flaky service shows up as errors, not as a slower average.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

import httpx
import jmespath

from harness.boot.sandbox import OpenSocket, transport_for
from harness.config import QueryConfig, substitute
from harness.replay.answers import html_document
from harness.types import ErrorKind, QueryResult

EXCERPT = 200  # characters of a response body quoted in an error detail

OnResult = Callable[[int, int, QueryResult], None]  # (done, total, result)


@dataclass(frozen=True)
class RequestSpec:
    """One concrete request: the config's templates with {query} and {limit} filled in."""

    method: str
    path: str
    params: Mapping[str, str] = field(default_factory=dict)
    json: object | None = None  # the body, sent as JSON when not None
    headers: Mapping[str, str] = field(default_factory=dict)


def make_request(query: QueryConfig, text: str) -> RequestSpec:
    """Fill the request templates of `query` for the query `text`.

    Substitution is literal and single-pass (see config.substitute): braces in the query text are
    sent as typed and never expanded. In the JSON template a string that is exactly "{limit}"
    becomes the integer limit and one that is exactly "{query}" the text; any other string has
    its placeholders replaced inside it. `path` is sent as written.
    """
    values = {"query": text, "limit": str(query.limit)}
    return RequestSpec(
        method=query.method,
        path=query.path,
        params={name: substitute(value, values) for name, value in query.params.items()},
        json=None if query.json is None else _fill(query.json, values, query.limit),
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


def ask(
    client: httpx.Client, base_url: str, query: QueryConfig, query_id: str, text: str
) -> QueryResult:
    """Send one query and read its ranking; never raises for what the service does.

    `latency_ns` is time.perf_counter_ns around the complete request, from before it is sent to
    after the last byte of the body is read (JSON parsing excluded); a failed query records the
    time until it failed. `query.timeout` applies to each of connect, write and read, as httpx
    timeouts do. Outcomes: TIMEOUT, CONNECTION (any other transport failure), HTTP_STATUS (not
    2xx; the detail quotes the body's first 200 characters), NOT_JSON, NO_MATCH (the ids path
    finds nothing), BAD_SHAPE (ids not a list of strings or integers, a null among them, or
    scores that are not finite numbers one per id). Integer ids become strings. JMESPath
    projections such as `results[].id` silently drop results without an id; set `scores` with
    the same projection to have such answers caught as BAD_SHAPE by the length check.
    """
    spec = make_request(query, text)
    started = time.perf_counter_ns()
    try:
        response = client.request(
            spec.method,
            base_url.rstrip("/") + spec.path,
            params=spec.params,
            json=spec.json,
            headers=spec.headers,
            timeout=query.timeout,
        )
    except httpx.TimeoutException as error:
        kind = ErrorKind.TIMEOUT
        detail = f"no answer within query.timeout = {query.timeout:g} s ({type(error).__name__})"
    except httpx.DecodingError as error:  # a body that its Content-Encoding cannot decode
        kind, detail = ErrorKind.NOT_JSON, f"undecodable body: {error}"
    except httpx.RequestError as error:
        kind = ErrorKind.CONNECTION
        detail = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    else:
        return _read(response, query, query_id, time.perf_counter_ns() - started)
    return _failed(query_id, kind, detail, time.perf_counter_ns() - started)


def _failed(
    query_id: str, kind: ErrorKind, detail: str, latency_ns: int, status: int | None = None
) -> QueryResult:
    return QueryResult(query_id, status=status, error=kind, detail=detail, latency_ns=latency_ns)


def _read(
    response: httpx.Response, query: QueryConfig, query_id: str, latency_ns: int
) -> QueryResult:
    status = response.status_code

    def failed(kind: ErrorKind, detail: str) -> QueryResult:
        return _failed(query_id, kind, detail, latency_ns, status)

    if not 200 <= status < 300:
        return failed(ErrorKind.HTTP_STATUS, f"HTTP {status}: {response.text[:EXCERPT]}")
    try:
        answer = html_document(response.content, query.select) if query.select else response.json()
    except ValueError:
        kind = response.headers.get("content-type", "no content-type")
        return failed(ErrorKind.NOT_JSON, f"{kind}: {response.text[:EXCERPT]}")
    found = _compiled(query.ids).search(answer)
    if found is None:
        return failed(ErrorKind.NO_MATCH, f"ids path {query.ids!r} matched nothing")
    ids, problem = _ids(found, query.ids)
    if problem:
        return failed(ErrorKind.BAD_SHAPE, problem)
    scores = None
    if query.scores is not None:
        scores, problem = _scores(_compiled(query.scores).search(answer), query.scores, len(ids))
        if problem:
            return failed(ErrorKind.BAD_SHAPE, problem)
    return QueryResult(query_id, ids=ids, scores=scores, status=status, latency_ns=latency_ns)


@functools.lru_cache(maxsize=64)
def _compiled(expression: str) -> Any:
    return jmespath.compile(expression)


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
    for index, item in enumerate(found):
        if isinstance(item, bool) or not isinstance(item, str | int):
            return (), f"ids[{index}] is {_kind(item)}; ids must be strings or integers"
    return tuple(str(item) for item in found), None


def _scores(found: object, path: str, count: int) -> tuple[tuple[float, ...] | None, str | None]:
    if not isinstance(found, list):
        return None, f"scores path {path!r} matched {_kind(found)}, not an array"
    for index, item in enumerate(found):
        number = isinstance(item, int | float) and not isinstance(item, bool)
        if not number or not math.isfinite(item):
            return None, f"scores[{index}] is {_kind(item)}; scores must be finite numbers"
    if len(found) != count:
        return None, f"{len(found)} scores for {count} ids; each id needs one score"
    return tuple(float(item) for item in found), None


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
) -> tuple[QueryResult, ...]:
    """Send `query.warmup` unrecorded requests, then every (query_id, text) once, in order.

    Warm-up texts cycle through `warmup_items` (default: `items`; none when empty). Both refs
    warm up alike, but a service that caches answers serves those first items from its cache:
    pass texts outside the measured set then. Warm-up outcomes are ignored, even when every
    one fails: the measured queries then record the errors themselves. Sequential by default,
    for latency fidelity; `concurrency > 1` sends through a thread pool sharing one client and
    still returns results in item order. `on_result(done, total, result)` is called in this
    thread as each result arrives. The client never reads proxies or certificates from the
    environment (trust_env=False) and speaks HTTP/1.1 only; `transport` is for tests.
    `open_socket` is `RunningService.open_socket`: in a bubblewrap sandbox every connection is a
    socket made in the service's network namespace (None: plain loopback connections).
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, not {concurrency}")
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    warm = items if warmup_items is None else warmup_items
    transport = transport or transport_for(open_socket, limits)
    with httpx.Client(trust_env=False, http2=False, limits=limits, transport=transport) as client:
        for index in range(query.warmup if warm else 0):
            query_id, text = warm[index % len(warm)]
            ask(client, base_url, query, query_id, text)
        if concurrency == 1:
            return _sequential(client, base_url, query, items, on_result)
        return _concurrent(client, base_url, query, items, concurrency, on_result)


def _sequential(
    client: httpx.Client,
    base_url: str,
    query: QueryConfig,
    items: Sequence[tuple[str, str]],
    on_result: OnResult | None,
) -> tuple[QueryResult, ...]:
    results: list[QueryResult] = []
    for query_id, text in items:
        results.append(ask(client, base_url, query, query_id, text))
        if on_result is not None:
            on_result(len(results), len(items), results[-1])
    return tuple(results)


def _concurrent(
    client: httpx.Client,
    base_url: str,
    query: QueryConfig,
    items: Sequence[tuple[str, str]],
    concurrency: int,
    on_result: OnResult | None,
) -> tuple[QueryResult, ...]:
    slots: dict[int, QueryResult] = {}
    with ThreadPoolExecutor(concurrency, thread_name_prefix="harness-query") as pool:
        futures = {
            pool.submit(ask, client, base_url, query, query_id, text): index
            for index, (query_id, text) in enumerate(items)
        }
        try:
            for future in as_completed(futures):
                slots[futures[future]] = future.result()
                if on_result is not None:
                    on_result(len(slots), len(items), slots[futures[future]])
        except BaseException:  # Ctrl-C or a failing callback: send nothing more
            for future in futures:
                future.cancel()
            raise
    return tuple(slots[index] for index in range(len(items)))

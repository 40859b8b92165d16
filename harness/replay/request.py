"""The request for one gold query: the config's templates filled (`make_request`), then the
bytes of one HTTP/1.1 request (`encode_request`), encoded once per ref and joined around each
boot's Host header (`Requests`). Pure: nothing here opens a socket.

    make_request(query, text) -> RequestSpec      {query} and {limit} filled, literally
    header_injections(query, items) -> [(id, name, chars)]  queries a header could not carry
    refuse_injections(side, query, items, source=, where=, lines=)   GoldError naming each, by line
    encode_request(base_url, spec) -> bytes       the request line, headers and body
    Requests(query, items).for_url(base_url)      {text: bytes}, what `Channel` sends
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import SplitResult, unquote, urlencode, urlsplit

from harness.config import QueryConfig, substitute
from harness.errors import GoldError, Problem
from harness.process.extras import require
from harness.text.control_chars import control_chars, header_problem
from harness.text.scrub import basic_token


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

    A header that the filled text would break (CR LF: a header of the text's choosing) is a
    GoldError, never sent: the session refuses such queries by id before anything boots
    (`header_injections`), so this is the last guard, for every other caller.
    """
    values = {"query": text, "limit": str(query.limit)}
    headers = {name: substitute(value, values) for name, value in query.headers.items()}
    for name, value in headers.items():
        why = header_problem(name, value)
        if why:
            raise GoldError(f"query.headers.{name}: not sent: {why}")
    return RequestSpec(
        method=query.method,
        path=query.path,
        params={name: substitute(value, values) for name, value in query.params.items()},
        json=None if query.json is None else _fill(query.json, values, query.limit),
        form=None
        if query.form is None
        else {name: substitute(value, values) for name, value in query.form.items()},
        headers=headers,
    )


def header_injections(
    query: QueryConfig, items: Sequence[tuple[str, str]]
) -> list[tuple[str, str, str]]:
    """(query id, header name, its control characters) for each query whose text, filled into a
    `query.headers` value, would make a header that cannot be sent (CR LF starts a header of the
    text's choosing).  The text goes elsewhere (params, form: percent-encoded; json:
    escaped) harmlessly; `harness gold check` warns of it wherever it is."""
    found = []
    templated = {n: v for n, v in query.headers.items() if "{query}" in v}
    for query_id, text in items if templated else ():
        for name, value in templated.items():
            if header_problem(name, substitute(value, {"query": text, "limit": "1"})):
                found.append((query_id, name, control_chars(text.replace("\t", ""))))
    return found


def refuse_injections(
    side: str,
    query: QueryConfig,
    items: Sequence[tuple[str, str]],
    *,
    source: str,
    where: str,
    lines: Mapping[str, int | None],
) -> None:
    """A GoldError naming every query whose text (as sent, after query.rewrite) would break a
    header it is filled into: refused before anything is built or booted, not sent.  `source`
    is the gold set, `where` the file of its queries and `lines` each query's line there."""
    found = header_injections(query, items)
    if not found:
        return
    problems = [
        Problem(
            where,
            f"query {query_id!r}: its text holds {chars}, which query.headers.{name} "
            f"would send in a header ({side} side): a header cannot carry it",
            lines.get(query_id),
        )
        for query_id, name, chars in found
    ]
    raise GoldError(
        f"{source}: {len(found)} quer{'y' if len(found) == 1 else 'ies'} cannot be sent "
        "in a header: a control character there would end it and start another",
        problems,
        hint="remove the control characters from those queries (`harness gold check` lists "
        "them), or send the text in query.params or query.json instead of a header",
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
        if query.select:  # the [html] extra: said before the first query, not in each result
            require("bs4", "query.select")
        self.query = query
        self._texts = list(dict.fromkeys(text for _, text in items))
        self._parts: dict[str, dict[str, tuple[bytes, bytes]]] = {}  # URL path -> text -> parts
        # (URL path, Host) -> text -> request: a service asked at the same URL round after
        # round (a deployment) gets the same dict, joined once (the last few URLs kept).
        self._joined: dict[tuple[str, bytes], dict[str, bytes]] = {}

    def for_url(self, base_url: str) -> dict[str, bytes]:
        url = _http_url(base_url)
        parts = self._parts.get(url.path)
        if parts is None:
            parts = self._parts[url.path] = {
                text: _encode_parts(url.path, make_request(self.query, text))
                for text in self._texts
            }
        host = _host(url, self.query.headers)
        joined = self._joined.get((url.path, host))
        if joined is None:
            if len(self._joined) >= _URLS_KEPT:
                self._joined.clear()
            joined = {text: start + host + rest for text, (start, rest) in parts.items()}
            self._joined[url.path, host] = joined
        return joined


_URLS_KEPT = 4  # URLs whose joined requests `Requests.for_url` keeps

"""The built-in loader: a booted service's corpus posted over HTTP, in batches, then indexed.

    timings = load_corpus(spec.load, client, url, corpus)   # {"load": s, "index": s}

`[service.load]` in harness.toml, for a service that keeps its index in memory and is filled
after boot (Elasticsearch-, Typesense-, Meilisearch-like APIs, or a FastAPI app of your own):

    [service.load]
    path = "/documents"                 # each batch goes here (method = "POST" by default)
    batch = 100                         # documents per request
    body = { docs = "{documents}" }     # optional: the batch's array inside a JSON body
    document = { id = "{_id}", text = "{text}" }   # optional: one document as sent
    index = "/index"                    # optional: called once after the last batch
    index_method = "POST"
    timeout = 60                        # seconds per request

The corpus is the JSONL file `load.corpus` inside the boot's fresh data copy ({data}), or else
`gold.corpus`; each line is one JSON object. `document` is a JSON template over a line's
fields: a value exactly "{field}" is that field's value with its JSON type, any other string has
each {field} replaced by the field's text; without it the line is sent as it is. `body` holds
"{documents}" as one value, replaced by the batch's array; without it the array is the body.

It runs after readiness and after the `service.prepare` commands (which may create the
collection it fills), through the same transport as the queries (inside the sandbox's network
namespace in bubblewrap mode). A request that fails is a ServiceError (stage "prepare") saying
which batch (and its documents' line numbers), the method and path, the HTTP status and the
first 200 characters of the answer, or the transport error; a corpus line that is not a JSON
object, or lacks a field the template names, is one too, naming the file and line. Both phases
are timed (`load`, `index`) and recorded apart from query latency.
"""

from __future__ import annotations

import io
import json
import re
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.config import LoadConfig
from harness.config.values import PLACEHOLDER
from harness.errors import ServiceError, clip
from harness.process.inputs import CORPUS, open_input

if TYPE_CHECKING:
    import httpx

EXCERPT = 200  # characters of an answer quoted in an error
_WHOLE = re.compile(r"^\{([A-Za-z_][A-Za-z0-9_]*)\}$")


def _fail(message: str, hint: str = "") -> ServiceError:
    return ServiceError(f"service.load: {message}", [hint] if hint else [], stage="prepare")


def corpus_path(spec: LoadConfig, data: Path | None, gold_corpus: Path | None) -> Path:
    """Where the documents come from: load.corpus in the boot's data copy, else gold.corpus."""
    if spec.corpus is not None:
        if data is None or not data.is_dir():
            raise _fail(
                f"corpus = {spec.corpus!r} is read from the data copy, and service.data is "
                "not a folder",
                "set service.data to the folder that holds it, or drop load.corpus to post "
                "gold.corpus",
            )
        return data / spec.corpus
    if gold_corpus is None:
        raise _fail("no corpus to post", "set gold.corpus, or load.corpus inside service.data")
    return gold_corpus


def _documents(path: Path, template: Mapping[str, object] | None) -> Iterator[tuple[int, object]]:
    try:  # only a regular file, streamed under the corpus's cap (a FIFO there would hang)
        handle = io.TextIOWrapper(open_input(path, CORPUS, "service.load.corpus"), "utf-8")
    except OSError as exc:
        raise _fail(f"cannot read the corpus {path}: {exc.strerror}") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise _fail(f"{path}:{number}: not JSON ({exc})") from None
            if not isinstance(row, dict):
                raise _fail(f"{path}:{number}: not a JSON object")
            yield number, row if template is None else _fill(template, row, f"{path}:{number}")


def _fill(template: object, row: Mapping[str, Any], where: str) -> object:
    if isinstance(template, str):
        whole = _WHOLE.match(template)
        if whole:
            return _field(row, whole.group(1), where)
        return PLACEHOLDER.sub(lambda m: _text(_field(row, m.group(1), where)), template)
    if isinstance(template, Mapping):
        return {k: _fill(v, row, where) for k, v in template.items()}
    if isinstance(template, list | tuple):
        return [_fill(v, row, where) for v in template]
    return template


def _field(row: Mapping[str, Any], name: str, where: str) -> object:
    if name not in row:
        known = ", ".join(sorted(row)) or "none"
        raise _fail(
            f"{where}: no field {name!r} for the document template (fields: {known})",
            "fix service.load.document",
        )
    return row[name]


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _body(spec: LoadConfig, batch: list[object]) -> object:
    if spec.body is None:
        return batch
    return _put_batch(spec.body, batch)


def _put_batch(template: object, batch: list[object]) -> object:
    if template == "{documents}":
        return batch
    if isinstance(template, Mapping):
        return {k: _put_batch(v, batch) for k, v in template.items()}
    if isinstance(template, list | tuple):
        return [_put_batch(v, batch) for v in template]
    return template


def _send(
    client: httpx.Client, method: str, url: str, body: object, timeout: float, what: str
) -> None:
    import httpx  # imported on use: a compare without [service.load] never needs it

    try:
        answer = client.request(method, url, json=body, timeout=timeout)
    except httpx.TimeoutException:
        raise _fail(
            f"{what}: no answer within service.load.timeout = {timeout:g} s",
            "raise service.load.timeout (or lower service.load.batch)",
        ) from None
    except httpx.TransportError as exc:
        raise _fail(f"{what}: {type(exc).__name__}: {exc}", "see the service log") from None
    if not answer.is_success:
        said = clip(" ".join(answer.text[: 4 * EXCERPT].split()), EXCERPT)
        hint = "check service.load.path, method, body and document against the service's API"
        raise _fail(f"{what}: HTTP {answer.status_code}: {said}", hint)


def load_corpus(spec: LoadConfig, client: httpx.Client, url: str, corpus: Path) -> dict[str, float]:
    """Post every document of `corpus` to `url + spec.path` in batches of `spec.batch`, then
    call `spec.index` once; the seconds each phase took, as {"load": s[, "index": s]}."""
    timings: dict[str, float] = {}
    started = time.perf_counter()
    batch: list[object] = []
    lines: list[int] = []
    sent = 0

    def flush() -> None:
        nonlocal sent
        sent += 1
        what = (
            f"batch {sent} (documents on lines {lines[0]}-{lines[-1]} of {corpus}) to "
            f"{spec.method} {spec.path}"
        )
        _send(client, spec.method, url + spec.path, _body(spec, batch), spec.timeout, what)
        batch.clear()
        lines.clear()

    for number, document in _documents(corpus, spec.document):
        batch.append(document)
        lines.append(number)
        if len(batch) >= spec.batch:
            flush()
    if batch:
        flush()
    if sent == 0:
        raise _fail(f"the corpus {corpus} holds no document")
    timings["load"] = time.perf_counter() - started
    if spec.index is not None:
        started = time.perf_counter()
        what = f"the index call {spec.index_method} {spec.index}"
        _send(client, spec.index_method, url + spec.index, None, spec.timeout, what)
        timings["index"] = time.perf_counter() - started
    return timings

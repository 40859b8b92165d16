"""Credentials out of everything harness prints or writes: `[scrubbed]` in their place.

    safe_url("http://alice:pw@host:8080")  -> "http://[scrubbed]@host:8080"   for names and labels
    register_url(url); register_headers(query.headers)                 what this process must hide
    register_fields(query.params); scrubbed_fields(query.params)   credential-named fields
    scrub_text(text) -> str                       every registered secret replaced (a no-op if none)
    Scrubber({b"token": b"[TOKEN scrubbed]"}).stream(src, dst)      bytes, chunk by chunk
    scrub_log(path, scrubber, limit=..., key=...)      a log rewritten scrubbed, its tail kept

What is a secret: the user name and password of a URL's userinfo (as typed, percent-decoded,
and as the Basic token a request carries), the values of the Authorization, Cookie and
Proxy-Authorization headers of `query.headers` (and the token after "Basic "/"Bearer "), the
values of the fields of `query.params`, `query.form` and `query.json` named like a credential
(`secret_field`: api_key, access_token, X-Amz-Signature), and,
for the logs and log excerpts of a boot, every value of harness's environment that the allowlist
kept from the service (`harness.boot.isolation.scrubber`, which says `[NAME scrubbed]`).

The registry is process-wide on purpose: a URL's password can reach a message through any code
that formats the URL or an exception, so the last line of defence is where text leaves the
process (`harness.cli.main` wraps stdout and stderr, `harness.results.files.write_bytes_new`
scrubs every results file and its name).  The sources are fixed too (a deployment is named by
`safe_url`), so the wrappers find nothing to do in a correct run.

Logs are scrubbed whatever their size: by stream, `CHUNK` bytes at a time, keeping the last
(longest secret - 1) bytes of each chunk for the next, so a secret cut by a chunk boundary is
still found whole.  A log longer than `service.max_log_bytes` keeps its tail, under a first line
that says how much was cut and why.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO, TextIO
from urllib.parse import unquote, urlsplit, urlunsplit

SCRUBBED = "[scrubbed]"
MIN_CHARS = 4
"""A bare value shorter than this is not scrubbed wherever it occurs ("pw" would mangle every
line); in a URL's userinfo it is, whatever its length."""
SECRET_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization"})
CHUNK = 1 << 20  # bytes of a log read at a time
_SECRET_PARAM = re.compile(r"token|key|secret|pass|auth|sig|session|cred", re.IGNORECASE)
"""A query parameter with such a name holds a credential."""
_SECRET_WORDS = frozenset(
    {"token", "key", "apikey", "secret", "pass", "passwd", "password", "passphrase", "passkey",
     "pwd", "auth", "authorization", "sig", "signature", "session", "sessionid", "sid", "cred",
     "creds", "credential", "credentials", "jwt", "cookie"}
)
"""A field of a request template holding one of these words (or a word ending in token,
secret or password: accesstoken) holds a credential.  Whole words, not _SECRET_PARAM's
substrings: a configured `author`, `passage` or `keyword` is no secret, and its value, scrubbed
from every output, would blank text that is not one."""
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z0-9]+(?![a-z])")
FIELD_MIN_CHARS = 8
"""A credential field's value shorter than this is scrubbed from the record of the field only,
not wherever it occurs: "true" or "1" hunted through every results file would break them."""
_SECRET_ENV = re.compile(r"TOKEN|SECRET|PASSW|COOKIE|CREDENTIAL|(^|_)(PASS|KEY|APIKEY)($|_)")
"""An environment variable with such a name holds one: narrower than _SECRET_PARAM, since
SSH_AUTH_SOCK, XAUTHORITY and XDG_SESSION_DESKTOP ("ubuntu", in every path of that user) do not;
and a value shorter than 8 characters, or a path, is no token."""


def safe_url(url: str) -> str:
    """`url` with its userinfo (user:password@) replaced by [scrubbed], and so the value of each
    query parameter named like a credential (token, key, secret, password, auth, signature,
    session); unchanged without either."""
    parts = urlsplit(url)
    if "@" in parts.netloc:
        parts = parts._replace(netloc=f"{SCRUBBED}@{parts.netloc.rpartition('@')[2]}")
    if parts.query:
        params = [p.partition("=") for p in parts.query.split("&")]
        query = "&".join(
            f"{name}={SCRUBBED}" if eq and _SECRET_PARAM.search(name) else f"{name}{eq}{value}"
            for name, eq, value in params
        )
        parts = parts._replace(query=query)
    return urlunsplit(parts)


def url_credentials(url: str) -> tuple[str, str] | None:
    """The (user, password) of `url`'s userinfo, percent-decoded; None without userinfo."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return None
    return unquote(parts.username or ""), unquote(parts.password or "")


def basic_token(user: str, password: str) -> str:
    """The value of an Authorization header for HTTP Basic (RFC 7617, UTF-8)."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def url_secrets(url: str) -> list[str]:
    """What of `url` must never be shown: its userinfo in every form a message may quote."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return []
    userinfo = parts.netloc.rpartition("@")[0]
    user, password = url_credentials(url) or ("", "")
    token = basic_token(user, password)
    found = [userinfo, unquote(userinfo), token, token.removeprefix("Basic ")]
    found += [v for v in (parts.password or "", password, parts.username or "", user) if v]
    return found


def secret_field(name: str) -> bool:
    """Whether a field of a request template (a query parameter, a form field, a JSON key) is
    named like a credential: api_key, apiKey, access_token, X-Amz-Signature, sessionid."""
    words = [w.lower() for w in _WORD.findall(name)]
    return any(
        w in _SECRET_WORDS or w.endswith(("token", "secret", "password")) for w in words
    ) or name.lower().replace("-", "").replace("_", "") in _SECRET_WORDS


def _fields(template: object) -> Iterator[tuple[str, str]]:
    """(name, value) of every string field of a request template, JSON nested or not."""
    if isinstance(template, Mapping):
        for name, value in template.items():
            if isinstance(value, str):
                yield str(name), value
            else:
                yield from _fields(value)
    elif isinstance(template, list | tuple):
        for item in template:
            yield from _fields(item)


def field_secrets(template: object) -> list[str]:
    """The values of `template`'s credential-named fields, FIELD_MIN_CHARS or longer and with no
    placeholder ({query} is the gold query, no secret)."""
    return [
        value
        for name, value in _fields(template)
        if secret_field(name) and len(value) >= FIELD_MIN_CHARS and "{" not in value
    ]


def scrubbed_fields(template: object) -> Any:
    """`template` (a table or a JSON body) with the value of each credential-named field
    replaced by [scrubbed]: what a run record keeps of the request it sent."""
    if isinstance(template, Mapping):
        return {
            name: SCRUBBED
            if isinstance(value, str) and secret_field(str(name)) and "{" not in value
            else scrubbed_fields(value)
            for name, value in template.items()
        }
    if isinstance(template, list | tuple):
        return [scrubbed_fields(item) for item in template]
    return template


def header_secrets(headers: Mapping[str, str]) -> list[str]:
    """The values of `headers` that are credentials, and the token after a scheme word."""
    found = []
    for name, value in headers.items():
        if name.lower() in SECRET_HEADERS and value:
            found.append(value)
            scheme, _, token = value.partition(" ")
            if token and scheme.isalpha():
                found.append(token.strip())
    return found


# --------------------------------------------------------------------------- the registry

_registered: dict[str, str] = {}  # secret -> what it is replaced by; only ever grows
_made: Scrubber | None = None


def register(values: Iterable[str], replacement: str = SCRUBBED) -> None:
    """Scrub each of `values` (those of MIN_CHARS or more) from all output from now on."""
    for value in values:
        if len(value) >= MIN_CHARS:
            _registered.setdefault(value, replacement)


def register_url(url: str) -> None:
    """Scrub `url`'s userinfo from all output; a short password too, in `user:pw@` form."""
    parts = urlsplit(url)
    if "@" in parts.netloc:
        userinfo = parts.netloc.rpartition("@")[0]
        _registered.setdefault(userinfo + "@", SCRUBBED + "@")  # whatever its length
        register(url_secrets(url))


def register_headers(headers: Mapping[str, str]) -> None:
    register(header_secrets(headers))


def register_fields(template: object) -> None:
    """Scrub the values of `template`'s credential-named fields (`field_secrets`) from all
    output: a service that logs its request line, or quotes it in an error, shows them."""
    register(field_secrets(template))


def register_environment(environ: Mapping[str, str]) -> None:
    """Scrub, as `[NAME scrubbed]`, the value of each variable of `environ` named like a
    credential (API_TOKEN, AWS_SECRET_ACCESS_KEY, PGPASSWORD, OPENAI_API_KEY: `_SECRET_ENV`)
    from all output: a service
    that reads it (from /proc/<harness pid>/environ, in plain mode) and quotes it in an answer
    must not get it into a report.  Every other value the allowlist kept from a service is
    scrubbed from its logs only (`harness.boot.isolation.scrubber`): scrubbing HOME's value
    from every path harness prints would say nothing the user does not know."""
    for name, value in environ.items():
        if _SECRET_ENV.search(name) and len(value) >= 8 and not value.startswith("/"):
            _registered.setdefault(value, f"[{name} scrubbed]")


def registered() -> Mapping[str, str]:
    return dict(_registered)


def forget_all() -> None:
    """Empty the registry (tests that call the CLI's main in-process)."""
    global _made
    _registered.clear()
    _made = None


def _current() -> Scrubber:
    """The Scrubber of the registry as it is now (made again only when it has grown)."""
    global _made
    if _made is None or len(_made.replacements) != len(_registered):
        _made = Scrubber.of_text(_registered)
    return _made


def scrub_text(text: str) -> str:
    """`text` with every registered secret replaced; `text` itself when there is none in it."""
    if not _registered or not text:
        return text
    return _current().text(text)


def scrub_bytes(data: bytes) -> bytes:
    if not _registered or not data:
        return data
    return _current().data(data)


# --------------------------------------------------------------------------- the scrubber


class Scrubber:
    """Replace byte strings by others, in a text, a buffer or a stream (longest first, so a
    secret holding another is replaced whole)."""

    def __init__(self, replacements: Mapping[bytes, bytes]) -> None:
        self.replacements = {k: v for k, v in replacements.items() if k}
        keys = sorted(self.replacements, key=len, reverse=True)
        self.longest = len(keys[0]) if keys else 0
        self._pattern = re.compile(b"|".join(map(re.escape, keys))) if keys else None

    @classmethod
    def of_text(cls, replacements: Mapping[str, str]) -> Scrubber:
        return cls({k.encode(): v.encode() for k, v in replacements.items()})

    def __call__(self, text: str) -> str:
        return self.text(text)

    def __bool__(self) -> bool:
        return self._pattern is not None

    def finditer(self, data: bytes) -> Iterator[re.Match[bytes]]:
        return iter(()) if self._pattern is None else self._pattern.finditer(data)

    def data(self, data: bytes) -> bytes:
        if self._pattern is None:
            return data
        return self._pattern.sub(lambda m: self.replacements[m.group()], data)

    def text(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self.data(text.encode("utf-8", "surrogateescape")).decode("utf-8", "surrogateescape")

    def stream(self, src: BinaryIO, dst: BinaryIO, *, chunk: int = CHUNK) -> bool:
        """Copy `src` to `dst` scrubbed, `chunk` bytes at a time; whether anything was replaced.

        Of each buffer (the carry of the last one, then a new chunk) everything is written but
        its last `longest - 1` bytes, which a secret read only in part might begin in: a match
        that starts before that point fits in the buffer whole, one that starts after it is
        found in the next buffer."""
        keep = max(self.longest - 1, 0)
        carry, changed = b"", False
        while True:
            block = src.read(chunk)
            buffer = carry + block
            final = not block
            safe = len(buffer) if final else max(len(buffer) - keep, 0)
            pos, out = 0, []
            if self._pattern is not None:
                for m in self._pattern.finditer(buffer):
                    if m.start() >= safe:
                        break
                    out += [buffer[pos : m.start()], self.replacements[m.group()]]
                    pos, changed = m.end(), True
            cut = max(pos, safe)
            out.append(buffer[pos:cut])
            dst.write(b"".join(out))
            carry = buffer[cut:]
            if final:
                return changed


def scrub_log(path: Path, scrubber: Scrubber, *, limit: int, key: str) -> None:
    """Rewrite the log at `path` scrubbed (by stream, whatever its size) and, past `limit`
    bytes, cut to its tail under a line saying so (naming `key`); atomically, best effort: a
    log that cannot be rewritten is left as it is."""
    with contextlib.suppress(OSError):
        size = path.stat().st_size
        if size <= limit and not scrubber:
            return
        with open(path, "rb") as src:
            start = _cut_point(src, scrubber, size - limit) if size > limit else 0
            tmp = path.with_name(path.name + ".scrub")
            try:
                with open(tmp, "wb") as dst:
                    if start:
                        dst.write(
                            f"--- harness: the first {start} bytes of this log ({size} in all) "
                            f"were cut: only the last {limit} are kept ({key} = {limit})\n".encode()
                        )
                    src.seek(start)
                    changed = scrubber.stream(src, dst)
                if not changed and not start:
                    os.unlink(tmp)
                    return
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise


def _cut_point(src: BinaryIO, scrubber: Scrubber, cut: int) -> int:
    """`cut` moved to the next line start when one is near (a tidy first line), or back to the
    start of a secret it would split (so no tail of it is kept in clear)."""
    window = max(scrubber.longest - 1, 0)
    base = max(cut - window, 0)
    src.seek(base)
    around = src.read(cut - base + window + 4096)
    matches = [(base + m.start(), base + m.end()) for m in scrubber.finditer(around)]
    newline = around.find(b"\n", cut - base, cut - base + 4096)
    if newline != -1:
        line_start = base + newline + 1
        if not any(start < line_start < end for start, end in matches):
            return line_start
    return next((start for start, end in matches if start < cut < end), cut)


class ScrubbingWriter:
    """A text stream passing each write on scrubbed (stdout and stderr, once a secret is
    registered: `guard_output`); everything else is the wrapped stream's."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, s: str) -> int:
        self.inner.write(scrub_text(s))
        return len(s)

    @property
    def buffer(self) -> _ScrubbingBuffer:  # sys.stdout.buffer.write(...) for byte output
        return _ScrubbingBuffer(self.inner.buffer)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _ScrubbingBuffer:
    def __init__(self, inner: BinaryIO) -> None:
        self.inner = inner

    def write(self, data: bytes) -> int:
        self.inner.write(scrub_bytes(bytes(data)))
        return len(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def guard_output() -> None:
    """Scrub sys.stdout and sys.stderr from now on (`harness.cli.main`: every command; each
    write costs one check of an empty registry until a secret is registered)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if not isinstance(stream, ScrubbingWriter):
            setattr(sys, name, ScrubbingWriter(stream))


def release_output() -> None:
    """Undo `guard_output` (the end of an in-process `main`)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if isinstance(stream, ScrubbingWriter):
            setattr(sys, name, stream.inner)

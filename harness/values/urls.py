"""The base URL of a running deployment (compare --baseline-url/--candidate-url), checked before
anything reads it: by the CLI first (before the userinfo is registered as a secret), and by
`harness.boot.deployed.check_url` for whoever builds a deployment.

    check_url(text, option) -> BaseUrl     ConfigError (exit 2) naming the option and the fix

Parsed by hand rather than by `urlsplit` or httpx, whose errors are a ValueError traceback
(`http://[::1`), an `httpx.InvalidURL` traceback (`:notaport`), or no error at all until the
ready timeout has been waited out (port 99999). Called before the URL's userinfo is registered
as a secret (`harness.text.scrub.register_url`, which calls `urlsplit`), so no message here shows a
userinfo: it is written `***@`.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from harness.errors import ConfigError, clip

_HOST = re.compile(r"[\w-]+(\.[\w-]+)*\.?")  # letters (IDN too), digits, - and _, dot-separated
_BAD = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class BaseUrl:
    """A deployment's base URL, as parts; `text` is the URL as given."""

    text: str
    scheme: str  # "http" or "https"
    host: str  # an IPv6 address without its brackets
    port: int | None  # None: the scheme's
    path: str


def check_url(text: str, option: str) -> BaseUrl:
    """`text` parsed as a base URL (http or https, a host, a port 1-65535 when given, no query
    string or fragment); ConfigError naming `option`, what is wrong and an example."""
    example = f"e.g. {option} http://127.0.0.1:8080"
    scheme, sep, rest = text.partition("://")
    bad = _BAD.search(text)
    if bad:
        raise _error(option, None, f"holds a space or control character ({bad.group()!r} at "
                     f"{bad.start()}); give the base URL alone, {example}")
    split = re.search(r"[/?#]", rest)
    authority, path = (rest[: split.start()], rest[split.start():]) if split else (rest, "")
    at, hostport = authority.rpartition("@")[1:]  # the userinfo itself is never shown
    shown = f"{scheme}{sep}{'***@' if at else ''}{hostport}{path}"
    if not sep or scheme.lower() not in ("http", "https"):
        raise _error(option, shown, f"not an http(s) URL; give the service's base URL, {example}")
    if "?" in path or "#" in path:
        raise _error(option, shown, "has a query string or fragment; give the base URL only "
                     "(query.path and query.params say the rest)")
    host, port_text = _host_port(hostport, option, shown, example)
    port = None
    if port_text is not None:
        if not port_text:
            raise _error(option, shown, f"has a ':' but no port after it; {example}")
        if not (port_text.isascii() and port_text.isdigit()):
            raise _error(option, shown, f"the port {port_text!r} is not a number; a port is 1 to "
                         f"65535, {example}")
        port = int(port_text)
        if not 1 <= port <= 65535:
            raise _error(option, shown, f"the port {port} is out of range; a port is 1 to 65535, "
                         f"{example}")
    return BaseUrl(text, scheme.lower(), host, port, path)


def _host_port(hostport: str, option: str, shown: str, example: str) -> tuple[str, str | None]:
    """(host, port as written or None) of the URL's authority after any userinfo."""
    if hostport.startswith("["):
        inside, bracket, after = hostport[1:].partition("]")
        if not bracket:
            raise _error(option, shown, f"the IPv6 address has no closing ']'; {example} or "
                         "http://[::1]:8080")
        try:
            ipaddress.IPv6Address(inside.partition("%")[0])  # a zone id (%eth0) is its own
        except ValueError:
            raise _error(option, shown, f"{inside!r} in brackets is not an IPv6 address; "
                         "write one like http://[::1]:8080") from None
        if after and not after.startswith(":"):
            raise _error(option, shown, f"{after!r} after the IPv6 address; write "
                         "http://[ADDRESS]:PORT")
        return inside, after[1:] if after else None
    if hostport.count(":") > 1:
        raise _error(option, shown, "an IPv6 address goes in brackets: http://[::1]:8080")
    host, colon, port = hostport.partition(":")
    if not host:
        raise _error(option, shown, f"has no host; {example}")
    if not _HOST.fullmatch(host):
        raise _error(option, shown, f"the host {host!r} is not a host name or address; {example}")
    return host, port if colon else None


def _error(option: str, shown: str | None, why: str) -> ConfigError:
    where = option if shown is None else f"{option} {clip(shown, 120)!r}"
    return ConfigError(f"{where}: {why}")

"""An httpx transport whose every connection is a socket of a sandbox's network namespace.

    transport = socket_transport(link.open_socket, limits)   # httpx.Client(transport=...)

What `harness.boot.sandbox.transport_for` returns in bubblewrap mode, kept apart so that
importing the sandbox imports no httpx (a compare's own HTTP is `harness.boot.probe` and the
replay client's socket).
"""

from __future__ import annotations

import socket
from collections.abc import Iterable

import httpcore
import httpx

# httpcore's own stream over a connected socket: the one piece of its sync backend we reuse.
from httpcore._backends.sync import SyncStream

from harness.boot.probe import OpenSocket


class _Backend(httpcore.NetworkBackend):
    """httpcore's connections, each on a socket from `open_socket` (so inside the sandbox)."""

    def __init__(self, open_socket: OpenSocket) -> None:
        self._open = open_socket

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            sock = self._open()
        except ConnectionError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        try:
            sock.settimeout(timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as httpcore does
            sock.connect((host, port))
        except TimeoutError as exc:
            sock.close()
            raise httpcore.ConnectTimeout(str(exc)) from exc
        except OSError as exc:
            sock.close()
            raise httpcore.ConnectError(str(exc)) from exc
        return SyncStream(sock)

    def sleep(self, seconds: float) -> None:
        httpcore.SyncBackend().sleep(seconds)


class _SocketTransport(httpx.HTTPTransport):
    def __init__(self, open_socket: OpenSocket, limits: httpx.Limits) -> None:
        # Plain http inside the sandbox: verify=False only spares loading a certificate store.
        super().__init__(limits=limits, trust_env=False, verify=False)
        self._pool = httpcore.ConnectionPool(
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_Backend(open_socket),
        )


def socket_transport(
    open_socket: OpenSocket, limits: httpx.Limits | None = None
) -> httpx.BaseTransport:
    """An httpx transport (HTTP/1.1, no proxies, no certificate store) over `open_socket`."""
    return _SocketTransport(open_socket, limits or httpx.Limits())

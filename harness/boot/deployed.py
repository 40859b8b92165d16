"""A service that is already running (staging, production): reached by URL, never booted.

    with deployed(url, spec, log_path=...) as svc:   # readiness checked, nothing started
        svc.url, svc.boot_seconds, svc.open_socket  # what the replay needs, as for a boot

`compare --baseline-url URL --candidate-url URL` replays against two deployments with the same
pairing, rounds and statistics as two booted refs.  Nothing is checked out, built, booted,
isolated or torn down here: every Repeat records `sandbox = "deployed"` so the report says so.
When service.ready is set, each round first GETs it until a 2xx answer (service.ready_timeout);
a deployment that never answers is a "ready" failure and the verdict is invalid.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit

import httpx

from harness.boot.processes import TeardownReport
from harness.boot.service import ready_path
from harness.config import ServiceConfig
from harness.errors import ConfigError, ServiceError

DEPLOYED = "deployed"  # Repeat.sandbox of a run against a running deployment


def check_url(url: str, option: str) -> str:
    """`url` without a trailing slash, or ConfigError naming `option` and the fix."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"{option} {url!r}: not an http(s) URL",
            hint=f"give the service's base URL, e.g. {option} http://127.0.0.1:8080",
        )
    if parts.query or parts.fragment:
        raise ConfigError(
            f"{option} {url!r}: has a query string or fragment",
            hint="give the base URL only; query.path and query.params say the rest",
        )
    if parts.scheme == "https":
        raise ConfigError(
            f"{option} {url!r}: https is not supported by the replay client yet",
            hint="give an http:// URL (e.g. through a local port forward)",
        )
    return url.rstrip("/")


@dataclass(frozen=True)
class Deployment:
    """The RunningService fields the replay reads, for a service the harness did not start."""

    url: str
    boot_seconds: float  # readiness check only: 0.0 without service.ready
    sandbox: str = DEPLOYED
    open_socket: None = None  # plain TCP to the URL's host and port
    prepare_seconds: float = 0.0


class DeployedContext(contextlib.AbstractContextManager[Deployment]):
    """What `deployed` returns: enter to check readiness; exit does nothing (it is not ours)."""

    sandbox = DEPLOYED

    def __init__(self, url: str, spec: ServiceConfig, *, log_path: Path) -> None:
        self.url = url
        self.spec = spec
        self.log_path = log_path
        self.teardown: TeardownReport | None = None

    def __enter__(self) -> Deployment:
        t0 = time.monotonic()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        note = f"deployment {self.url}: not started or stopped by harness\n"
        self.log_path.write_text(note, encoding="utf-8")
        if self.spec.ready:
            self._wait_ready(self.url + ready_path(self.spec.ready), t0)
        return Deployment(url=self.url, boot_seconds=time.monotonic() - t0)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # Nothing of ours ran: the teardown is confirmed by construction.
        self.teardown = TeardownReport(
            confirmed=True, killed_pids=(), used_sigkill=False, seconds=0.0
        )

    def _wait_ready(self, ready_url: str, t0: float) -> None:
        spec = self.spec
        deadline = t0 + spec.ready_timeout
        last = "no answer"
        with httpx.Client(trust_env=False) as client:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ServiceError(
                        f"the deployment at {self.url} is not ready: GET {ready_url} gave "
                        f"{last} for {spec.ready_timeout:g} s",
                        ["check that it is running and reachable from here, or raise "
                         "service.ready_timeout"],
                        stage="ready",
                    )
                try:
                    answer = client.get(ready_url, timeout=min(spec.probe_timeout, left))
                    if answer.is_success:
                        return
                    last = f"HTTP {answer.status_code}"
                except httpx.HTTPError as error:
                    last = type(error).__name__
                time.sleep(min(0.2, max(left, 0)))


def deployed(url: str, spec: ServiceConfig, *, log_path: Path) -> DeployedContext:
    """A context for the deployment at `url` (already checked by `check_url`)."""
    return DeployedContext(url, spec, log_path=log_path)

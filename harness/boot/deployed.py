"""A service that is already running (staging, production): reached by URL, never booted.

    with deployed(url, spec, log_path=...) as svc:   # readiness checked, nothing started
        svc.url, svc.boot_seconds, svc.open_socket  # what the replay needs, as for a boot

`compare --baseline-url URL --candidate-url URL` replays against two deployments with the same
pairing, rounds and statistics as two booted refs.  Nothing is checked out, built, booted,
isolated or torn down here: every Repeat records `sandbox = "deployed"` so the report says so.
When service.ready is set, each round first GETs it until a 2xx answer (service.ready_timeout);
a deployment that never answers is a "ready" failure and the verdict is invalid.

An https URL is reached over TLS with the certificate checked against the system's trust store
(`tls_context`: OpenSSL's defaults, so `SSL_CERT_FILE` / `SSL_CERT_DIR` name a private CA, as for
curl and Python); the handshake happens once per connection, on the untimed warm-up when there
is one, and the kept-alive connection carries the timed queries.  A certificate that does not
verify is a "ready" failure naming it, never a silent downgrade.
"""

from __future__ import annotations

import contextlib
import functools
import ssl
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from harness.boot.probe import ready_advice
from harness.boot.processes import TeardownReport
from harness.boot.service import ready_path
from harness.config import ServiceConfig
from harness.errors import ServiceError
from harness.text.scrub import register_url, safe_url
from harness.values import urls

DEPLOYED = "deployed"  # Repeat.sandbox of a run against a running deployment


def check_url(url: str, option: str) -> str:
    """`url` without a trailing slash, or ConfigError naming `option` and the fix.  Its
    userinfo (user:password@), if any, is registered as a secret (`harness.text.scrub`) first: it is
    sent as HTTP Basic credentials and never shown, not even in this error."""
    urls.check_url(url, option)  # scheme, host, port, no query: its words show no userinfo
    register_url(url)
    return url.rstrip("/")


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The client context for https deployments: certificates and host names verified against
    the system's trust store (SSL_CERT_FILE / SSL_CERT_DIR honoured); made once, on first use."""
    return ssl.create_default_context()


def tls_failure(error: BaseException) -> str | None:
    """What to say when `error` (or its cause) is a certificate that did not verify."""
    while error is not None:
        if isinstance(error, ssl.SSLCertVerificationError):
            return f"its TLS certificate did not verify ({error.verify_message})"
        error = error.__cause__ or error.__context__  # type: ignore[assignment]
    return None


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
        self.url = url  # with its userinfo, if any: what the requests are sent with
        self.shown = safe_url(url)  # what every message and the log say
        self.spec = spec
        self.log_path = log_path
        # Nothing of ours ever runs: the teardown is confirmed by construction, also when the
        # readiness check fails.
        self.teardown: TeardownReport | None = TeardownReport(
            confirmed=True, killed_pids=(), used_sigkill=False, seconds=0.0
        )

    def __enter__(self) -> Deployment:
        t0 = time.monotonic()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        note = f"deployment {self.shown}: not started or stopped by harness\n"
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
        return None  # not ours to stop

    def _wait_ready(self, ready_url: str, t0: float) -> None:
        import httpx  # imported on use: only a compare against a deployment probes with it

        spec = self.spec
        deadline = t0 + spec.ready_timeout
        last = "no answer"
        verify: ssl.SSLContext | bool = tls_context() if ready_url.startswith("https:") else True
        with httpx.Client(trust_env=False, verify=verify) as client:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ServiceError(
                        f"the deployment at {self.shown} is not ready: GET "
                        f"{safe_url(ready_url)} gave "
                        f"{last} for {spec.ready_timeout:g} s",
                        [(last.startswith("HTTP 4") and ready_advice(spec.ready, last))
                         or "check that it is running and reachable from here, or raise "
                         "service.ready_timeout"],
                        stage="ready",
                    )
                try:
                    answer = client.get(ready_url, timeout=min(spec.probe_timeout, left))
                    if answer.is_success:
                        return
                    last = f"HTTP {answer.status_code}"
                except httpx.HTTPError as error:
                    untrusted = tls_failure(error)
                    if untrusted is not None:  # waiting longer will not make it verify
                        raise ServiceError(
                            f"the deployment at {self.shown} is not ready: {untrusted}: name "
                            "its CA bundle (PEM) in SSL_CERT_FILE",
                            ["or fix the certificate: it must be valid now, chain to a "
                             "trusted CA and name the URL's host"],
                            stage="ready",
                        ) from None
                    last = type(error).__name__
                time.sleep(min(0.2, max(left, 0)))


def deployed(url: str, spec: ServiceConfig, *, log_path: Path) -> DeployedContext:
    """A context for the deployment at `url` (already checked by `check_url`)."""
    return DeployedContext(url, spec, log_path=log_path)

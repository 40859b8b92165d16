"""The port race, closed at its root: a boot's port is leased (harness.boot.ports) from before
its service starts until teardown, so two boots never share one, even when forced onto the same
port at the same moment (pytest-xdist workers, two harness runs on one machine)."""

from __future__ import annotations

import socket
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from serve_support import SERVE_JSON_PY

from harness.boot import ports, processes, service
from harness.config import ServiceConfig

# Sleeps DELAY seconds before it binds (a service slow to start: the window in which another
# boot's probe could be answered by it), then answers /health and /who with its NAME.
SERVICE_PY = SERVE_JSON_PY + textwrap.dedent(
    """
    import http.server, sys, time
    port, name, delay, reuse = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
    time.sleep(delay)

    class Server(http.server.HTTPServer):
        allow_reuse_address = reuse == "reuse"  # http.server's default is True

    print(f"{name} serving on {port}", flush=True)
    serve_json(port, {"who": name}, Server)
    """
)


def _tree(tmp_path: Path, name: str) -> Path:
    tree = tmp_path / name
    tree.mkdir()
    (tree / "service.py").write_text(SERVICE_PY)
    return tree


def _ctx(
    tmp_path: Path, name: str, delay: float = 0.0, reuse: str = "reuse"
) -> service.ServiceContext:
    spec = ServiceConfig(
        start=f"{{python}} service.py {{port}} {name} {delay} {reuse}",
        ready="/health",
        ready_timeout=30.0,
    )
    return service.running_service(
        spec,
        _tree(tmp_path, name),
        log_path=tmp_path / "logs" / f"{name}.log",
        temp_parent=tmp_path,
        sandbox="plain",  # a sandbox has a loopback of its own: the race is the host's
    )


def _who(url: str) -> str:
    with httpx.Client(trust_env=False) as client:
        answer: str = client.get(url + "/who", timeout=10.0).json()["who"]
    return answer


def _free() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def forced(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """The next two picks of a port are one and the same port (then the kernel's choice)."""
    port = _free()
    picks = [port, port]
    lock = threading.Lock()

    def candidate() -> int:
        with lock:
            return picks.pop() if picks else 0

    monkeypatch.setattr(ports, "candidate", candidate)
    yield port


def test_two_concurrent_boots_forced_onto_one_port_each_reach_their_own(
    tmp_path: Path, forced: int
) -> None:
    # "quick" binds at once; "slow" binds 1.5 s later. Had both been handed the same port,
    # slow's readiness probe would be answered by quick's service and slow's queries sent there.
    contexts = {"quick": _ctx(tmp_path, "quick"), "slow": _ctx(tmp_path, "slow", delay=1.5)}
    urls: dict[str, str] = {}
    errors: list[BaseException] = []
    entered = threading.Barrier(3)
    start = threading.Barrier(2)

    def run(name: str) -> None:
        try:
            start.wait()
            with contexts[name] as svc:
                urls[name] = svc.url
                entered.wait(timeout=60)  # both up at once: each checked while the other runs
                entered.wait(timeout=60)
        except BaseException as exc:
            errors.append(exc)
            entered.abort()

    threads = [threading.Thread(target=run, args=(name,)) for name in contexts]
    for thread in threads:
        thread.start()
    try:
        entered.wait(timeout=60)
        assert not errors, errors
        assert {name: _who(url) for name, url in urls.items()} == {"quick": "quick", "slow": "slow"}
        assert urls["quick"] != urls["slow"]
        assert f"http://127.0.0.1:{forced}" in urls.values()  # one of them got the forced port
        entered.wait(timeout=60)
    finally:
        for thread in threads:
            thread.join(timeout=60)
    assert not errors, errors
    for ctx in contexts.values():
        assert ctx.teardown is not None and ctx.teardown.confirmed
        assert not processes.find_marked(ctx.run_id)


def test_a_leased_port_is_given_to_no_one_else_until_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lease = ports.lease_port()
    try:
        for _ in range(2000):  # the kernel's choice of a free port skips it
            assert _free() != lease.port
        monkeypatch.setattr(ports, "candidate", lambda: lease.port)
        with pytest.raises(Exception, match="no free port"):  # every pick is the held port
            ports.lease_port()
    finally:
        lease.close()
    again = ports.lease_port()  # closed: the lock and the hold are gone
    try:
        assert again.port == lease.port
    finally:
        again.close()


def test_a_service_that_cannot_bind_beside_the_hold_boots_on_the_lock_alone(
    tmp_path: Path,
) -> None:
    ctx = _ctx(tmp_path, "strict", reuse="no-reuse")  # binds without SO_REUSEADDR
    with ctx as svc:
        assert _who(svc.url) == "strict"
    log = (tmp_path / "logs" / "strict.log").read_text()
    assert log.count("Address already in use") == 1 and "boot attempt 2 of 4" in log
    assert ctx.teardown is not None and ctx.teardown.confirmed

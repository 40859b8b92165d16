"""How a boot holds its processes (pidfds) and its leftovers state, against real subprocesses.

The ProcessTree tracks each process by a pidfd: a zombie and an exited process are not alive,
teardown is woken by the exits, and where pidfd_open is missing psutil's check stands in. The
boot writes its leftovers state once before spawning (run id and root together) and once after
its root is gone, so a SIGKILL at any moment leaves the next run what it needs to recover.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from serve_support import OK_SERVICE_PY

from harness.boot import inside, processes, sandbox, service
from harness.config import ServiceConfig
from harness.process import leftovers

SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)"]



@pytest.fixture
def child() -> Any:
    procs: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(SLEEPER, start_new_session=True)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_a_handle_is_alive_until_its_process_exits_and_a_zombie_is_not(child: Any) -> None:
    proc = child()
    handle = processes._Handle(proc.pid)
    assert handle.fd is not None  # Linux >= 5.3
    assert processes._live([handle]) == [handle] and handle.alive()
    os.kill(proc.pid, signal.SIGKILL)
    # Not reaped: a zombie, which holds no resources, counts as gone.
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    assert processes._live([handle]) == [] and not handle.alive()
    handle.signal(signal.SIGTERM)  # signalling an exited process is harmless
    handle.close()


def test_a_handle_of_a_pid_that_is_gone_is_refused(child: Any) -> None:
    proc = child()
    proc.kill()
    proc.wait()  # reaped: the pid names nothing now
    with pytest.raises(processes.psutil.NoSuchProcess):
        processes._Handle(proc.pid)


def test_waiting_for_exits_is_woken_by_them_not_by_the_timeout(child: Any) -> None:
    procs = [child() for _ in range(3)]
    handles = [processes._Handle(p.pid) for p in procs]
    for p in procs:
        os.kill(p.pid, signal.SIGTERM)
    t0 = time.monotonic()
    processes._wait_exit(handles, 300.0, 0.05)
    assert time.monotonic() - t0 < 150.0  # returned on the exits, far before its timeout
    assert processes._live(handles) == []
    for h in handles:
        h.close()


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "psutil-fallback"])
def test_a_tree_is_stopped_and_confirmed_with_or_without_pidfds(
    pidfd: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not pidfd:

        def no_pidfd(pid: int, flags: int = 0) -> int:
            raise OSError(38, "Function not implemented")

        monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    # A shell whose child ignores SIGTERM: only the SIGKILL round ends it.
    script = "trap '' TERM; sleep 600 & wait"
    leader = subprocess.Popen(["/bin/sh", "-c", script], start_new_session=True)
    tree = processes.ProcessTree("test-run", poll_interval=0.02, kill_rounds=3, contained=True)
    tree.leader = leader
    deadline = time.monotonic() + 10
    while len(tree.collect()) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    held = list(tree.tracked.values())
    assert len(held) >= 2 and all((h.fd is None) is (not pidfd) for h in held)
    report = tree.stop(0.3, 5.0)
    assert report.confirmed and report.used_sigkill and not report.survivors
    assert all(h.fd is None for h in held)  # every pidfd closed after the teardown
    for pid in report.killed_pids:
        assert not processes.psutil.pid_exists(pid) or (
            processes.psutil.Process(pid).status() == processes.psutil.STATUS_ZOMBIE
        )


@pytest.fixture(autouse=True)
def _own_leftovers(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh held set: what earlier tests of this worker left held (the run id of a teardown
    made unconfirmed on purpose) is not this file's to count."""
    monkeypatch.setattr(leftovers, "_held", {kind: {} for kind in leftovers.KINDS})


def _state(cache: Path) -> dict[str, list[str]]:
    files = list((cache / "live").glob("*.json"))
    if not files:
        return {}
    held = json.loads(files[0].read_text())["held"]
    return {kind: [item["value"] for item in items] for kind, items in held.items()}


def test_a_boot_writes_its_leftovers_once_before_spawning_and_once_after_removal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(cache))
    (tmp_path / "wt").mkdir()
    (tmp_path / "wt" / "svc.py").write_text(OK_SERVICE_PY)
    writes: list[dict[str, list[str]]] = []
    real_write = leftovers._write

    def counted() -> None:
        real_write()
        writes.append(_state(cache))

    seen_at_spawn: list[dict[str, list[str]]] = []
    real_spawn = service.spawn

    def spawn(*args: Any, **kwargs: Any) -> Any:
        seen_at_spawn.append(_state(cache))  # what a SIGKILL now would leave for recovery
        return real_spawn(*args, **kwargs)

    monkeypatch.setattr(leftovers, "_write", counted)
    monkeypatch.setattr(service, "spawn", spawn)
    spec = ServiceConfig(start="{python} svc.py {port}", ready="/health", ready_timeout=20.0)
    ctx = service.running_service(
        spec, tmp_path / "wt", log_path=tmp_path / "svc.log", temp_parent=tmp_path, sandbox="plain"
    )
    with ctx as svc:
        root = svc.root
        assert seen_at_spawn == [{"worktree": [], "dir": [str(root)], "run_id": [ctx.run_id]}]
    assert ctx.teardown is not None and ctx.teardown.confirmed
    assert len(writes) == 2 and writes[-1] == {} and not root.exists()


def test_track_all_and_untrack_all_rewrite_the_state_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(cache))
    calls: list[int] = []
    real_write = leftovers._write
    monkeypatch.setattr(leftovers, "_write", lambda: (calls.append(1), real_write()))
    leftovers.track_all([("run_id", "abc"), ("dir", tmp_path / "d")])
    assert len(calls) == 1
    assert _state(cache) == {"worktree": [], "dir": [str(tmp_path / "d")], "run_id": ["abc"]}
    leftovers.untrack_all([("run_id", "never-held")])
    assert len(calls) == 1  # nothing held changed: nothing rewritten
    leftovers.untrack_all([("run_id", "abc"), ("dir", tmp_path / "d")])
    assert len(calls) == 2 and _state(cache) == {}


def test_the_state_is_written_again_when_its_folder_was_removed_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(cache))
    with leftovers.tracked("dir", tmp_path / "one"):
        for path in (cache / "live").iterdir():
            path.unlink()
        (cache / "live").rmdir()
        leftovers.track("dir", tmp_path / "two")
        assert _state(cache)["dir"] == [str(tmp_path / "one"), str(tmp_path / "two")]
        leftovers.untrack("dir", tmp_path / "two")


needs_bwrap = pytest.mark.skipif(
    sandbox.sandbox_mode({}) != sandbox.BUBBLEWRAP, reason="no usable bubblewrap"
)


@needs_bwrap
def test_the_probes_sockets_come_a_few_per_round_trip_and_reach_the_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "wt").mkdir()
    (tmp_path / "wt" / "svc.py").write_text(OK_SERVICE_PY)
    spec = ServiceConfig(start="{python} svc.py {port}", ready="/health", ready_timeout=20.0)
    ctx = service.running_service(
        spec,
        tmp_path / "wt",
        log_path=tmp_path / "svc.log",
        temp_parent=tmp_path,
        sandbox=sandbox.BUBBLEWRAP,
    )
    with ctx as svc:
        assert ctx._link is not None
        asked: list[int] = []
        real = ctx._link.open_sockets
        monkeypatch.setattr(ctx._link, "open_sockets", lambda n: (asked.append(n), real(n))[1])
        pool = sandbox.SocketPool(ctx._link, most=4)
        socks = [pool.take() for _ in range(9)]
        assert asked == [1, 2, 4, 4]  # 1 + 2 + 4 + 4 = 11 made, 9 taken
        assert len({s.fileno() for s in socks}) == 9
        for sock in socks:  # each a fresh socket of the sandbox's namespace
            sock.settimeout(5.0)
            sock.connect(("127.0.0.1", svc.port))
            sock.sendall(b"GET /health HTTP/1.0\r\n\r\n")
            assert sock.recv(64).startswith(b"HTTP/1.0 200")
            sock.close()
        pool.close()  # the two unused ones closed
        # The sandbox's limit holds, and a lone "S" still gives one socket.
        many = ctx._link.open_sockets(10_000)
        assert len(many) == inside.MAX_SOCKETS
        for sock in many:
            sock.close()
        ctx._link.open_socket().close()
    assert ctx.teardown is not None and ctx.teardown.confirmed


def test_a_collect_reads_each_process_children_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # A chain of four processes: leader -> child -> grandchild -> great-grandchild.
    chain = (
        "import subprocess, sys, time\n"
        "depth = int(sys.argv[1])\n"
        "if depth: subprocess.Popen([sys.executable, '-c', sys.argv[2], str(depth - 1),"
        " sys.argv[2]])\n"
        "time.sleep(600)\n"
    )
    leader = subprocess.Popen([sys.executable, "-c", chain, "3", chain], start_new_session=True)
    tree = processes.ProcessTree("test-run", poll_interval=0.02, kill_rounds=3, contained=True)
    tree.leader = leader
    try:
        deadline = time.monotonic() + 20
        while len(tree.collect()) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(tree.tracked) == 4
        read: list[int] = []
        real = processes._children

        def counted(pid: int) -> list[int] | None:
            read.append(pid)
            return real(pid)

        monkeypatch.setattr(processes, "_children", counted)
        assert len(tree.collect()) == 4  # every one a root now, each walked once
        assert sorted(read) == sorted(tree.tracked)
    finally:
        report = tree.stop(0.5, 5.0)
    assert report.confirmed and len(report.killed_pids) == 4

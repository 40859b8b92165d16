"""The service stage against real subprocess services on 127.0.0.1.

Each service is a stdlib http.server script written into tmp_path; the `boot` fixture checks after
every test that each context it made was torn down, confirmed, and that no process carrying its
HARNESS_RUN_ID marker is left running.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.boot import isolation, processes, service
from harness.config import ServiceConfig
from harness.errors import ConfigError, ServiceError
from harness.process import signals

SERVICE_PY = textwrap.dedent(
    '''
    """A tiny retrieval-service stand-in; its mode comes from argv."""
    import argparse, http.server, json, os, signal, socket, subprocess, sys, time

    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--data")
    ap.add_argument("--mode", default="ok")
    ap.add_argument("--steal-port", type=int)  # bind this (held) port while the counter is low
    ap.add_argument("--counter")
    ap.add_argument("--fail-times", type=int, default=0)
    args = ap.parse_args()

    GRANDCHILD = """
    import os, signal, sys, time
    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    open(sys.argv[1], "w").write(str(os.getpid()))
    time.sleep(600)
    """

    if args.mode == "exit":
        print("boom: cannot open index /nowhere/index.bin", flush=True)
        sys.exit(3)
    if args.mode == "hang":
        time.sleep(600)
    port = args.port
    if args.counter:
        n = int(open(args.counter).read()) if os.path.exists(args.counter) else 0
        open(args.counter, "w").write(str(n + 1))
        if n < args.fail_times:
            port = args.steal_port  # really taken: the bind below fails with EADDRINUSE
    grandchild = None
    if args.mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        pidfile = os.path.join(os.environ["TMPDIR"], "grandchild.pid")
        # The middle process exits at once, so the grandchild is orphaned and in its own session.
        subprocess.run([sys.executable, "-c",
                        "import subprocess, sys; subprocess.Popen(sys.argv[1:])",
                        sys.executable, "-c", GRANDCHILD, pidfile], check=True)
        while not os.path.exists(pidfile) or not open(pidfile).read():
            time.sleep(0.01)
        grandchild = int(open(pidfile).read())

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            path, _, query = self.path.partition("?")
            if path == "/health":
                body = {"ok": True}
                if args.mode == "never-ready":
                    self.send_response(503)
                    self.end_headers()
                    return
                if args.mode == "slow-health":
                    time.sleep(1)
                if args.mode == "503-then-hang":  # 503 at once, then no answer at all
                    if getattr(Handler, "asked", False):
                        time.sleep(600)
                    Handler.asked = True
                    self.send_response(503)
                    self.end_headers()
                    return
            elif path == "/env":
                body = dict(os.environ)
            elif path == "/pids":
                body = {"pid": os.getpid(), "grandchild": grandchild}
            elif path == "/data":
                body = sorted(os.listdir(args.data))
            elif path == "/write":
                open(os.path.join(args.data, query), "w").write("written by the service")
                body = sorted(os.listdir(args.data))
            else:
                self.send_response(404)
                self.end_headers()
                return
            raw = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *a):
            pass

    server = http.server.HTTPServer(("127.0.0.1", port), Handler)
    print(f"serving on {port}", flush=True)
    server.serve_forever()
    '''
)

START = "{python} service.py --port {port}"


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _get(svc: service.RunningService, path: str) -> Any:
    """GET `path` of the service the way the replay client reaches it (in its sandbox, if any)."""
    with httpx.Client(trust_env=False, transport=svc.transport()) as client:
        answer = client.get(svc.url + path, timeout=5.0)
    answer.raise_for_status()
    return answer.json()


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    tree = tmp_path / "worktree"
    (tree / "data").mkdir(parents=True)
    (tree / "service.py").write_text(SERVICE_PY)
    (tree / "data" / "seed.txt").write_text("seed")
    return tree


@pytest.fixture
def roots(tmp_path: Path) -> Path:
    """Where the throwaway roots go; must be empty again after each boot."""
    path = tmp_path / "roots"
    path.mkdir()
    return path


Boot = Callable[..., service.ServiceContext]


@pytest.fixture
def boot(worktree: Path, roots: Path, tmp_path: Path) -> Iterator[Boot]:
    made: list[service.ServiceContext] = []

    def make(start: str = START, **fields: Any) -> service.ServiceContext:
        names = ("environ", "extra_env", "limits", "sandbox")
        kwargs = {k: fields.pop(k) for k in names if k in fields}
        spec = ServiceConfig(start=start, **{"ready": "/health", "ready_timeout": 20.0, **fields})
        ctx = service.running_service(
            spec, worktree, log_path=tmp_path / "logs" / "svc.log", temp_parent=roots, **kwargs
        )
        made.append(ctx)
        return ctx

    yield make
    for ctx in made:
        assert not processes.find_marked(ctx.run_id), "a process of the service was left running"
        if ctx.teardown is not None:
            assert ctx.teardown.confirmed
    assert list(roots.iterdir()) == [], "a throwaway root was left behind"


# --------------------------------------------------------------------------- boot and isolation


def test_good_service_boots_answers_and_is_gone_after(boot: Boot, tmp_path: Path) -> None:
    ctx = boot(sandbox="plain")  # the service's own pid is a host pid only without a sandbox
    with ctx as svc:
        assert svc.url == f"http://127.0.0.1:{svc.port}"
        assert _get(svc, "/health") == {"ok": True}
        pid = _get(svc, "/pids")["pid"]
        assert _alive(pid)
        assert svc.root.is_dir() and svc.home.is_relative_to(svc.root)
        assert svc.boot_seconds > 0
        assert svc.data is None
    assert ctx.teardown is not None
    assert ctx.teardown.confirmed and not ctx.teardown.used_sigkill
    assert not ctx.teardown.died_before_teardown
    assert pid in ctx.teardown.killed_pids
    assert not _alive(pid) and not _alive(svc.pid)
    assert not psutil.pid_exists(svc.pid)  # our child was reaped, not left a zombie
    assert not svc.root.exists()
    log = (tmp_path / "logs" / "svc.log").read_text()
    assert f"serving on {svc.port}" in log and "--- harness: boot attempt 1" in log


def test_environment_is_allowlisted_isolated_and_pinned(
    boot: Boot, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "gh-secret")
    monkeypatch.setenv("INDEX_SHARDS", "4")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    monkeypatch.setenv("HOME", str(tmp_path / "callers-home"))
    ctx = boot(
        pass_env=("INDEX_SHARDS", "NOT_SET_ANYWHERE"),
        env={"MODE": "pinned-{port}", "INDEX_SHARDS": "8", "WHERE": "{home}"},
        extra_env={"FROM_BUILD": "venv", "MODE": "loses to the pin"},
    )
    with ctx as svc:
        env = _get(svc, "/env")
    secrets = {k: v for k, v in env.items() if "secret" in v}
    assert secrets == {}
    assert "GITHUB_TOKEN" not in env and "AWS_SECRET_ACCESS_KEY" not in env
    assert "NOT_SET_ANYWHERE" not in env
    assert env["INDEX_SHARDS"] == "8"  # the pin beats pass_env
    assert env["MODE"] == f"pinned-{svc.port}"  # pins last, placeholders expanded
    assert env["WHERE"] == str(svc.home)
    assert env["FROM_BUILD"] == "venv"
    assert env["LC_ALL"] == "C.UTF-8" and env["PATH"] == os.environ["PATH"]
    assert env[isolation.MARKER_ENV] == ctx.run_id
    for name in ("HOME", "TMPDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"):
        assert Path(env[name]).is_relative_to(svc.root), name
    assert env["HOME"] == str(svc.home) != os.environ["HOME"]
    assert env["PYTHONDONTWRITEBYTECODE"] == "1" and env["PYTHONUNBUFFERED"] == "1"


def test_pass_env_name_comes_through(boot: Boot) -> None:
    ctx = boot(pass_env=("INDEX_SHARDS",), environ={"INDEX_SHARDS": "4", "PATH": "/usr/bin:/bin"})
    with ctx as svc:
        env = _get(svc, "/env")
    assert env["INDEX_SHARDS"] == "4" and env["PATH"] == "/usr/bin:/bin"


def test_every_boot_gets_a_fresh_copy_of_the_data(boot: Boot, worktree: Path) -> None:
    start = START + " --data {data}"
    first = boot(start, data="data")
    with first as svc:
        assert svc.data is not None and svc.data.is_relative_to(svc.root)
        assert _get(svc, "/write?written.txt") == ["seed.txt", "written.txt"]
    with boot(start, data="data") as svc:
        assert _get(svc, "/data") == ["seed.txt"]
    assert sorted(p.name for p in (worktree / "data").iterdir()) == ["seed.txt"]


def test_a_data_file_is_copied_under_its_own_name(boot: Boot, worktree: Path) -> None:
    corpus = worktree / "corpus.jsonl"
    corpus.write_text('{"id": "d1"}\n')
    with boot(data="corpus.jsonl") as svc:  # (an absolute path is used in place: no copy)
        assert svc.data is not None
        assert svc.data.name == "corpus.jsonl" and svc.data.read_text() == corpus.read_text()
        assert svc.data != corpus


def test_prepare_commands_run_after_ready_with_placeholders(boot: Boot) -> None:
    ctx = boot(
        START + " --data {data}",
        data="data",
        prepare=("touch {data}/prepared", "{python} -c 'import sys; sys.exit(0)'"),
    )
    with ctx as svc:
        assert _get(svc, "/data") == ["prepared", "seed.txt"]
        assert svc.prepare_seconds > 0


def test_pins_named_in_start_and_prepare_reach_the_command_lines_quoted(boot: Boot) -> None:
    ctx = boot(
        START + " --data {data} --mode {KNOB}",
        data="data",
        prepare=("touch {MARK}",),
        env={"KNOB": "ok", "MARK": "{data}/named by a pin"},  # a pin's own placeholders first
    )
    with ctx as svc:
        leader = psutil.Process(svc.pid)
        lines = [p.cmdline() for p in [leader, *leader.children(recursive=True)]]
        python = next(line for line in lines if "service.py" in line)
        assert python[-2:] == ["--mode", "ok"]
        assert _get(svc, "/data") == ["named by a pin", "seed.txt"]  # one argument: quoted


# --------------------------------------------------------------------------- failures at boot


def test_exit_at_boot_is_a_service_error_with_the_log_tail(boot: Boot) -> None:
    ctx = boot(START + " --mode exit")
    with pytest.raises(ServiceError) as caught, ctx:
        pytest.fail("the body must not run")
    assert "exited at boot with status 3" in caught.value.message
    assert caught.value.stage == "boot"  # the run record names the stage that failed
    assert any("boom: cannot open index" in line for line in caught.value.details)
    assert ctx.teardown is not None and ctx.teardown.died_before_teardown


class FromListening:
    """A stand-in for harness.boot.service's `time`: its clock stands still until the service's
    log says "serving on" (printed once its socket is bound and listening), then runs. So a
    ready_timeout counts from that event, not from a spawn that a loaded machine may take
    seconds to get through, and what /health answered within it is the service's doing alone.
    After SAFEGUARD_S of real time unheld, it runs anyway (a service that never listens)."""

    SAFEGUARD_S = 60.0
    sleep = staticmethod(time.sleep)

    def __init__(self, log: Path) -> None:
        self.log = log
        self.held: float | None = None
        self.since: float | None = None

    def monotonic(self) -> float:
        now = time.monotonic()
        if self.held is None:
            self.held = now
        if self.since is None:
            text = self.log.read_text(errors="replace") if self.log.exists() else ""
            if "serving on" not in text and now - self.held < self.SAFEGUARD_S:
                return self.held
            self.since = now
        return self.held + (now - self.since)


@pytest.fixture
def from_listening(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FromListening:
    clock = FromListening(tmp_path / "logs" / "svc.log")  # the log the `boot` fixture names
    monkeypatch.setattr(service, "time", clock)
    return clock


@pytest.mark.parametrize("mode", ["never-ready", "hang"])
def test_a_service_that_never_gets_ready_times_out(
    boot: Boot, mode: str, request: pytest.FixtureRequest
) -> None:
    if mode == "never-ready":  # it listens, then answers 503: the deadline counts from then
        request.getfixturevalue("from_listening")
    # 3 s from listening: a probe of a loaded machine's whole run once got no answer within 1 s
    ctx = boot(START + f" --mode {mode}", ready_timeout=3.0)
    with pytest.raises(ServiceError) as caught, ctx:
        pytest.fail("the body must not run")
    message = caught.value.message
    assert "not ready after 3 s" in message and "raise service.ready_timeout" in message, message
    assert caught.value.stage == "ready"
    assert ("HTTP 503" if mode == "never-ready" else "ConnectError") in message
    assert ctx.teardown is not None and not ctx.teardown.died_before_teardown


def test_a_ready_path_the_service_does_not_serve_says_which_path_to_use(
    boot: Boot, from_listening: FromListening
) -> None:
    # A FastAPI service without a /health route answers 404 there: the error must say so and
    # name a path such a service does serve, not only to wait longer.
    ctx = boot(START, ready="/healthz", ready_timeout=1.0)
    with pytest.raises(ServiceError) as caught, ctx:
        pytest.fail("the body must not run")
    message = caught.value.message
    assert "GET http://127.0.0.1:" in message and "gave HTTP 404" in message
    advice = caught.value.details[-1]
    assert advice.startswith("the service answers, but GET /healthz gave 404: set service.ready")
    assert 'FastAPI serves "/openapi.json"' in advice


def test_a_probe_cut_short_by_the_deadline_does_not_hide_the_answer_before_it(
    boot: Boot, from_listening: FromListening
) -> None:
    # /health answers 503, then never again: the second GET (probe_timeout 2 s) is cut at the
    # 1 s deadline. What the service answered is the 503, not that cut GET's ReadTimeout.
    ctx = boot(START + " --mode 503-then-hang", ready_timeout=1.0)
    with pytest.raises(ServiceError) as caught, ctx:
        pytest.fail("the body must not run")
    message = caught.value.message
    assert "not ready after 1 s" in message and "gave HTTP 503" in message, message
    assert not any("probe_timeout" in line for line in caught.value.details)  # no GET was slow


def test_a_ready_endpoint_slower_than_probe_timeout_says_to_raise_it(
    boot: Boot, from_listening: FromListening
) -> None:
    # /health answers after 1 s; with the default probe_timeout (2 s) this service boots. The
    # 1.5 s count from the moment it listens, so every probe in them reaches /health.
    ctx = boot(START + " --mode slow-health", probe_timeout=0.2, ready_timeout=1.5)
    with pytest.raises(ServiceError) as caught, ctx:
        pytest.fail("the body must not run")
    assert "not ready after 1.5 s" in caught.value.message
    assert "ReadTimeout" in caught.value.message
    assert caught.value.details[-1] == (
        "each readiness GET may take service.probe_timeout = 0.2 s; "
        "raise it if /health is slow to answer"
    )


def test_prepare_failure_names_the_command_and_status(boot: Boot) -> None:
    prep = "{python} -c 'import sys; print(\"prep broke\"); sys.exit(4)'"
    ctx = boot(prepare=("true", prep))
    with pytest.raises(ServiceError) as caught, ctx:
        pytest.fail("the body must not run")
    assert "prepare command" in caught.value.message
    assert caught.value.stage == "prepare"
    assert "prep broke" in caught.value.message and "exit status 4" in caught.value.message
    assert any("prep broke" in line for line in caught.value.details)


def test_a_slow_prepare_command_times_out(boot: Boot) -> None:
    ctx = boot(prepare=("sleep 30",), prepare_timeout=0.3)
    with pytest.raises(ServiceError, match=r"within 0.3 s \(raise service.prepare_timeout\)"), ctx:
        pytest.fail("the body must not run")


@pytest.fixture
def held_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_a_lost_port_race_is_retried_on_a_new_port(
    boot: Boot, held_port: int, tmp_path: Path
) -> None:
    counter = tmp_path / "boots"
    # A port race exists only on the host's network (a sandbox has a loopback of its own).
    ctx = boot(
        START + f" --steal-port {held_port} --counter {counter} --fail-times 2", sandbox="plain"
    )
    with ctx as svc:
        assert _get(svc, "/health") == {"ok": True}
    assert counter.read_text() == "3"
    log = svc.log_path.read_text()
    assert log.count("Address already in use") == 2 and "boot attempt 3 of 4" in log


def test_losing_the_port_race_every_time_gives_up(
    boot: Boot, held_port: int, tmp_path: Path
) -> None:
    counter = tmp_path / "boots"
    limits = service.ServiceLimits(port_attempts=2)
    start = START + f" --steal-port {held_port} --counter {counter} --fail-times 9"
    ctx = boot(start, limits=limits, sandbox="plain")
    with pytest.raises(ServiceError, match="port was taken on each of 2 attempts"), ctx:
        pytest.fail("the body must not run")
    assert counter.read_text() == "2"


# --------------------------------------------------------------------------- teardown


def test_sigterm_ignoring_service_and_setsid_grandchild_are_both_killed(boot: Boot) -> None:
    ctx = boot(START + " --mode stubborn", stop_timeout=0.5, sandbox="plain")  # host pids
    with ctx as svc:
        pids = _get(svc, "/pids")
        grandchild = psutil.Process(pids["grandchild"])
        assert grandchild.pid not in {p.pid for p in psutil.Process(svc.pid).children(True)}
        assert os.getsid(grandchild.pid) != os.getsid(pids["pid"])
    report = ctx.teardown
    assert report is not None
    assert report.used_sigkill and report.confirmed and report.survivors == ()
    assert {pids["pid"], pids["grandchild"]} <= set(report.killed_pids)
    assert not _alive(pids["pid"]) and not _alive(pids["grandchild"])
    assert report.exit_status is not None and report.exit_status < 0  # the leader was signalled


def test_teardown_walks_only_the_harness_own_tree_never_every_process(
    boot: Boot, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The setsid grandchild is an orphan: found because the harness is its subreaper, so it
    # stays in the harness's own tree; a scan of every process would fail this test.
    if not processes.become_subreaper():
        pytest.skip("prctl(PR_SET_CHILD_SUBREAPER) is unavailable here")

    def no_scan(*args: object, **kwargs: object) -> None:
        raise AssertionError("teardown scanned every process on the machine")

    ctx = boot(START + " --mode stubborn", stop_timeout=0.5, sandbox="plain")
    with ctx as svc:
        pids = _get(svc, "/pids")
        monkeypatch.setattr(processes.psutil, "process_iter", no_scan)
    monkeypatch.undo()
    report = ctx.teardown
    assert report is not None and report.confirmed
    assert {pids["pid"], pids["grandchild"]} <= set(report.killed_pids)
    assert not _alive(pids["grandchild"])


def test_a_background_process_left_by_prepare_is_killed_too(boot: Boot) -> None:
    ctx = boot(prepare=("sleep 300 & echo $! > {home}/bg.pid",), sandbox="plain")  # host pids
    with ctx as svc:
        background = int((svc.home / "bg.pid").read_text())
        assert _alive(background)
    assert ctx.teardown is not None and background in ctx.teardown.killed_pids
    assert not _alive(background)


def test_an_unconfirmed_teardown_raises_after_the_block_naming_the_pids(
    worktree: Path, roots: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_stop = processes.ProcessTree.stop

    def stop_leaving_one(tree: Any, *args: Any) -> processes.TeardownReport:
        report: processes.TeardownReport = real_stop(tree, *args)  # really stops it
        return dataclasses.replace(report, confirmed=False, survivors=(4242,))

    monkeypatch.setattr(processes.ProcessTree, "stop", stop_leaving_one)
    spec = ServiceConfig(start=START, ready="/health", ready_timeout=20.0)
    first, second = (
        service.running_service(spec, worktree, log_path=worktree / "log", temp_parent=roots)
        for _ in range(2)
    )
    unconfirmed = "teardown not confirmed: pids 4242 still running"
    with pytest.raises(ServiceError, match=unconfirmed), first:
        pass
    # When the body raised, its exception is kept and carries the same text as a note.
    with pytest.raises(KeyboardInterrupt) as caught, second:
        raise KeyboardInterrupt
    assert "pids 4242" in "".join(caught.value.__notes__)
    assert not processes.find_marked(first.run_id) and not processes.find_marked(second.run_id)
    assert list(roots.iterdir()) == []


def test_signals_are_held_during_a_teardown_and_delivered_after() -> None:
    seen: list[str] = []
    with pytest.raises(KeyboardInterrupt), signals.signals_deferred():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # a pending SIGINT would interrupt here if it were not held
        seen.append("block finished")
    assert seen == ["block finished"]


def test_keyboard_interrupt_in_the_body_still_tears_down(boot: Boot) -> None:
    ctx = boot(sandbox="plain")  # host pids
    with pytest.raises(KeyboardInterrupt), ctx as svc:
        pid = _get(svc, "/pids")["pid"]
        raise KeyboardInterrupt
    assert ctx.teardown is not None and ctx.teardown.confirmed
    assert not _alive(pid)


def test_on_teardown_receives_the_report(boot: Boot, worktree: Path, roots: Path) -> None:
    reports: list[processes.TeardownReport] = []
    spec = ServiceConfig(start=START, ready="health")  # a ready path without "/" works too
    ctx = service.running_service(
        spec, worktree, log_path=worktree / "log", temp_parent=roots, on_teardown=reports.append
    )
    with ctx:
        pass
    assert reports == [ctx.teardown]
    assert not processes.find_marked(ctx.run_id)


def test_sigterm_to_the_harness_unwinds_and_tears_down(worktree: Path, tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import json, sys, time
        from pathlib import Path
        from harness.config import ServiceConfig
        from harness.process.signals import signals_unwind
        from harness.boot.service import running_service
        spec = ServiceConfig(start={START!r}, ready="/health", ready_timeout=20.0)
        with signals_unwind():
            ctx = running_service(spec, Path({str(worktree)!r}), log_path=Path("svc.log"))
            try:
                with ctx as svc:
                    print(json.dumps([svc.pid, ctx.run_id]), flush=True)
                    time.sleep(60)
            finally:
                print(json.dumps(ctx.teardown.confirmed), flush=True)
        """
    )
    harness = subprocess.Popen(
        [sys.executable, "-c", script], cwd=tmp_path, stdout=subprocess.PIPE, text=True
    )
    try:
        assert harness.stdout is not None
        pid, run_id = json.loads(harness.stdout.readline())
        assert _alive(pid)
        harness.send_signal(signal.SIGTERM)
        out, _ = harness.communicate(timeout=30)
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
    assert json.loads(out) is True
    # Terminated propagated, uncaught: the script did not carry on, and Python exits 1.
    assert harness.returncode == 1
    assert not _alive(pid) and not processes.find_marked(run_id)


def test_signal_handlers_turn_sigterm_into_terminated_and_restore() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(signals.Terminated) as caught, signals.signals_unwind():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises before this ends
    assert caught.value.signum == signal.SIGTERM
    assert isinstance(caught.value, KeyboardInterrupt)
    assert signal.getsignal(signal.SIGTERM) == before


# --------------------------------------------------------------------------- configuration


def test_unknown_placeholder_is_a_config_error_before_anything_starts(
    boot: Boot, roots: Path, tmp_path: Path
) -> None:
    ctx = boot(START + " --index {indx}", prepare=("echo {porty}",), env={"A": "{home}/{nope}"})
    with pytest.raises(ConfigError) as caught, ctx:
        pytest.fail("the body must not run")
    text = str(caught.value)
    assert "service: start: unknown placeholder {indx}" in text
    assert "service: prepare[0]: unknown placeholder {porty}" in text
    assert "service: env.A: unknown placeholder {nope}" in text
    assert ctx.teardown is None and not (tmp_path / "logs" / "svc.log").exists()


def test_data_placeholder_without_data_and_missing_data_are_config_errors(boot: Boot) -> None:
    unset = r"service: start: \{data\} is used but service.data is not set"
    with pytest.raises(ConfigError, match=unset), boot(START + " --data {data}"):
        pytest.fail("the body must not run")
    with pytest.raises(ConfigError) as caught, boot(START, data="no-such-dir"):
        pytest.fail("the body must not run")
    text = str(caught.value)
    assert "service: data:" in text and "no-such-dir does not exist" in text


def test_pinning_the_marker_is_refused(boot: Boot) -> None:
    reserved = r"env\.HARNESS_RUN_ID: reserved for the harness"
    with pytest.raises(ConfigError, match=reserved), boot(env={isolation.MARKER_ENV: "mine"}):
        pytest.fail("the body must not run")


def test_expand_placeholders_worked_examples() -> None:
    values = {"port": "8080", "data": "/tmp/a b"}
    assert isolation.expand_placeholders("x {port} {{lit}}", values, key="k") == "x 8080 {lit}"
    assert isolation.expand_placeholders("--db {data}/x", values, key="k") == "--db /tmp/a b/x"
    for bad in ("{port!r}", "{port:>5}", "{", "{}", "{0}"):
        with pytest.raises(ConfigError):
            isolation.expand_placeholders(bad, values, key="k")


@given(st.text(alphabet=st.characters(blacklist_characters="{}")))
def test_text_without_braces_expands_to_itself(text: str) -> None:
    assert isolation.expand_placeholders(text, {"port": "1"}, key="k") == text


def test_build_env_layers_in_order() -> None:
    caller = {
        "PATH": "/bin", "LC_TIME": "C", "TZ": "UTC", "TERM": "xterm", "HOME": "/root",
        "AWS_ACCESS_KEY_ID": "x", "PASSED": "p", "OVER": "caller",
    }  # fmt: skip
    env = isolation.allowlisted_env(
        caller,
        isolation={"HOME": "/iso/home", "OVER": "isolation"},
        pass_env=("PASSED", "OVER", "ABSENT"),
        extra={"PATH": "/venv/bin:/bin"},
        pins={"TZ": "Europe/Paris"},
        run_id="r1",
    )
    assert env == {
        "PATH": "/venv/bin:/bin", "LC_TIME": "C", "TZ": "Europe/Paris", "HOME": "/iso/home",
        "PASSED": "p", "OVER": "caller", isolation.MARKER_ENV: "r1",
    }  # fmt: skip


def test_python_is_the_venvs_interpreter_when_the_service_has_one() -> None:
    # {python} in start: the commit's venv (service.venv = true) or the harness's own.
    spec = ServiceConfig(start="x {port}", ready="/")
    assert service._interpreter({"VIRTUAL_ENV": "/cache/venv", "PATH": "/x"}, spec) == (
        "/cache/venv/bin/python"
    )
    assert service._interpreter({}, spec) == sys.executable
    # service.python without a venv: that interpreter, found on PATH
    named = dataclasses.replace(spec, python=sys.executable)
    assert service._interpreter({}, named) == sys.executable

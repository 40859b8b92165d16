"""The service stage: boot a retrieval service in isolation, wait until it answers, prepare it,
and tear it down confirmed dead.

    ctx = running_service(spec, worktree, log_path=log)
    with ctx as svc:                 # svc.url == "http://127.0.0.1:PORT", svc.data: see {data}
        ...                          # query it
    ctx.teardown                     # TeardownReport: confirmed, killed_pids, used_sigkill, seconds

One boot, in order:

1. Port. A port of 127.0.0.1 leased for the boot's life (`harness.boot.ports`): locked against
   every other harness boot on the machine, and, in plain mode, bound without listening so the
   kernel hands it to no other program; handed over as {port}. A service that exits at boot with
   "Address already in use" in its log (one that binds without SO_REUSEADDR, beside the hold) is
   booted again, from scratch, on a new port with the lock only (`ServiceLimits.port_attempts`
   boots in all).
2. Isolation (`harness.boot.isolation`). One throwaway root per boot holds HOME, TMPDIR,
   XDG_{CONFIG,CACHE,DATA,STATE}_HOME, XDG_RUNTIME_DIR and a fresh copy of `spec.data` ({data});
   it is removed at teardown. With `data_mode = "read-only"` (the default for data outside the
   repository) nothing is copied: {data} is the data where it lies, bound read-only in the
   sandbox, and refused in plain mode when the service's user could write it. The environment
   is built from an allowlist (`allowlisted_env`): the caller's tokens never reach the service,
   and their values are scrubbed from log excerpts.
   In bubblewrap mode (`harness.boot.sandbox`) the start command runs in a sandbox: its own
   network namespace (the URL is reachable only through `RunningService.transport()`, which the
   readiness probe, the prepare commands and the replay client all use), its own PID namespace,
   a read-only filesystem but the throwaway root.
3. Start. `/bin/sh -c <start>` (so a start command may use pipes, `&&`, `VAR=x cmd`), in a NEW
   SESSION: the shell and all it starts form one process group outside the harness's terminal, so
   Ctrl-C reaches the harness only and the harness decides how the service dies. cwd = worktree;
   stdout and stderr are appended to `log_path`.
4. Ready. GET url + spec.ready until a 2xx, each GET within spec.probe_timeout.
   Exited first -> ServiceError "exited at boot with status N"; spec.ready_timeout passed ->
   ServiceError "not ready after N s"; both carry the last 20 lines of the log and are raised
   after the service is torn down.
5. Prepare. Each `spec.prepare` command in turn: same environment, cwd and log, each within
   spec.prepare_timeout; a non-zero exit is a ServiceError naming the command and its status.
   Then `[service.load]`, when set: the corpus posted in batches and an index call
   (`harness.boot.loader`). Each step is timed (`RunningService.prepare_steps`).
6. Teardown, always (normal exit, exception, KeyboardInterrupt): see
   `harness.boot.processes.ProcessTree.stop`. If a process cannot be killed, the with-statement
   raises ServiceError naming the pids (or, when the body already raised, that exception carries the
   same text as a note and propagates). SIGINT/SIGTERM/SIGHUP are held while a teardown runs
   (`signals_deferred`), so a second Ctrl-C cannot cut it short; `signals_unwind` makes a `kill` of
   the harness unwind like Ctrl-C.

Placeholders, in `start`, `prepare` and `spec.env` values: {port} {url} {data} {home} {worktree}
{python} (the per-commit venv's interpreter with `venv = true`, else the harness's own)
{config_dir} (the configuration file's folder, given as `config_dir`; read-only in the sandbox).
`start` and `prepare` may also name a key of `spec.env`, {RRF_K}, and get that pin's value, its own
placeholders expanded (how `harness sweep --param RRF_K=20,60` reaches a command line). In commands
each value is shlex-quoted (a no-op for paths without spaces or shell metacharacters); in env values
it is inserted verbatim. `{{` and `}}` are literal braces. Anything else is a ConfigError naming
the placeholder and the key, raised before anything starts.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from harness.boot.advice import import_hints, limit_hints, unconfirmed
from harness.boot.enclosure import enclose
from harness.boot.interpreter import interpreter
from harness.boot.isolation import (
    NO_ENV,
    allowlisted_env,
    check_placeholders,
    command_values,
    data_source,
    expand_placeholders,
    fill_root,
    new_root,
    scrub_file,
    scrubber,
)
from harness.boot.loader import corpus_path, load_corpus
from harness.boot.mounts import Mounts, not_inside, python_paths
from harness.boot.ports import PortLease, lease_port
from harness.boot.probe import OpenSocket, ProbeError, get_status, ready_advice
from harness.boot.processes import ProcessTree, TeardownReport, exit_status
from harness.boot.sandbox import (
    BUBBLEWRAP,
    SandboxLink,
    SocketPool,
    sandbox_mode,
    service_ids,
    transport_for,
)
from harness.boot.spawn import log_header, log_tail, log_text, spawn
from harness.boot.usage import UsageMeter
from harness.config import LoadConfig, ServiceConfig
from harness.config.overrides import as_values, uses
from harness.config.values import DATA_READ_ONLY, data_mode
from harness.errors import ServiceError
from harness.process import leftovers
from harness.process.signals import signals_deferred
from harness.text.scrub import Scrubber

if TYPE_CHECKING:
    import httpx

_PORT_IN_USE = ("address already in use", "eaddrinuse")


@dataclass(frozen=True)
class ServiceLimits:
    """Internal knobs of a boot: counts and a polling cadence, not deadlines (every timeout is a
    field of ServiceConfig)."""

    port_attempts: int = 4  # one boot plus 3 retries after losing the port race
    poll_interval: float = 0.05  # s between readiness probes (liveness checks without pidfd)
    kill_rounds: int = 3  # collect-then-SIGKILL rounds before declaring survivors


@dataclass(frozen=True)
class RunningService:
    """A service that answered its readiness check and ran its prepare commands."""

    url: str  # "http://127.0.0.1:PORT"
    port: int
    pid: int  # of the `/bin/sh -c` leader; also the process group id
    home: Path
    # {data}: the fresh copy of spec.data, or with data_mode "read-only" the data itself (in
    # the sandbox, bound read-only where it lies); None without data
    data: Path | None
    log_path: Path
    boot_seconds: float  # spawn to first 2xx readiness answer
    prepare_seconds: float  # every prepare command and the loader, together
    root: Path  # the throwaway root holding home, tmp, xdg/* and data; gone after teardown
    run_id: str  # the MARKER_ENV value in its environment
    sandbox: str = "plain"  # "bubblewrap" or "plain" (harness.boot.sandbox)
    # In bubblewrap mode, a fresh unconnected TCP socket of the service's network namespace:
    # the only way to reach `url`. None in plain mode. See `transport()`.
    open_socket: OpenSocket | None = None
    # Seconds of each step after readiness: "prepare[0]", ..., "load", "index".
    prepare_steps: Mapping[str, float] = field(default_factory=dict)

    def transport(self, limits: httpx.Limits | None = None) -> httpx.BaseTransport | None:
        """The httpx transport that reaches `url` (pass it to httpx.Client(transport=...)):
        connections made in the sandbox's network namespace, or None for httpx's default."""
        return transport_for(self.open_socket, limits)

    def connect(self, timeout: float | None = None) -> socket.socket:
        """A TCP connection to the service, from any thread, in either mode."""
        if self.open_socket is None:
            return socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        sock = self.open_socket()
        sock.settimeout(timeout)
        sock.connect(("127.0.0.1", self.port))
        return sock


# --------------------------------------------------------------------------- boot


class _PortTaken(Exception):
    """The service lost the race for its port: boot again on another one."""


class ServiceContext(contextlib.AbstractContextManager[RunningService]):
    """What `running_service` returns: enter to boot, exit to tear down. After exit (or a failed
    boot) `teardown` holds the TeardownReport of the last boot attempt. Boots once."""

    def __init__(
        self,
        spec: ServiceConfig,
        worktree: Path,
        *,
        log_path: Path,
        extra_env: Mapping[str, str] = NO_ENV,
        environ: Mapping[str, str] | None = None,
        temp_parent: Path | None = None,
        limits: ServiceLimits = ServiceLimits(),  # frozen, so one shared default is safe
        on_teardown: Callable[[TeardownReport], None] | None = None,
        sandbox: str | None = None,
        corpus: Path | None = None,
        config_dir: Path | None = None,
    ) -> None:
        self.spec = spec
        self.corpus = corpus  # gold.corpus: what service.load posts when load.corpus is unset
        self.config_dir = None if config_dir is None else Path(config_dir).resolve()
        self.worktree = Path(worktree).resolve()
        self.log_path = Path(log_path)
        self.extra_env = dict(extra_env)
        self.environ = environ
        self.temp_parent = temp_parent
        self.limits = limits
        self.on_teardown = on_teardown
        self.run_id = uuid.uuid4().hex
        self.service: RunningService | None = None
        self.teardown: TeardownReport | None = None
        self._tree: ProcessTree | None = None
        self.meter: UsageMeter | None = None  # what the boot costs (harness.boot.usage)
        self._lease: PortLease | None = None
        self._hold = True  # the kernel hold on the port: off after a boot lost its port
        self._root: Path | None = None
        self._link: SandboxLink | None = None
        # The sandbox's cwd, PATH and files, to say why a command could not start in it.
        self._where: tuple[Path, str, Mounts] | None = None
        self._scrub = Scrubber({})  # set once the environment is built
        self._entered = False
        self.sandbox = sandbox or sandbox_mode(os.environ if environ is None else environ)

    def __enter__(self) -> RunningService:
        if self._entered:
            raise RuntimeError("a ServiceContext boots once; call running_service() again")
        self._entered = True
        check_placeholders(self.spec)
        data_src = data_source(self.spec, self.worktree, self.config_dir, sandbox=self.sandbox)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        for attempt in range(1, self.limits.port_attempts):
            with contextlib.suppress(_PortTaken):
                self.service = self._boot(attempt, data_src)
                return self.service
        self.service = self._boot(self.limits.port_attempts, data_src)  # never raises _PortTaken
        return self.service

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        report = self._stop()
        if not report.confirmed:
            error = unconfirmed(report, self.run_id)
            if exc is None:
                raise error
            exc.add_note(str(error))

    def _boot(self, attempt: int, data_src: Path | None) -> RunningService:
        spec, limits = self.spec, self.limits
        self._tree = self._new_tree()
        # In the sandbox the port is the namespace's own: only the lock, nothing to hold.
        self._lease = lease_port(hold=self._hold and self.sandbox != BUBBLEWRAP)
        port = self._lease.port
        url = f"http://127.0.0.1:{port}"
        # One rewrite of the leftovers state, before the root exists and so before anything is
        # spawned: a SIGKILL from here on leaves the next run the run id (plain isolation's
        # orphans) and the root to remove. self._root names it as soon as it exists (`_stop`).
        self._root = new_root(self.temp_parent, self.run_id)
        try:
            in_place = data_mode(spec) == DATA_READ_ONLY  # no copy: bound read-only
            isolation, data = fill_root(self._root, None if in_place else data_src)
            if in_place:
                data = data_src
            raw = {
                "port": str(port),
                "url": url,
                "home": isolation["HOME"],
                "worktree": str(self.worktree),
                "python": _interpreter(self.extra_env, spec, self.config_dir),
            }
            if self.config_dir is not None:
                raw["config_dir"] = str(self.config_dir)
            if data is not None:
                raw["data"] = str(data)
            pins = {
                name: expand_placeholders(value, raw, key=f"env.{name}")
                for name, value in spec.env.items()
            }
            quoted = command_values(raw, pins)
            caller = os.environ if self.environ is None else self.environ
            env = allowlisted_env(
                caller,
                isolation=isolation,
                pass_env=spec.pass_env,
                extra=self.extra_env,
                pins=pins,
                run_id=self.run_id,
            )
            self._scrub = scrubber(caller, env)
            command = expand_placeholders(spec.start, quoted, key="start")
            prefix: list[str] = []
            if self.sandbox == BUBBLEWRAP:
                self._link = SandboxLink()
                readable = [Path(v) for v in (self.extra_env.get("VIRTUAL_ENV"),) if v]
                if self.config_dir is not None and uses(as_values(spec), "config_dir"):
                    readable.append(self.config_dir)  # scripts and files of the user's tree
                readable += python_paths(raw["python"])  # a base under HOME: pyenv, uv, conda
                bound = [data] if in_place and data is not None else []
                mounts, prefix = enclose(
                    self._link, spec, run_id=self.run_id, root=self._root,
                    worktree=self.worktree, readable=readable, bound=bound, isolation=isolation,
                )  # fmt: skip
                self._where = (self.worktree, env.get("PATH", os.defpath), mounts)
            t0 = time.monotonic()
            boxed = " (bubblewrap sandbox)" if self.sandbox == BUBBLEWRAP else ""
            header = f"boot attempt {attempt} of {limits.port_attempts} on {url}{boxed}"
            leader, log_start = spawn(
                command,
                cwd=self.worktree,
                env=env,
                log_path=self.log_path,
                header=header,
                prefix=prefix,
                pass_fds=() if self._link is None else self._link.pass_fds,
            )
            if self._link is not None:
                self._link.started()
            self._tree.leader, self.meter = leader, UsageMeter(leader.pid, self._tree.tracked.keys)
            status = self._wait_ready(leader.pid, url + ready_path(spec.ready), t0, log_start)
            if status is not None:
                text = log_text(self.log_path, log_start)
                taken = any(s in text.lower() for s in _PORT_IN_USE)
                if taken and attempt < limits.port_attempts:
                    self._hold = False  # a service that cannot bind beside the hold
                    raise _PortTaken()
                why = f"; its port was taken on each of {attempt} attempts" if taken else ""
                said, hints = not_inside(command, status, text, self._where)
                raise self._failure(
                    "boot",
                    f"service exited at boot with status {status}{why} (start: {command!r}){said}",
                    log_start,
                    *import_hints(text, command, env, spec),
                    *hints,
                    "fix the start command, or run it by hand in the worktree to see why",
                )
            boot_seconds = time.monotonic() - t0
            self._tree.collect()
            t1 = time.monotonic()
            steps: dict[str, float] = {}
            for i, cmd in enumerate(spec.prepare):
                t_step = time.monotonic()
                self._prepare(expand_placeholders(cmd, quoted, key=f"prepare[{i}]"), i, env)
                steps[f"prepare[{i}]"] = time.monotonic() - t_step
            if spec.load is not None:
                steps.update(self._load(spec.load, url, data, log_start))
            self.meter.replay_begins(boot_seconds)  # ready and prepared: the replay's CPU
            return RunningService(
                url=url,
                port=port,
                pid=leader.pid,
                home=Path(isolation["HOME"]),
                data=data,
                log_path=self.log_path,
                boot_seconds=boot_seconds,
                prepare_seconds=time.monotonic() - t1,
                prepare_steps=steps,
                root=self._root,
                run_id=self.run_id,
                sandbox=self.sandbox,
                open_socket=None if self._link is None else self._link.open_socket,
            )
        except BaseException as exc:
            report = self._stop()
            if not report.confirmed:
                exc.add_note(str(unconfirmed(report, self.run_id)))
            raise

    def _wait_ready(self, pid: int, ready_url: str, t0: float, log_start: int) -> int | None:
        """None once ready_url answers 2xx; the exit status if the service exits first."""
        deadline = t0 + self.spec.ready_timeout
        # ready_url is plain http on 127.0.0.1 (through the sandbox, when there is one): one
        # GET per probe over a plain socket (harness.boot.probe), no proxy, no TLS set up; in
        # the sandbox, its sockets fetched a few per round trip.
        pool = None if self._link is None else SocketPool(self._link)
        try:
            return self._probe_until_ready(pid, ready_url, deadline, log_start, pool)
        finally:
            if pool is not None:
                pool.close()

    def _probe_until_ready(
        self, pid: int, ready_url: str, deadline: float, log_start: int, pool: SocketPool | None
    ) -> int | None:
        spec = self.spec
        last = "no answer"
        slow = False  # a GET given the whole probe_timeout ran out of it
        open_socket = None if pool is None else pool.take
        while True:
            status = exit_status(pid)
            if status is not None:
                return status
            left = deadline - time.monotonic()
            if left <= 0:
                hint = (
                    f"each readiness GET may take service.probe_timeout = "
                    f"{spec.probe_timeout:g} s; raise it if {spec.ready} is slow to answer"
                )
                advice = ready_advice(spec.ready, last)
                # A 4xx is an answer: the path is wrong, and a longer wait would not change it.
                why = (
                    "service.ready is not a path it serves"
                    if last.startswith("HTTP 4")
                    else "raise service.ready_timeout if it is just slow"
                )
                raise self._failure(
                    "ready",
                    f"service not ready after {spec.ready_timeout:g} s: GET {ready_url}"
                    f" gave {last} ({why})",
                    log_start,
                    *([hint] if slow else []),
                    *([advice] if advice else []),
                )
            timeout = min(spec.probe_timeout, left)
            try:
                code = get_status(ready_url, timeout, open_socket)
                if 200 <= code < 300:
                    # A stranger that took the port could answer while ours is dying.
                    return exit_status(pid)
                last = f"HTTP {code}"
            except ProbeError as exc:
                full = timeout == spec.probe_timeout
                slow = slow or (full and exc.timed_out)
                if full or not exc.timed_out or last == "no answer":  # a GET the deadline
                    last = exc.name  # cut short says less than the answer before it (a 503)
            time.sleep(max(0.0, min(self.limits.poll_interval, deadline - time.monotonic())))

    def _load(
        self, spec: LoadConfig, url: str, data: Path | None, log_start: int
    ) -> dict[str, float]:
        """[service.load]: the corpus posted through the same transport as the queries."""
        import httpx  # only a boot with [service.load] posts through httpx

        open_socket = None if self._link is None else self._link.open_socket
        try:
            corpus = corpus_path(spec, data, self.corpus)
            with httpx.Client(trust_env=False, transport=transport_for(open_socket)) as client:
                return load_corpus(spec, client, url, corpus)
        except ServiceError as exc:
            tail = [self._scrub(line) for line in log_tail(self.log_path, log_start)]
            raise ServiceError(
                exc.message, [*exc.details, f"last lines of {self.log_path}:", *tail], "prepare"
            ) from None

    def _prepare(self, command: str, index: int, env: Mapping[str, str]) -> None:
        timeout = self.spec.prepare_timeout
        if self._link is not None:  # inside the sandbox: the service is reachable only there
            log_start = log_header(self.log_path, f"prepare[{index}]", command)
            try:
                sandboxed = self._link.run(command, timeout)
            except ConnectionError as exc:
                raise self._failure(
                    "prepare", f"prepare command {command!r} could not run: {exc}", log_start
                ) from None
            if sandboxed is None:
                raise self._failure(
                    "prepare",
                    f"prepare command {command!r} did not finish within {timeout:g} s "
                    "(raise service.prepare_timeout)",
                    log_start,
                )
            self._prepared(command, sandboxed, log_start)
            return
        proc, log_start = spawn(
            command, cwd=self.worktree, env=env, log_path=self.log_path, header=f"prepare[{index}]"
        )
        try:
            status = proc.wait(timeout=timeout)
        except BaseException as exc:  # timeout or interrupt: end it before anything else
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            if not isinstance(exc, subprocess.TimeoutExpired):
                raise
            raise self._failure(
                "prepare",
                f"prepare command {command!r} did not finish within {timeout:g} s "
                "(raise service.prepare_timeout)",
                log_start,
            ) from None
        self._prepared(command, status, log_start)

    def _prepared(self, command: str, status: int, log_start: int) -> None:
        if status != 0:
            text = log_text(self.log_path, log_start)
            said, hints = not_inside(command, status, text, self._where)
            raise self._failure(
                "prepare",
                f"prepare command {command!r} failed with exit status {status}{said}",
                log_start,
                *hints,
                "run it by hand in the worktree against a booted service to see why",
            )

    def _failure(self, stage: str, message: str, log_start: int, *hints: str) -> ServiceError:
        tail = [self._scrub(line) for line in log_tail(self.log_path, log_start)]
        if self.sandbox == BUBBLEWRAP:  # a limit of the sandbox, met?
            ids = service_ids(self.run_id)
            hints = (*limit_hints(log_text(self.log_path, log_start), self.spec, ids), *hints)
        details = [f"last lines of {self.log_path}:", *tail, *hints]
        return ServiceError(message, details, stage=stage)

    def limit_reached(self) -> str | None:
        """Said when the last teardown found a sandboxed service at `service.max_processes`
        (its forks and new threads were failing); else None."""
        report, most = self.teardown, self.spec.max_processes
        if self.sandbox == BUBBLEWRAP and report is not None and report.tasks >= most:
            return (
                f"the service started more than service.max_processes = {most} processes and "
                f"threads ({report.tasks} ran at teardown): some of its forks or threads "
                "failed; raise service.max_processes if it needs them"
            )
        return None

    def _new_tree(self) -> ProcessTree:
        limits = self.limits
        return ProcessTree(
            self.run_id,
            poll_interval=limits.poll_interval,
            kill_rounds=limits.kill_rounds,
            contained=self.sandbox == BUBBLEWRAP,  # a PID namespace: all descend from bwrap
        )

    def _stop(self) -> TeardownReport:
        with signals_deferred():
            tree, self._tree = self._tree, None
            self.usage = None if self.meter is None else self.meter.stop()  # before any signal
            report = (tree or self._new_tree()).stop(self.spec.stop_timeout, self.spec.kill_wait)
            if self._lease is not None:  # the port is free again once the tree is gone
                self._lease.close()
                self._lease = None
            if self._link is not None:
                self._link.close()
                self._link = None
            done: list[tuple[str, str | Path]] = []
            if self._root is not None:
                leftovers.remove_tree(self._root)
                if not os.path.lexists(self._root):  # else recorded still: the next run's
                    done.append(("dir", self._root))
                self._root = None
            if report.confirmed:
                done.append(("run_id", self.run_id))
            leftovers.untrack_all(done)  # one rewrite, once what it names is gone
            # The log stays in results/logs: scrubbed, and cut to service.max_log_bytes.
            scrub_file(self.log_path, self._scrub, limit=self.spec.max_log_bytes)
        self.teardown = report
        if self.on_teardown is not None:
            self.on_teardown(report)
        return report


def running_service(
    spec: ServiceConfig,
    worktree: Path,
    *,
    log_path: Path,
    extra_env: Mapping[str, str] = NO_ENV,
    environ: Mapping[str, str] | None = None,
    temp_parent: Path | None = None,
    limits: ServiceLimits = ServiceLimits(),  # frozen, so one shared default is safe
    on_teardown: Callable[[TeardownReport], None] | None = None,
    sandbox: str | None = None,
    corpus: Path | None = None,
    config_dir: Path | None = None,
) -> ServiceContext:
    """Boot `spec.start` from `worktree` in isolation; see the module docstring for each step.

    `extra_env` is layered over the allowlisted environment (the build stage's venv); `environ`
    stands in for os.environ; throwaway roots go under `temp_parent` (default: the system temp
    dir). The returned context's `teardown`, and `on_teardown`, give the TeardownReport.
    `sandbox` forces "bubblewrap" or "plain" (default: `harness.boot.sandbox.sandbox_mode`).
    `config_dir` is {config_dir} (the configuration file's folder), bound read-only into the
    sandbox when a command or env value names it. Raises ConfigError (bad placeholder, missing
    data) before anything starts, ServiceError when the service exits at boot, is not ready in
    time, a prepare command fails, or it cannot be killed.
    """
    return ServiceContext(
        spec,
        worktree,
        log_path=log_path,
        extra_env=extra_env,
        environ=environ,
        temp_parent=temp_parent,
        limits=limits,
        on_teardown=on_teardown,
        sandbox=sandbox,
        corpus=corpus,
        config_dir=config_dir,
    )


def ready_path(ready: str) -> str:
    """service.ready as a URL path (a leading '/' added when it has none)."""
    return ready if ready.startswith("/") else "/" + ready


def _interpreter(
    extra_env: Mapping[str, str], spec: ServiceConfig, config_dir: Path | None = None
) -> str:
    """{python}: the per-commit venv's interpreter when the service has one (`service.venv`),
    else `service.python` when set, else the harness's own, so `start = "{python} svc.py"` runs
    where the build installed."""
    venv = extra_env.get("VIRTUAL_ENV")
    if venv:
        return str(Path(venv) / "bin" / "python")
    return str(interpreter(spec.python, config_dir).path) if spec.python else sys.executable

"""The service stage: boot a retrieval service in isolation, wait until it answers, prepare it,
and tear it down confirmed dead.

    ctx = running_service(spec, worktree, log_path=log)
    with ctx as svc:                 # svc.url == "http://127.0.0.1:PORT", svc.data is a fresh copy
        ...                          # query it
    ctx.teardown                     # TeardownReport: confirmed, killed_pids, used_sigkill, seconds

One boot, in order:

1. Port. Bind 127.0.0.1:0, read the port, close, hand it over as {port}. Another process can take
   it in between; a service that then exits at boot with "Address already in use" in its log is
   booted again, from scratch, on a new port (`ServiceLimits.port_attempts` boots in all).
2. Isolation. One throwaway root per boot holds HOME, TMPDIR, XDG_{CONFIG,CACHE,DATA,STATE}_HOME,
   XDG_RUNTIME_DIR and a fresh copy of `spec.data` ({data}); it is removed at teardown. The
   environment is built from an allowlist (`build_env`): the caller's tokens never reach the
   service.
3. Start. `/bin/sh -c <start>` (so a start command may use pipes, `&&`, `VAR=x cmd`), in a NEW
   SESSION: the shell and all it starts form one process group outside the harness's terminal, so
   Ctrl-C reaches the harness only and the harness decides how the service dies. cwd = worktree;
   stdout and stderr are appended to `log_path`.
4. Ready. GET url + spec.ready until a 2xx. Exited first -> ServiceError "exited at boot with
   status N"; spec.ready_timeout passed -> ServiceError "not ready after N s"; both carry the last
   20 lines of the log and are raised after the service is torn down.
5. Prepare. Each `spec.prepare` command in turn: same environment, cwd and log, each within
   spec.prepare_timeout; a non-zero exit is a ServiceError naming the command and its status.
6. Teardown, always (normal exit, exception, KeyboardInterrupt): see `_ProcessTree.stop`. If a
   process cannot be killed, the with-statement raises ServiceError naming the pids (or, when the
   body already raised, that exception carries the same text as a note and propagates).
   SIGINT/SIGTERM/SIGHUP are held while a teardown runs, so a second Ctrl-C cannot cut it short.
7. The harness itself: Python dies on SIGTERM without running `finally`; `signals_unwind()` (or
   `install_signal_handlers()`) turns SIGTERM and SIGHUP into `Terminated`, a KeyboardInterrupt,
   so a `kill` of the harness unwinds like Ctrl-C and every service is torn down.

Placeholders, in `start`, `prepare` and `spec.env` values: {port} {url} {data} {home} {worktree}
{python} (the harness's own interpreter, so a venv=false service can run with it). In commands
each value is shlex-quoted (a no-op for paths without spaces or shell metacharacters); in env values
it is inserted verbatim. `{{` and `}}` are literal braces. Anything else is a ConfigError naming
the placeholder and the key, raised before anything starts.

Limitation: a process found neither in the service's descendant tree (walked before SIGTERM and
again before SIGKILL) nor by the HARNESS_RUN_ID marker in its environment (a double-forked daemon
that also scrubbed its environment) cannot be found without cgroups.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import threading
import socket
import string
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, MappingProxyType, TracebackType
from typing import Any

import httpx
import psutil

from harness.config import ServiceConfig
from harness.errors import ConfigError, Problem, ServiceError

MARKER_ENV = "HARNESS_RUN_ID"
"""Set in every service's environment to the boot's run id; how orphans are found at teardown."""

PLACEHOLDERS = ("port", "url", "data", "home", "worktree", "python")
ALLOWED_ENV = frozenset({"PATH", "LANG", "TZ"})  # and every LC_* name
LOG_TAIL_LINES = 20
_SHELL = "/bin/sh"
_PORT_IN_USE = ("address already in use", "eaddrinuse")
_DEFERRED_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
_NO_ENV: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True)
class ServiceLimits:
    """Harness-side limits of a boot that ServiceConfig does not carry (all in seconds but one)."""

    port_attempts: int = 4  # one boot plus 3 retries after losing the port race
    poll_interval: float = 0.05  # between readiness probes and between liveness checks
    probe_timeout: float = 2.0  # per readiness GET (capped by what is left of ready_timeout)
    kill_wait: float = 5.0  # for SIGKILLed processes to be gone, per kill round
    kill_rounds: int = 3  # collect-then-SIGKILL rounds before declaring survivors


@dataclass(frozen=True)
class RunningService:
    """A service that answered its readiness check and ran its prepare commands."""

    url: str  # "http://127.0.0.1:PORT"
    port: int
    pid: int  # of the `/bin/sh -c` leader; also the process group id
    home: Path
    data: Path | None  # the fresh copy of spec.data, or None
    log_path: Path
    boot_seconds: float  # spawn to first 2xx readiness answer
    prepare_seconds: float
    root: Path  # the throwaway root holding home, tmp, xdg/* and data; gone after teardown
    run_id: str  # the MARKER_ENV value in its environment


@dataclass(frozen=True)
class TeardownReport:
    """How a service was taken down. `confirmed` only when no process of it is left running."""

    confirmed: bool
    killed_pids: tuple[int, ...]  # every process of the service alive when signalled
    used_sigkill: bool  # something outlived SIGTERM and stop_timeout
    seconds: float
    survivors: tuple[int, ...] = ()  # still running after every kill round
    exit_status: int | None = None  # of the leader: negative = killed by that signal
    died_before_teardown: bool = False  # the leader had already exited when teardown began


# --------------------------------------------------------------------------- placeholders


def _problem(key: str, message: str) -> Problem:
    return Problem("service", message, field=key)


def _placeholder_problems(
    text: str, key: str, known: Iterable[str], data_set: bool
) -> list[Problem]:
    try:
        fields = [(name, conv or spec) for _, name, spec, conv in string.Formatter().parse(text)]
    except ValueError as exc:
        return [_problem(key, f"{exc} in {text!r}; write {{{{ and }}}} for literal braces")]
    problems = []
    for name, extra in fields:
        if name == "data" and not data_set:
            problems.append(_problem(key, "{data} is used but service.data is not set"))
        elif name is not None and name not in known:
            known_list = " ".join(f"{{{k}}}" for k in PLACEHOLDERS)
            problems.append(_problem(key, f"unknown placeholder {{{name}}}; known: {known_list}"))
        elif extra:
            problems.append(_problem(key, f"{{{name}}} takes no !conversion or :format"))
    return problems


def check_placeholders(spec: ServiceConfig) -> None:
    """Raise ConfigError listing every bad placeholder in start, prepare and env values (and a
    pinned MARKER_ENV), before anything is started."""
    problems: list[Problem] = []
    templates = [("start", spec.start)]
    templates += [(f"prepare[{i}]", cmd) for i, cmd in enumerate(spec.prepare)]
    templates += [(f"env.{name}", value) for name, value in spec.env.items()]
    for key, text in templates:
        problems += _placeholder_problems(text, key, PLACEHOLDERS, spec.data is not None)
    if MARKER_ENV in spec.env:
        problems.append(_problem(f"env.{MARKER_ENV}", "reserved for the harness; remove it"))
    if problems:
        raise ConfigError("service: bad placeholders in the configuration", problems)


def expand_placeholders(text: str, values: Mapping[str, str], *, key: str) -> str:
    """`text` with each {name} replaced by values[name]; ConfigError on an unknown name."""
    problems = _placeholder_problems(text, key, values, "data" in values)
    if problems:
        raise ConfigError("service: bad placeholders in the configuration", problems)
    return text.format_map(values)


# --------------------------------------------------------------------------- isolation


def build_env(
    caller: Mapping[str, str],
    *,
    isolation: Mapping[str, str],
    pass_env: Iterable[str] = (),
    extra: Mapping[str, str] = _NO_ENV,
    pins: Mapping[str, str] = _NO_ENV,
    run_id: str,
) -> dict[str, str]:
    """The service's whole environment, later layers overriding earlier ones:

    1. from `caller`, only PATH, LANG, TZ and LC_* (nothing else: no tokens, no AWS_*, no HOME);
    2. `isolation` (HOME, TMPDIR, XDG_*, PYTHON* set by the harness);
    3. each name in `pass_env` that is set in `caller` (an explicit user choice, so it may
       override 2);
    4. `extra` (the build stage's venv PATH and VIRTUAL_ENV);
    5. `pins` (service.env, placeholders already expanded): override anything;
    6. MARKER_ENV=run_id, which cannot be overridden.
    """
    env = {k: v for k, v in caller.items() if k in ALLOWED_ENV or k.startswith("LC_")}
    env.update(isolation)
    env.update({name: caller[name] for name in pass_env if name in caller})
    env.update(extra)
    env.update(pins)
    env[MARKER_ENV] = run_id
    return env


def _make_root(
    parent: Path | None, data_src: Path | None
) -> tuple[Path, dict[str, str], Path | None]:
    """A fresh root with home, tmp, xdg/* and the data copy; its isolation env; the copy's path."""
    root = Path(tempfile.mkdtemp(prefix="harness-svc-", dir=parent))
    try:
        dirs = {
            "HOME": root / "home",
            "TMPDIR": root / "tmp",
            "XDG_CONFIG_HOME": root / "xdg" / "config",
            "XDG_CACHE_HOME": root / "xdg" / "cache",
            "XDG_DATA_HOME": root / "xdg" / "data",
            "XDG_STATE_HOME": root / "xdg" / "state",
            "XDG_RUNTIME_DIR": root / "xdg" / "runtime",
        }
        for path in dirs.values():
            path.mkdir(parents=True, mode=0o700)
        data = None
        if data_src is not None:
            if data_src.is_dir():
                data = Path(shutil.copytree(data_src, root / "data"))
            else:
                (root / "data").mkdir()
                data = Path(shutil.copy2(data_src, root / "data" / data_src.name))
    except BaseException:
        _remove_tree(root)
        raise
    env = {name: str(path) for name, path in dirs.items()}
    # No __pycache__ written into the checked-out worktree (it must stay as git made it), and no
    # block-buffered stdout, so the log tail of a crash holds its last words.
    env |= {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"}
    return root, env, data


def _data_source(spec: ServiceConfig, worktree: Path) -> Path | None:
    if spec.data is None:
        return None
    src = Path(spec.data) if Path(spec.data).is_absolute() else worktree / spec.data
    if not src.exists():
        why = f"{src} does not exist (a relative path is taken from the ref's worktree)"
        raise ConfigError("service: no data to copy for each boot", [_problem("data", why)])
    return src


def _remove_tree(path: Path) -> None:
    """Remove `path`, making read-only parts writable; best effort (it lives under a temp dir)."""

    def chmod_and_retry(func: Callable[[str], object], failed: str, _exc: object) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(failed), 0o700)
            os.chmod(failed, 0o700)
            func(failed)

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=chmod_and_retry)
    else:
        shutil.rmtree(path, onerror=chmod_and_retry)


def free_port() -> int:
    """A port on 127.0.0.1 that was free a moment ago (the caller must handle losing it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --------------------------------------------------------------------------- logs and processes


def _log_text(path: Path, start: int) -> str:
    with open(path, "rb") as log:
        log.seek(max(start, log.seek(0, os.SEEK_END) - 65536))
        return log.read().decode("utf-8", "replace")


def log_tail(path: Path, start: int = 0, lines: int = LOG_TAIL_LINES) -> tuple[str, ...]:
    """The last `lines` lines written to `path` after byte offset `start`, indented."""
    return tuple(f"  | {line}" for line in _log_text(path, start).splitlines()[-lines:])


def _spawn(
    command: str, *, cwd: Path, env: Mapping[str, str], log_path: Path, header: str
) -> tuple[subprocess.Popen[bytes], int]:
    """Start `/bin/sh -c command` in a new session; return it and the log offset of its output."""
    with open(log_path, "ab") as log:
        log.write(f"--- harness: {header}: {command}\n".encode())
        log.flush()
        start = log.tell()
        proc = subprocess.Popen(
            [_SHELL, "-c", command],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return proc, start


def _exit_status(pid: int) -> int | None:
    """The exit status of our child `pid` if it has ended, WITHOUT reaping it: while it is a
    zombie its pid (and so its process group id) cannot be reused, so signalling the group can
    never hit a stranger. Negative = killed by that signal."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return None
    if info is None or info.si_pid == 0:
        return None
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


def _alive(proc: psutil.Process) -> bool:
    """Running and not a zombie (a zombie holds no resources; init or we will reap it)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def find_marked(run_id: str) -> list[psutil.Process]:
    """Every live process of our uid whose environment carries MARKER_ENV=run_id."""
    found = []
    for proc in psutil.process_iter(["uids"]):
        uids = proc.info.get("uids")
        if uids is None or uids.real != os.getuid() or proc.pid == os.getpid():
            continue
        try:
            if proc.environ().get(MARKER_ENV) == run_id and _alive(proc):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _signal(proc: psutil.Process, sig: signal.Signals) -> None:
    with contextlib.suppress(psutil.Error):  # gone meanwhile, or never ours
        proc.send_signal(sig)


class _ProcessTree:
    """Every process one boot started, found three ways: the leader (our child, never reaped
    before the end), its descendants (walked while alive: at ready, before SIGTERM, before each
    SIGKILL), and any process carrying MARKER_ENV=run_id (orphans re-parented to init, daemons
    that called setsid(), leftovers of prepare commands)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.leader: subprocess.Popen[bytes] | None = None
        self.tracked: dict[int, psutil.Process] = {}

    def collect(self) -> list[psutil.Process]:
        """Track every process found now; return the live ones."""
        roots = list(self.tracked.values())
        if self.leader is not None:
            with contextlib.suppress(psutil.Error):
                roots.append(psutil.Process(self.leader.pid))
        found = [*roots, *find_marked(self.run_id)]
        for proc in list(found):
            with contextlib.suppress(psutil.Error):
                found += proc.children(recursive=True)
        for proc in found:
            self.tracked.setdefault(proc.pid, proc)
        return [p for p in self.tracked.values() if _alive(p)]

    def _wait_gone(self, timeout: float, poll: float) -> list[psutil.Process]:
        deadline = time.monotonic() + timeout
        while (
            live := [p for p in self.tracked.values() if _alive(p)]
        ) and time.monotonic() < deadline:
            time.sleep(poll)
        return live

    def _signal_all(self, live: list[psutil.Process], sig: signal.Signals) -> None:
        if self.leader is not None:  # the group: also reaches members we have not seen
            with contextlib.suppress(OSError):
                os.killpg(self.leader.pid, sig)
        for proc in live:
            _signal(proc, sig)

    def stop(self, stop_timeout: float, limits: ServiceLimits) -> TeardownReport:
        """SIGTERM to the group and to every tracked process, up to `stop_timeout` s of grace,
        then rounds of (collect again, SIGKILL the group and every live process, wait
        `kill_wait`); finally reap the leader. Confirmed only when nothing tracked is alive."""
        t0 = time.monotonic()
        early = None if self.leader is None else _exit_status(self.leader.pid)
        live = self.collect()
        ended = {p.pid for p in live}
        self._signal_all(live, signal.SIGTERM)
        self._signal_all(live, signal.SIGCONT)  # a stopped process acts on SIGTERM once resumed
        self._wait_gone(stop_timeout, limits.poll_interval)
        used_sigkill = False
        survivors = self.collect()
        for _ in range(limits.kill_rounds):
            if not survivors:
                break
            used_sigkill = True
            ended |= {p.pid for p in survivors}
            self._signal_all(survivors, signal.SIGKILL)
            self._wait_gone(limits.kill_wait, limits.poll_interval)
            survivors = self.collect()
        status = None
        if self.leader is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                status = self.leader.wait(timeout=limits.kill_wait if survivors else None)
        return TeardownReport(
            confirmed=not survivors,
            killed_pids=tuple(sorted(ended)),
            used_sigkill=used_sigkill,
            seconds=time.monotonic() - t0,
            survivors=tuple(sorted(p.pid for p in survivors)),
            exit_status=status,
            died_before_teardown=early is not None,
        )


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP for the block (a second Ctrl-C must not cut a teardown short);
    they are re-raised as soon as it ends.

    Python-level handlers are swapped for a recorder rather than blocking the signals with
    pthread_sigmask: a mask is per thread, so with any other thread alive the kernel would deliver
    the signal there and the main thread would still raise KeyboardInterrupt mid-teardown.
    Handlers can only be set from the main thread; elsewhere the block runs unguarded.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []

    def record(signum: int, frame: object) -> None:
        pending.append(signum)

    old = {sig: signal.signal(sig, record) for sig in _DEFERRED_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        for signum in dict.fromkeys(pending):
            signal.raise_signal(signum)


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
        extra_env: Mapping[str, str] = _NO_ENV,
        environ: Mapping[str, str] | None = None,
        temp_parent: Path | None = None,
        limits: ServiceLimits = ServiceLimits(),  # frozen, so one shared default is safe
        on_teardown: Callable[[TeardownReport], None] | None = None,
    ) -> None:
        self.spec = spec
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
        self._tree: _ProcessTree | None = None
        self._root: Path | None = None
        self._entered = False

    def __enter__(self) -> RunningService:
        if self._entered:
            raise RuntimeError("a ServiceContext boots once; call running_service() again")
        self._entered = True
        check_placeholders(self.spec)
        data_src = _data_source(self.spec, self.worktree)
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
            error = _unconfirmed(report, self.run_id)
            if exc is None:
                raise error
            exc.add_note(str(error))

    def _boot(self, attempt: int, data_src: Path | None) -> RunningService:
        spec, limits = self.spec, self.limits
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        self._tree = _ProcessTree(self.run_id)
        self._root, isolation, data = _make_root(self.temp_parent, data_src)
        try:
            raw = {
                "port": str(port),
                "url": url,
                "home": isolation["HOME"],
                "worktree": str(self.worktree),
                "python": sys.executable,
            }
            if data is not None:
                raw["data"] = str(data)
            quoted = {name: shlex.quote(value) for name, value in raw.items()}
            pins = {
                name: expand_placeholders(value, raw, key=f"env.{name}")
                for name, value in spec.env.items()
            }
            env = build_env(
                os.environ if self.environ is None else self.environ,
                isolation=isolation,
                pass_env=spec.pass_env,
                extra=self.extra_env,
                pins=pins,
                run_id=self.run_id,
            )
            command = expand_placeholders(spec.start, quoted, key="start")
            t0 = time.monotonic()
            header = f"boot attempt {attempt} of {limits.port_attempts} on {url}"
            leader, log_start = _spawn(
                command, cwd=self.worktree, env=env, log_path=self.log_path, header=header
            )
            self._tree.leader = leader
            status = self._wait_ready(leader.pid, url + _path(spec.ready), t0, log_start)
            if status is not None:
                text = _log_text(self.log_path, log_start)
                taken = any(s in text.lower() for s in _PORT_IN_USE)
                if taken and attempt < limits.port_attempts:
                    raise _PortTaken()
                why = f"; its port was taken on each of {attempt} attempts" if taken else ""
                raise self._failure(
                    f"service exited at boot with status {status}{why} (start: {command!r})",
                    log_start,
                    "fix the start command, or run it by hand in the worktree to see why",
                )
            boot_seconds = time.monotonic() - t0
            self._tree.collect()
            t1 = time.monotonic()
            for i, cmd in enumerate(spec.prepare):
                self._prepare(expand_placeholders(cmd, quoted, key=f"prepare[{i}]"), i, env)
            return RunningService(
                url=url,
                port=port,
                pid=leader.pid,
                home=Path(isolation["HOME"]),
                data=data,
                log_path=self.log_path,
                boot_seconds=boot_seconds,
                prepare_seconds=time.monotonic() - t1,
                root=self._root,
                run_id=self.run_id,
            )
        except BaseException as exc:
            report = self._stop()
            if not report.confirmed:
                exc.add_note(str(_unconfirmed(report, self.run_id)))
            raise

    def _wait_ready(self, pid: int, ready_url: str, t0: float, log_start: int) -> int | None:
        """None once ready_url answers 2xx; the exit status if the service exits first."""
        deadline = t0 + self.spec.ready_timeout
        last = "no answer"
        with httpx.Client(trust_env=False) as client:  # no proxy from the caller's environment
            while True:
                status = _exit_status(pid)
                if status is not None:
                    return status
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self._failure(
                        f"service not ready after {self.spec.ready_timeout:g} s: GET {ready_url}"
                        f" gave {last} (raise service.ready_timeout if it is just slow)",
                        log_start,
                    )
                try:
                    answer = client.get(ready_url, timeout=min(self.limits.probe_timeout, left))
                    if answer.is_success:
                        # A stranger that took the port could answer while ours is dying.
                        return _exit_status(pid)
                    last = f"HTTP {answer.status_code}"
                except httpx.TransportError as exc:
                    last = type(exc).__name__
                time.sleep(max(0.0, min(self.limits.poll_interval, deadline - time.monotonic())))

    def _prepare(self, command: str, index: int, env: Mapping[str, str]) -> None:
        timeout = self.spec.prepare_timeout
        proc, log_start = _spawn(
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
                f"prepare command {command!r} did not finish within {timeout:g} s "
                "(raise service.prepare_timeout)",
                log_start,
            ) from None
        if status != 0:
            raise self._failure(
                f"prepare command {command!r} failed with exit status {status}",
                log_start,
                "run it by hand in the worktree against a booted service to see why",
            )

    def _failure(self, message: str, log_start: int, *hints: str) -> ServiceError:
        tail = log_tail(self.log_path, log_start)
        return ServiceError(message, [f"last lines of {self.log_path}:", *tail, *hints])

    def _stop(self) -> TeardownReport:
        with _signals_deferred():
            tree, self._tree = self._tree, None
            report = (tree or _ProcessTree(self.run_id)).stop(self.spec.stop_timeout, self.limits)
            if self._root is not None:
                _remove_tree(self._root)
                self._root = None
        self.teardown = report
        if self.on_teardown is not None:
            self.on_teardown(report)
        return report


def running_service(
    spec: ServiceConfig,
    worktree: Path,
    *,
    log_path: Path,
    extra_env: Mapping[str, str] = _NO_ENV,
    environ: Mapping[str, str] | None = None,
    temp_parent: Path | None = None,
    limits: ServiceLimits = ServiceLimits(),  # frozen, so one shared default is safe
    on_teardown: Callable[[TeardownReport], None] | None = None,
) -> ServiceContext:
    """Boot `spec.start` from `worktree` in isolation; see the module docstring for each step.

    `extra_env` is layered over the allowlisted environment (the build stage's venv); `environ`
    stands in for os.environ; throwaway roots go under `temp_parent` (default: the system temp
    dir). The returned context's `teardown`, and `on_teardown`, give the TeardownReport.
    Raises ConfigError (bad placeholder, missing data) before anything starts, ServiceError when
    the service exits at boot, is not ready in time, a prepare command fails, or it cannot be
    killed.
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
    )


def _path(ready: str) -> str:
    return ready if ready.startswith("/") else "/" + ready


def _unconfirmed(report: TeardownReport, run_id: str) -> ServiceError:
    pids = " ".join(str(p) for p in report.survivors)
    return ServiceError(
        f"service teardown not confirmed: pids {pids} still running after SIGKILL",
        [
            f"they carry {MARKER_ENV}={run_id} in their environment; end them by hand "
            f"(kill -9 {pids}) and check for processes stuck in uninterruptible sleep (ps -o stat)"
        ],
    )


# --------------------------------------------------------------------------- signals


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP reached the harness: unwinds like Ctrl-C, so every `finally` (and every
    service teardown) runs. `signum` says which; a CLI exits 128 + signum."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"received {signal.Signals(signum).name}")
        self.signum = signum


def install_signal_handlers() -> Callable[[], None]:
    """Make SIGTERM and SIGHUP raise Terminated in the main thread; return a function that puts
    the previous handlers back. Python's default for SIGTERM is to die on the spot, skipping
    every `finally`: the services booted in their own sessions would be left running. SIGINT
    already raises KeyboardInterrupt. Call from the main thread (signal.signal's rule)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Terminated(signum)

    previous: dict[signal.Signals, Any] = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        previous[sig] = signal.signal(sig, handler)

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, signal.SIG_DFL if old is None else old)

    return restore


@contextlib.contextmanager
def signals_unwind() -> Iterator[None]:
    """`install_signal_handlers()` for the duration of a with-block."""
    restore = install_signal_handlers()
    try:
        yield
    finally:
        restore()

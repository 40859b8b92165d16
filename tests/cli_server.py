"""The CLI run as a user runs it, less the interpreter's start: a fork server per test process.

A command a test runs (`harness ...`, `compare ...`, `python -m harness.cli.main ...`) is a
process of its own, with its own pid, working directory, environment, stdin, stdout and stderr
pipes, exit status and process tree, as `subprocess.run` gives.  What this saves is the part no
test is about: starting Python and importing numpy and harness again for each of the suite's
~600 commands (0.1-0.2 CPU-s each; the inner loop is CPU-bound on 2 cores).

    run(entry, args, cwd=..., env=..., timeout=...) -> subprocess.CompletedProcess[str]

How: a server process, started once per test process and per startup environment (below), has
imported numpy (OpenBLAS on one thread, as harness.cli.main does) and every harness module, and
waits on a Unix socket.  For each request it forks a monitor, which forks the command: that
process takes the request's pipes as fds 0-2 (its sys.stdout and sys.stderr, made at the
server's start for those fds, write into them), its cwd and its whole environment (os.environ,
and so every process it starts), then runs the console script's function as the script does and
leaves with its exit status (atexit handlers run, stdio flushed).  The monitor waits for it and
sends the wait status back; the client kills it on timeout, as `subprocess.run` does.

What a fork cannot give is a fresh interpreter: what Python reads only as it starts.  So the
server is started with the request's locale and stdio variables (LANG, LC_*, PYTHONIOENCODING,
PYTHONUTF8, PYTHONUNBUFFERED: one server per distinct set), and a request whose other PYTHON*
variables differ from the test process's own (PYTHONPATH with a blocker, PYTHONWARNINGS, ...)
runs in a fresh process instead, as does every request when HARNESS_TEST_FRESH_CLI=1 (in the
test process's environment or the request's).  /proc/PID/environ, too, is what the process was
started with: the server's.  A test whose service reads its ancestors' environment there
(tests/base/test_scrub.py's leaky service) asks for a fresh process.  Tests
about what a command imports (tests/cli/test_cli_startup.py) start their processes themselves.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

ENTRIES = {
    "harness": "harness.cli.main:main",
    "compare": "harness.cli.main:compare_main",
    "-m harness.cli.main": "harness.cli.main:main",
}
FRESH = "HARNESS_TEST_FRESH_CLI"
# Read by Python only as it starts: the server is started with the request's values.
STARTUP = ("LANG", "LANGUAGE", "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONUNBUFFERED")
# Set in the command's process itself before anything reads them.
AT_RUN = ("PYTHONDONTWRITEBYTECODE",)


def _read_at_start(name: str) -> bool:
    return name in STARTUP or name.startswith("LC_")


def argv(entry: str, args: Sequence[str | Path]) -> list[str]:
    """What a fresh process would run: the console script next to this interpreter, or
    `python -m harness.cli.main`."""
    if entry == "-m harness.cli.main":
        return [sys.executable, "-m", "harness.cli.main", *map(str, args)]
    return [str(Path(sys.executable).parent / entry), *map(str, args)]


def run(
    entry: str,
    args: Sequence[str | Path],
    *,
    cwd: Path | str,
    env: Mapping[str, str],
    timeout: float,
    limits: Mapping[str, int] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`subprocess.run(argv(entry, args), cwd=cwd, env=env, capture_output=True, text=True,
    timeout=timeout, check=False)`, forked from a server when the environment allows it.
    `limits`: resource limits the command's process sets on itself before it runs, by name
    ("RLIMIT_AS": bytes), as a `preexec_fn` calling `resource.setrlimit` would."""
    cmd = argv(entry, args)
    limits = dict(limits or {})
    key = _startup_key(env)
    if key is None:
        def preexec() -> None:
            _set_limits(limits)

        return subprocess.run(
            cmd, cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout,
            check=False, preexec_fn=preexec if limits else None,
        )
    server = _server(key)
    return server.run(entry, cmd, cwd=str(cwd), env=dict(env), timeout=timeout, limits=limits)


def _set_limits(limits: Mapping[str, int]) -> None:
    import resource

    for name, value in limits.items():
        resource.setrlimit(getattr(resource, name), (value, value))


def _startup_key(env: Mapping[str, str]) -> tuple[tuple[str, str], ...] | None:
    """The startup variables a server must be started with, or None: run this one fresh."""
    if os.environ.get(FRESH) or env.get(FRESH):
        return None
    own = {k: v for k, v in os.environ.items() if k.startswith("PYTHON")}
    theirs = {k: v for k, v in env.items() if k.startswith("PYTHON")}
    for name in (*STARTUP, *AT_RUN):
        own.pop(name, None)
        theirs.pop(name, None)
    if own != theirs:
        return None
    return tuple(sorted((k, v) for k, v in env.items() if _read_at_start(k)))


_servers: dict[tuple[tuple[str, str], ...], _Server] = {}
_lock = threading.Lock()


@atexit.register
def _stop_servers() -> None:
    """At this process's end: close each server's pipe (it removes its folder and exits) and
    reap it."""
    for server in _servers.values():
        server.stop()


def _server(key: tuple[tuple[str, str], ...]) -> _Server:
    with _lock:
        server = _servers.get(key)
        if server is None or not server.alive():
            server = _servers[key] = _Server(key)
        return server


class _Server:
    def __init__(self, key: tuple[tuple[str, str], ...]) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="harness-cli-server-"))
        self.address = str(self.folder / "socket")
        env = {k: v for k, v in os.environ.items() if not _read_at_start(k)}
        env.update(key)
        # stdin a pipe this process holds: the server ends when it closes (this process ends).
        self.process = subprocess.Popen(
            [sys.executable, __file__, self.address],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env=env,
        )
        deadline = time.monotonic() + 120
        while not os.path.exists(self.address):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the CLI fork server did not start ({self.process.returncode})")
            time.sleep(0.01)

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def run(
        self,
        entry: str,
        cmd: list[str],
        *,
        cwd: str,
        env: dict[str, str],
        timeout: float,
        limits: dict[str, int],
    ) -> subprocess.CompletedProcess[str]:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        request = json.dumps(
            {"entry": entry, "argv": cmd, "cwd": cwd, "env": env, "limits": limits}
        ).encode()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(self.address)
            try:
                socket.send_fds(conn, [b"F"], [out_w, err_w])  # one byte, the fds with it
            finally:
                os.close(out_w)
                os.close(err_w)
            conn.sendall(len(request).to_bytes(8, "big") + request)
            reply = conn.makefile("rb")
            pid = int(reply.readline())
            deadline = time.monotonic() + timeout
            outputs = _read_until_eof({out_r: bytearray(), err_r: bytearray()}, deadline)
            if outputs is None:
                _kill(pid)
                stdout, stderr = (_text(b) for b in _drain(out_r, err_r))
                raise subprocess.TimeoutExpired(cmd, timeout, stdout, stderr)
            conn.settimeout(max(1.0, deadline - time.monotonic()))
            try:
                status = int(reply.readline())
            except TimeoutError:
                _kill(pid)
                raise subprocess.TimeoutExpired(cmd, timeout) from None
        stdout, stderr = (_text(outputs[fd]) for fd in (out_r, err_r))
        return subprocess.CompletedProcess(cmd, os.waitstatus_to_exitcode(status), stdout, stderr)


def _read_until_eof(buffers: dict[int, bytearray], deadline: float) -> dict[int, bytearray] | None:
    """Both pipes read to their end (the command and every process holding them gone), or None
    at the deadline (the pipes left open)."""
    with selectors.DefaultSelector() as selector:
        for fd in buffers:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            for key, _ in selector.select(left):
                chunk = os.read(key.fd, 65536)
                if chunk:
                    buffers[key.fd] += chunk
                else:
                    selector.unregister(key.fd)
                    os.close(key.fd)
    return buffers


def _drain(*fds: int) -> list[bytes]:
    found = []
    for fd in fds:
        try:
            os.set_blocking(fd, False)
            data = b""
            while chunk := os.read(fd, 65536):
                data += chunk
        except (BlockingIOError, OSError):
            pass
        found.append(data)
    return found


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _text(data: bytes | bytearray) -> str:
    """As `subprocess.run(text=True)` decodes: the locale's encoding, universal newlines."""
    import locale

    text = bytes(data).decode(locale.getpreferredencoding(False))
    return text.replace("\r\n", "\n").replace("\r", "\n")


# --------------------------------------------------------------------------- the server


def _serve(address: str) -> None:
    """Serve until the test process is gone (the pipe on stdin closed), then remove the
    socket's folder."""
    try:
        _preload()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(address + ".new")
        listener.listen(64)
        os.rename(address + ".new", address)  # the client waits for this name: listening by then
        with selectors.DefaultSelector() as selector:
            selector.register(listener, selectors.EVENT_READ)
            selector.register(sys.stdin.fileno(), selectors.EVENT_READ)
            while _serving(selector, listener):
                _reap()
    finally:
        shutil.rmtree(os.path.dirname(address), ignore_errors=True)


def _serving(selector: selectors.BaseSelector, listener: socket.socket) -> bool:
    """One wait (at most a second) for requests; False when the test process is gone."""
    for key, _ in selector.select(1.0):
        if key.fileobj is not listener:
            return False
        conn, _ = listener.accept()
        _fork_monitor(listener, conn)
    return True


def _preload() -> None:
    """numpy as harness.cli.main imports it (OpenBLAS on one thread), then every harness
    module, so that no command imports one again."""
    import importlib
    import pkgutil

    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]
    import harness

    for module in pkgutil.walk_packages(harness.__path__, "harness."):
        if module.name.endswith("__main__") or module.name == "harness.demo.svc":
            continue
        with contextlib.suppress(Exception):  # an extra not installed: the command says so
            importlib.import_module(module.name)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _fork_monitor(listener: socket.socket, conn: socket.socket) -> None:
    _, fds, _, _ = socket.recv_fds(conn, 1, 2)
    size = int.from_bytes(_exactly(conn, 8), "big")
    request = json.loads(_exactly(conn, size))
    if os.fork() == 0:  # the monitor
        try:
            listener.close()
            pid = os.fork()
            if pid == 0:
                conn.close()
                _command(request, fds)  # never returns
            for fd in fds:
                os.close(fd)
            conn.sendall(f"{pid}\n".encode())
            _, status = os.waitpid(pid, 0)
            conn.sendall(f"{status}\n".encode())
        finally:
            os._exit(0)
    for fd in fds:
        os.close(fd)
    conn.close()


def _exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise EOFError("the client went away")
        data += chunk
    return data


def _command(request: dict[str, object], fds: list[int]) -> None:
    """Become the command: its fds, cwd, environment and argv; run the script's function; exit
    as the interpreter would."""
    import importlib

    code: object = 1
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for fd in (null, *fds):
            os.close(fd)
        os.chdir(str(request["cwd"]))
        env = request["env"]
        assert isinstance(env, dict)
        os.environ.clear()
        os.environ.update(env)
        sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
        tempfile.tempdir = None  # TMPDIR is read again
        limits = request["limits"]
        assert isinstance(limits, dict)
        _set_limits(limits)
        argv = request["argv"]
        assert isinstance(argv, list)
        entry = str(request["entry"])
        module, _, name = ENTRIES[entry].partition(":")
        loaded = importlib.import_module(module)
        function = getattr(loaded, name)
        # `python -m M` has M's file as argv[0]; a console script its own path.
        ran_as_module = entry.startswith("-m ")
        first = 3 if ran_as_module else 1
        sys.argv = [loaded.__file__ if ran_as_module else argv[0], *argv[first:]]
        try:
            code = function()
        except SystemExit as exc:
            code = exc.code
        except KeyboardInterrupt:
            # An uncaught Ctrl-C: Python ends by the signal itself.
            sys.stdout.flush()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        except BaseException:
            sys.excepthook(*sys.exc_info())
            code = 1
        atexit._run_exitfuncs()
    except BaseException:  # the harness of this file failed, not the command: say so
        import traceback

        traceback.print_exc()
        code = 70
    finally:
        status = _status(code)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                status = 120
        os._exit(status)


def _status(code: object) -> int:
    """`sys.exit(code)`'s exit status."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    _serve(sys.argv[1])

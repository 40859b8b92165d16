"""The one harness process inside a boot's sandbox: it starts the service and hands the harness
sockets made in the sandbox's network namespace.

    python -I inside.py FD /bin/sh -c START      # argv as bubblewrap runs it

Standard library only, and run by path with `-I`: inside the sandbox the harness's own packages
(or the user's site-packages) may be hidden with the real home.

FD is this end of a SOCK_SEQPACKET socketpair whose other end the harness holds
(`harness.boot.sandbox.SandboxLink`). Requests, one message each, served in order:

    b"S" [+ N as ASCII digits] -> b"S" carrying one fd (N fds, at most MAX_SOCKETS) (SCM_RIGHTS):
                                  fresh, unconnected TCP sockets of this network namespace; the
                                  harness connects each to 127.0.0.1:PORT from its own side,
                                  with its own timeout
    b"P" + JSON {cmd, timeout} -> b"P" + JSON {status}: `/bin/sh -c cmd` run to completion (its
                                  process group SIGKILLed after `timeout` s, status null); the
                                  service's environment, cwd and log

A socket belongs to the namespace it was created in, whichever process or thread later uses it,
so nothing relays the timed requests: the harness's connections are direct loopback TCP. The
service's exit status is this process's (128 + N for a signal); SIGTERM is passed on to it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

MAX_SOCKETS = 64  # sockets in one answer (SCM_RIGHTS carries at most 253 fds)


def _serve(link: socket.socket, env_cwd: tuple[dict[str, str], str]) -> None:
    env, cwd = env_cwd
    while True:
        try:
            message = link.recv(1 << 16)
        except OSError:
            return
        if not message:
            return  # the harness closed its end
        if message[:1] == b"S":
            count = int(message[1:]) if message[1:].isdigit() else 1
            made = [
                socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                for _ in range(max(1, min(count, MAX_SOCKETS)))
            ]
            try:
                socket.send_fds(link, [b"S"], [sock.fileno() for sock in made])
            finally:
                for sock in made:
                    sock.close()
        elif message[:1] == b"P":
            request = json.loads(message[1:])
            proc = subprocess.Popen(
                ["/bin/sh", "-c", request["cmd"]],
                env=env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            try:
                status: int | None = proc.wait(timeout=request["timeout"])
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                status = None
            link.send(b"P" + json.dumps({"status": status}).encode())


DRAIN_S = 60.0  # the longest a SIGTERM waits here for the service to finish (the harness
# SIGKILLs what outlives its own stop_timeout well before)


def _others() -> list[int]:
    """The processes of this PID namespace other than its init (bwrap, pid 1) and this one
    that are not zombies: what is still running of the service."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, os.getpid()):
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                state = handle.read().rpartition(b")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if state != b"Z":
            found.append(int(name))
    return found


def _drain(deadline: float) -> None:
    """After a SIGTERM: wait until every process of the service has exited (or `deadline`).
    This process ending ends bwrap, and with it the namespace, whose every process the kernel
    then SIGKILLs: a service still in its SIGTERM handler (the `/bin/sh -c` around it gone at
    once) would never finish it."""
    while _others() and time.monotonic() < deadline:
        time.sleep(0.02)


def main(argv: list[str]) -> int:
    link = socket.socket(fileno=int(argv[1]))
    child = subprocess.Popen(argv[2:], stdin=subprocess.DEVNULL)
    terminated = threading.Event()

    def forward(signum: int, frame: object) -> None:
        terminated.set()
        child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    server = threading.Thread(target=_serve, args=(link, (dict(os.environ), os.getcwd())))
    server.daemon = True
    server.start()
    status = child.wait()
    if terminated.is_set():  # a teardown: the service's processes finish first
        _drain(time.monotonic() + DRAIN_S)
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""The one harness process inside a boot's sandbox: it starts the service and hands the harness
sockets made in the sandbox's network namespace.

    python -I inside.py FD SETTINGS /bin/sh -c START      # argv as bubblewrap runs it

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

SETTINGS (JSON, `confinement_settings`) is what this process does before anything else, while it
still may: make each of `dirs` (HOME, TMPDIR, the XDG_* folders: fresh tmpfs the sandbox mounted)
with mode 0700; set RLIMIT_NPROC to `nproc` (the service's processes and threads, counted in its
user namespace, or for its own uid); and, with `uid` set (the harness runs as root, and bwrap
handed this process CAP_SETUID, CAP_SETGID, CAP_CHOWN and CAP_SETPCAP only), give `dirs` to that
uid, empty the capability bounding and ambient sets, and become that uid and gid with no
supplementary group and no capability left. So the service, and the prepare commands run from
here, are never uid 0 of the host: the kernel's settings under /proc/sys check that uid alone,
and root-only files (/etc/shadow, a 0600 file of root's) check it first. A step that fails ends
this process before the service starts (status 125 and a line in the log).

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
from typing import Any

MAX_SOCKETS = 64  # sockets in one answer (SCM_RIGHTS carries at most 253 fds)
CONFINE_FAILED = 125  # this process's status when it could not confine the service

_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAP_VERSION_3 = 0x20080522


def _become(uid: int, gid: int) -> None:
    """Empty the bounding set while CAP_SETPCAP is held, take the ids (the kernel clears the
    permitted and effective sets once every uid leaves 0), then clear what is left (ambient,
    inheritable): nothing this process or what it starts holds or can regain."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    with open("/proc/sys/kernel/cap_last_cap") as handle:
        last = int(handle.read())
    for cap in range(last + 1):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), f"prctl(PR_CAPBSET_DROP, {cap})")
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)

    class Header(ctypes.Structure):
        _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))

    class Data(ctypes.Structure):
        _fields_ = (("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32))  # fmt: skip

    if libc.capset(ctypes.byref(Header(_CAP_VERSION_3, 0)), (Data * 2)()) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def confine(settings: dict[str, Any]) -> None:
    """Apply SETTINGS (the module docstring); raise OSError when a step fails."""
    import resource

    uid, gid = settings.get("uid"), settings.get("gid")
    ids = (int(uid), int(gid)) if uid is not None and gid is not None else None
    for folder in settings.get("dirs", ()):
        os.makedirs(folder, mode=0o700, exist_ok=True)
        if ids is not None:
            os.chown(folder, *ids)
    if settings.get("nproc") is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (settings["nproc"], settings["nproc"]))
    if ids is not None:
        _become(*ids)


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
    try:
        confine(json.loads(argv[2]))
    except (OSError, ValueError) as exc:
        print(f"harness: the sandbox could not confine the service: {exc}", file=sys.stderr)
        return CONFINE_FAILED
    child = subprocess.Popen(argv[3:], stdin=subprocess.DEVNULL)
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

"""The sandbox of one boot: bubblewrap when it works here, the plain isolation otherwise.

    mode = sandbox_mode()                       # "bubblewrap" or "plain" (one warning line)
    link = SandboxLink()                        # the harness's way into the sandbox
    argv = bwrap_prefix(link.child_fd, root=root, worktree=wt, readable=[venv])
    spawn(command, ..., prefix=argv, pass_fds=(link.child_fd,)); link.started()
    link.open_socket()                          # a TCP socket of the service's network namespace
    transport_for(link.open_socket, limits)     # an httpx transport whose connections use it

In bubblewrap mode (`bwrap`, Debian package bubblewrap) each boot gets:

- its own network namespace with only loopback: a service binding 0.0.0.0 is reachable from
  nowhere else, and every outbound connection (another loopback address of the host included)
  fails;
- its own PID namespace, --die-with-parent and a new session: every process of the boot, a
  double-forked daemon with a cleared environment included, ends when the boot ends, and when
  the harness itself is SIGKILLed (the namespace's init goes, and the kernel kills the rest);
- no capability, root or not (`_CONFINEMENTS`: a user namespace, an empty bounding set,
  no_new_privs, no further user namespace), so no mount, umount, mknod, module or raw socket;
- a read-only view of the filesystem but for the boot's throwaway root (HOME, TMPDIR, XDG_*,
  the data copy); service.data used in place (`data_mode = "read-only"`, the default for data
  outside the repository) bound read-only where it lies, never copied; the host's socket and
  secret folders (/tmp, /var, /run, the real home) are empty read-only tmpfs, with the
  worktree, the build's venv, the service's interpreter and the Python running the harness
  mounted back read-only where they lie inside them
  (`harness.boot.mounts`); /dev/null lies over every other listening host socket.

The harness reaches the service without a relay: `harness.boot.inside`, the sandbox's first
process, creates TCP sockets in the namespace and passes them over a socketpair (SCM_RIGHTS); the
harness connects them to 127.0.0.1:PORT itself, so a timed request is plain loopback TCP.
Unlike `setns`, this needs no privilege: it works for root and for an unprivileged user alike.

Plain mode (HARNESS_SANDBOX=off, or bwrap missing, or user namespaces disabled): the
`harness.boot.isolation` environment and throwaway root only; see the README for what that does
not contain.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.boot import inside, seccomp
from harness.boot.mounts import Mounts, own_paths, plan
from harness.boot.probe import OpenSocket

if TYPE_CHECKING:
    import httpx

BUBBLEWRAP = "bubblewrap"
PLAIN = "plain"
SANDBOX_ENV = "HARNESS_SANDBOX"
"""`off` forces plain isolation; anything else (or unset) uses bubblewrap when it works."""

DEFAULT_MAX_PROCESSES = 4096  # service.max_processes's default
PROBE_TIMEOUT_S = 10.0  # one `bwrap ... true`, once per harness process
LINK_TIMEOUT_S = 10.0  # the sandbox's helper answering one socket request


_NAMESPACES = (
    "--unshare-net",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--die-with-parent",
    "--new-session",
)


# How a sandbox is confined, strongest first; the first that runs here is used.
#
# Run as root, bwrap maps the service's uid 0 through to the host's (a user namespace owned by
# root is no barrier), and the kernel lets uid 0 write its settings under /proc/sys and read
# root-only files whatever the capabilities. So as root the sandbox is made without a user
# namespace, its first process keeps only what it needs to leave uid 0 (`_AS_ROOT`: the ids,
# chown and bounding set, and to reach the folders it makes), and
# `harness.boot.inside.confine` makes it a uid of its own (`service_ids`) before the service
# starts: no capability, no bounding set, no uid 0. Where that cannot run (no CAP_SYS_ADMIN in a
# container), the user-namespace tiers follow: the service is then uid 0 without capabilities,
# /proc/sys read-only, and the report says so (`runs_as_root`).
#
# Not root: a user namespace (the service keeps the invoker's uid, with no capability and an
# empty bounding set) and no further user namespace inside it; then, for an older bwrap without
# --disable-userns or a root whose user namespaces are disabled, the capabilities dropped alone.
_AS_ROOT = (
    "--cap-drop", "ALL",
    "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
    "--cap-add", "CAP_CHOWN", "--cap-add", "CAP_SETPCAP",
    "--cap-add", "CAP_DAC_OVERRIDE",  # to make its folders in a root that is the service's
)  # fmt: skip
_CONFINEMENTS = (
    ("--unshare-user", "--disable-userns", "--cap-drop", "ALL"),
    ("--unshare-user", "--cap-drop", "ALL"),
    ("--cap-drop", "ALL"),
)


def _tiers() -> tuple[tuple[str, ...], ...]:
    return (_AS_ROOT, *_CONFINEMENTS) if os.geteuid() == 0 else _CONFINEMENTS


@functools.cache
def _probe(bwrap: str | None) -> tuple[str | None, tuple[str, ...]]:
    """(why bubblewrap cannot sandbox a boot here or None, the confinement a trial sandbox ran
    with)."""
    if bwrap is None:
        return "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)", ()
    last = ""
    for confinement in _tiers():
        argv = [bwrap, *_NAMESPACES, *confinement, "--ro-bind", "/", "/", "--proc", "/proc"]
        argv += ["--ro-bind", "/proc/sys", "/proc/sys"]
        try:
            done = subprocess.run(
                [*argv, "--dev", "/dev", "true"],
                capture_output=True,
                text=True,
                timeout=PROBE_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bwrap did not run ({exc})", ()
        if done.returncode == 0:
            return None, confinement
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    return f"bwrap cannot create namespaces here ({last}; are user namespaces disabled?)", ()


def _userns_disabled() -> bool:
    """Whether bwrap itself forbids a further user namespace here (else `seccomp` does)."""
    return "--disable-userns" in _probe(shutil.which("bwrap"))[1]


def runs_as_root() -> bool:
    """Whether a sandboxed service is uid 0 of the host here: the harness is root and the
    sandbox could not be made so that its service leaves uid 0 (see `_AS_ROOT`)."""
    return os.geteuid() == 0 and _probe(shutil.which("bwrap"))[1] != _AS_ROOT


# A boot's own uid and gid (the harness run as root): one per boot, so that no two boots, and
# no process of the host, share its process count (RLIMIT_NPROC counts by uid) or its files.
_IDS_FROM = 0x3F000000  # far above any account's; below 2**31, which some tools read as signed
_IDS_SPAN = 0x00FFFFFF


def _mapped(path: str, wanted: int) -> bool:
    """Whether id `wanted` is mapped in this process's user namespace (a container's root
    may map only a few): /proc/self/uid_map or gid_map; True when the file cannot be read."""
    try:
        with open(path) as table:
            rows = [line.split() for line in table]
    except OSError:
        return True
    return any(int(first) <= wanted < int(first) + int(count) for first, _, count in rows)


def service_ids(run_id: str) -> tuple[int, int] | None:
    """(uid, gid) a sandboxed service of the boot `run_id` runs as when the harness is root;
    None when it keeps the invoker's (not root, or the sandbox cannot make it leave uid 0).
    Drawn from `run_id`; no account's, and mapped in this user namespace (else `nobody`'s)."""
    import grp
    import pwd

    if os.geteuid() != 0 or runs_as_root():
        return None
    offset = int(hashlib.sha256(run_id.encode()).hexdigest()[:12], 16)
    for step in range(64):
        uid = _IDS_FROM + (offset + step) % _IDS_SPAN
        try:
            pwd.getpwuid(uid)
            continue
        except KeyError:
            pass
        try:
            grp.getgrgid(uid)
            continue
        except KeyError:
            pass
        if _mapped("/proc/self/uid_map", uid) and _mapped("/proc/self/gid_map", uid):
            return uid, uid
        break
    try:
        nobody = pwd.getpwnam("nobody")
        return nobody.pw_uid, nobody.pw_gid
    except KeyError:
        return 65534, 65534


@functools.cache
def _warn_once(reason: str) -> None:
    print(
        f"harness: warning: no sandbox: {reason}; services run with plain isolation "
        "(their own environment and temp dirs, but the host's network, processes and files)",
        file=sys.stderr,
    )


@functools.cache
def _warn_root_once() -> None:
    print(
        "harness: warning: run as root, and bwrap cannot make a sandbox here without a user "
        "namespace (no CAP_SYS_ADMIN?): the service runs as uid 0 with no capability and a "
        "read-only /proc/sys, but may read root-only files; run harness as another user",
        file=sys.stderr,
    )


def sandbox_mode(environ: Mapping[str, str] | None = None) -> str:
    """BUBBLEWRAP when it can sandbox a boot here, else PLAIN (with a one-line warning to
    stderr, once per process, unless HARNESS_SANDBOX=off asked for it)."""
    environ = os.environ if environ is None else environ
    if environ.get(SANDBOX_ENV, "").lower() == "off":
        return PLAIN
    reason, _ = _probe(shutil.which("bwrap"))
    if reason is None:
        if runs_as_root():
            _warn_root_once()
        return BUBBLEWRAP
    _warn_once(reason)
    return PLAIN


@functools.lru_cache(maxsize=1)
def _harness_paths() -> tuple[Path, ...]:
    """The helper's folder and the Python running the harness, resolved once per process."""
    return own_paths(Path(inside.__file__).resolve())


@dataclass(frozen=True)
class Confine:
    """What the sandbox's first process does before the service starts
    (`harness.boot.inside.confine`): make `dirs` (its fresh tmpfs folders), limit the processes
    and threads to `max_processes`, and, with `ids`, become that uid and gid."""

    max_processes: int
    dirs: tuple[str, ...] = ()
    ids: tuple[int, int] | None = None

    def argument(self) -> str:
        uid, gid = self.ids if self.ids is not None else (None, None)
        return json.dumps(
            {"uid": uid, "gid": gid, "nproc": self.max_processes, "dirs": list(self.dirs)}
        )


def bwrap_prefix(
    child_fd: int,
    *,
    root: Path,
    worktree: Path,
    readable: Iterable[Path] = (),
    hide: Iterable[Path] | None = None,
    mounts: Mounts | None = None,
    confine: Confine | None = None,
    filter_fd: int | None = None,
) -> list[str]:
    """The argv before `/bin/sh -c START`: bwrap, its namespaces, confinement and mounts, then
    the helper and its `confine` settings. The mounts are `mounts`, else
    `harness.boot.mounts.plan` of the other arguments (the host's socket folders and each home
    in `hide`, default `homes()`, hidden; the worktree, `readable` and the Python running the
    harness mounted back; `root` writable). `filter_fd`: a seccomp program for bwrap
    (`harness.boot.seccomp`)."""
    if mounts is None:
        mounts = plan_mounts(root=root, worktree=worktree, readable=readable, hide=hide)
    confine = confine or Confine(max_processes=DEFAULT_MAX_PROCESSES)
    bwrap = shutil.which("bwrap")
    argv = [bwrap or "bwrap", *_NAMESPACES, *_probe(bwrap)[1], *mounts.argv()]
    if filter_fd is not None:
        argv += ["--seccomp", str(filter_fd)]
    argv += ["--chdir", str(worktree), "--"]
    helper = str(Path(inside.__file__).resolve())
    return [*argv, sys.executable, "-I", helper, str(child_fd), confine.argument()]


def plan_mounts(
    *,
    root: Path,
    worktree: Path,
    readable: Iterable[Path] = (),
    hide: Iterable[Path] | None = None,
    bound: Iterable[Path] = (),
    scratch: Iterable[Path] = (),
    scratch_bytes: int | None = None,
    files: Iterable[tuple[Path, Path]] = (),
) -> Mounts:
    """`harness.boot.mounts.plan` with the Python running the harness and the helper added;
    `bound`: service.data used in place, bound read-only where it lies; `scratch`: the root's
    folders made tmpfs of `scratch_bytes` (and /dev/shm); `files` bound read-only over."""
    both = [*readable, *_harness_paths()]
    return plan(
        root=root,
        worktree=worktree,
        readable=both,
        hide=hide,
        bound=bound,
        scratch=scratch,
        scratch_bytes=scratch_bytes,
        files=files,
    )


class SandboxLink:
    """The harness's end of a socketpair whose other end (`child_fd`, passed to the sandbox)
    `harness.boot.inside` serves. Thread-safe: one request at a time."""

    def __init__(self) -> None:
        self._ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._theirs: socket.socket | None = theirs
        self.child_fd = theirs.fileno()
        self._lock = threading.Lock()
        # The seccomp filter bwrap reads, where --disable-userns is not in the confinement.
        self.filter_fd = None if _userns_disabled() else seccomp.no_user_namespaces()

    @property
    def pass_fds(self) -> tuple[int, ...]:
        """What bwrap must inherit: the link's end and the filter."""
        return (self.child_fd,) if self.filter_fd is None else (self.child_fd, self.filter_fd)

    def started(self) -> None:
        """Close the sandbox's end here once the sandbox has it (so its exit reads as EOF)."""
        if self._theirs is not None:
            self._theirs.close()
            self._theirs = None
        if self.filter_fd is not None:
            os.close(self.filter_fd)
            self.filter_fd = None

    def _ask(self, message: bytes, timeout: float, fds: int = 1) -> tuple[bytes, list[int]]:
        with self._lock:
            self._ours.settimeout(timeout)
            try:
                self._ours.send(message)
                answer, got, _, _ = socket.recv_fds(self._ours, 1 << 16, fds)
            except OSError as exc:  # a timeout too
                raise ConnectionError(f"the sandbox did not answer ({exc})") from exc
        if not answer:
            raise ConnectionError("the sandbox has ended (the service exited)")
        return answer, got

    def open_socket(self) -> socket.socket:
        """A fresh, unconnected TCP socket made in the service's network namespace."""
        return self.open_sockets(1)[0]

    def open_sockets(self, count: int) -> list[socket.socket]:
        """`count` fresh, unconnected TCP sockets of the service's network namespace, made in
        one round trip (at most `inside.MAX_SOCKETS`)."""
        count = max(1, min(count, inside.MAX_SOCKETS))
        _, fds = self._ask(b"S%d" % count, LINK_TIMEOUT_S, count)
        if not fds:
            raise ConnectionError("the sandbox answered without a socket")
        return [socket.socket(fileno=fd) for fd in fds]

    def run(self, command: str, timeout: float) -> int | None:
        """Run `/bin/sh -c command` inside the sandbox (the service's environment, cwd and log);
        its exit status, or None when it was killed after `timeout` seconds."""
        body = json.dumps({"cmd": command, "timeout": timeout}).encode()
        answer, _ = self._ask(b"P" + body, timeout + LINK_TIMEOUT_S)
        status = json.loads(answer[1:])["status"]
        return None if status is None else int(status)

    def close(self) -> None:
        self.started()
        self._ours.close()


class SocketPool:
    """Fresh, unconnected sockets of a sandbox's network namespace for a run of short-lived
    connections (the readiness probes): fetched 1, 2, 4, ... up to `most` per round trip with
    the sandbox, so a service ready at the first probe costs one socket, and one that takes
    many probes a few round trips. Each socket is used once; `close` closes the unused ones."""

    def __init__(self, link: SandboxLink, most: int = 16) -> None:
        self._link = link
        self._most = most
        self._next = 1
        self._spare: list[socket.socket] = []

    def take(self) -> socket.socket:
        if not self._spare:
            self._spare = self._link.open_sockets(self._next)
            self._next = min(self._next * 2, self._most)
        return self._spare.pop()

    def close(self) -> None:
        for sock in self._spare:
            sock.close()
        self._spare = []


def transport_for(
    open_socket: OpenSocket | None, limits: httpx.Limits | None = None
) -> httpx.BaseTransport | None:
    """An httpx transport (HTTP/1.1, no proxies) whose every connection is a socket from
    `open_socket`; None when `open_socket` is None (plain mode: httpx's default transport)."""
    if open_socket is None:
        return None
    from harness.boot.transport import socket_transport  # httpx, imported on use

    return socket_transport(open_socket, limits)

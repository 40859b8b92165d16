"""A port on 127.0.0.1 leased to one boot, from before its service starts until it is torn down.

    lease = lease_port(hold=True)     # lease.port: hand it to the service as {port}
    ...                               # the service binds it and listens
    lease.close()                     # at teardown: free for the next boot

Picking a free port and handing its number over is a race: between the pick and the service's
bind, anything else on the machine may be handed the same port (another harness run, another
pytest-xdist worker's service, a test server, a client's ephemeral port), and the readiness probe
may then be answered by a stranger. A lease closes the race two ways:

- harness's own: an exclusive flock on a file named after the port in `LOCK_DIR`, held for the
  boot's whole life. Two harness processes never lease one port, even when both pick it at the
  same instant: the second one's lock fails and it picks again.
- the kernel's (`hold=True`): a socket bound to the port with SO_REUSEADDR that never listens.
  The kernel's choice of a free port (a bind to port 0: what test servers and clients do) skips
  a bound port, so no other program is handed it, while Linux still lets a service that binds
  with SO_REUSEADDR (Python's http.server, uvicorn, Go's net, Node) bind and listen beside a
  socket that does not listen. A service that binds without SO_REUSEADDR fails with "Address
  already in use" while the hold is there: the service stage boots it again with `hold=False`
  (the lock alone), see `harness.boot.service`.

The lock file is only a name: it is never removed (removing a file another process is about to
lock would let two hold "the same" lock), and one empty file per port used is all that is left.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ServiceError

PICKS = 64  # ports tried before giving up: each refused pick is one another boot holds
LOCK_DIR = Path("/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()) / (
    f"harness-ports-{os.getuid()}"
)
"""Fixed, not $TMPDIR: two harness runs with different TMPDIRs must see one another's locks."""


@dataclass
class PortLease:
    """A port held for one boot: the lock (always) and the kernel hold (until released)."""

    port: int
    lock_fd: int
    hold: socket.socket | None

    def close(self) -> None:
        if self.hold is not None:
            self.hold.close()
            self.hold = None
        if self.lock_fd >= 0:
            os.close(self.lock_fd)  # closing the file releases its flock
            self.lock_fd = -1


def candidate() -> int:
    """The port to try next: 0, the kernel's choice (a test forces a collision by patching it)."""
    return 0


def lease_port(*, hold: bool = True, lock_dir: Path = LOCK_DIR) -> PortLease:
    """A port of 127.0.0.1 no other harness boot holds, bound (`hold`) so that the kernel gives
    it to no one else; a ServiceError when `PICKS` picks in a row were all taken."""
    lock_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    refused: list[socket.socket] = []  # kept bound while picking, so no pick repeats
    try:
        for _ in range(PICKS):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", candidate()))
            except OSError:  # a forced pick a listener has: pick again
                sock.close()
                continue
            port = int(sock.getsockname()[1])
            fd = _lock(lock_dir / str(port))
            if fd is None:  # another harness boot holds it (its service may not listen yet)
                refused.append(sock)
                continue
            if not hold:
                sock.close()
            return PortLease(port, fd, sock if hold else None)
    finally:
        for sock in refused:
            sock.close()
    raise ServiceError(
        f"no free port on 127.0.0.1: {PICKS} picks in a row were held by other harness boots "
        f"(locks in {lock_dir})",
        ["stop other harness runs on this machine, or wait for them to finish"],
    )


def _lock(path: Path) -> int | None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    with contextlib.suppress(OSError):
        os.utime(fd)  # the lock folder's files say when each port was last leased
    return fd

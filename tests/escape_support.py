"""A service that tries to escape its sandbox, booted through the real boot path, and a driver.

    report = boot_and_report(work, plan)     # in this process, as whoever runs the tests
    python3 escape_support.py PLAN.json      # the same, as a driver (run as user nobody)

The service (`ESCAPE_PY`, standard library only) makes every attempt at start, before it
serves, and answers GET /report with one outcome per attempt: "ok ..." when the attempt worked,
"denied: ERRNO" when the kernel refused it. The plan (JSON) names what to attack: the
harness's pid, the real home, the repository, host Unix sockets, an abstract socket, host
files in the folders the sandbox hides, a
`secret` that is in the harness's environment, a file name on the host's `/`, and `data`: a
folder outside the repository given as service.data (used in place, bound read-only: every
write to it must fail, though its owner is the service's user).

Standard library, `harness` and tests/serve_support.py only: the driver runs under a system
Python as user nobody, with the harness package and serve_support.py copied next to this file.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import textwrap
from pathlib import Path
from typing import Any

from serve_support import SERVE_JSON_PY

ESCAPE_PY = SERVE_JSON_PY + textwrap.dedent(
    '''
    import ctypes, errno, json, os, platform, socket, stat, subprocess, sys

    port = int(sys.argv[1])
    plan = json.load(open(sys.argv[2]))
    libc = ctypes.CDLL(None, use_errno=True)
    report = {}

    def outcome(result):
        if result == 0:
            return "ok"
        return "denied: " + errno.errorcode.get(ctypes.get_errno(), "?")

    def attempt(name, action):
        try:
            report[name] = action()
        except OSError as exc:
            report[name] = "denied: " + errno.errorcode.get(exc.errno or 0, str(exc))

    def status(field):
        for line in open("/proc/self/status"):
            if line.startswith(field + ":"):
                return line.split()[1]

    def write(path):
        with open(path, "w") as f:
            f.write("written by the escape service")
        return "ok (written inside)"

    def connect(address):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(2)
            sock.connect(address)
            sock.sendall(b"escaped")
        return "ok (connected and sent)"

    def environ():
        raw = open("/proc/%d/environ" % plan["harness_pid"], "rb").read()
        return "ok (secret read)" if plan["secret"].encode() in raw else "ok (no secret)"

    def mount_command():
        done = subprocess.run(["mount", "-o", "remount,bind,rw", "/"], capture_output=True)
        return "ok" if done.returncode == 0 else "denied: exit %d" % done.returncode

    def finit_module():
        number = {"x86_64": 313, "aarch64": 273}.get(platform.machine())
        if number is None:
            return "denied: unknown architecture"
        fd = os.open("/dev/null", os.O_RDONLY)
        return outcome(libc.syscall(number, fd, b"", 0))

    def open_for_writing(path):
        os.close(os.open(path, os.O_WRONLY))  # opened, nothing written
        return "ok (opened for writing)"

    def rewrite_sysctl(path):
        with open(path) as f:
            same = f.read()
        with open(path, "w") as f:  # the value it has: a broken sandbox changes nothing
            f.write(same)
        return "ok (written)"

    def fill(folder, megabytes):
        path = os.path.join(folder, "filler")
        written = 0
        try:
            with open(path, "wb") as f:
                for _ in range(megabytes):
                    f.write(b"x" * (1 << 20))
                    f.flush()
                    written += 1
            return "ok (%d MiB written)" % written
        except OSError as exc:
            return "denied: %s after %d MiB" % (errno.errorcode.get(exc.errno, "?"), written)
        finally:
            if os.path.exists(path):
                os.unlink(path)

    def fork_until_refused(most):
        pids = []
        try:
            for _ in range(most):
                pid = os.fork()
                if pid == 0:
                    try:
                        os.read(stop_r, 1)  # until the parent closes its end, or a kill
                    finally:
                        os._exit(0)
                pids.append(pid)
            return "ok (%d processes)" % len(pids)
        except OSError as exc:
            return "denied: %s after %d" % (errno.errorcode.get(exc.errno, "?"), len(pids))
        finally:
            for pid in pids:
                os.kill(pid, 9)
            for pid in pids:
                os.waitpid(pid, 0)

    report["CapEff"] = status("CapEff")
    report["CapBnd"] = status("CapBnd")
    report["uid"] = os.getuid()
    report["euid"] = os.geteuid()
    for name, path in sorted(plan["sysctls"].items()):
        attempt("sysctl_open_" + name, lambda: open_for_writing(path))
    attempt("sysctl_write_printk", lambda: rewrite_sysctl(plan["sysctls"]["printk"]))
    for name, path in sorted(plan["root_only"].items()):
        attempt("read_" + name, lambda: (open(path, "rb").read(1), "ok (read)")[1])
    for name in ("HOME", "TMPDIR"):
        attempt("fill_" + name, lambda: fill(os.environ[name], plan["fill_mib"]))
    attempt("fill_shm", lambda: fill("/dev/shm", plan["fill_mib"]))
    stop_r, stop_w = os.pipe()
    attempt("fork_bomb", lambda: fork_until_refused(plan["fork_most"]))
    os.close(stop_w)
    home = plan["home"].encode()
    attempt("remount_rw", lambda: outcome(libc.mount(b"none", b"/", None, 32 | 4096, None)))
    attempt("mount_command", mount_command)
    attempt("write_host_root", lambda: write(os.path.join("/", plan["root_file"])))
    attempt("umount_home", lambda: outcome(libc.umount2(home, 0)))
    attempt("umount_lazy_home", lambda: outcome(libc.umount2(home, 2)))
    attempt("home_listing", lambda: sorted(os.listdir(plan["home"])))
    attempt("write_home", lambda: write(os.path.join(plan["home"], plan["home_file"])))
    attempt("write_repo", lambda: write(os.path.join(plan["repo"], plan["repo_file"])))
    for name, path in sorted(plan["sockets"].items()):
        attempt("connect_" + name, lambda: connect(path))
    for name, path in sorted(plan["markers"].items()):
        attempt("read_" + name, lambda: (open(path).read(), "ok (read)")[1])
    attempt("connect_abstract", lambda: connect("\\0" + plan["abstract"]))
    attempt("read_environ", environ)
    attempt("kill_harness", lambda: (os.kill(plan["harness_pid"], 0), "ok")[1])
    attempt("ptrace_harness", lambda: outcome(libc.ptrace(16, plan["harness_pid"], 0, 0)))
    attempt("mknod", lambda: (os.mknod(os.path.join(os.environ["HOME"], "null"),
                                       stat.S_IFCHR | 0o666, os.makedev(1, 3)), "ok")[1])
    attempt("new_user_namespace", lambda: outcome(libc.unshare(0x10000000)))
    attempt("raw_socket", lambda: (socket.socket(socket.AF_INET, socket.SOCK_RAW, 1).close(),
                                   "ok")[1])
    attempt("load_module", finit_module)
    data = plan["data"]
    kept = os.path.join(data, "index.bin")
    attempt("data_is_in_place", lambda: "ok" if os.stat(kept).st_ino == plan["data_inode"]
            else "denied: a copy")
    attempt("write_data_new", lambda: write(os.path.join(data, plan["repo_file"])))
    attempt("write_data_existing", lambda: (open(kept, "r+b").write(b"x"), "ok")[1])
    attempt("truncate_data", lambda: (os.truncate(kept, 0), "ok")[1])
    attempt("chmod_data", lambda: (os.chmod(kept, 0o666), "ok")[1])
    attempt("utime_data", lambda: (os.utime(kept), "ok")[1])
    attempt("unlink_data", lambda: (os.unlink(kept), "ok")[1])
    attempt("rename_data", lambda: (os.rename(kept, kept + ".moved"), "ok")[1])

    serve_json(port, report)
    '''
)


def listen_unix(address: str) -> socket.socket:
    """A listening Unix socket at `address` (a path, or "\\0name" for an abstract one) that
    anyone may connect to."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(address)
    if not address.startswith("\0"):
        os.chmod(address, 0o777)
    sock.listen(8)
    return sock


def make_data(folder: Path) -> dict[str, Any]:
    """A data folder outside the repository (an index.bin the service must not change) and the
    plan's entries naming it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "index.bin").write_bytes(b"the index\n")
    return {"data": str(folder), "data_inode": (folder / "index.bin").stat().st_ino}


SYSCTLS = {
    "printk": "/proc/sys/kernel/printk_ratelimit",
    "core_pattern": "/proc/sys/kernel/core_pattern",
    "drop_caches": "/proc/sys/vm/drop_caches",
}
LIMITS = {"max_processes": 256, "max_folder_bytes": 8 << 20, "fill_mib": 16, "fork_most": 1024}


def make_venv(folder: Path, python: str = sys.executable) -> dict[str, Any]:
    """A venv-like folder mounted back into the sandbox, holding a 0600 file of the invoker's
    (root's, in CI: what a service that is not root must not read), and the plan's entries for
    the host's root-only files and kernel settings."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bin").mkdir(exist_ok=True)
    (folder / "bin" / "python").symlink_to(python)  # {python}: the Python running harness
    secret = folder / "private.key"
    secret.write_text("a root-only secret\n")
    secret.chmod(0o600)
    root_only = {"shadow": "/etc/shadow", "gshadow": "/etc/gshadow", "venv_0600": str(secret)}
    root_only = {k: v for k, v in root_only.items() if os.path.exists(v)}
    return {"venv": str(folder), "root_only": root_only, "sysctls": dict(SYSCTLS), **LIMITS}


def controls(plan: dict[str, Any]) -> dict[str, str]:
    """The same connections, reads and writes from outside the sandbox: they must work, so that
    each denial inside is the sandbox's doing."""
    seen: dict[str, str] = {}

    def attempt(key: str, action: Any) -> None:
        try:
            action()
            seen[key] = "ok"
        except OSError as exc:
            seen[key] = f"denied: {exc}"

    def connect(address: str) -> None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(2)
            sock.connect(address)

    def write_probe() -> None:
        probe = Path(plan["data"]) / "control-probe"
        probe.write_text("the service's user may write here")
        probe.unlink()

    for name, path in plan["sysctls"].items():
        attempt("sysctl_open_" + name, lambda path=path: os.close(os.open(path, os.O_WRONLY)))
    for name, path in {**plan["root_only"], **plan["markers"]}.items():
        attempt("read_" + name, lambda path=path: Path(path).read_bytes())
    attempt("write_data", write_probe)
    for name, path in {**plan["sockets"], "abstract": "\0" + plan["abstract"]}.items():
        attempt("connect_" + name, lambda path=path: connect(path))
    try:
        raw = Path(f"/proc/{plan['harness_pid']}/environ").read_bytes()
        seen["read_environ"] = "ok (secret read)" if plan["secret"].encode() in raw else "ok"
    except OSError as exc:
        seen["read_environ"] = f"denied: {exc}"
    return seen


def boot_and_report(work: Path, plan: dict[str, Any]) -> dict[str, Any]:
    """Boot the escape service from `work`/wt in the bubblewrap sandbox (the harness's real boot
    path) and return {"report": its /report, "mounted_back_in_home": [...]}."""
    from harness.boot import service
    from harness.config import ServiceConfig

    worktree = work / "wt"
    (worktree / "escape.py").write_text(ESCAPE_PY)
    (worktree / "plan.json").write_text(json.dumps(plan))
    spec = ServiceConfig(
        start="{python} escape.py {port} plan.json",
        ready="/health",
        ready_timeout=30.0,
        data=plan["data"],  # outside the repository: used in place, bound read-only
        max_processes=plan["max_processes"],
        max_folder_bytes=plan["max_folder_bytes"],
    )
    ctx = service.running_service(
        spec,
        worktree,
        log_path=work / "escape.log",
        temp_parent=work / "roots",
        sandbox="bubblewrap",
        extra_env={"VIRTUAL_ENV": plan["venv"]},  # mounted back read-only, as a build's venv
    )
    with ctx as svc:
        with svc.connect(timeout=10.0) as conn:
            conn.sendall(b"GET /report HTTP/1.0\r\n\r\n")
            answer = b""
            while chunk := conn.recv(65536):
                answer += chunk
        assert ctx._where is not None and svc.data == Path(plan["data"]).resolve()
        mounts = ctx._where[2]
        home = Path(plan["home"])
        inside_home = [b.relative_to(home) for b in mounts.back if b.is_relative_to(home)]
        back = sorted({b.parts[0] for b in inside_home if b.parts})
    assert ctx.teardown is not None and ctx.teardown.confirmed
    return {"report": json.loads(answer.partition(b"\r\n\r\n")[2]), "mounted_back_in_home": back}


if __name__ == "__main__":
    given = json.loads(Path(sys.argv[1]).read_text())
    given["harness_pid"] = os.getpid()  # this driver is the harness
    seen = controls(given)
    done = boot_and_report(Path(sys.argv[2]), given)
    print(json.dumps({**done, "controls": seen, "uid": os.getuid()}))

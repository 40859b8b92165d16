"""A service tries to escape its bubblewrap sandbox, as root and as an unprivileged user.

One escape service (tests/escape_support.py) is booted through the harness's real boot path per
variant: "invoker" in this process (root here and in CI: the case that used to escape), "nobody"
by a driver run as user nobody (setpriv) with a system Python, from a world-readable copy of the
harness. Each attempt's outcome, as the service saw it, is asserted by its own test; what could
only be seen from outside (a file written on the host) is checked on the host.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from escape_support import boot_and_report, controls, listen_unix, make_data, make_venv
from nobody_support import NOBODY, nobody_unavailable, readable_harness, system_python

from harness.boot import sandbox, seccomp

pytestmark = pytest.mark.skipif(
    sandbox.sandbox_mode({}) != sandbox.BUBBLEWRAP, reason="no usable bubblewrap"
)

SUPPORT = Path(__file__).parents[1] / "escape_support.py"
SERVE = Path(__file__).parents[1] / "serve_support.py"  # the service program's head, imported


def _plan(work: Path, home: Path, harness_pid: int, token: str, secret: str) -> dict[str, Any]:
    return {
        "harness_pid": harness_pid,
        "token": token,
        "secret": secret,
        "home": str(home),
        "repo": str(work / "wt"),
        "home_file": f"escaped-{token}",
        "repo_file": f"escaped-{token}",
        "root_file": f"escape-probe-{token}",
        "abstract": f"harness-escape-{token}",
        "sockets": {},
        "markers": {},
    }


@contextlib.contextmanager
def _host_sockets(plan: dict[str, Any], work: Path) -> Iterator[None]:
    """Listening host sockets under /tmp, /dev/shm, /run (when writable) and in the repository
    itself, and an abstract one, for the plan's duration."""
    token = plan["token"]
    places = {"tmp": work / "host.sock", "repo": work / "wt" / "dev.sock"}
    places["shm"] = Path("/dev/shm") / f"harness-escape-{token}.sock"
    if os.access("/run", os.W_OK):
        places["run"] = Path("/run") / f"harness-escape-{token}.sock"
    folders = {"tmp": "/tmp", "var_tmp": "/var/tmp", "shm": "/dev/shm", "run": "/run"}
    name = f"harness-escape-{token}.txt"
    files = {k: Path(v) / name for k, v in folders.items() if os.access(v, os.W_OK)}
    held = [listen_unix("\0" + plan["abstract"])]
    try:
        for name, path in places.items():
            held.append(listen_unix(str(path)))
            plan["sockets"][name] = str(path)
        for name, path in files.items():
            path.write_text("a host file")
            path.chmod(0o644)
            plan["markers"][name] = str(path)
        yield
    finally:
        for sock in held:
            sock.close()
        for path in [*places.values(), *files.values()]:
            path.unlink(missing_ok=True)


def _escaped_files(plan: dict[str, Any]) -> list[Path]:
    """What the service must not have been able to leave on the host."""
    return [
        Path(plan["home"]) / plan["home_file"],
        Path(plan["repo"]) / plan["repo_file"],
        Path("/") / plan["root_file"],
    ]


def _data_after(plan: dict[str, Any]) -> dict[str, str]:
    """What the data folder holds once the service is gone, as the host sees it."""
    folder = Path(plan["data"])
    return {p.name: p.read_text(errors="replace") for p in sorted(folder.iterdir())}


def _as_invoker(base: Path) -> dict[str, Any]:
    token = secrets.token_hex(8)
    work = base / "work"
    (work / "wt").mkdir(parents=True)
    (work / "roots").mkdir()
    # A variable this process started with (/proc/PID/environ holds the initial environment
    # only) stands for a secret in it.
    secret = Path("/proc/self/environ").read_bytes().split(b"\0")[0].decode(errors="replace")
    plan = _plan(work, Path.home().resolve(), os.getpid(), token, secret)
    plan.update(make_data(base / "data"))  # outside the repository (work/wt)
    plan.update(make_venv(base / "venv"))
    with _host_sockets(plan, work):
        seen = controls(plan)
        done = boot_and_report(work, plan)
    return {**done, "controls": seen, "plan": plan, "uid": os.getuid(),
            "data_after": _data_after(plan)}  # fmt: skip


def _as_nobody(base: Path) -> dict[str, Any]:
    reason = nobody_unavailable()
    if reason is not None:
        pytest.skip(reason)
    python = system_python()
    assert python is not None
    userns = subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "bwrap",
         "--unshare-all", "--ro-bind", "/", "/", "true"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if userns.returncode != 0:
        pytest.skip(f"unprivileged user namespaces do not work here: {userns.stderr.strip()}")
    # A copy nobody can read (this checkout, the venv and pytest's tmp_path may not be).
    top = Path(tempfile.mkdtemp(prefix="harness-escape-"))
    home = top / "home"
    if os.access("/home", os.W_OK):  # a home outside /tmp, hidden as a home, not as /tmp
        home = Path(tempfile.mkdtemp(prefix="harness-escape-", dir="/home"))
    try:
        lib = readable_harness(top)
        shutil.copy(SUPPORT, lib / SUPPORT.name)
        shutil.copy(SERVE, lib / SERVE.name)
        work = top / "work"
        for folder in (work / "wt", work / "roots", home, top / "cache"):
            folder.mkdir(parents=True, exist_ok=True)
        for folder in (work, work / "wt", work / "roots", home, top / "cache"):
            os.chown(folder, NOBODY, NOBODY)
        home.chmod(0o700)
        token = secrets.token_hex(8)
        plan = _plan(work, home, 0, token, f"ESCAPE_SECRET={token}")  # the driver puts its pid
        plan.update(make_data(top / "data"))  # nobody's own: writable by it outside the sandbox
        plan.update(make_venv(top / "venv", python))  # root's 0600 file: nobody cannot read it
        for path in (top / "data", top / "data" / "index.bin"):
            os.chown(path, NOBODY, NOBODY)
        with _host_sockets(plan, work):
            ours = controls(plan)  # this process's view (root's in CI), for the root-only files
            (top / "plan.json").write_text(json.dumps(plan))
            env = {
                "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
                "HARNESS_CACHE_DIR": str(top / "cache"), "PYTHONPATH": str(lib),
                "ESCAPE_SECRET": token,
            }  # fmt: skip
            done = subprocess.run(
                ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", python,
                 str(lib / SUPPORT.name), str(top / "plan.json"), str(work)],
                env=env, cwd=top, capture_output=True, text=True, timeout=180, check=False,
            )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        told = json.loads(done.stdout.splitlines()[-1])
        plan["harness_pid"] = "the driver's"
        escaped = [str(p) for p in _escaped_files(plan) if p.exists()]
        return {**told, "plan": plan, "our_controls": ours, "escaped": escaped,
                "data_after": _data_after(plan)}  # fmt: skip
    finally:
        shutil.rmtree(top, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)


_CACHE: dict[str, dict[str, Any]] = {}


@pytest.fixture(params=["invoker", "nobody"])
def escape(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The escape service's report for one variant (booted once per variant per session)."""
    variant = request.param
    if variant not in _CACHE:
        if variant == "invoker":
            outcome = _as_invoker(tmp_path_factory.mktemp("escape"))
            outcome["escaped"] = [str(p) for p in _escaped_files(outcome["plan"]) if p.exists()]
            for path in outcome["escaped"]:  # a broken sandbox: clean up what it left
                Path(path).unlink()
        else:
            outcome = _as_nobody(Path())
        _CACHE[variant] = outcome
    return _CACHE[variant]


def _denied(escape: Any, attempt: str) -> str:
    said = escape["report"][attempt]
    assert isinstance(said, str) and said.startswith("denied"), f"{attempt}: {said}"
    return said


def test_no_capability_is_left_inside(escape: Any) -> None:
    assert escape["report"]["CapEff"] == "0000000000000000"


def test_remounting_root_read_write_fails(escape: Any) -> None:
    _denied(escape, "remount_rw")
    _denied(escape, "mount_command")
    _denied(escape, "write_host_root")
    assert str(Path("/") / escape["plan"]["root_file"]) not in escape["escaped"]


@pytest.mark.parametrize("attempt", ["umount_home", "umount_lazy_home"])
def test_the_home_cannot_be_unmounted(escape: Any, attempt: str) -> None:
    _denied(escape, attempt)


def test_the_real_home_is_empty_but_for_what_is_mounted_back(escape: Any) -> None:
    listing = escape["report"]["home_listing"]
    # Only what the sandbox mounted back (the interpreter under /root/.pyenv, for root here),
    # or absent (a nobody's home made in the hidden /tmp, when /home is not writable).
    assert listing == escape["mounted_back_in_home"] or listing == "denied: ENOENT", listing


def test_nothing_written_reaches_the_real_home_or_the_repository(escape: Any) -> None:
    _denied(escape, "write_repo")
    _denied(escape, "write_home")  # the hidden home is a read-only tmpfs
    assert escape["escaped"] == []


@pytest.mark.parametrize("place", ["tmp", "shm", "run", "repo", "abstract"])
def test_no_host_unix_socket_is_reachable(escape: Any, place: str) -> None:
    if place != "abstract" and place not in escape["plan"]["sockets"]:
        pytest.skip(f"no host socket could be made under {place}")
    assert escape["controls"][f"connect_{place}"] == "ok"  # reachable from outside the sandbox
    _denied(escape, f"connect_{place}")


@pytest.mark.parametrize("place", ["tmp", "var_tmp", "shm", "run"])
def test_host_files_in_the_hidden_folders_are_absent(escape: Any, place: str) -> None:
    if place not in escape["plan"]["markers"]:
        pytest.skip(f"no host file could be made under {place}")
    assert escape["controls"][f"read_{place}"] == "ok"
    assert _denied(escape, f"read_{place}") == "denied: ENOENT"


def test_the_harness_environment_and_process_are_out_of_reach(escape: Any) -> None:
    assert escape["controls"]["read_environ"] == "ok (secret read)"
    _denied(escape, "read_environ")
    _denied(escape, "kill_harness")
    _denied(escape, "ptrace_harness")


@pytest.mark.parametrize(
    "attempt", ["mknod", "new_user_namespace", "raw_socket", "load_module"]
)
def test_privileged_calls_fail(escape: Any, attempt: str) -> None:
    confinement = sandbox._probe(shutil.which("bwrap"))[1]
    forbidden = "--disable-userns" in confinement or seccomp.program() is not None
    if attempt == "new_user_namespace" and not forbidden:
        pytest.skip(f"bwrap here runs with {confinement} only and no seccomp filter is known")
    said = _denied(escape, attempt)
    if attempt in ("mknod", "raw_socket"):
        assert said == "denied: EPERM"  # refused for want of a capability, not of an argument
    if attempt == "load_module":  # the capability is checked first; ENOSYS: no module support
        assert said in ("denied: EPERM", "denied: ENOSYS")


def test_the_data_is_used_in_place_and_nothing_can_change_it(escape: Any) -> None:
    # service.data outside the repository is the host's folder itself (same inode: no copy),
    # writable by the invoker outside the sandbox, and read-only inside: root or not. The
    # invoker's own service (nobody's) meets the read-only mount; root's runs as a uid of its
    # own, which the kernel may stop at the file's permissions first.
    assert escape["report"]["data_is_in_place"] == "ok"
    assert escape["controls"]["write_data"] == "ok"
    own = escape["report"]["uid"] == escape["uid"]
    for attempt in ("write_data_new", "write_data_existing", "truncate_data", "chmod_data",
                    "utime_data", "unlink_data", "rename_data"):  # fmt: skip
        said = _denied(escape, attempt)
        assert said == "denied: EROFS" or (not own and said in ("denied: EACCES",
                                                                "denied: EPERM")), attempt
    assert escape["data_after"] == {"index.bin": "the index\n"}


def test_the_nobody_variant_ran_as_nobody(escape: Any) -> None:
    assert escape["uid"] == (NOBODY if escape["plan"]["harness_pid"] == "the driver's"
                             else os.getuid())  # fmt: skip


def test_the_sockets_of_the_plan_are_real(tmp_path: Path) -> None:
    # listen_unix gives sockets that anyone may connect to (the nobody variant's controls).
    path = tmp_path / "s.sock"
    with listen_unix(str(path)), socket.socket(socket.AF_UNIX) as client:
        assert oct(path.stat().st_mode & 0o777) == "0o777"
        client.connect(str(path))


# --------------------------------------------------------------------------- never uid 0


def test_the_service_is_never_uid_0(escape: Any) -> None:
    # Root's service runs as a uid of its own (the kernel checks only the uid for its settings
    # and, first, for root-only files); an unprivileged invoker's keeps its uid.
    assert escape["report"]["uid"] != 0 and escape["report"]["euid"] != 0
    if escape["uid"] != 0:
        assert escape["report"]["uid"] == escape["uid"]


@pytest.mark.parametrize("name", ["printk", "core_pattern", "drop_caches"])
def test_the_kernel_settings_cannot_be_opened_for_writing(escape: Any, name: str) -> None:
    if escape["uid"] == 0:  # the target exists and root could write it from outside
        assert escape["controls"][f"sysctl_open_{name}"] == "ok"
    assert os.path.exists(escape["plan"]["sysctls"][name])
    _denied(escape, f"sysctl_open_{name}")


def test_a_kernel_setting_cannot_be_written(escape: Any) -> None:
    assert _denied(escape, "sysctl_write_printk") in ("denied: EROFS", "denied: EACCES")


@pytest.mark.parametrize("name", ["shadow", "gshadow", "venv_0600"])
def test_root_only_files_cannot_be_read(escape: Any, name: str) -> None:
    if name not in escape["plan"]["root_only"]:
        pytest.skip(f"no {name} on this machine")
    if os.getuid() == 0:  # the control: root reads it outside the sandbox
        assert escape.get("our_controls", escape["controls"])[f"read_{name}"] == "ok"
    assert _denied(escape, f"read_{name}") == "denied: EACCES"


@pytest.mark.parametrize("folder", ["HOME", "TMPDIR", "shm"])
def test_a_writable_folder_holds_at_most_its_limit(escape: Any, folder: str) -> None:
    said = _denied(escape, f"fill_{folder}")
    assert said.startswith("denied: ENOSPC after "), said
    written = int(said.split()[3])  # whole MiB, before the one that did not fit
    assert written <= escape["plan"]["max_folder_bytes"] >> 20 < escape["plan"]["fill_mib"]


def test_the_service_cannot_start_more_than_its_processes(escape: Any) -> None:
    said = _denied(escape, "fork_bomb")
    assert said.startswith("denied: EAGAIN after "), said
    started = int(said.split()[3])
    assert started < escape["plan"]["max_processes"] < escape["plan"]["fork_most"]


def test_where_root_cannot_leave_uid_0_the_kernel_settings_stay_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # As root in a container without CAP_SYS_ADMIN, only the user-namespace tiers run: the
    # service is uid 0 of the host, and /proc/sys, bound read-only, is what stops it.
    if os.geteuid() != 0:
        pytest.skip("the fallback of a root harness")
    from harness.boot import service
    from harness.config import ServiceConfig

    monkeypatch.setattr(sandbox, "_tiers", lambda: sandbox._CONFINEMENTS)
    sandbox._probe.cache_clear()
    sandbox._warn_root_once.cache_clear()
    try:
        assert sandbox.runs_as_root() and sandbox.service_ids("0" * 32) is None
        assert sandbox.sandbox_mode({}) == sandbox.BUBBLEWRAP
        assert "runs as uid 0 with no capability" in capsys.readouterr().err
        setting = "/proc/sys/kernel/printk_ratelimit"
        start = (
            f"(cat {setting} > {setting} && echo WRITTEN || echo REFUSED; id -u) 2>&1; "
            "exec {python} -m http.server {port} --bind 127.0.0.1"
        )
        log = tmp_path / "svc.log"
        (tmp_path / "roots").mkdir()
        with service.running_service(
            ServiceConfig(start, "/", ready_timeout=30.0), tmp_path, log_path=log,
            temp_parent=tmp_path / "roots", sandbox="bubblewrap",
        ):  # fmt: skip
            pass
        said = log.read_text().splitlines()  # the first line is the command itself
        assert "REFUSED" in said and "WRITTEN" not in said and "0" in said  # uid 0, refused
        assert any("Read-only file system" in line for line in said)
    finally:
        sandbox._probe.cache_clear()

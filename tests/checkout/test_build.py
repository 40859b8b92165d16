"""harness.checkout.build with real subprocesses: caching, failures, timeouts, environment, venvs.

Creating a venv costs a process and pip's files, so exactly two tests create one.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from harness.boot.interpreter import Interpreter
from harness.boot.isolation import MARKER_ENV
from harness.checkout.build import (
    BuildResult,
    build,
    build_key,
    venv_command,
    venv_env,
    with_venv,
)
from harness.config import ServiceConfig
from harness.errors import BuildError


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(path))
    return path


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    path = tmp_path / "worktree"
    path.mkdir()
    (path / "app.py").write_text("print('hello')\n")
    return path


def service(build_cmd: str | None, **kw: Any) -> ServiceConfig:
    return ServiceConfig(start="true", ready="/health", build=build_cmd, **kw)


def run(worktree: Path, tmp_path: Path, svc: ServiceConfig, sha: str = "a" * 40) -> BuildResult:
    return build(worktree, sha_key=sha, service=svc, log_dir=tmp_path / "logs")


def gone(pid: int) -> bool:
    """True once `pid` has exited (a zombie counts: it runs nothing). Polls for that event; the
    60 s are a safeguard against a hung test, not a timing assertion (it returns when gone)."""
    deadline = time.monotonic() + 60.0
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.02)
    return False


def test_nothing_to_build(worktree: Path, tmp_path: Path, cache: Path) -> None:
    result = run(worktree, tmp_path, service(None))
    assert result == BuildResult(venv=None, cached=False, seconds=0.0, log_path=None)
    assert not cache.exists()


def test_second_build_of_a_commit_is_cached(worktree: Path, tmp_path: Path, cache: Path) -> None:
    counter = tmp_path / "counter"  # outside the worktree, so it survives between builds
    svc = service(f"echo ran >> {shlex.quote(str(counter))}")
    first = run(worktree, tmp_path, svc)
    second = run(worktree, tmp_path, svc)
    assert counter.read_text() == "ran\n"  # the command ran once
    assert (first.cached, second.cached) == (False, True)
    assert first.venv is None and first.key == second.key == build_key("a" * 40, svc)
    assert first.log_path == tmp_path / "logs" / f"build-{first.key}.log"
    assert second.log_path == cache / "builds" / str(first.key) / "build.log"
    assert second.log_path.read_text() == first.log_path.read_text()
    marker = json.loads((cache / "builds" / str(first.key) / "built.json").read_text())
    assert marker["sha_key"] == "a" * 40
    assert marker["command"] == svc.build
    assert marker["python"] == sys.version
    assert marker["venv"] is False


def test_other_command_or_commit_rebuilds(worktree: Path, tmp_path: Path) -> None:
    counter = tmp_path / "counter"
    command = f"echo ran >> {shlex.quote(str(counter))}"
    keys = {
        run(worktree, tmp_path, service(command), sha="a" * 40).key,
        run(worktree, tmp_path, service(command), sha="b" * 40).key,
        run(worktree, tmp_path, service(command + "  # v2"), sha="a" * 40).key,
        run(worktree, tmp_path, service(command), sha=f"{'a' * 40}+dirty.0123456789ab").key,
    }
    assert counter.read_text() == "ran\n" * 4
    assert len(keys) == 4


def test_build_runs_in_the_worktree_with_an_allowlisted_env(
    worktree: Path, tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:1/simple")
    monkeypatch.setenv("LC_ALL", "C")
    monkeypatch.setenv("PASS_ME", "through")
    monkeypatch.setenv("PINNED", "from the caller")
    monkeypatch.setenv("VIRTUAL_ENV", "/somewhere/else")
    out = tmp_path / "env.json"
    dump = f"import json, os; json.dump([os.getcwd(), dict(os.environ)], open({str(out)!r}, 'w'))"
    svc = service(
        f"{shlex.quote(sys.executable)} -c {shlex.quote(dump)}",
        pass_env=("PASS_ME", "NOT_SET_ANYWHERE"),
        env={"PINNED": "pinned"},
    )
    run(worktree, tmp_path, svc)
    cwd, env = json.loads(out.read_text())
    assert Path(cwd) == worktree
    for secret in ("GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "VIRTUAL_ENV", "NOT_SET_ANYWHERE"):
        assert secret not in env
    assert env["PIP_INDEX_URL"] == "http://127.0.0.1:1/simple"
    assert env["LC_ALL"] == "C"
    assert env["PASS_ME"] == "through"
    assert env["PINNED"] == "pinned"
    assert env["PATH"] == os.environ["PATH"]
    home, tmp = Path(env["HOME"]), Path(env["TMPDIR"])
    assert cache / "tmp" in home.parents and cache / "tmp" in tmp.parents
    assert not home.exists() and not tmp.exists()  # throwaway: removed after the build


def test_build_env_without_a_caller_path_gets_the_default_and_no_marker(
    worktree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The build shares the service stage's allowlist (harness.boot.isolation) but not its marker:
    # nothing looks for a build's processes by HARNESS_RUN_ID; its process group is killed.
    monkeypatch.delenv("PATH")
    monkeypatch.setenv(MARKER_ENV, "the caller's")
    out = tmp_path / "env.json"
    dump = f"import json, os; json.dump(dict(os.environ), open({str(out)!r}, 'w'))"
    run(worktree, tmp_path, service(f"{shlex.quote(sys.executable)} -c {shlex.quote(dump)}"))
    env = json.loads(out.read_text())
    assert env["PATH"] == os.defpath
    assert MARKER_ENV not in env
    assert not any(name.startswith(("XDG_", "PYTHON")) for name in env)


def test_failed_build_names_command_status_and_log_tail(
    worktree: Path, tmp_path: Path, cache: Path
) -> None:
    counter = tmp_path / "counter"
    command = (
        f"echo ran >> {shlex.quote(str(counter))}; "
        'for i in $(seq 1 30); do echo "line $i"; done; exit 3'
    )
    svc = service(command)
    with pytest.raises(BuildError) as caught:
        run(worktree, tmp_path, svc)
    error = caught.value
    log = tmp_path / "logs" / f"build-{build_key('a' * 40, svc)}.log"
    assert error.message == f"build failed: `{command}` exited with status 3 (log: {log})"
    assert error.exit_status == 3  # could not measure, like a crashed service
    tail = [d for d in error.details if d.startswith("  | ")]
    assert tail == [f"  | line {i}" for i in range(11, 31)]  # the last 20 of 30 lines
    assert "service.build" in error.details[-1]
    assert not (cache / "builds" / build_key("a" * 40, svc)).exists()  # no marker, no slot
    with pytest.raises(BuildError):
        run(worktree, tmp_path, svc)
    assert counter.read_text() == "ran\n" * 2  # not cached: the next run retried


def test_build_killed_by_a_signal_is_a_failure(worktree: Path, tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="was killed by signal 9"):
        run(worktree, tmp_path, service("kill -9 $$"))


def test_timeout_kills_the_whole_process_group(worktree: Path, tmp_path: Path, cache: Path) -> None:
    pidfile = tmp_path / "pid"
    command = f"sleep 60 & echo $! > {shlex.quote(str(pidfile))}; wait"
    # 2 s: the shell must have written the pid file before the timeout, even on a busy machine
    svc = service(command, build_timeout=2.0, stop_timeout=1.0)
    with pytest.raises(BuildError) as caught:
        run(worktree, tmp_path, svc)
    assert caught.value.message.startswith(f"build failed: `{command}` timed out after 2s (log: ")
    assert "build_timeout" in caught.value.details[-1]
    assert gone(int(pidfile.read_text()))  # the background child died with its shell
    assert not (cache / "builds" / build_key("a" * 40, svc)).exists()


def test_background_leftovers_of_a_successful_build_are_killed(
    worktree: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pid"
    run(worktree, tmp_path, service(f"sleep 60 >/dev/null 2>&1 & echo $! > {pidfile}"))
    assert gone(int(pidfile.read_text()))


def test_venv_env() -> None:
    assert venv_env(None) == {}
    venv = Path("/cache/builds/k/venv")
    assert venv_env(venv) == {"VIRTUAL_ENV": str(venv), "PATH": str(venv / "bin")}
    base = {"PATH": "/usr/bin:/bin", "PYTHONHOME": "/x", "LANG": "C"}
    assert with_venv(base, venv) == {
        "PATH": f"{venv}/bin:/usr/bin:/bin",
        "VIRTUAL_ENV": str(venv),
        "LANG": "C",
    }
    assert with_venv(base, None) == base
    assert with_venv({}, venv)["PATH"] == f"{venv}/bin"


def test_a_python_virtualenv_seeds_gets_virtualenv_an_older_one_the_stdlib_venv(
    tmp_path: Path, cache: Path
) -> None:
    venv = tmp_path / "v"
    ours = Interpreter(Path(sys.executable), sys.executable, sys.version.replace("\n", " "))
    made = venv_command(ours, venv)
    assert made[:3] == [sys.executable, "-m", "virtualenv"]
    assert made[-3:] == ["--python", sys.executable, str(venv)]
    assert "--no-periodic-update" in made  # no update check left running in the background
    assert made[made.index("--app-data") + 1] == str(cache / "virtualenv")
    for version in ("3.8.18 (default, Jan  1 2024, 00:00:00) [GCC 12.2.0]", "2.7.18", "?"):
        old = Interpreter(Path("/opt/py/bin/python3"), "/opt/py/bin/python3", version)
        assert venv_command(old, venv) == ["/opt/py/bin/python3", "-m", "venv", str(venv)]


# --------------------------------------------------------------------------- the two venvs


@pytest.mark.slow
def test_venv_build_runs_in_its_own_venv_and_is_cached(
    worktree: Path, tmp_path: Path, cache: Path
) -> None:
    out = tmp_path / "prefix.txt"
    probe = (
        "import os, sys; "
        f"open({str(out)!r}, 'a').write(sys.prefix + '|' + os.environ['VIRTUAL_ENV'] + '\\n')"
    )
    svc = service(f"python -c {shlex.quote(probe)}", venv=True)  # `python` found through PATH
    first = run(worktree, tmp_path, svc)
    venv = cache / "builds" / build_key("a" * 40, svc) / "venv"
    assert first.venv == venv and not first.cached
    assert out.read_text() == f"{venv}|{venv}\n"  # the venv's interpreter ran the build
    config = (venv / "pyvenv.cfg").read_text()
    assert "include-system-site-packages = false" in config
    assert "virtualenv = " in config  # made by virtualenv: this Python is one it seeds
    assert (venv / "bin" / "pip").exists()
    assert (cache / "virtualenv").is_dir()  # its unpacked wheels, kept for the next venv

    second = run(worktree, tmp_path, svc)
    assert (second.venv, second.cached) == (venv, True)
    assert out.read_text() == f"{venv}|{venv}\n"  # not run again


@pytest.mark.slow
def test_failed_venv_build_removes_the_half_made_venv(
    worktree: Path, tmp_path: Path, cache: Path
) -> None:
    svc = service('test -x "$VIRTUAL_ENV/bin/python" && exit 7', venv=True)
    with pytest.raises(BuildError, match="exited with status 7"):
        run(worktree, tmp_path, svc)
    assert list((cache / "builds").iterdir()) == [
        cache / "builds" / f"{build_key('a' * 40, svc)}.lock"
    ]

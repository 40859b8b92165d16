"""Any interpreter runs in the sandbox, and a command that cannot start there says why.

The interpreter under test is a Python install of its own in a hidden folder (under /tmp, which
the sandbox hides, as pyenv's, uv's and conda's live under a hidden home): the system Python's
binary copied to BASE/bin with BASE/lib/pythonX.Y leading to its standard library, so that BASE
is its sys.base_prefix. The service's venv is made from it, as the build makes one from
`service.python`, and booted through the real boot path with the build's environment.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import httpx
import pytest
from serve_support import SERVE_JSON_PY

from harness.boot import sandbox, service
from harness.checkout.build import with_venv
from harness.config import ServiceConfig
from harness.errors import ServiceError

pytestmark = pytest.mark.skipif(
    sandbox.sandbox_mode({}) != sandbox.BUBBLEWRAP, reason="no usable bubblewrap"
)

SERVICE_PY = SERVE_JSON_PY + textwrap.dedent(
    """
    import json, os, sys

    where = {"prefix": sys.prefix, "base_prefix": sys.base_prefix,
             "os": os.__file__, "json": json.__file__}
    serve_json(int(sys.argv[1]), where)
    """
)


def _relocated_python(base: Path) -> Path:
    """A Python whose sys.base_prefix is `base`: a system Python's binary copied into base/bin,
    its standard library linked as base/lib/pythonX.Y (a shared libpython is still found where
    the system keeps it)."""
    for name in ("python3.13", "python3.12", "python3.11", "python3"):
        system = shutil.which(name, path="/usr/bin:/usr/local/bin")
        if system is None:
            continue
        probe = "import sys, sysconfig; print(sysconfig.get_paths()['stdlib'])"
        probe += "; print(sys.version_info >= (3, 11))"
        told = subprocess.run([system, "-c", probe], capture_output=True, text=True, check=False)
        stdlib, recent = [*told.stdout.split(), "", ""][:2]
        if told.returncode != 0 or recent != "True":
            continue
        shutil.rmtree(base, ignore_errors=True)
        (base / "bin").mkdir(parents=True)
        (base / "lib").mkdir()
        python = base / "bin" / Path(stdlib).name
        shutil.copy2(system, python)
        (base / "lib" / Path(stdlib).name).symlink_to(stdlib)
        where = "import sys; print(sys.base_prefix)"
        moved = subprocess.run([python, "-c", where], capture_output=True, text=True, check=False)
        if moved.stdout.strip() == str(base):
            return python
    pytest.skip("no system Python >= 3.11 that runs from a copy with its own prefix")


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    tree = tmp_path / "worktree"
    tree.mkdir()
    (tree / "service.py").write_text(SERVICE_PY)
    return tree


def _boot(
    tmp_path: Path, worktree: Path, start: str, **fields: object
) -> service.ServiceContext:
    env = fields.pop("extra_env", {})
    assert isinstance(env, dict)
    spec = ServiceConfig(start=start, ready="/", ready_timeout=20.0, **fields)  # type: ignore[arg-type]
    roots = tmp_path / "roots"
    roots.mkdir(exist_ok=True)
    return service.running_service(
        spec,
        worktree,
        log_path=tmp_path / "svc.log",
        temp_parent=roots,
        extra_env=env,
        sandbox=sandbox.BUBBLEWRAP,
    )


def test_a_venv_whose_base_lives_in_a_hidden_folder_runs_on_its_own_stdlib(
    tmp_path: Path, worktree: Path
) -> None:
    base = tmp_path / "home" / ".pyenv" / "versions" / "3.x"
    python = _relocated_python(base)
    venv = tmp_path / "venv"
    subprocess.run([str(python), "-m", "venv", "--without-pip", str(venv)], check=True)
    assert f"home = {base / 'bin'}" in (venv / "pyvenv.cfg").read_text()
    extra = with_venv({"PATH": os.environ.get("PATH", os.defpath)}, venv)
    ctx = _boot(tmp_path, worktree, "{python} service.py {port}", extra_env=extra)
    with ctx as svc, httpx.Client(transport=svc.transport(), trust_env=False) as client:
        told = client.get(svc.url + "/", timeout=10.0).json()
    assert told["prefix"] == str(venv)
    assert told["base_prefix"] == str(base)  # not the compiled-in /usr: BASE was found inside
    assert told["os"].startswith(str(base / "lib"))
    assert told["json"].startswith(str(base / "lib"))


def test_a_command_hidden_by_the_sandbox_is_named_in_the_error(
    tmp_path: Path, worktree: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    tool = elsewhere / "serve"
    tool.write_text(f"#!/bin/sh\nexec python3 {worktree / 'service.py'} \"$1\"\n")
    tool.chmod(0o755)
    ctx = _boot(tmp_path, worktree, f"{tool} {{port}}")
    with pytest.raises(ServiceError) as caught:
        ctx.__enter__()
    error = caught.value
    assert "exited at boot with status 127" in error.message
    assert f"{tool} exists outside the sandbox but not inside it" in error.message
    assert "the sandbox hides /tmp" in error.message
    said = "\n".join(error.details)
    assert "HARNESS_SANDBOX=off" in said and "{python}" in said


def test_a_script_whose_interpreter_is_hidden_names_the_interpreter(
    tmp_path: Path, worktree: Path
) -> None:
    hidden = tmp_path / "home" / "bin"
    hidden.mkdir(parents=True)
    interpreter = hidden / "python9"
    interpreter.symlink_to(shutil.which("python3") or "/usr/bin/python3")
    script = worktree / "serve.py"
    script.write_text(f"#!{interpreter}\n" + SERVICE_PY)
    script.chmod(0o755)
    ctx = _boot(tmp_path, worktree, "./serve.py {port}")
    with pytest.raises(ServiceError) as caught:
        ctx.__enter__()
    assert f"{interpreter} exists outside the sandbox but not inside it" in caught.value.message
    assert "`./serve.py` leads there" in caught.value.message


def test_a_prepare_command_hidden_by_the_sandbox_is_named_in_the_error(
    tmp_path: Path, worktree: Path
) -> None:
    tool = tmp_path / "elsewhere" / "warm"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    ctx = _boot(tmp_path, worktree, "python3 service.py {port}", prepare=(str(tool),))
    with pytest.raises(ServiceError) as caught:
        ctx.__enter__()
    assert "failed with exit status 127" in caught.value.message
    assert f"{tool} exists outside the sandbox but not inside it" in caught.value.message


def test_a_failure_naming_no_hidden_path_keeps_the_plain_advice(
    tmp_path: Path, worktree: Path
) -> None:
    ctx = _boot(tmp_path, worktree, "python3 -c 'raise SystemExit(3)' {port}")
    with pytest.raises(ServiceError) as caught:
        ctx.__enter__()
    assert caught.value.message.endswith(")")  # nothing said of the sandbox
    assert "fix the start command" in "\n".join(caught.value.details)
    assert json.dumps(caught.value.message)  # one line, no traceback


def test_a_hidden_path_of_a_command_that_did_start_is_only_a_hint(
    tmp_path: Path, worktree: Path
) -> None:
    cache = tmp_path / "elsewhere" / "cache"
    cache.mkdir(parents=True)
    ctx = _boot(tmp_path, worktree, f"python3 -c 'raise SystemExit(3)' {cache} {{port}}")
    with pytest.raises(ServiceError) as caught:
        ctx.__enter__()
    assert "exited at boot with status 3" in caught.value.message
    assert "sandbox" not in caught.value.message  # it started: the path may not be why
    maybe = f"maybe: {cache} exists outside the sandbox but not inside it"
    assert any(line.startswith(maybe) for line in caught.value.details)

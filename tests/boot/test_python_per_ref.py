"""service.python: the interpreter a ref's venv is made with, found, keyed and hinted at.

Real interpreters (this one, found on PATH through a symlink) and real subprocess services.
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest
from e2e_support import build_sandbox, config_text

from harness.boot import service
from harness.boot.interpreter import interpreter
from harness.checkout.build import build_key
from harness.config import QueryConfig, ServiceConfig, SideConfig, side_hash
from harness.config.inputs import referenced_paths
from harness.errors import ConfigError, ServiceError


@pytest.fixture
def on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder on PATH holding `pyharness-test`, a symlink to this interpreter."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "pyharness-test").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', os.defpath)}")
    return folder


def spec(python: str | None = None) -> ServiceConfig:
    return ServiceConfig(start="x {port}", ready="/health", build="true", venv=True, python=python)


def test_a_command_on_path_is_found_and_identified(on_path: Path) -> None:
    found = interpreter("pyharness-test")
    assert found.path == on_path / "pyharness-test"
    assert found.version == sys.version.replace("\n", " ")
    assert Path(found.executable).resolve() == Path(sys.executable).resolve()


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("python9.99-nowhere", "not found on PATH"),
        ("/nonexistent/bin/python3", "is not an executable file"),
        ("venv/bin/python", "a relative path"),
        ("/bin/false", "is not a Python interpreter"),
    ],
)
def test_an_interpreter_that_is_not_there_is_a_config_error(value: str, said: str) -> None:
    with pytest.raises(ConfigError) as caught:
        interpreter(value)
    assert caught.value.exit_status == 2
    assert caught.value.message.startswith(f"service.python = {value!r}: ")
    assert said in caught.value.message


def test_the_interpreter_is_part_of_the_build_key_and_the_side_hash(on_path: Path) -> None:
    plain, named = spec(), spec(python="pyharness-test")
    assert build_key("a" * 40, plain) != build_key("a" * 40, named)
    query = QueryConfig(path="/s", ids="ids")
    assert side_hash(SideConfig(plain, query)) != side_hash(SideConfig(named, query))


def test_the_interpreter_file_is_an_input_of_the_reuse_key(on_path: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    side = SideConfig(spec(python="pyharness-test"), QueryConfig(path="/s", ids="ids"))
    assert Path(sys.executable).resolve() in referenced_paths(side, repo)


def test_a_missing_module_at_boot_names_the_interpreter_and_the_fix(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (worktree / "svc.py").write_text("import flask_is_not_installed_here\n")
    extra = {"VIRTUAL_ENV": str(venv), "PATH": str(venv / "bin")}
    # Started with another interpreter than the venv's: the hint says which, and {python}.
    start = f"{sys.executable} svc.py --port {{port}}"
    spec_ = ServiceConfig(start=start, ready="/health", ready_timeout=20.0)
    ctx = service.running_service(spec_, worktree, log_path=tmp_path / "svc.log", extra_env=extra)
    with pytest.raises(ServiceError) as caught, ctx:
        pytest.fail("it must not boot")
    hint = next(d for d in caught.value.details if "could not import" in d)
    assert "'flask_is_not_installed_here'" in hint
    assert f"is {sys.executable}, not the venv's interpreter {venv / 'bin' / 'python'}" in hint
    assert "write {python} instead" in hint


def test_a_missing_module_without_a_venv_says_to_make_one(tmp_path: Path) -> None:
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (worktree / "svc.py").write_text("import flask_is_not_installed_here\n")
    spec_ = ServiceConfig(start="{python} svc.py {port}", ready="/health", ready_timeout=20.0)
    ctx = service.running_service(spec_, worktree, log_path=tmp_path / "svc.log")
    with pytest.raises(ServiceError) as caught, ctx:
        pytest.fail("it must not boot")
    assert any("set service.venv = true" in d for d in caught.value.details)


def test_a_missing_interpreter_exits_2_before_anything_is_checked_out(tmp_path: Path) -> None:
    sandbox = build_sandbox(tmp_path / "x", {})
    config = sandbox.root / "harness.toml"
    text = config_text(gold=str(sandbox.repo / "gold" / "gold.jsonl"), repeats=1)
    config.write_text(text.replace("venv = false", 'venv = true\npython = "python9.99-nowhere"'))
    done = sandbox.harness("run", "--ref", "main", config=config)
    assert done.returncode == 2, done.stderr
    assert "harness: error: service.python = 'python9.99-nowhere': not found on PATH" in (
        done.stderr
    )
    assert "Traceback" not in done.stderr
    assert sandbox.worktrees() == []


def test_the_schema_refuses_an_empty_or_relative_interpreter(tmp_path: Path) -> None:
    from harness.config import load_config

    path = tmp_path / "harness.toml"
    path.write_text(
        textwrap.dedent(
            """
            [service]
            start = "x {port}"
            ready = "/health"
            python = "venv/bin/python"
            build_outputs = []
            [query]
            path = "/s"
            ids = "ids"
            [gold]
            path = "gold.jsonl"
            """
        )
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path, repo=tmp_path)
    text = str(caught.value)
    assert "service.python: is a relative path" in text
    assert "service.build_outputs: lists no path" in text


def test_an_interpreter_in_your_tree_is_found_through_config_dir(tmp_path: Path) -> None:
    (tmp_path / "py" / "bin").mkdir(parents=True)
    (tmp_path / "py" / "bin" / "python").symlink_to(sys.executable)
    found = interpreter("{config_dir}/py/bin/python", tmp_path)
    assert found.path == tmp_path.resolve() / "py" / "bin" / "python"
    assert Path(found.executable).resolve() == Path(sys.executable).resolve()

"""harness.boot.mounts without a sandbox: what is hidden, what is mounted back, and how."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.boot import mounts, sandbox


def test_a_hidden_folder_or_one_holding_it_is_never_mounted_back_whole(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    plan = mounts.plan(
        root=tmp_path / "root", worktree=home / "project", readable=[home, tmp_path], hide=[home]
    )
    assert home not in plan.back and tmp_path not in plan.back  # a config_dir that is the home
    assert home / "project" in plan.back
    assert plan.hiding(home / ".netrc") == Path("/tmp")  # /tmp holds tmp_path: outermost wins


def test_nested_paths_mount_once_and_links_of_hidden_folders_are_kept(tmp_path: Path) -> None:
    venv = tmp_path / "wt" / ".venv"
    venv.mkdir(parents=True)
    plan = mounts.plan(root=tmp_path / "root", worktree=tmp_path / "wt", readable=[venv])
    assert plan.back == (tmp_path / "wt",)
    argv = plan.argv()
    if Path("/var/run").is_symlink():
        assert ["--symlink", str(Path("/var/run").readlink()), "/var/run"] == argv[
            argv.index("/var/run") - 2 : argv.index("/var/run") + 1
        ]
    # Everything hidden is made read-only after what lies in it was mounted.
    last_bind = max(i for i, word in enumerate(argv) if word in ("--bind", "--ro-bind"))
    assert argv.index("--remount-ro") > last_bind


def test_the_interpreter_is_asked_where_it_lives(tmp_path: Path) -> None:
    import sys

    found = mounts.python_paths(sys.executable)
    assert Path(sys.base_prefix).resolve() in found
    assert Path(sys.executable).resolve().parent in found
    assert mounts.python_paths(str(tmp_path / "no-python")) == ()


@pytest.mark.parametrize("fails", [1, 2, 3])
def test_the_probe_falls_back_to_a_weaker_confinement(
    fails: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    if sandbox.sandbox_mode({}) != sandbox.BUBBLEWRAP:
        pytest.skip("no usable bubblewrap")
    real = sandbox._tiers()
    broken = [("--no-such-option",)] * fails
    tiers = tuple([*broken, *real][: len(real)])
    monkeypatch.setattr(sandbox, "_tiers", lambda: tiers)
    reason, used = sandbox._probe.__wrapped__(sandbox.shutil.which("bwrap"))
    if fails >= len(real):
        assert reason is not None and "cannot create namespaces" in reason and used == ()
    else:
        assert reason is None and used == tiers[fails]

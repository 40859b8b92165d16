"""`harness history` outside a git repository: each exit-2 error is the one line
docs/reference.md promises (`harness: error: ...` naming what is wrong, and the fix), run as a
user runs it, in a folder that no git repository holds."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import run_cli


@pytest.mark.parametrize(
    ("setup", "said", "fix"),
    [
        (lambda root: None, "no such results directory", "pass --results DIR"),
        (
            lambda root: (root / "harness.toml").write_text("[service]\n"),
            "no git repository contains this config file",
            "pass --repo PATH",
        ),
        (
            lambda root: (root / "results" / "runs").mkdir(parents=True),
            "no valid saved comparison",
            "run `harness compare` first",
        ),
    ],
)
def test_history_outside_a_git_repository_errs_in_one_line(
    tmp_path: Path, setup: object, said: str, fix: str
) -> None:
    root = tmp_path / "elsewhere"
    root.mkdir()
    setup(root)  # type: ignore[operator]
    # No repository above tmp_path is looked at, whatever holds it.
    done = run_cli("harness", "history", cwd=root, env={"GIT_CEILING_DIRECTORIES": str(tmp_path)})
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("harness: error: ") and said in lines[0] and fix in lines[0]
    assert done.stdout == ""

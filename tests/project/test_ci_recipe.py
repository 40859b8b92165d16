"""The manual's GitHub Actions recipe (docs/ci.md): the file it shows verbatim, valid against
GitHub's workflow schema (check-jsonschema's bundled copy, offline), and its pinned install
really installs."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from workflow_support import check_against_github_schema

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "github-workflow.yml"


def readme_block() -> str:
    ci = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    section = ci.split("## Run it in CI", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1, "the CI section shows one workflow"
    return blocks[0]


def test_the_readme_shows_the_workflow_file_verbatim() -> None:
    assert readme_block() == WORKFLOW.read_text(encoding="utf-8")
    assert "examples/github-workflow.yml" in (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    assert "examples/github-workflow.yml" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_workflow_is_valid_against_the_github_workflow_schema() -> None:
    check_against_github_schema(WORKFLOW)


def test_the_workflow_pins_harness_and_fails_on_any_nonzero_status() -> None:
    text = WORKFLOW.read_text(encoding="utf-8")
    pin = re.search(r'HARNESS: "(retrieval-harness @ git\+https://[^"@]+@v[0-9.]+)"', text)
    assert pin, "harness is installed from a pinned git URL (it is on no package index)"
    assert 'pip install "$HARNESS"' in text
    assert "pip install retrieval-harness" not in text
    assert "--format markdown > report.md" in text
    assert "if: steps.compare.outputs.status != '0'" in text  # 1, 2 and 3 fail the check


@pytest.mark.slow
def test_the_pinned_install_form_installs_harness_from_a_tag(tmp_path: Path) -> None:
    # The recipe's `NAME @ git+URL@TAG`, on a throwaway clone of this checkout tagged as a
    # release would be: pip builds it (setuptools from the registry, as on a runner) and the
    # package data (the schemas, the demo) comes along.
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout of harness")
    clone = tmp_path / "harness"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    subprocess.run(["git", "-C", str(clone), "tag", "v0.0.0-test"], check=True, timeout=60)
    target = tmp_path / "site"
    spec = f"retrieval-harness @ git+file://localhost{clone}@v0.0.0-test"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), spec],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0 and "No matching distribution found for setuptools" in done.stderr:
        pytest.skip("no package registry reachable to build with")
    assert done.returncode == 0, done.stderr[-2000:]
    assert (target / "harness" / "schemas" / "comparison.schema.json").is_file()
    assert (target / "harness" / "demo" / "harness.toml").is_file()


def _compare_step() -> dict[str, object]:
    import yaml

    steps = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]["compare"]["steps"]
    return next(s for s in steps if s.get("id") == "compare")


@pytest.mark.parametrize(
    ("labels", "branch", "status", "non_inferior"),
    [
        ("", "feat/x", 0, False),  # a feature: the difference gate
        ("bug", "feat/x", 1, False),
        ("bug refactor", "feat/x", 4, True),  # the label chooses the non-inferiority gate
        ("", "refactor/split-scorer", 0, True),
        ("", "deps/numpy-2", 4, True),
        ("", "dependabot/pip/numpy-2.1", 1, True),
        ("refactoring", "feat/refactor-ish", 0, False),  # only the whole label, the prefix
    ],
)
def test_the_workflow_runs_both_kinds_of_gate_and_passes_on_their_status(
    tmp_path: Path, labels: str, branch: str, status: int, non_inferior: bool
) -> None:
    # The compare step's script as the runner runs it (the expressions filled in as GitHub
    # would), with a `harness` that records its arguments and exits `status`: the gate is
    # chosen by the label or the branch, and the status (4: a margin not shown) reaches the
    # step's output, which the last step fails on unless it is 0.
    step = _compare_step()
    env = step["env"]
    assert isinstance(env, dict)
    assert "github.event.pull_request.labels" in env["LABELS"] and "head_ref" in env["BRANCH"]
    script = str(step["run"]).replace("${{ github.base_ref }}", "main")
    assert "${{" not in script, "every expression is passed through the environment"
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "harness").write_text(
        f'#!/bin/sh\necho "$@" > "{tmp_path}/args"\necho "# report"\nexit {status}\n'
    )
    (fake / "harness").chmod(0o755)
    output = tmp_path / "output"
    done = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=tmp_path,
        env={"PATH": f"{fake}:/usr/bin:/bin", "LABELS": labels, "BRANCH": branch,
             "GITHUB_OUTPUT": str(output)},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    args = (tmp_path / "args").read_text().split()
    assert args[:5] == ["compare", "--baseline", "origin/main", "--candidate", "HEAD"]
    assert ("--non-inferior" in args) is non_inferior
    if non_inferior:
        assert args[args.index("--non-inferior") + 1] == "0.02"
    assert output.read_text() == f"status={status}\n"
    text = WORKFLOW.read_text(encoding="utf-8")
    assert "if: steps.compare.outputs.status != '0'" in text  # 4 fails the check as 1 does

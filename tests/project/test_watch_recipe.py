"""The manual's scheduled-job recipe (docs/ci.md, "Watch a branch on a schedule"): the file it
shows verbatim, valid against GitHub's workflow schema, a cache that carries results/ from run
to run, and its `harness watch` step run as written, twice, across a cache round trip: the second
run measures only the commits that landed in between."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from workflow_support import check_against_github_schema

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "github-watch.yml"
SECTION = "## Watch a branch on a schedule"


def workflow() -> dict[str, Any]:
    yaml = pytest.importorskip("ruamel.yaml", reason="ruamel.yaml (test extra) is not installed")
    loaded = yaml.YAML(typ="safe").load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def step(name: str) -> dict[str, Any]:
    steps = workflow()["jobs"]["watch"]["steps"]
    found = [s for s in steps if s.get("name") == name]
    assert len(found) == 1, f"one step named {name!r}"
    return found[0]


def watch_argv() -> list[str]:
    """The recipe's `harness watch ...` line, as argv (without `> report.md`)."""
    lines = [x.strip() for x in step("Watch main")["run"].splitlines()]
    line = next(x for x in lines if x.startswith("harness watch "))
    return shlex.split(line.partition(">")[0])


def test_the_manual_shows_the_scheduled_workflow_verbatim() -> None:
    ci = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    assert SECTION in ci
    section = ci.split(SECTION, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, flags=re.S)
    assert blocks == [WORKFLOW.read_text(encoding="utf-8")]
    assert "examples/github-watch.yml" in section


def test_the_scheduled_workflow_is_valid_against_the_github_workflow_schema() -> None:
    check_against_github_schema(WORKFLOW)


def test_the_results_travel_from_run_to_run_and_a_regression_fails_the_job() -> None:
    w = workflow()
    assert w["on"]["schedule"][0]["cron"]
    restore = step("Restore the results of earlier runs")
    save = step("Keep the results for the next run")
    assert restore["uses"].startswith("actions/cache/restore@")
    assert save["uses"].startswith("actions/cache/save@")
    # The same folder both ways; a key of its own each run (a cache entry is never
    # overwritten) and the newest earlier entry restored by its prefix.
    assert restore["with"]["path"] == save["with"]["path"] == "results/"
    assert restore["with"]["key"] == save["with"]["key"]
    assert "github.run_id" in save["with"]["key"]
    assert save["with"]["key"].startswith(restore["with"]["restore-keys"])
    assert save["if"] == "always()"  # kept even when the watch found a regression
    steps = w["jobs"]["watch"]["steps"]
    names = [s.get("name") for s in steps]
    assert names.index("Restore the results of earlier runs") < names.index("Watch main")
    assert names.index("Watch main") < names.index("Keep the results for the next run")
    checkout = steps[0]
    assert checkout["with"]["fetch-depth"] == 0
    argv = watch_argv()
    assert argv[:2] == ["harness", "watch"]
    assert argv[argv.index("--ref") + 1] == checkout["with"]["ref"]
    assert step("Open an issue on a confirmed regression")["if"] == (
        "steps.watch.outputs.status == '1'"
    )
    assert w["concurrency"]["cancel-in-progress"] is False


@pytest.mark.slow
def test_the_recipes_watch_step_measures_only_new_commits_after_a_cache_round_trip(
    tmp_path: Path,
) -> None:
    from e2e_support import git
    from watch_support import watch_sandbox

    sandbox, _ = watch_sandbox(
        tmp_path / "s", commits=4, quality_at=None, latency_at=None, drift=None
    )
    argv = watch_argv()[1:]  # as the CLI's module runs it

    def nightly() -> str:
        done = subprocess.run(
            sandbox.command(argv),
            cwd=sandbox.repo,
            env=sandbox.env(),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    first = nightly()
    assert "measured (6 now)" in first  # the fixture's first commit and commits 0-4
    # The runner is thrown away; only results/ comes back, through the cache.
    shutil.rmtree(sandbox.cache)
    sandbox.cache.mkdir()
    (sandbox.repo / "notes.txt").write_text("landed overnight\n")
    git(sandbox.repo, "commit", "--quiet", "-am", "landed overnight", home=sandbox.home)
    second = nightly()
    assert "7 measured (1 now)" in second
    assert "no change found" in second or "no confirmed change" in second

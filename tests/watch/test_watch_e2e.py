"""harness watch end to end, on real throwaway repositories (tests/watch_support.py) and real
services booted by the CLI: 40 commits on main with a quality step at commit 12 (16 of 80
answers buried), a latency step at commit 25 (+30%) and a drift over commits 30-37 (+4% each,
none a step of the 10% band).  One run with a budget spread over the branch measures every
second commit, flags, confirms each flag by a fresh paired compare, bisects inside the
confirmed steps' ranges, and names both culprits and the drift's range; a branch with no change
reports nothing.  Nothing is left behind."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from watch_support import BURIED, watch_sandbox

WATCH_TIMEOUT_S = 900.0  # a deadline against a hung harness, not a timing assertion


def _watch(sandbox, *args: str) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    return subprocess.run(
        sandbox.command(("watch", *args)),
        cwd=sandbox.repo,
        env=sandbox.env(),
        capture_output=True,
        text=True,
        timeout=WATCH_TIMEOUT_S,
        check=False,
    )


def _report(done: subprocess.CompletedProcess[str]) -> tuple[Path, dict]:  # type: ignore[type-arg]
    saved = Path(done.stderr.rpartition("watch report saved in ")[2].strip())
    return saved, json.loads((saved / "report.json").read_text())


@pytest.mark.slow
def test_both_steps_are_found_with_their_culprits_and_the_drift_as_a_range(
    tmp_path: Path,
) -> None:
    sandbox, shas = watch_sandbox(tmp_path / "s")
    done = _watch(sandbox, "--ref", "main", "--budget", "21", "--spread", "--format", "json")
    assert done.returncode == 1, done.stderr  # a confirmed regression
    saved, report = _report(done)
    assert json.loads(done.stdout)["findings"] == report["findings"]
    index = {sha: i for i, sha in enumerate(shas)}
    confirmed = [f for f in report["findings"] if f["confirmed"]]
    quality = [f for f in confirmed if f["series"].startswith(("hit@", "ndcg@"))]
    latency = [f for f in confirmed if f["series"].startswith("latency")]
    assert quality and all(
        f["kind"] == "step" and index[f["culprit"]["sha"]] == 12 and f["regression"]
        for f in quality
    ), quality
    assert {f["series"] for f in quality} == {"hit@5", "hit@10", "ndcg@10"}
    hit = next(f for f in quality if f["series"] == "hit@5")
    assert hit["level_before"] == pytest.approx(1.0)
    assert hit["level_after"] == pytest.approx(1 - BURIED / 80)
    steps = [f for f in latency if f["kind"] == "step"]
    drifts = [f for f in latency if f["kind"] == "drift"]
    culprits = sorted(index[f["culprit"]["sha"]] for f in steps)
    # The +30% commit is named; any other latency step named is one of the drift's commits
    # (each truly 4% slower: the machine's noise can make one look like a step of its own).
    assert 25 in culprits and all(c == 25 or 30 <= c <= 37 for c in culprits), latency
    # The drift is reported as such, over a range (or two) that overlaps commits 30-37, never
    # reaching back over the step at 25; no single culprit.
    assert drifts, latency
    for drift in drifts:
        start, end = index[drift["before"]["sha"]], index[drift["after"]["sha"]]
        assert start >= 25 and start < 37 and end >= 30 and end - start >= 2, (start, end)
        assert drift["culprit"] is None and drift["regression"]
    # Every second commit was measured, so each step lay between two measured commits with one
    # unmeasured commit inside: bisected there, and nowhere else.
    for f in (*quality, *steps):
        b = f["bisection"]
        if f["commits"] > 1:
            assert b is not None and b["outcome"] == "found"
            inside = {c["sha"] for c in b["path"]}
            assert all(s["commit"]["sha"] in inside for s in b["steps"])
    assert report["regressions"] == len(confirmed)
    assert len(report["measured_now"]) == 21
    # The confirming compares are ordinary saved comparisons; the history page draws the bands.
    for f in report["findings"]:
        assert (Path(f["comparison"]) / "comparison.json").is_file()
    page = (saved / "history.html").read_text()
    assert "step" in page and "drift" in page and 'src="../plotly-' in page
    assert (saved / "report.md").read_text().startswith("## harness watch")
    assert sandbox.leftovers() == [] and sandbox.worktrees() == []


@pytest.mark.slow
def test_a_branch_with_no_change_reports_nothing_and_a_second_run_measures_only_new_commits(
    tmp_path: Path,
) -> None:
    sandbox, shas = watch_sandbox(
        tmp_path / "s", commits=9, quality_at=None, latency_at=None, drift=None
    )
    done = _watch(sandbox, "--ref", "main", "--budget", "6", "--format", "json")
    assert done.returncode == 0, done.stderr
    _, report = _report(done)
    assert [f for f in report["findings"] if f["confirmed"]] == []
    newest_first = [c["sha"] for c in reversed(report["path"])]
    assert newest_first[: len(shas)] == list(reversed(shas))  # and the fixture's first commit
    assert report["measured_now"] == newest_first[:6]
    again = _watch(sandbox, "--ref", "main", "--budget", "6", "--format", "json")
    assert again.returncode == 0, again.stderr
    _, second = _report(again)
    assert second["measured_now"] == newest_first[6:]  # the 5 left, none twice
    assert sorted(second["measured"]) == sorted(newest_first)
    assert sandbox.leftovers() == [] and sandbox.worktrees() == []

"""harness bisect end to end, on a real throwaway repository (tests/bisect_support.py): 16
commits after the good end, commit 11 buries 24 of 80 answers (hit@5 1.000 -> 0.700), commit 8
does not build.  The bisection compares each step's commit against the good end with the real
CLI, skips the unbuildable one (as `git bisect skip`), names commit 11 with its verdict, in
ceil(log2 16) + skips compares, writes its report in every format, and leaves nothing behind."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from bisect_support import BURIED, bisect_sandbox, builds_log

COMMITS, REGRESS_AT, BROKEN_AT = 16, 11, 8


@pytest.mark.slow
def test_a_planted_regression_among_16_is_found_and_the_broken_build_skipped(
    tmp_path: Path,
) -> None:
    sandbox, shas = bisect_sandbox(
        tmp_path / "s", commits=COMMITS, regress_at=REGRESS_AT, broken_at=BROKEN_AT
    )
    done = sandbox.harness("bisect", "--good", shas[0], "--bad", "main", "--metric", "hit@5")
    assert done.returncode == 0, done.stderr
    assert f"first bad commit: {shas[REGRESS_AT]} commit {REGRESS_AT}" in done.stdout
    assert f"hit@5: 1.000 -> {1 - BURIED / 80:.3f}" in done.stdout
    saved = Path(done.stderr.rpartition("bisect report saved in ")[2].strip())
    report = json.loads((saved / "report.json").read_text())
    steps = report["steps"]
    assert report["outcome"] == "found"
    assert report["culprits"] == [
        {"sha": shas[REGRESS_AT], "subject": f"commit {REGRESS_AT} (regresses)"}
    ]
    skipped = [s for s in steps if s["mark"] == "skip"]
    # The one unbuildable commit was compared, found invalid, skipped; nothing else was.
    assert [s["commit"]["sha"] for s in skipped] == [shas[BROKEN_AT]]
    assert skipped[0]["verdict"] == "invalid" and "build failed" in skipped[0]["reason"]
    assert len(steps) == math.ceil(math.log2(COMMITS)) + len(skipped)
    for step in steps:  # every step judged as the real compare saw it, on the right side
        bad = step["position"] >= REGRESS_AT
        if step["mark"] != "skip":
            assert step["mark"] == ("bad" if bad else "good"), step
    assert (saved / "report.md").read_text().startswith("# harness bisect")
    page = (saved / "report.html").read_text()
    assert 'data-plot="path"' in page
    # plotly.js from the results directory, as compare's saved pages load it: not 4.8 MB inlined
    # into every bisection.
    assert len(page) < 1_000_000 and 'src="../plotly-' in page
    bundle = page.split('src="../', 1)[1].split('"', 1)[0]
    assert (saved.parent / bundle).is_file()
    # Each step is an ordinary saved comparison (harness report DIR reads it back).
    for step in steps:
        assert (Path(step["saved"]) / "comparison.json").is_file()
    # Builds are cached: the good end is built once however many steps compared it, and each
    # buildable commit once (the broken one fails before it logs).
    assert builds_log(sandbox).read_text().count("built") == 1 + len(steps) - len(skipped)
    assert done.stderr.count("bisect step") == len(steps)
    assert sandbox.leftovers() == [] and sandbox.worktrees() == []

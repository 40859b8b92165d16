"""A finished bisection on disk: results/bisect_<stamp>_<good8>_<bad8>/ holding report.md,
report.json and report.html (the page only when plotly is installed), written whole or not at
all, never over an earlier one; and the one line said as each step is judged."""

from __future__ import annotations

from pathlib import Path

from harness.bisect.render import render_bisection
from harness.bisect.run import Bisection, Step
from harness.results.files import new_directory_atomic, utc_stamp, write_text_new


def save_bisection(results_dir: Path, bisection: Bisection) -> Path:
    """The report in every format, in a new directory under `results_dir`; its path."""
    from harness.report.page import html_available

    stem = f"bisect_{utc_stamp()}_{bisection.good.short}_{bisection.bad.short}"
    saving = new_directory_atomic(results_dir, stem)
    with saving as tmp:
        for fmt, name in (("markdown", "report.md"), ("json", "report.json")):
            write_text_new(tmp / name, render_bisection(bisection, fmt))
        if html_available():
            from harness.report.bundle import plotly_beside

            # plotly.js once in the results directory, as compare's pages load it (4.8 MB each
            # inlined); `harness report`-style self-contained pages come from render_bisection.
            src = "../" + plotly_beside(results_dir)
            page = render_bisection(bisection, "html", plotly_src=src)
            write_text_new(tmp / "report.html", page)
    assert saving.path is not None
    return saving.path


def step_line(step: Step, left: int) -> str:
    """`bisect step 2: commit 7 3f2a9c1e regressed -> bad (4 commits left): why`, one line."""
    j = step.judgement
    where = "the bad end" if step.confirm else f"{left} commit{'s' if left != 1 else ''} left"
    return (
        f"bisect step {step.number}: commit {step.position} {step.commit.short} "
        f"{j.verdict} -> {j.mark} ({where}): {j.reason}"
    )

"""A finished watch on disk: results/watch_<stamp>_<sha8>/ holding report.md, report.json and
history.html (the branch's history page with the changes drawn, when plotly is installed),
written whole or not at all, never over an earlier one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from harness.bisect.run import Commit
from harness.history.points import Point
from harness.history.table import Drawn, aggregate
from harness.results.files import new_directory_atomic, utc_stamp, write_text_new
from harness.watch.render import describe, render_watch
from harness.watch.run import Watch


def drawn(w: Watch) -> tuple[Drawn, ...]:
    return tuple(
        Drawn(f.change.series, f.before.sha, f.after.sha, describe(f), f.confirmed, f.regression)
        for f in w.findings
    )


def save_watch(
    results_dir: Path,
    w: Watch,
    points: Sequence[Point],
    metrics: Sequence[str],
    measured_now: Sequence[Commit],
    failed: Sequence[Commit],
) -> Path:
    """The report in every format and the history page, in a new directory; its path."""
    from harness.report.page import html_available

    stem = f"watch_{utc_stamp()}_{w.path[-1].short}"
    saving = new_directory_atomic(results_dir, stem)
    with saving as tmp:
        for fmt, name in (("markdown", "report.md"), ("json", "report.json")):
            write_text_new(tmp / name, render_watch(w, fmt, measured_now, failed))
        if html_available():
            from harness.history.render import render_history
            from harness.report.bundle import plotly_beside

            order = [c.sha for c in w.path]
            kept = [p for p in points if p.sha in set(order)]
            history = aggregate(
                kept,
                list(metrics),
                order,
                ordered_by="the first-parent order of the branch",
                source="the run records harness watch measured",
            )
            history = replace(history, changes=drawn(w))
            src = "../" + plotly_beside(results_dir)
            write_text_new(tmp / "history.html", render_history(history, "html", plotly_src=src))
    assert saving.path is not None
    return saving.path

"""A comparison saved with its pages: rendered here, stored by `harness.results.comparisons`.

    save_comparison(results_dir, comparison, runs, redact=False) -> the new directory

The pages are report.md and, when plotly is installed (`html_available()`), report.html, which
loads plotly.js written once beside the comparisons (`harness.report.bundle`). This module only
renders: every file is written by results (comparison.json, the run records, these pages).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from harness.report.bundle import plotly_beside
from harness.report.page import html_available, render
from harness.results.comparisons import HTML_FILE, REPORT_FILE, store_comparison
from harness.values.types import RefRun
from harness.verdict.comparison import Comparison


def save_comparison(
    results_dir: Path,
    comparison: Comparison,
    runs: Sequence[RefRun] = (),
    *,
    redact: bool = False,
) -> Path:
    """Write results_dir/<UTC stamp>_<base sha8>_<cand sha8>/ (a new directory: an existing one
    gets a -2, -3, ... suffix) holding comparison.json, report.md, report.html (unless plotly is
    missing: `html_available()`; plotly.js beside it in `results_dir`, once) and a copy of each
    run record (baseline.json and .npz, candidate.json and .npz); return the directory. With
    `redact`, the copies lose the error details, which may quote response bodies, and the
    reports hold no query text (nor, in the page, any path).

    Everything is written into a hidden temporary directory renamed into place at the end, so a
    failure (a full disk) leaves no empty or partial comparison: ResultsError, nothing saved."""

    def pages() -> Iterator[tuple[str, str]]:
        # One at a time, each written before the next is rendered: a full disk at report.md
        # leaves no plotly.js behind either.
        yield REPORT_FILE, render(comparison, "markdown", redact=redact)
        if html_available():
            from harness.report.html_page import render_html  # plotly is loaded only for HTML

            # The bundle first: a page is never there without what it loads.
            src = "../" + plotly_beside(results_dir)
            yield HTML_FILE, render_html(comparison, redact, plotly_src=src)

    return store_comparison(results_dir, comparison, runs, pages, redact=redact)

"""The HTML pages in a real browser: Debian's Chromium, headless, driven by Playwright
(tests/browser_support.py; skipped, with the reason, when either is absent).

Each page is opened from disk and must: log no console error and throw no script error, ask for
nothing but itself (self-contained: no network), show its verdict text, draw every plot (each
plot's div holds plotly's .plot-container and its SVG), and give a screenshot that is not one
flat colour.  The comparison page's flip table must sort when its heading is clicked.  The demo's
own report.html is checked the same way in tests/test_demo_cli.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_support import DRAWN, check_page, chromium_or_skip, open_page
from cli_support import run_cli
from compare_support import scored
from history_support import measured

from harness.report.page import render

SORT_IMPACT = """
async () => {
  const table = document.querySelector('table.flips[data-metric="hit@5"]');
  const impact = Array.from(table.tHead.rows[0].cells).findIndex(c => c.textContent === "impact");
  const column = () => Array.from(table.tBodies[0].rows).map(r => r.cells[0].textContent);
  const before = column();
  table.tHead.rows[0].cells[impact].click();
  const up = column();
  table.tHead.rows[0].cells[impact].click();
  const down = column();
  const byQuery = Array.from(table.tHead.rows[0].cells).findIndex(c => c.textContent === "query");
  table.tHead.rows[0].cells[byQuery].click(); table.tHead.rows[0].cells[byQuery].click();
  return {before, up, down, byQueryDesc: column()};
}
"""


@pytest.fixture(autouse=True)
def _chromium() -> None:
    chromium_or_skip()


def test_the_comparison_page_renders_every_plot(tmp_path: Path) -> None:
    comparison = scored()[0]
    path = tmp_path / "report.html"
    path.write_text(render(comparison, "html"), encoding="utf-8")
    seen = open_page(
        path, script=SORT_IMPACT, drawn=DRAWN, screenshot=tmp_path / "report.png"
    )
    check_page(seen, path, ["quality", "latency", "scores", "repeats"])
    assert "QUALITY" in seen.text and "regressed" in seen.text  # the verdict cards
    assert seen.text.index("regressed") < seen.text.index("Plots")
    assert "hit@5, hit@10 regressed" in seen.text
    assert "Flips at hit@5: 12 queries" in seen.text
    # Sorting: every flip of hit@5 has impact 1 (rank 1 -> not returned), so a click on
    # "impact" keeps them all; a second click on "query" puts q52 first.
    sorted_ = seen.evaluated["script"]
    assert sorted(sorted_["up"]) == sorted(sorted_["before"]) == sorted_["before"]
    assert sorted_["byQueryDesc"] == sorted(sorted_["before"], reverse=True)


def test_the_history_page_renders_its_graph(tmp_path: Path) -> None:
    data = measured(tmp_path)
    path = tmp_path / "history.html"
    done = run_cli(
        "harness",
        "history",
        "--results",
        data.results,
        "--gold",
        data.gold_path,
        "--repo",
        data.repo,
        "--format",
        "html",
        "--output",
        path,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    seen = open_page(path, drawn=DRAWN, screenshot=tmp_path / "history.png")
    check_page(seen, path, ["history"])
    assert "harness history: 3 commits" in seen.text
    for sha in data.shas:
        assert sha[:8] in seen.text

"""The HTML pages in a real browser: Debian's Chromium, headless, driven by Playwright
(tests/browser_support.py; skipped, with the reason, when either is absent).

Each page is opened from disk and must: log no console error and throw no script error, ask for
nothing but itself and, for a saved page, the plotly.js beside it (no network), show its verdict
text, draw every plot (each
plot's div holds plotly's .plot-container and its SVG), and give a screenshot that is not one
flat colour.  The comparison page's flip table must sort when its heading is clicked.  No plot
may draw a subplot title over tick labels or another title, nor its legend or title under
plotly's toolbar (bounding boxes in the DOM, `browser_support.clashes`).  The demo's
own report.html is checked the same way in tests/demo/test_demo_cli.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from browser_support import BOXES, DRAWN, check_page, clashes, open_page
from cli_support import run_cli
from compare_support import make_gold, make_run, ranks, scored, with_every_section
from history_support import forked, measured

from harness.report.page import render
from harness.report.plotting import plotly_file
from harness.report.saved import save_comparison
from harness.results.comparisons import HTML_FILE

PLOTS = ["quality", "deltas", "latency", "scores", "repeats"]
MiB = 1024 * 1024

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


pytestmark = pytest.mark.slow  # a real browser: the inner loop (-m "not slow") leaves it out


def test_the_comparison_page_renders_every_plot(chromium: Any, tmp_path: Path) -> None:
    comparison = scored()[0]
    path = tmp_path / "report.html"
    path.write_text(render(comparison, "html"), encoding="utf-8")
    seen = open_page(
        chromium,
        path, script=SORT_IMPACT, drawn=DRAWN, screenshot=tmp_path / "report.png"
    )
    check_page(seen, path, PLOTS)
    assert "QUALITY" in seen.text and "regressed" in seen.text  # the verdict cards
    assert seen.text.index("regressed") < seen.text.index("Plots")
    assert "hit@5, hit@10 regressed" in seen.text
    assert "Flips at hit@5: 12 queries" in seen.text
    # Sorting: every flip of hit@5 has impact 1 (rank 1 -> not returned), so a click on
    # "impact" keeps them all; a second click on "query" puts q52 first.
    sorted_ = seen.evaluated["script"]
    assert sorted(sorted_["up"]) == sorted(sorted_["before"]) == sorted_["before"]
    assert sorted_["byQueryDesc"] == sorted(sorted_["before"], reverse=True)


def test_the_history_page_renders_its_graph(chromium: Any, tmp_path: Path) -> None:
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
    seen = open_page(chromium, path, drawn=DRAWN, screenshot=tmp_path / "history.png")
    check_page(seen, path, ["history"], bundle=tmp_path / plotly_file())
    assert "harness history: 3 commits" in seen.text
    for sha in data.shas:
        assert sha[:8] in seen.text


def test_a_saved_page_loads_its_bundle_offline_and_nothing_overlaps(
    chromium: Any, tmp_path: Path
) -> None:
    c, base, cand = scored()
    results = tmp_path / "results"
    saved = save_comparison(results, with_every_section(c), (base, cand))
    again = save_comparison(results, c, (base, cand))
    page = saved / HTML_FILE
    bundle = results / plotly_file()
    # plotly.js written once for the folder, each page a fraction of it (it was 4.9 MB inlined).
    assert [p.name for p in results.glob("plotly-*.js")] == [bundle.name]
    assert len(page.read_bytes()) <= 1 * MiB and len((again / HTML_FILE).read_bytes()) <= 1 * MiB
    assert bundle.stat().st_size > 3 * MiB
    shot = tmp_path / "saved.png"
    seen = open_page(chromium, page, drawn=DRAWN, script=BOXES, screenshot=shot)
    check_page(seen, page, PLOTS, bundle=bundle)
    assert [clash for plot in seen.evaluated["script"] for clash in clashes(plot)] == []
    boxes = {plot["name"]: plot for plot in seen.evaluated["script"]}
    assert len(boxes["quality"]["annotations"]) == 10 and boxes["quality"]["ticks"]
    assert all(boxes[name]["modebar"] and boxes[name]["title"] for name in PLOTS)
    # The sections the page used to leave to "The numbers" (or leave out).
    text = seen.text
    assert "Floors of [gate.floors] on the candidate: 1 of 2 not met" in text
    assert "NOT MET" in text and text.index("NOT MET") < text.index("Plots")
    assert "Errored answers, by kind" in text and 'q07: {"detail": "index shard 3' in text
    assert "x" * 200 in text and "x" * 400 not in text  # the sample body cut at 300 characters
    assert "Before the queries: prepare steps and loading" in text and "prepare[0]" in text
    assert "Retrieval vs generation (the 2x2)" in text and "generation failure" in text
    assert text.count("Errored answers, by kind") == 1  # not again under "The numbers"


def test_one_slice_draws_no_duplicate_rows(chromium: Any, tmp_path: Path) -> None:
    from dataclasses import replace

    from harness.verdict.comparison import CompareSettings
    from harness.verdict.decide import compare

    gold = make_gold()
    gold = replace(gold, queries=tuple(replace(q, slice="default") for q in gold.queries))
    c = compare(
        gold, make_run(gold, ranks()), make_run(gold, ranks(), ref="x", sha="2" * 40),
        CompareSettings(resamples=200),
    )  # fmt: skip
    path = tmp_path / "report.html"
    path.write_text(render(c, "html"), encoding="utf-8")
    seen = open_page(chromium, path, drawn=DRAWN, script=BOXES)
    boxes = {plot["name"]: plot for plot in seen.evaluated["script"]}
    labels = {t["text"] for t in boxes["quality"]["ticks"] if "(n=" in t["text"]}
    assert labels == {"all (n=80)"}
    assert [clash for plot in seen.evaluated["script"] for clash in clashes(plot)] == []


def test_a_page_written_elsewhere_brings_its_bundle(chromium: Any, tmp_path: Path) -> None:
    c, base, cand = scored()
    saved = save_comparison(tmp_path / "results", c, (base, cand))
    elsewhere = tmp_path / "review" / "page.html"
    elsewhere.parent.mkdir()
    done = run_cli(
        "harness", "report", saved, "--format", "html", "--output", elsewhere, cwd=tmp_path
    )
    assert done.returncode == 1, done.stderr  # regressed; the page is written all the same
    bundle = elsewhere.parent / plotly_file()
    assert bundle.is_file() and len(elsewhere.read_bytes()) <= 1 * MiB
    seen = open_page(chromium, elsewhere, drawn=DRAWN)
    check_page(seen, elsewhere, PLOTS, bundle=bundle)


def test_a_page_copied_without_its_bundle_says_what_is_missing(
    chromium: Any, tmp_path: Path
) -> None:
    c, base, cand = scored()
    saved = save_comparison(tmp_path / "results", c, (base, cand))
    alone = tmp_path / "alone.html"
    alone.write_bytes((saved / HTML_FILE).read_bytes())
    context = chromium.new_context()
    try:
        page = context.new_page()
        page.goto(alone.resolve().as_uri(), wait_until="load")
        note = page.inner_text("p.missing-plotly")
    finally:
        context.close()
    assert f"../{plotly_file()}" in note and "--format html > page.html" in note


def test_the_history_page_draws_siblings_as_a_fork(chromium: Any, tmp_path: Path) -> None:
    data = forked(tmp_path)
    path = tmp_path / "history.html"
    done = run_cli(
        "harness", "history", "--results", data.results, "--gold", data.gold_path,
        "--repo", data.repo, "--format", "html", "--output", path, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    shot = tmp_path / "history.png"
    seen = open_page(chromium, path, drawn=DRAWN, script=BOXES, screenshot=shot)
    check_page(seen, path, ["history"], bundle=tmp_path / plotly_file())
    assert [clash for plot in seen.evaluated["script"] for clash in clashes(plot)] == []
    assert "commit graph (a row per line of descent)" in seen.text


CHANGE_BANDS = """
() => {
  const plot = document.querySelector('div.plot .js-plotly-plot');
  return {
    shapes: (plot.layout.shapes || []).map(s => ({x0: s.x0, x1: s.x1, yref: s.yref,
                                                   fill: s.fillcolor})),
    drawn: document.querySelectorAll('div.plot g.shapelayer path').length,
    labels: Array.from(document.querySelectorAll('div.plot g.annotation text'))
      .map(t => t.textContent),
  };
}
"""


def test_the_watch_history_page_draws_each_change_as_a_band_on_its_panel(
    chromium: Any, tmp_path: Path
) -> None:
    from dataclasses import replace

    from harness.history.collect import points_from_records
    from harness.history.render import render_history
    from harness.history.table import LATENCY, Drawn, aggregate
    from harness.score.metrics import parse_metrics

    data = measured(tmp_path)
    points, _ = points_from_records(data.results, data.gold, parse_metrics("hit@5"))
    history = aggregate(points, ["hit@5"], list(data.shas))
    changes = (
        Drawn("hit@5", data.shas[0], data.shas[1], "step -0.100: regression, c1", True, True),
        Drawn(LATENCY, data.shas[1], data.shas[2], "step 1.10x: not confirmed", False, False),
    )
    path = tmp_path / "history.html"
    path.write_text(render_history(replace(history, changes=changes), "html"))
    seen = open_page(chromium, path, drawn=CHANGE_BANDS, screenshot=tmp_path / "bands.png")
    assert seen.console_errors == [] and seen.page_errors == []
    bands = seen.evaluated["drawn"]
    # One band per change, each over its own commits (rows 0-1 and 1-2), on its own panel
    # (hit@5 the first, latency the second), red for the confirmed regression, grey otherwise.
    assert [(s["x0"], s["x1"]) for s in bands["shapes"]] == [(0, 1), (1, 2)]
    assert [s["yref"].split(" ")[0] for s in bands["shapes"]] == ["y", "y2"]
    assert [s["fill"] for s in bands["shapes"]] == ["#c62828", "#9e9e9e"]
    assert bands["drawn"] >= 2
    assert "step -0.100: regression, c1" in bands["labels"]
    assert "step 1.10x: not confirmed" in bands["labels"]

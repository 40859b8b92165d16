"""The HTML report (harness.report.html_page and .figures) and the numbers the Comparison carries
for it; its rendering in a real browser is tests/report/test_browser.py's.

Comparisons are built in memory from tests/compare_support.py (no services): `scored` is a
regression whose services return scores, so every plot has something to draw.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from pathlib import Path

import cli_server
import pytest
from compare_support import buried, candidate, make_gold, make_run, ranks, scored

from harness.cli.main import main
from harness.report import page
from harness.report import saved as saving
from harness.report.page import render
from harness.report.plotting import plotly_file, plotly_js, plotly_script
from harness.report.saved import save_comparison
from harness.results.comparisons import HTML_FILE, REPORT_FILE, load_comparison
from harness.verdict.comparison import CompareSettings, Comparison
from harness.verdict.decide import compare

SETTINGS = CompareSettings(resamples=500)
MiB = 1024 * 1024


@pytest.fixture(scope="module")
def comparison() -> Comparison:
    return scored()[0]


@pytest.fixture(scope="module")
def page_html(comparison: Comparison) -> str:
    return render(comparison, "html")


# --------------------------------------------------------------------------- what the plots need


def test_each_repeat_carries_its_metric_means_and_latency(comparison: Comparison) -> None:
    metrics = [r.metric for r in comparison.overall.rows]
    base = [r for r in comparison.repeats if r.side == "baseline"]
    cand = [r for r in comparison.repeats if r.side == "candidate"]
    assert [r.index for r in base] == [r.index for r in cand] == [0, 1, 2]
    hit5 = metrics.index("hit@5")
    # 80 answerable queries; the candidate buries q41-q52: 68 of 80 hit, in every repeat.
    assert [r.means[hit5] for r in base] == [1.0, 1.0, 1.0]
    assert [r.means[hit5] for r in cand] == [68 / 80] * 3
    assert all(r.latency_p50 is not None and r.latency_p50 > 0 for r in comparison.repeats)


def test_latency_percentiles_span_each_side_and_the_ratios(comparison: Comparison) -> None:
    lat = comparison.latency
    assert len(lat.percentiles_baseline) == len(lat.percentiles_candidate) == 101
    assert lat.baseline is not None
    assert lat.percentiles_baseline[50] == pytest.approx(lat.baseline.p50)
    assert lat.percentiles_baseline[100] == pytest.approx(lat.baseline.max)
    assert list(lat.percentiles_baseline) == sorted(lat.percentiles_baseline)
    # Every per-query ratio is 1.5 * (1.00, 1.01 or 1.02).
    assert 1.5 <= lat.ratio_percentiles[0] <= lat.ratio_percentiles[100] <= 1.5 * 1.02 + 1e-9


def test_hit_rows_carry_the_interval_of_their_delta(comparison: Comparison) -> None:
    hit = comparison.overall.row("hit@5")
    assert hit is not None and hit.hit is not None
    assert hit.hit.ci_low is not None and hit.hit.ci_high is not None
    assert hit.hit.ci_low <= hit.delta <= hit.hit.ci_high < 0


def test_top_scores_are_the_threshold_analysis_of_each_side(comparison: Comparison) -> None:
    base, cand = comparison.top_scores
    assert (base.side, cand.side) == ("baseline", "candidate")
    assert set(base.answerable) == {0.9} and len(base.answerable) == 80
    # u1-u4 return nothing, u5 and u6 one result scored 0.2.
    assert base.unanswerable == (0.2, 0.2) and base.empty_unanswerable == 4
    assert base.separable and base.cutoff == pytest.approx((0.9 + 0.2) / 2)


def test_a_service_without_scores_has_no_score_plot() -> None:
    gold = make_gold()
    c = compare(gold, make_run(gold, ranks()), candidate(gold, ranks()), SETTINGS)
    assert c.top_scores == ()
    assert 'data-plot="scores"' not in render(c, "html")


# --------------------------------------------------------------------------- the page


def test_the_page_puts_the_verdicts_first_then_every_plot(page_html: str) -> None:
    assert page_html.startswith("<!DOCTYPE html>")
    body = page_html[page_html.index("<body>") :]
    assert body.index("regressed") < body.index("<h2>Plots</h2>")
    plots = re.findall(r'<div class="plot" data-plot="(\w+)">', body)
    assert plots == ["quality", "deltas", "latency", "scores", "repeats"]
    assert body.count("Plotly.newPlot(") == 5
    order = [body.index(f"<h2>{h}</h2>") for h in ("Plots", "Flips", "The numbers")]
    assert order == sorted(order)


def test_the_page_is_self_contained(page_html: str) -> None:
    # plotly.js inlined exactly once, and nothing fetched: no src/href to anywhere.
    assert page_html.count("<script") == 1 + 5 + 1  # plotly.js, one per plot, the table sorter
    assert re.search(r"<script[^>]*\ssrc=", page_html) is None
    assert re.search(r"<link\b", page_html) is None
    assert len(page_html.encode()) < 5 * MiB


def test_every_flip_is_in_a_sortable_table(comparison: Comparison, page_html: str) -> None:
    flips = next(f for f in comparison.flips if f.metric == "hit@5")
    assert len(flips.flips) == 12
    table = page_html[page_html.index('data-metric="hit@5"') :]
    table = table[: table.index("</table>")]
    assert table.count("<tr>") == 1 + 12
    assert 'class="sortable flips"' in page_html and "how do I configure widget 41" in table


def test_the_page_is_deterministic(comparison: Comparison, page_html: str) -> None:
    assert render(comparison, "html") == page_html


def test_redacted_page_holds_no_query_text_and_no_path(comparison: Comparison) -> None:
    h = comparison.header
    c = replace(
        comparison,
        header=replace(
            h,
            gold=replace(h.gold, source="/home/someone/project/gold/gold.jsonl"),
            baseline=replace(h.baseline, record_path="/home/someone/r/base.json", reused=True),
        ),
    )
    shown = render(c, "html")
    assert "/home/someone/r/base.json" in shown and "configure widget" in shown
    hidden = render(c, "html", redact=True)
    assert "configure widget" not in hidden and "unanswerable question" not in hidden
    assert "/home/someone" not in hidden and "gold.jsonl" in hidden
    assert "query text" not in hidden


def test_what_a_user_named_stays_text() -> None:
    gold = make_gold()
    evil = "</script><b>x"
    gold = replace(gold, queries=tuple(replace(q, slice=evil) for q in gold.queries))
    c = compare(gold, make_run(gold, ranks()), candidate(gold, ranks(buried(1, 2))), SETTINGS)
    html = render(c, "html")
    assert evil not in html
    assert "&lt;/script&gt;&lt;b&gt;x" in html  # in the tables
    assert "\\u003c\\u002fscript\\u003e" in html  # in the plots' data


def test_an_invalid_comparison_still_renders() -> None:
    gold = make_gold()
    c = compare(
        gold, make_run(gold, ranks()), make_run(gold, ranks(), gold_hash="0" * 64), SETTINGS
    )
    assert not c.valid
    html = render(c, "html")
    assert "INVALID: no verdict can be given" in html and "for diagnosis only" in html


def test_a_comparison_saved_before_the_plots_renders_what_it_has(comparison: Comparison) -> None:
    old = json.loads(render(comparison, "json"))
    del old["repeats"], old["top_scores"], old["query_deltas"]
    for key in ("percentiles_baseline", "percentiles_candidate", "ratio_percentiles"):
        del old["latency"][key]
    from harness.results.document import comparison_from_dict

    html = render(comparison_from_dict(old), "html")
    assert re.findall(r'data-plot="(\w+)"', html) == ["quality", "latency"]


# --------------------------------------------------------------------------- saved and re-rendered


def test_saving_writes_report_html_beside_report_md(tmp_path: Path) -> None:
    c, base, cand = scored()
    saved = save_comparison(tmp_path, c, (base, cand))
    assert (saved / REPORT_FILE).is_file()
    # The saved page loads plotly.js from the results folder; otherwise it is `render`'s page.
    page = (saved / HTML_FILE).read_text(encoding="utf-8")
    inline = render(load_comparison(saved), "html")
    bundle = tmp_path / plotly_file()
    assert bundle.read_bytes() == plotly_js().encode() and plotly_js() not in page
    assert page == inline.replace(plotly_script(None), plotly_script(f"../{plotly_file()}"))


def test_harness_report_renders_the_saved_page(tmp_path: Path) -> None:
    c, base, cand = scored()
    saved = save_comparison(tmp_path, c, (base, cand), redact=True)
    command = ["report", str(saved), "--redact", "--format", "html"]
    done = cli_server.run(
        "-m harness.cli.main", command, cwd=os.getcwd(), env=os.environ, timeout=120
    )
    assert done.returncode == 1, done.stderr  # regressed
    # On stdout the page is self-contained (plotly.js inlined): it may land anywhere.
    assert done.stdout == render(load_comparison(saved), "html", redact=True) != ""
    assert plotly_js() in done.stdout
    assert "configure widget" not in done.stdout


def test_without_plotly_html_is_refused_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    c, base, cand = scored()
    monkeypatch.setattr(page, "html_available", lambda: False)
    monkeypatch.setattr(saving, "html_available", lambda: False)
    saved = save_comparison(tmp_path, c, (base, cand))
    assert not (saved / HTML_FILE).exists() and (saved / REPORT_FILE).is_file()
    assert main(["report", str(saved), "--format", "html"]) == 2
    err = capsys.readouterr().err
    assert "the HTML report needs plotly" in err and "pip install" in err


def test_the_bundle_is_written_once_and_a_damaged_copy_replaced(tmp_path: Path) -> None:
    from harness.report.bundle import plotly_beside

    name = plotly_beside(tmp_path)
    bundle = tmp_path / name
    assert name == plotly_file() and name.startswith("plotly-") and name.endswith(".min.js")
    inode = bundle.stat().st_ino
    assert plotly_beside(tmp_path) == name and bundle.stat().st_ino == inode  # left alone
    bundle.write_bytes(b"half a file")
    plotly_beside(tmp_path)
    assert bundle.read_bytes() == plotly_js().encode()  # a damaged copy is never trusted
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no temp left behind

"""`harness history`: per-commit metrics and latency over a results directory, run as a user runs
it (the CLI in a subprocess), on tests/history_support.py's three commits; its HTML page in a
real browser is tests/report/test_browser.py's."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from cli_support import run_cli
from compare_support import make_gold, make_run, ranks
from history_support import Measured, buried_of, measured
from oracles import scipy_stats as stats
from purity import impurities

from harness.history.graph import measured_graph
from harness.report.plotting import plotly_file, plotly_js
from harness.report.saved import save_comparison
from harness.verdict.comparison import CompareSettings
from harness.verdict.decide import compare


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Measured:
    return measured(tmp_path_factory.mktemp("history"))


def history(data: Measured, *args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    common = ["--results", data.results, "--gold", data.gold_path, "--repo", data.repo]
    done = run_cli("harness", "history", *common, *args, cwd=cwd or data.repo)
    return done.returncode, done.stdout, done.stderr


def rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.fixture(scope="module")
def as_csv(data: Measured) -> tuple[int, str, str]:
    """`harness history --format csv` on the three commits, run once for the tests that read it."""
    return history(data, "--format", "csv")


def test_one_row_per_commit_in_git_order(data: Measured, as_csv: tuple[int, str, str]) -> None:
    status, out, err = as_csv
    assert status == 0, err
    table = rows(out)
    # Saved newest commit first: the order is git's, not the records'.
    assert [r["sha"] for r in table] == list(data.shas)
    assert [r["refs"] for r in table] == ["c0", "c1", "c2"]
    assert [r["records"] for r in table] == ["1", "1", "2"]
    assert [r["repeats"] for r in table] == ["3", "3", "6"]
    # Commit i buries 4i of the 80 answerable queries.
    for i, r in enumerate(table):
        assert float(r["hit@5"]) == pytest.approx((80 - 4 * i) / 80)


def test_a_metric_interval_is_the_t_interval_over_queries(data: Measured) -> None:
    _, out, _ = history(data, "--format", "csv", "--metrics", "hit@5")
    c1 = rows(out)[1]
    hits = [0.0 if f"q{i:02d}" in buried_of(1) else 1.0 for i in range(1, 81)]
    # scipy's t interval of the mean of the 80 per-query values: the oracle.
    low, high = stats.t.interval(0.95, 79, loc=sum(hits) / 80, scale=stats.sem(hits))
    assert float(c1["hit@5 low"]) == pytest.approx(low)
    assert float(c1["hit@5 high"]) == pytest.approx(high)
    # Every query hit on commit 0: no spread, a zero-width interval.
    assert float(rows(out)[0]["hit@5 low"]) == float(rows(out)[0]["hit@5 high"]) == 1.0


def test_latency_is_the_mean_of_each_boots_p50_with_the_interval_over_boots(
    as_csv: tuple[int, str, str],
) -> None:
    _, out, _ = as_csv
    c0 = rows(out)[0]
    # base_ms runs 2..8 ms over the queries (p50 5.0), plus rep / 10 ms in boot rep.
    p50s = [5.0, 5.1, 5.2]
    low, high = stats.t.interval(0.95, 2, loc=5.1, scale=stats.sem(p50s))
    assert float(c0["latency p50 ms"]) == pytest.approx(5.1)
    assert float(c0["latency p50 ms low"]) == pytest.approx(low)
    assert float(c0["latency p50 ms high"]) == pytest.approx(high)


def test_text_and_markdown_give_each_value_with_its_half_width(data: Measured) -> None:
    status, out, _ = history(data)
    assert status == 0
    assert "harness history: 3 commits" in out.splitlines()[0]
    c2 = next(line for line in out.splitlines() if line.startswith(data.shas[2][:8]))
    half = stats.t.ppf(0.975, 79) * stats.sem([0.0] * 8 + [1.0] * 72)
    assert f"0.900 ±{half:.3f}" in c2
    _, md, _ = history(data, "--format", "markdown")
    assert md.startswith("### harness history: 3 commits")
    assert f"| {data.shas[1][:8]} | c1 " in md


def test_ref_keeps_the_commits_of_a_range(data: Measured) -> None:
    status, out, err = history(data, "--format", "csv", "--ref", "HEAD~2..HEAD")
    assert status == 0, err
    assert [r["sha"] for r in rows(out)] == list(data.shas[1:])
    status, _, err = history(data, "--ref", "no-such-branch")
    assert status == 2 and "harness: error:" in err and "rev-list" in err


def test_html_goes_to_a_new_file(data: Measured, tmp_path: Path) -> None:
    page = tmp_path / "history.html"
    status, out, err = history(data, "--format", "html", "--output", str(page))
    assert status == 0 and out == "", err
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and 'data-plot="history"' in html
    # plotly.js by its path (and the note shown if it is missing), and the one plot
    assert html.count("<script") == 3
    bundle = tmp_path / plotly_file()
    assert f'src="{plotly_file()}"' in html and bundle.read_bytes() == plotly_js().encode()
    assert len(html.encode()) < 1024 * 1024
    status, _, err = history(data, "--format", "html", "--output", str(page))
    assert status == 2 and f"--output {page}: already exists" in err
    assert "results director" not in err


def test_without_a_gold_set_the_saved_comparisons_are_used(tmp_path: Path) -> None:
    gold = make_gold()
    settings = CompareSettings(resamples=200)
    base = make_run(gold, ranks())
    cand = make_run(gold, ranks(buried_of(2)), ref="feat/x", sha="2" * 40)
    save_comparison(tmp_path / "results", compare(gold, base, cand, settings), (base, cand))
    # No harness.toml and no git repository here.
    done = run_cli("harness", "history", "--format", "csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    table = rows(done.stdout)
    assert [r["refs"] for r in table] == ["main", "feat/x"]  # the baseline first
    assert [float(r["hit@5"]) for r in table] == [1.0, 0.9]
    assert table[0]["hit@5 low"] == ""  # no per-query values saved: no interval


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda root: None, "no such results directory"),
        (lambda root: (root / "results" / "runs").mkdir(parents=True), "no run records"),
        (
            lambda root: (
                (root / "results" / "runs").mkdir(parents=True),
                (root / "results" / "runs" / "x.json").write_text("{not json"),
            ),
            "x.json",
        ),
    ],
    ids=["missing", "empty", "unreadable"],
)
def test_bad_results_are_a_clear_error(
    data: Measured, tmp_path: Path, setup: object, message: str
) -> None:
    setup(tmp_path)  # type: ignore[operator]
    done = run_cli(
        "harness",
        "history",
        "--results",
        str(tmp_path / "results"),
        "--gold",
        str(data.gold_path),
        cwd=tmp_path,
    )
    assert done.returncode == 2 and done.stderr.startswith("harness: error:"), done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr


def test_records_on_another_gold_set_are_refused_with_the_fix(
    data: Measured, tmp_path: Path
) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text(
        data.gold_path.read_text(encoding="utf-8").replace("configure widget 1\"", "x\""),
        encoding="utf-8",
    )
    done = run_cli(
        "harness",
        "history", "--results", str(data.results), "--gold", str(other), cwd=tmp_path
    )
    assert done.returncode == 2, done.stderr
    assert "another gold set" in done.stderr and "--gold" in done.stderr


def test_points_and_table_do_no_io() -> None:
    found = impurities("harness.history.points", "harness.history.table", "harness.history.graph")
    assert found == {
        "harness.history.points": [],
        "harness.history.table": ["pandas"],
        "harness.history.graph": [],
    }


def test_json_is_not_a_history_format(data: Measured) -> None:
    status, _, err = history(data, "--format", "json")
    assert status == 2 and "invalid choice" in err  # the CSV is the machine-readable form


def test_siblings_link_to_their_parent_not_to_each_other() -> None:
    # main: A - B - C, side: A - X - D (X not measured), E merges C and D.
    parents = {"B": ("A",), "C": ("B",), "X": ("A",), "D": ("X",), "E": ("C", "D")}
    links, lanes = measured_graph(parents, ["A", "B", "C", "D", "E"])
    assert links == ((), (0,), (1,), (0,), (2, 3))  # D reaches A through X; E both parents
    assert lanes == (0, 0, 0, 1, 0)  # D opens a lane: B already continues A's
    # Without B and C measured, D still forks from A and E still joins both.
    assert measured_graph(parents, ["A", "D", "E"]) == (((), (0,), (0, 1)), (0, 0, 1))


def test_the_html_graph_draws_a_fork_for_two_siblings(tmp_path: Path) -> None:
    from history_support import forked

    from harness.history.render import figure
    from harness.history.table import aggregate

    data = forked(tmp_path)
    page = tmp_path / "history.html"
    status, _, err = history(data, "--format", "html", "--output", str(page))
    assert status == 0, err
    c0, c1, c2 = (sha[:8] for sha in data.shas)
    # The figure of the same history: every line drawn is parent -> child, none c1 -> c2.
    from harness.history.collect import commit_graph, points_from_records
    from harness.score.metrics import parse_metric

    points, _ = points_from_records(data.results, data.gold, [parse_metric("hit@5")])
    graph = commit_graph(data.repo, None)
    h = aggregate(points, ["hit@5"], list(graph), parents=graph)
    fig = figure(h)
    segments = set()
    for trace in fig.data:
        if trace.mode == "lines":
            xs = list(trace.x)
            for k in range(0, len(xs), 3):
                segments.add((xs[k].split()[0], xs[k + 1].split()[0]))
    assert segments == {(c0, c1), (c0, c2)}
    assert sorted(set(h.lanes)) == [0, 1]  # two lines of descent: the commit graph is drawn
    assert "commit graph" in page.read_text(encoding="utf-8")

"""`compare --demo`, end to end as a newcomer runs it: the installed console script, in an empty
directory, with its own TMPDIR and cache so that leftovers can be seen. Numbers are not pinned:
the test checks the report's structure and that the exit status is the verdict's."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import psutil
import pytest
from cli_support import run_cli

from harness.results.records import load_run
from harness.values.types import Verdict

DEMO_SLICES = ("entity", "exact_token", "freshness", "semantic", "superseded")
Demo = tuple[Path, subprocess.CompletedProcess[str]]
VERDICTS = {v.value for v in Verdict}  # the fixed vocabulary (tests/report/test_report.py)


# The whole demo, as a newcomer runs it (5 rounds, and latency rounds up to its budget): the
# tests that read it are end to end, marked slow.
@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    home = tmp_path_factory.mktemp("demo-user")
    (home / "tmp").mkdir()
    env = {"TMPDIR": str(home / "tmp"), "HARNESS_CACHE_DIR": str(home / "cache")}
    done = run_cli("compare", "--demo", cwd=home, env=env, timeout=240)
    return home, done


@pytest.mark.slow
def test_exit_status_is_the_verdicts(demo: Demo) -> None:
    home, done = demo
    saved = list((home / "results").glob("*_*_*/comparison.json"))
    assert len(saved) == 1, done.stderr
    verdict = json.loads(saved[0].read_text())["verdict"]
    assert verdict["quality"] in VERDICTS and verdict["latency"] in VERDICTS
    assert "invalid" not in verdict.values(), done.stdout
    expected = 1 if "regressed" in verdict.values() else 0
    assert done.returncode == expected, done.stderr


@pytest.mark.slow
def test_report_has_verdicts_slices_and_flips(demo: Demo) -> None:
    _, done = demo
    out = done.stdout
    head = out.splitlines()[:6]
    assert any(line.startswith("quality: ") for line in head), head
    assert any(line.startswith("latency: ") for line in head), head
    assert "main (" in out and "feat/x (" in out
    for name in DEMO_SLICES:
        assert f"Slice {name} (n=" in out, name
    assert "hit@5: " in out and "McNemar exact p=" in out
    assert "Flips at hit@5" in out
    assert "minimum detectable effect of the headline: " in out


@pytest.mark.slow
def test_the_demo_stops_asking_once_its_regression_is_clear(demo: Demo) -> None:
    # Sequential is the default: feat/x loses about one answer in ten at hit@5, which the rule
    # calls before the 210 queries are used up (blocks of 10, seeded order), and says so; every
    # round, latency-only rounds too, asked those queries and no more.
    home, done = demo
    match = re.search(
        r"^sequential: stopped after (\d+) of 210 queries \((\d+)% of the queries not asked\)$",
        done.stdout,
        re.MULTILINE,
    )
    assert match is not None, done.stdout
    asked = int(match[1])
    assert asked < 210 and asked % 10 == 0 and int(match[2]) == round(100 * (1 - asked / 210))
    (saved,) = home.glob("results/*_*_*/comparison.json")
    document = json.loads(saved.read_text())
    assert document["verdict"]["quality"] == "regressed"
    assert document["sequential"]["asked"] == asked
    for side in ("baseline", "candidate"):
        record = load_run(saved.parent / f"{side}.json")
        assert {len(rep.results) for rep in record.repeats} == {asked}


@pytest.mark.slow
def test_it_says_where_results_are_and_what_to_run_next(demo: Demo) -> None:
    home, done = demo
    err = done.stderr
    assert "results saved in" in err
    assert "compare --baseline main --candidate" in err
    (directory,) = [p.parent for p in (home / "results").glob("*_*_*/comparison.json")]
    names = {p.name for p in directory.iterdir()}
    assert {"comparison.json", "report.md", "report.html", "baseline.json", "candidate.json"} <= (
        names
    )


@pytest.mark.slow
def test_the_demos_report_html_in_a_real_browser(
    demo: Demo, chromium: Any, tmp_path: Path
) -> None:
    """The demo's own report.html, in Chromium (tests/report/test_browser.py's checks)."""
    from browser_support import DRAWN, check_page, open_page

    home, _ = demo
    (page,) = home.glob("results/*_*_*/report.html")
    assert page.stat().st_size <= 1024 * 1024  # plotly.js is beside it, once per results folder
    from harness.report.plotting import plotly_file

    seen = open_page(chromium, page, drawn=DRAWN, screenshot=tmp_path / "demo-report.png")
    plots = ["quality", "deltas", "latency", "scores", "repeats"]
    check_page(seen, page, plots, bundle=page.parent.parent / plotly_file())
    verdict = json.loads((page.parent / "comparison.json").read_text())["verdict"]
    assert f"QUALITY\n{verdict['quality']}" in seen.text
    assert f"LATENCY\n{verdict['latency']}" in seen.text
    for name in DEMO_SLICES:
        assert f"Slice {name} (n=" in seen.text


@pytest.mark.slow
def test_nothing_is_left_behind(demo: Demo) -> None:
    home, _ = demo
    assert list((home / "tmp").iterdir()) == []  # the throwaway repository is gone
    worktrees = home / "cache" / "worktrees"
    assert not worktrees.exists() or list(worktrees.iterdir()) == []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or ())
        assert str(home) not in cmdline, cmdline


def test_the_demo_repository_ignores_what_compare_writes_in_it(tmp_path: Path) -> None:
    from harness.demo import materialise

    repo = materialise(tmp_path / "demo")
    (repo / "results" / "runs").mkdir(parents=True)
    (repo / "results" / "runs" / "x.json").write_text("{}")
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, check=True
    )
    assert status.stdout == ""  # results/ is ignored, and nothing else is untracked


def test_python_m_harness_demo_generate_runs_without_a_warning(tmp_path: Path) -> None:
    import sys

    done = subprocess.run(
        [sys.executable, "-W", "error", "-m", "harness.demo.generate", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr
    assert (tmp_path / "out" / "gold.jsonl").is_file()


@pytest.mark.slow
def test_the_readme_excerpt_quality_lines_are_what_the_demo_prints(demo: Demo) -> None:
    # scripts/readme_excerpt.py made the excerpt from a real run; the quality lines must stay
    # true (the demo is deterministic), while latency figures move with the machine.
    _, done = demo
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    excerpt = readme.split("Trimmed (whole lines left out", 1)[1].split("```text\n", 1)[1]
    excerpt = excerpt.split("```", 1)[0]
    quality = [
        line
        for line in excerpt.splitlines()
        if line.startswith(("harness: main", "quality:", "sequential:", "hit@5:", "hit@10:",
                            "Holm across", "mrr@10 ", "unanswerable", "outranks", "q0",
                            "Flips at"))
    ]  # fmt: skip
    assert len(quality) >= 12
    printed = set(done.stdout.splitlines())
    assert [line for line in quality if line not in printed] == []

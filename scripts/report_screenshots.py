"""Screenshots of every plot kind of the HTML pages, and the pages' sizes (issue 27).

    .venv/bin/python scripts/report_screenshots.py [--out results/screenshots]

Builds, through the project's own code, the pages a user gets: a saved comparison (three slices,
scores, floors, errored answers, prepare steps and the 2x2: every section and every plot), one
whose only slice holds every query, and a `harness history --format html` of two sibling
branches.  Opens each in headless Chromium (/usr/bin/chromium, via Playwright: no network),
saves one PNG per plot (hovered, so plotly's toolbar shows) and one of each whole page under
--out, and prints:

- each page's size as saved (plotly.js beside it, once per folder) and as it is on stdout
  (plotly.js inlined: what every report.html was before issue 27);
- any overlap the page's DOM shows between subplot titles and tick labels, two titles, the legend
  or the title and plotly's toolbar (tests/browser_support.clashes: none is expected).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from browser_support import BOXES, LAUNCH_ARGS, chromium_or_skip, clashes  # noqa: E402
from compare_support import (  # noqa: E402
    make_gold,
    make_run,
    ranks,
    scored,
    with_every_section,
)
from history_support import forked  # noqa: E402

from harness.report.page import render  # noqa: E402
from harness.report.saved import save_comparison  # noqa: E402
from harness.results.comparisons import HTML_FILE  # noqa: E402
from harness.verdict.comparison import CompareSettings  # noqa: E402
from harness.verdict.decide import compare  # noqa: E402

KiB = 1024


def _pages(out: Path) -> list[tuple[str, Path, int]]:
    """(name, saved page, size of the same page with plotly.js inlined)."""
    c, base, cand = scored()
    full = with_every_section(c)
    results = out / "results"
    saved = save_comparison(results, full, (base, cand)) / HTML_FILE
    gold = make_gold()
    gold = replace(gold, queries=tuple(replace(q, slice="default") for q in gold.queries))
    one = compare(
        gold,
        make_run(gold, ranks()),
        make_run(gold, ranks(), ref="x", sha="2" * 40),
        CompareSettings(resamples=500),
    )
    one_saved = save_comparison(results, one, ()) / HTML_FILE
    (out / "history-data").mkdir()
    history = forked(out / "history-data")
    page = out / "history.html"
    if page.exists():
        page.unlink()
    command = [sys.executable, "-m", "harness.cli.main", "history", "--results",
               str(history.results), "--gold", str(history.gold_path), "--repo",
               str(history.repo), "--format", "html"]  # fmt: skip
    subprocess.run([*command, "--output", str(page)], check=True, capture_output=True)
    inline_history = subprocess.run(command, check=True, capture_output=True).stdout
    return [
        ("comparison", saved, len(render(full, "html").encode())),
        ("one-slice", one_saved, len(render(one, "html").encode())),
        ("history", page, len(inline_history)),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "screenshots")
    args = parser.parse_args()
    out: Path = args.out.resolve()
    if out.exists() and any(out.iterdir()):
        print(f"{out}: not empty; give another --out (nothing is overwritten)", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    executable = chromium_or_skip()
    pages = _pages(out)
    found = []
    print(f"{'page':<12} {'saved':>10} {'inlined':>10}  screenshots")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(executable), args=LAUNCH_ARGS)
        try:
            for name, path, inlined in pages:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.goto(path.as_uri(), wait_until="load")
                page.wait_for_function(
                    "Array.from(document.querySelectorAll('div.plot')).every("
                    "d => d.querySelector('.plot-container svg.main-svg'))",
                    timeout=60_000,
                )
                for plot in page.evaluate(BOXES):
                    found += clashes(plot)
                shots = []
                for element in page.query_selector_all("div.plot"):
                    kind = element.get_attribute("data-plot")
                    element.scroll_into_view_if_needed()
                    element.hover()
                    shot = out / f"{name}-{kind}.png"
                    element.screenshot(path=str(shot))
                    shots.append(shot.name)
                whole = out / f"{name}-page.png"
                page.screenshot(path=str(whole), full_page=True)
                page.close()
                size = path.stat().st_size
                print(
                    f"{name:<12} {size / KiB:>7.0f} kB {inlined / KiB:>7.0f} kB  "
                    f"{', '.join([*shots, whole.name])}"
                )
        finally:
            browser.close()
    print(f"screenshots in {out}")
    print(f"overlaps found in the DOM: {len(found)}")
    for clash in found:
        print(f"  {clash}")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())

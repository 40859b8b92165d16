"""A real browser for the HTML pages: Debian's Chromium (/usr/bin/chromium) driven by Playwright.

Never downloads a browser: Playwright launches the system's Chromium by its path, headless, with
no sandbox (CI runs as root), no GPU and none of Chromium's background traffic.  A test that
needs it asks for the `chromium` fixture, which skips with the reason when Chromium or Playwright is
absent (.ci/run installs Chromium with apt-get, non-fatally).

    seen = open_page(chromium, path, drawn=JS, screenshot=out.png)   # chromium: the fixture
    seen.console_errors, seen.page_errors, seen.requests, seen.text, seen.evaluated["drawn"]

One browser serves every test of a test process (the session fixture `chromium` in conftest.py,
`launched` here); each page opens in a context of its own, closed after it (its own cookies,
storage and cache), so a page sees nothing another left.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


# What each plot of a page holds once plotly.js has drawn it.
DRAWN = """
() => Array.from(document.querySelectorAll("div.plot")).map(d => ({
  name: d.dataset.plot,
  containers: d.querySelectorAll(".plot-container").length,
  svgs: d.querySelectorAll("svg.main-svg").length,
  marks: d.querySelectorAll("path, rect.bg, g.point").length,
}))
"""


def chromium_or_skip() -> Path:
    if not CHROMIUM.is_file():
        found = shutil.which("chromium")
        if found is None:
            pytest.skip("Chromium is not installed (apt-get install -y chromium; .ci/run does)")
        return Path(found)
    return CHROMIUM


@dataclass
class Seen:
    """What the browser saw of one page."""

    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)  # every URL the page asked for
    text: str = ""
    screenshot: bytes = b""
    evaluated: dict[str, Any] = field(default_factory=dict)  # drawn, script, colours


@contextmanager
def launched() -> Iterator[Any]:
    """Chromium, headless, driven by Playwright, until the block ends; skips without either."""
    executable = chromium_or_skip()
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(executable), args=LAUNCH_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def open_page(
    browser: Any,
    path: Path,
    *,
    drawn: str,
    screenshot: Path | None = None,
    script: str | None = None,
    width: int = 1280,
) -> Seen:
    """Load `path` headless in a new context of `browser`, wait for the plots to draw, evaluate
    `drawn` (what is on the page) and then `script` (an interaction), take a screenshot of the
    viewport (the top of the page: the verdict; every plot's drawing is checked by `drawn`) and
    count its colours; close the context.  Values land in `evaluated["drawn"]`, `["script"]`
    and `["colours"]`.  Not the full page: encoding and decoding a 1280x7000 image cost about
    1 CPU-s a page, more than the rest of the checks after plotly has drawn."""
    seen = Seen()
    context = browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        page.on("console", lambda m: m.type == "error" and seen.console_errors.append(m.text))
        page.on("pageerror", lambda e: seen.page_errors.append(str(e)))
        page.on("request", lambda r: seen.requests.append(r.url))
        page.goto(path.resolve().as_uri(), wait_until="load")
        # Plotly draws on load; a drawn figure has its main SVG.
        page.wait_for_function(
            "Array.from(document.querySelectorAll('div.plot')).every("
            "d => d.querySelector('.plot-container svg.main-svg'))",
            timeout=60_000,
        )
        seen.evaluated["drawn"] = page.evaluate(drawn)
        seen.text = page.inner_text("body")
        if script is not None:
            seen.evaluated["script"] = page.evaluate(script)
        shot = page.screenshot()
        seen.screenshot = shot
        seen.evaluated["colours"] = colours_of(context, shot)
        if screenshot is not None:
            screenshot.write_bytes(shot)
    finally:
        context.close()
    return seen


COUNT_COLOURS = """
async (src) => {
  const img = new Image(); img.src = src; await img.decode();
  const canvas = document.createElement("canvas");
  canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
  const ctx = canvas.getContext("2d"); ctx.drawImage(img, 0, 0);
  const data = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
  const seen = new Set();
  for (let i = 0; i < data.length; i += 4 * 5) {
    seen.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
  }
  return {colours: seen.size, width: canvas.width, height: canvas.height};
}
"""


def colours_of(context: Any, png: bytes) -> dict[str, int]:
    """Distinct colours (every 5th pixel) of a PNG, decoded by the browser itself (a new page of
    the browser `context`): no imaging library needed."""
    import base64

    page = context.new_page()
    try:
        src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        result: dict[str, int] = page.evaluate(COUNT_COLOURS, src)
        return result
    finally:
        page.close()


def check_page(seen: Seen, path: Path, plots: list[str], *, bundle: Path | None = None) -> None:
    """What every page must show in the browser (see the module docstring); `bundle`: the
    plotly.js file the page loads by its relative path (None: the page inlines it)."""
    assert seen.console_errors == [] and seen.page_errors == []
    wanted = [path.resolve().as_uri(), *([bundle.resolve().as_uri()] if bundle else [])]
    assert seen.requests == wanted  # itself (and its bundle, from disk), and nothing else
    drawn = seen.evaluated["drawn"]
    assert [d["name"] for d in drawn] == plots
    for d in drawn:
        assert d["containers"] == 1 and d["svgs"] >= 1 and d["marks"] > 0, d
    shot = seen.evaluated["colours"]
    assert shot["width"] >= 1000 and shot["height"] > 800
    assert shot["colours"] > 50  # a blank (or one-colour) page has 1


# Bounding boxes of what a plot draws, per plot: the figure title, the subplot titles (and other
# annotations), the tick labels of every axis, the legend and plotly's toolbar (the modebar:
# shown on hover, laid out always).
BOXES = """
() => Array.from(document.querySelectorAll("div.plot")).map(d => {
  const box = e => { const r = e.getBoundingClientRect();
    return {x0: r.left, y0: r.top, x1: r.right, y1: r.bottom, text: e.textContent}; };
  const all = sel => Array.from(d.querySelectorAll(sel)).map(box).filter(b => b.x1 > b.x0);
  return {
    name: d.dataset.plot,
    title: all(".g-gtitle text"),
    annotations: all("g.annotation-text-g text"),
    ticks: all("g.xtick text, g.ytick text"),
    legend: all("g.legend rect.bg"),
    modebar: all(".modebar"),
  };
})
"""


def overlaps(a: dict[str, Any], b: dict[str, Any], slack: float = 1.0) -> bool:
    """Whether two boxes intersect by more than `slack` pixels each way."""
    return (
        min(a["x1"], b["x1"]) - max(a["x0"], b["x0"]) > slack
        and min(a["y1"], b["y1"]) - max(a["y0"], b["y0"]) > slack
    )


def clashes(plot: dict[str, Any]) -> list[str]:
    """Every pair of boxes in one plot that overlap and must not: a subplot title and a tick
    label, two subplot titles, the legend or the title and the toolbar, the legend and a title."""
    pairs = [
        ("annotations", "ticks"),
        ("annotations", "annotations"),
        ("legend", "modebar"),
        ("title", "modebar"),
        ("legend", "annotations"),
        ("legend", "title"),
    ]
    found = []
    for one, other in pairs:
        for i, a in enumerate(plot[one]):
            for j, b in enumerate(plot[other]):
                if one == other and j <= i:
                    continue
                if overlaps(a, b):
                    found.append(f"{plot['name']}: {one} {a['text']!r} over {other} {b['text']!r}")
    return found

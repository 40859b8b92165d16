"""The comparison page: a Comparison in, text out.  It formats; it computes nothing.

    render(comparison, fmt, *, redact=False) -> str    fmt in RENDERERS: text, markdown, json,
                                                       html (`harness.report.html_page`)

Text (a terminal) and Markdown (a PR comment) share one page, built once as layout blocks
(`harness.report.blocks`): the verdicts in words first, any reason the run is invalid above
everything, then the numbers.  JSON is the Comparison itself (`harness.results.document`:
schema-versioned, reads back into an equal Comparison), with sorted keys.  `redact=True` leaves
every query text out of every format (a Comparison holds no document text: ids, hashes and
numbers only).  Saving a comparison to a results directory, and loading it back, is
`harness.results`'s.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from harness.errors import HarnessError
from harness.report import layout
from harness.report.blocks import page_blocks
from harness.results.document import comparison_to_dict, redacted
from harness.verdict.comparison import Comparison


def _render_text(c: Comparison, redact: bool) -> str:
    return layout.text(page_blocks(redacted(c) if redact else c, redact))


def _render_markdown(c: Comparison, redact: bool) -> str:
    return layout.markdown(page_blocks(redacted(c) if redact else c, redact, local=True))


# --------------------------------------------------------------------------- JSON


def _render_json(c: Comparison, redact: bool) -> str:
    document = comparison_to_dict(c, redact=redact)
    return (
        json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    )


# --------------------------------------------------------------------------- HTML


PLOTLY_MISSING = (
    "the HTML report needs plotly, which is not installed in this environment",
    ["pip install 'plotly>=5.18' (a dependency of harness: `pip install .` installs it)"],
)


def html_available() -> bool:
    """Whether the HTML report can be rendered here (plotly is importable)."""
    import importlib.util

    return importlib.util.find_spec("plotly") is not None


def _render_html(c: Comparison, redact: bool) -> str:
    if not html_available():
        raise HarnessError(PLOTLY_MISSING[0], PLOTLY_MISSING[1])
    from harness.report.html_page import render_html  # plotly is loaded only for HTML

    return render_html(c, redact)


# --------------------------------------------------------------------------- the registry

RENDERERS: Mapping[str, Callable[[Comparison, bool], str]] = {
    "text": _render_text,
    "markdown": _render_markdown,
    "json": _render_json,
    "html": _render_html,
}


def render(comparison: Comparison, fmt: str, *, redact: bool = False) -> str:
    """The comparison as `fmt` (a key of RENDERERS); query text left out when `redact`."""
    try:
        renderer = RENDERERS[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(RENDERERS)}") from None
    return renderer(comparison, redact)

"""A key that differs between the sides because a [ref."PATTERN"] table set it is named as that
per-ref override in the report, in every format (`harness.config.overrides.labelled`, reached
through `harness.compare.settings.ref_differences` on a real repository's refs)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from compare_support import FAST, candidate, make_gold, make_run, ranks

from harness.compare.settings import ref_differences
from harness.config import load_config
from harness.report.page import render
from harness.verdict.decide import compare

CONFIG = """\
[service]
start = "python3 svc.py --port {port}"
ready = "/health"
build = "make"

[query]
path = "/search"
params = { q = "{query}" }
ids = "results[].id"

[candidate.query]
params = { q = "{query}", boost = "2" }

[ref."v2*".service]
build = "make index"

[ref."v2*".query]
unset = ["params.q"]

[gold]
path = "gold.jsonl"
"""


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def labels(tmp_path: Path) -> tuple[str, ...]:
    _git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "harness.toml").write_text(CONFIG)
    _git(tmp_path, "add", "harness.toml")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    _git(tmp_path, "tag", "v2.0")
    config = load_config(tmp_path / "harness.toml")
    return ref_differences(config, FAST, "main", "v2.0").query_differences


def test_a_per_ref_override_is_named_as_one(labels: tuple[str, ...]) -> None:
    assert labels == (
        "query.params.boost",  # [candidate.query]: the side's own setting, named as before
        '[ref."v2*"] query.params.q',  # unset by the table
        '[ref."v2*"] service.build',
    )


# How each format writes `[ref."v2*"] service.build` (Markdown escapes [ ] and *; HTML quotes).
SHOWN = {
    "text": '[ref."v2*"] service.build',
    "markdown": '\\[ref."v2\\*"\\] service.build',
    "html": "[ref.&quot;v2*&quot;] service.build",
}


@pytest.mark.parametrize("fmt", ["text", "markdown", "json", "html"])
def test_every_format_shows_the_override(labels: tuple[str, ...], fmt: str) -> None:
    gold = make_gold()
    settings = replace(FAST, query_differences=labels)
    c = compare(gold, make_run(gold, ranks()), candidate(gold, ranks()), settings)
    shown = render(c, fmt)
    if fmt == "json":
        assert json.loads(shown)["header"]["query_differences"] == list(labels)
    else:
        assert SHOWN[fmt] in shown

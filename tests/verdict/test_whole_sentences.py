"""Every reason a report gives is a whole sentence (issue 43, item 1: "...; about 15 more queries
would" once ended a quality reason): the inconclusive-for-power cases of compare (fixed and
sequential, the reason in text, Markdown and JSON, and every other reason, note and piece of
advice in the JSON document) and compare-runs' line per candidate, none ending in a word that
needs more after it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from cli_support import run_cli
from compare_support import FAST, buried, candidate, make_gold, make_run, ranks

from harness.report.page import render
from harness.verdict.asked import compare_asked
from harness.verdict.comparison import Comparison
from harness.verdict.decide import compare
from harness.verdict.quality_sequential import query_order

# A sentence that stops: the words and marks that need more after them.
DANGLING = {
    "would", "could", "needs", "need", "than", "of", "to", "the", "a", "an", "and", "or",
    "but", "by", "at", "with", "for", "from", "is", "are", "about",
}  # fmt: skip
# The JSON fields that hold words a person reads (reasons, notes, advice), not names or numbers.
WORDS = re.compile(r"(reason|note|words|said|advice|why|fix|warning)s?$")


def dangling(text: str) -> str | None:
    """The end that needs more, or None when `text` ends whole."""
    end = text.rstrip().rstrip(".")
    if not end:
        return None
    if end[-1] in ";,:(":
        return end[-1]
    last = end.rsplit(None, 1)[-1].lower()
    return last if last in DANGLING else None


def strings(value: object, key: str = "") -> Iterator[tuple[str, str]]:
    """(field, text) for each string of a JSON document under a field named for words."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from strings(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v, key)
    elif isinstance(value, str) and WORDS.search(key):
        yield key, value


def _short(settings_band: float = 0.05) -> Comparison:
    """80 queries, 6 of them changed either way: no call, an interval wider than the band."""
    gold = make_gold()
    base = make_run(gold, ranks(buried(1, 2, 3)))
    cand = candidate(gold, ranks(buried(11, 12, 13)))
    return compare(gold, base, cand, replace(FAST, min_effect=settings_band))


def _sequential() -> Comparison:
    gold = make_gold()
    base = make_run(gold, ranks(buried(1, 2, 3)))
    cand = candidate(gold, ranks(buried(11, 12, 13)))
    order = query_order([q.id for q in gold.queries], 7)
    return compare_asked(gold, base, cand, replace(FAST, min_effect=0.05), order)


@pytest.mark.parametrize("build", [_short, _sequential], ids=["fixed", "sequential"])
def test_compare_gives_whole_sentences_in_every_format(build: object) -> None:
    c = build()  # type: ignore[operator]
    assert c.verdict_quality.value == "inconclusive", c.quality_reason
    assert dangling(c.quality_reason) is None, c.quality_reason
    assert "queries" in c.quality_reason  # it says what would settle it
    text, markdown = render(c, "text"), render(c, "markdown")
    reason_line = next(line for line in text.splitlines() if line.startswith("quality: "))
    assert dangling(reason_line) is None, reason_line
    assert reason_line.endswith(c.quality_reason)
    md_line = next(line for line in markdown.splitlines() if "quality" in line and ":" in line
                   and "inconclusive" in line)  # fmt: skip
    assert dangling(md_line.rstrip("*_ ")) is None, md_line
    document = json.loads(render(c, "json"))
    found = list(strings(document))
    assert ("quality_reason", c.quality_reason) in found
    ended = [(k, t) for k, t in found if t and dangling(t) is not None]
    assert ended == [], ended


@pytest.mark.parametrize(
    "text",
    [
        "hit@10 could only have seen a change of 0.103 or more (80% power), not 0.1; "
        "about 15 more queries would",
        "ruling out 0.05 needs",
        "no change larger than",
        "a change of ±0.05 is not ruled out;",
    ],
)
def test_the_check_sees_a_sentence_that_stops(text: str) -> None:
    assert dangling(text) is not None


def _gold(path: Path, n: int = 60) -> Path:
    rows = [{"id": f"q{i:02d}", "query": f"question {i}", "relevant": {f"d{i:02d}": 1}}
            for i in range(n)]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _trec(path: Path, missed: range, n: int = 60) -> Path:
    lines = []
    for i in range(n):
        docs = [f"x{i:02d}-{j}" for j in range(10)]
        if i not in missed:
            docs[0] = f"d{i:02d}"
        lines += [f"q{i:02d} Q0 {doc} {pos} {100 - pos} sys\n" for pos, doc in enumerate(docs, 1)]
    path.write_text("".join(lines))
    return path


def test_compare_runs_line_is_a_whole_sentence(tmp_path: Path) -> None:
    # The reproduction: a pair short of the minimum effect at --alpha 0.025.
    _gold(tmp_path / "gold.jsonl")
    _trec(tmp_path / "A.run", range(0, 20))
    _trec(tmp_path / "B.run", range(2, 24))
    args = ("compare-runs", "A.run", "B.run", "--gold", "gold.jsonl", "--alpha", "0.025")
    done = run_cli("harness", *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("B.run: inconclusive: "))
    assert dangling(line) is None, line
    quality = next(x for x in done.stdout.splitlines() if x.startswith("quality: "))
    assert dangling(quality) is None, quality
    document = json.loads(run_cli("harness", *args, "--format", "json", cwd=tmp_path).stdout)
    ended = [(k, t) for k, t in strings(document) if t and dangling(t) is not None]
    assert ended == [], ended
    assert any(k == "quality_reason" for k, _ in strings(document))

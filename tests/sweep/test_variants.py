"""The engine `harness sweep` and `harness matrix` share (harness.variants): what it promises
on its own. What each front end makes of it is tested in tests/test_sweep.py and
tests/test_matrix.py (and their outputs on the real CLI there)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from compare_support import FAST, buried, make_gold, make_run, ranks
from purity import impurities

from harness.report.layout import Block
from harness.values.types import OVERALL, RunFailure, Verdict
from harness.variants.render import render, renderers, row_name
from harness.variants.run import save_variants, slug
from harness.variants.summary import Table, compare_variants
from harness.verdict.comparison import Comparison


def _compare() -> tuple[Table, dict[str, Comparison]]:
    gold = make_gold()
    runs = [
        make_run(gold, ranks(), ref="main [a]"),
        make_run(gold, ranks(buried(*range(1, 21))), ref="main [b]"),
        make_run(gold, ranks(), ref="main [c]"),
    ]
    table, comparisons = compare_variants(
        gold, ["a", "b", "c"], runs, 2, ["mrr@10"], FAST,
        side="candidate", family="things", unmatched="nothing compared with it",
    )  # fmt: skip
    return table, comparisons


def test_every_variant_is_compared_with_the_reference_in_order() -> None:
    table, comparisons = _compare()
    assert [r.name for r in table.rows] == ["a", "b", "c"]
    assert set(comparisons) == {"a", "b"}  # the reference has no comparison
    assert (table.ref, table.reference, table.side) == ("main", "c", "candidate")
    assert table.scopes[0] == OVERALL
    a, b, c = table.rows
    assert c.reference and c.quality == "reference" and c.valid
    assert b.cells[OVERALL]["mrr@10"].verdict is Verdict.REGRESSED
    # The reference's numbers are the baseline side of the first valid comparison.
    assert c.cells[OVERALL]["mrr@10"].value == a.cells[OVERALL]["mrr@10"].value == 1.0
    assert c.cells[OVERALL]["mrr@10"].verdict is None


def test_with_no_variant_to_compare_the_reference_says_why_it_is_invalid() -> None:
    gold = make_gold()
    broken = RunFailure("boot", "exited at boot with status 3")
    runs = [make_run(gold, ranks()), make_run(gold, ranks(), build_failure=broken)]
    table, _ = compare_variants(
        gold, ["ref", "x"], runs, 0, ["mrr@10"], FAST,
        side="baseline", family="things", unmatched="nothing compared with it",
    )  # fmt: skip
    ref, x = table.rows
    assert not table.valid and not ref.valid and not x.valid
    assert ref.reasons == ("nothing compared with it",)
    assert ref.cells[OVERALL]["mrr@10"].value is None


def test_the_three_formats_come_from_one_layout_and_one_document() -> None:
    table, _ = _compare()
    formats = renderers(
        lambda t: [Block("title", (f"{t.ref}",)), Block("lines", tuple(map(row_name, t.rows)))],
        lambda t: {"reference": t.reference},
    )
    assert render(formats, table, "text").startswith("main\n----\n\na\nb\nc (reference)\n")
    assert render(formats, table, "markdown").startswith("## main")
    assert json.loads(render(formats, table, "json")) == {"reference": "c"}
    with pytest.raises(ValueError, match="unknown format 'csv'; known: text, markdown, json"):
        render(formats, table, "csv")


def test_saving_writes_the_document_the_report_and_each_comparison(tmp_path: Path) -> None:
    _, comparisons = _compare()
    directory = save_variants(tmp_path, "kind", {"b": 1}, "# page\n", comparisons)
    assert directory.name.startswith("kind_")
    assert {p.name for p in directory.iterdir()} == {
        "kind.json", "report.md", "vs_a.json", "vs_b.json"}  # fmt: skip
    assert json.loads((directory / "kind.json").read_text()) == {"b": 1}
    assert (directory / "report.md").read_text() == "# page\n"
    again = save_variants(tmp_path, "kind", {}, "", {})
    assert again != directory  # never overwritten


def test_a_name_becomes_a_file_name() -> None:
    assert slug("SINK=1") == "SINK=1"
    assert slug("A=1,B=x y/z") == "A=1,B=x-y-z"
    assert slug("///") == "value"


def test_all_but_running_and_saving_is_pure() -> None:
    pure = ("harness.variants", "harness.variants.summary", "harness.variants.render")
    found = impurities(*pure, "harness.variants.run")
    assert {module: found[module] for module in pure} == {module: [] for module in pure}
    assert "harness.driver.runner" in found["harness.variants.run"]

"""The published JSON Schemas: current with the types, and every output kind valid against them
(comparison.json from real compares and a saved one, run records written by save_run, the demo's
and the README's harness.toml)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_cli
from compare_support import buried, candidate, make_gold, make_run, ranks, run_pair
from records_v1 import run_to_dict_v1

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema (test extra) is not installed")

from harness.report.saved import save_comparison  # noqa: E402
from harness.results.document import comparison_to_dict  # noqa: E402
from harness.results.records import encode_run, save_run  # noqa: E402
from harness.schemas import NAMES, load_schema, schema_text  # noqa: E402
from harness.schemas.generate import GENERATED, render  # noqa: E402
from harness.values.types import ErrorKind, RunFailure, Verdict  # noqa: E402
from harness.verdict.comparison import CompareSettings  # noqa: E402
from harness.verdict.decide import compare  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def errors(name: str, document: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator(load_schema(name))
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]


@pytest.mark.parametrize("name", NAMES)
def test_every_schema_is_a_valid_draft_2020_12_schema(name: str) -> None:
    jsonschema.Draft202012Validator.check_schema(load_schema(name))


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_schemas_are_current_with_the_types(name: str) -> None:
    assert schema_text(name) == render(GENERATED[name]()), (
        f"harness/schemas/{name}.schema.json is stale: run python -m harness.schemas.generate"
    )


def test_the_schemas_know_every_verdict_and_error_kind() -> None:
    text = json.dumps(load_schema("comparison"))
    assert all(json.dumps(v.value) in text for v in Verdict)
    run = load_schema("run")
    kinds = run["$defs"]["result"]["properties"]["error"]["anyOf"][0]["enum"]
    assert kinds == [k.value for k in ErrorKind]


@pytest.mark.parametrize(
    "comparison",
    [
        lambda: run_pair(ranks(buried(*range(1, 30)))),  # regressed, with flips
        lambda: run_pair(ranks()),  # no change
        lambda: run_pair(ranks(), errors={(0, "q01"): ErrorKind.TIMEOUT}),  # invalid
        lambda: run_pair(ranks(), build_failure=RunFailure("build", "exit 1", ("boom",))),
        lambda: run_pair(ranks(), s=CompareSettings(resamples=2_000, gate_on=("nDCG@10", "AP"))),
    ],
    ids=["regressed", "same", "invalid", "build-failed", "gates"],
)
def test_comparison_documents_validate(comparison: Any) -> None:
    c = comparison()
    assert errors("comparison", comparison_to_dict(c)) == []
    assert errors("comparison", comparison_to_dict(c, redact=True)) == []


def test_saved_comparison_and_run_records_validate(tmp_path: Path) -> None:
    gold = make_gold()
    base = make_run(gold, ranks())
    cand = candidate(gold, ranks(buried(3)), errors={(1, "q05"): ErrorKind.HTTP_STATUS})
    comparison = compare(gold, base, cand, CompareSettings(resamples=2_000))
    saved = save_comparison(tmp_path, comparison, (base, cand))
    assert errors("comparison", json.loads((saved / "comparison.json").read_text())) == []
    for side in ("baseline", "candidate"):
        assert errors("run", json.loads((saved / f"{side}.json").read_text())) == []
    failed = make_run(gold, ranks(), build_failure=RunFailure("build", "exit 1", ("x",)))
    record = save_run(tmp_path, failed)
    assert errors("run", json.loads(record.read_text())) == []


def test_the_run_schema_lists_exactly_the_fields_a_record_holds() -> None:
    gold = make_gold(4, 0)
    run = make_run(gold, ranks(), repeats=1)
    header, _ = encode_run(run)
    schema = load_schema("run")
    assert set(schema["properties"]) == set(header)
    # A repeat's answers: counted in the header (version 2), or inline (version 1's results).
    assert set(schema["$defs"]["repeat"]["properties"]) == {*header["repeats"][0], "results"}
    old = run_to_dict_v1(run)
    assert errors("run", old) == []  # records of version 1 still validate
    result = old["repeats"][0]["results"][0]
    # `texts` is written only with query.texts (records before it have no such key).
    assert set(schema["$defs"]["result"]["properties"]) == {*result, "texts"}
    assert errors("run", {**header, "surprise": 1}) != []
    assert errors("run", {k: v for k, v in header.items() if k != "answers"}) != []
    assert errors("run", {**old, "schema_version": 2}) != []  # a version 2 names its answers


def test_the_demo_and_readme_configurations_validate() -> None:
    demo = tomllib.loads((ROOT / "harness" / "demo" / "harness.toml").read_text())
    assert errors("config", demo) == []
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]  # the user's docs
    blocks = [b for p in pages for b in re.findall(r"```toml\n(.*?)```", p.read_text(), re.S)]
    whole = [b for b in blocks if "[service]" in b and "[query]" in b and "[gold]" in b]
    assert len(whole) >= 10, "the README and the manual show whole harness.toml files"
    for block in whole:
        text = "\n".join(line.strip() for line in block.splitlines())
        assert errors("config", tomllib.loads(text)) == []
    assert errors("config", {**demo, "servcie": {}}) != []
    assert errors("config", {**demo, "query": {**demo["query"], "limit": "10"}}) != []


@pytest.mark.parametrize("name", NAMES)
def test_harness_schema_prints_the_published_file(name: str, tmp_path: Path) -> None:
    done = run_cli("harness", "schema", name, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == schema_text(name)
    assert json.loads(done.stdout)["$schema"].endswith("2020-12/schema")


def test_harness_schema_refuses_an_unknown_name(tmp_path: Path) -> None:
    done = run_cli("harness", "schema", "gold", cwd=tmp_path)
    assert done.returncode == 2 and "invalid choice: 'gold'" in done.stderr

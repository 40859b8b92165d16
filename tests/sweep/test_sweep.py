"""harness sweep: parameters and grid, the pure summary on hand-built runs, and the real CLI on
the knob service (tests/knob_support.py), whose ranking knob is an environment variable.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from e2e_support import Sandbox
from hypothesis import given
from hypothesis import strategies as st
from knob_support import assert_clean, knob_flag_config, knob_sandbox
from purity import impurities

from harness.config import QueryConfig, ServiceConfig, SideConfig
from harness.config.values import HarnessConfig
from harness.errors import HarnessError
from harness.sweep.params import Param, find_reference, grid, label, parse_param, read_grid
from harness.sweep.render import render_sweep, sweep_to_dict
from harness.sweep.run import overridden_pins, with_point
from harness.sweep.summary import Sweep, summarise
from harness.values.types import (
    GoldQuery,
    GoldSet,
    QueryResult,
    RefRun,
    Repeat,
    RunFailure,
    Verdict,
)
from harness.verdict.comparison import CompareSettings, Comparison

# --------------------------------------------------------------------------- parameters


def test_parse_param_reads_name_and_values_in_order() -> None:
    assert parse_param("RRF_K=20, 60,100") == Param("RRF_K", ("20", "60", "100"))
    assert parse_param("FLAG=on") == Param("FLAG", ("on",))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("RRF_K", "expected NAME=V1,V2"),
        ("1K=2,3", "not an environment variable name"),
        ("K=2,,3", "an empty value"),
        ("K=", "an empty value"),
        ("K=2,3,2", "listed twice"),
    ],
)
def test_parse_param_says_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_param(text)


def test_grid_is_every_combination_first_parameter_slowest() -> None:
    points = grid([Param("A", ("1", "2")), Param("B", ("x", "y", "z"))])
    assert [label(p) for p in points] == [
        "A=1,B=x",
        "A=1,B=y",
        "A=1,B=z",
        "A=2,B=x",
        "A=2,B=y",
        "A=2,B=z",
    ]


def test_grid_refuses_one_point_and_a_name_twice() -> None:
    with pytest.raises(ValueError, match="at least two values"):
        grid([Param("A", ("1",))])
    with pytest.raises(ValueError, match="given twice"):
        grid([Param("A", ("1",)), Param("A", ("2",))])


@given(
    st.lists(
        st.lists(
            st.from_regex(r"[a-z0-9.]{1,4}", fullmatch=True), min_size=1, max_size=3, unique=True
        ),
        min_size=1,
        max_size=3,
    )
)
def test_grid_size_and_reference_round_trip(value_lists: list[list[str]]) -> None:
    params = [Param(f"P{i}", tuple(v)) for i, v in enumerate(value_lists)]
    size = 1
    for v in value_lists:
        size *= len(v)
    if size < 2:
        with pytest.raises(ValueError):
            grid(params)
        return
    points = grid(params)
    assert len(points) == size == len(set(points))
    for i, point in enumerate(points):
        assert find_reference(points, label(point)) == i


def test_read_grid_reads_the_arguments_or_says_what_is_wrong_as_a_harness_error() -> None:
    read = read_grid(["A=1,2", "B=x"], "A=2,B=x")
    assert read.params == (Param("A", ("1", "2")), Param("B", ("x",)))
    assert [label(p) for p in read.points] == ["A=1,B=x", "A=2,B=x"]
    assert read.reference == 1
    with pytest.raises(HarnessError, match=r"^sweep: --reference '3' is not one of the swept"):
        read_grid(["A=1,2"], "3")
    with pytest.raises(HarnessError, match=r"^sweep: 'A': expected NAME=V1,V2"):
        read_grid(["A"], None)


def test_reference_is_the_first_or_a_bare_value_or_a_label() -> None:
    points = grid([Param("SINK", ("0", "1", "20"))])
    assert find_reference(points, None) == 0
    assert find_reference(points, "20") == 2
    assert find_reference(points, "SINK=1") == 1
    with pytest.raises(ValueError, match="not one of the swept values: SINK=0, SINK=1, SINK=20"):
        find_reference(points, "5")


def _config(env: Mapping[str, str]) -> HarnessConfig:
    side = SideConfig(
        ServiceConfig(start="true", ready="/health", env=dict(env)),
        QueryConfig(path="/search", ids="results[].id"),
    )
    return HarnessConfig(
        path=Path("harness.toml"),
        repo=Path("."),
        gold=Path("g"),
        corpus=None,
        baseline=side,
        candidate=side,
    )


def test_with_point_pins_the_value_on_one_side_only_and_overrides_the_config() -> None:
    config = _config({"SINK": "3", "KEEP": "yes"})
    changed = with_point(config, "candidate", (("SINK", "20"),))
    assert changed.candidate.service.env == {"SINK": "20", "KEEP": "yes"}
    assert changed.baseline == config.baseline
    assert overridden_pins(config, "candidate", [Param("SINK", ("1", "2"))]) == ("SINK",)
    assert overridden_pins(config, "candidate", [Param("OTHER", ("1", "2"))]) == ()


# --------------------------------------------------------------------------- summary (pure)

SLICE_OF = {**{f"c{i}": "common" for i in range(8)}, **{f"r{i}": "rare" for i in range(8)}}
GOLD = GoldSet(
    queries=tuple(
        GoldQuery(qid, f"query {qid}", slice=name, relevant={f"doc-{qid}": 1})
        for qid, name in SLICE_OF.items()
    ),
    source="gold.jsonl",
    format="native",
    hash="g" * 64,
)


def _run(name: str, sink: int, *, broken: bool = False) -> RefRun:
    """Every query answered; a "rare" query has its answer `sink` places down (0: rank 1;
    >= 10: not returned in the top 10, as the knob service does)."""
    results = []
    for qid, name_of in SLICE_OF.items():
        fillers = [f"x{j}" for j in range(10)]
        ids = list(fillers)
        place = sink if name_of == "rare" else 0
        if place < 10:
            ids.insert(place, f"doc-{qid}")
        results.append(QueryResult(qid, ids=tuple(ids[:10]), status=200, latency_ns=1_000_000))
    failure = RunFailure("boot", "exited at boot with status 3") if broken else None
    repeat = Repeat(0, () if broken else tuple(results), failure=failure)
    return RefRun(
        ref=f"main [{name}]",
        sha="a" * 40,
        config_hash=name,
        gold_hash=GOLD.hash,
        corpus_hash=None,
        tool_version="0",
        host={},
        repeats=(repeat,),
        record_path=f"runs/{name}.json",
    )


SETTINGS = CompareSettings(k=(10,), gate_on=("mrr@10", "recall@10"), resamples=200)


def _sweep(
    sinks: tuple[int, ...], reference: int = 0, broken: frozenset[int] = frozenset()
) -> tuple[Sweep, dict[str, Comparison]]:
    points = grid([Param("SINK", tuple(map(str, sinks)))])
    runs = [
        _run(label(p), s, broken=i in broken)
        for i, (p, s) in enumerate(zip(points, sinks, strict=True))
    ]
    return summarise(GOLD, points, runs, reference, ("mrr@10", "recall@10"), SETTINGS)


def test_summary_marks_best_and_flags_a_collapsed_slice() -> None:
    sweep, comparisons = _sweep((0, 1, 20))
    assert [r.name for r in sweep.table.rows] == ["SINK=0", "SINK=1", "SINK=20"]
    assert sweep.table.scopes == ("overall", "common", "rare")
    assert set(comparisons) == {"SINK=1", "SINK=20"}
    ref, one, twenty = sweep.table.rows
    assert ref.reference and ref.quality == "reference"
    # rare mrr@10: 1 at SINK=0, 1/2 at SINK=1, 0 at SINK=20.
    assert ref.cells["rare"]["mrr@10"].value == 1.0
    assert one.cells["rare"]["mrr@10"].value == 1 / 2
    assert twenty.cells["rare"]["mrr@10"].value == 0.0
    assert sweep.best("rare", "mrr@10") == ("SINK=0",)
    assert sweep.best("overall", "mrr@10") == ("SINK=0",)
    # Every value ties on the untouched slice, and a tie marks them all.
    assert sweep.best("common", "mrr@10") == ("SINK=0", "SINK=1", "SINK=20")
    # recall@10 does not see a one-place sink.
    assert sweep.best("rare", "recall@10") == ("SINK=0", "SINK=1")
    assert one.cells["rare"]["mrr@10"].verdict is Verdict.REGRESSED
    assert one.cells["rare"]["mrr@10"].collapse is None
    assert twenty.cells["rare"]["mrr@10"].collapse == "fell to zero"
    assert "rare (mrr@10)" in twenty.collapses and "rare (recall@10)" in twenty.collapses
    assert twenty.quality == "regressed" and "slice collapse: rare" in twenty.quality_reason
    assert sweep.valid


def test_the_swept_metrics_are_computed_even_when_compare_does_not_gate_on_them() -> None:
    points = grid([Param("SINK", ("0", "1"))])
    runs = [_run(label(p), sink) for p, sink in zip(points, (0, 1), strict=True)]
    plain = CompareSettings(k=(10,), resamples=200)  # gate_on: none
    sweep, comparisons = summarise(GOLD, points, runs, 0, ("mrr@10",), plain)
    assert comparisons["SINK=1"].settings.gate_on == ("mrr@10",)
    assert sweep.table.rows[1].cells["rare"]["mrr@10"].value == 1 / 2  # the answer at rank 2


def test_the_reference_can_be_any_value() -> None:
    sweep, comparisons = _sweep((20, 0), reference=1)
    worse, ref = sweep.table.rows
    assert ref.reference and set(comparisons) == {"SINK=20"}
    assert worse.cells["rare"]["mrr@10"].verdict is Verdict.REGRESSED
    assert sweep.table.reference == "SINK=0"


def test_an_invalid_value_is_shown_invalid_and_never_best() -> None:
    sweep, _ = _sweep((1, 0), broken=frozenset({1}))
    _, broken = sweep.table.rows
    assert not sweep.valid and not broken.valid
    assert any("exited at boot" in reason for reason in broken.reasons)
    assert all(not c.best for scope in broken.cells.values() for c in scope.values())
    text = render_sweep(sweep, "text")
    assert "SINK=0 is invalid" in text
    assert "invalid" in text.split("mrr@10 by slice")[1]


def test_renderers_show_one_table_per_metric_with_marks_and_legend() -> None:
    sweep, _ = _sweep((0, 1, 20))
    text = render_sweep(sweep, "text")
    assert text.startswith("harness sweep: main (aaaaaaaa), SINK = 0, 1, 20; reference SINK=0")
    mrr = text.split("mrr@10 by slice")[1].split("recall@10 by slice")[0]
    lines = {line.split()[0]: line for line in mrr.splitlines() if line.startswith("SINK=")}
    assert "1.000 *" in lines["SINK=0"]  # best, and the reference has no verdict mark
    assert "0.500 -" in lines["SINK=1"]
    assert "0.000 - !" in lines["SINK=20"]
    assert "* best in its column" in text
    markdown = render_sweep(sweep, "markdown")
    assert markdown.startswith("## harness sweep")
    assert "### mrr@10 by slice" in markdown and "| SINK=20" in markdown
    document = json.loads(render_sweep(sweep, "json"))
    assert document == sweep_to_dict(sweep)
    assert document["schema"] == "harness-sweep" and document["schema_version"] == 1
    assert document["best"]["rare"]["mrr@10"] == ["SINK=0"]
    with pytest.raises(ValueError, match="unknown format"):
        render_sweep(sweep, "csv")


def test_all_but_running_and_saving_a_sweep_is_pure() -> None:
    pure = tuple(f"harness.sweep{part}" for part in ("", ".params", ".summary", ".render"))
    found = impurities(*pure, "harness.sweep.run")
    assert {module: found[module] for module in pure} == {module: [] for module in pure}
    assert "harness.driver.runner" in found["harness.sweep.run"]  # the check sees what is not pure


# --------------------------------------------------------------------------- the real CLI


@pytest.fixture(scope="module")
def swept(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Sandbox, subprocess.CompletedProcess[str]]]:
    sandbox = knob_sandbox(tmp_path_factory.mktemp("sweep"))
    done = sandbox.harness("sweep", "--ref", "main", "--param", "SINK=0,1,20", "--format", "json")
    yield sandbox, done
    assert_clean(sandbox)


@pytest.mark.slow
def test_sweep_cli_measures_each_value_in_its_own_run(
    swept: tuple[Sandbox, subprocess.CompletedProcess[str]],
) -> None:
    sandbox, done = swept
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert [r["label"] for r in document["rows"]] == ["SINK=0", "SINK=1", "SINK=20"]
    assert document["reference"] == "SINK=0"
    assert document["scopes"] == ["overall", "common", "rare"]  # "none" has no answerable query
    assert sandbox.boots() == 3  # one boot per value (repeats = 1 in the fixture's config)
    records = {r["label"]: r["record_path"] for r in document["rows"]}
    assert len(set(records.values())) == 3
    for name, path in records.items():
        record = json.loads(Path(path).read_text())
        assert record["ref"] == f"main [{name}]"
    # The value reached the service: direction only, never a pinned number.
    rare = {r["label"]: r["cells"]["rare"]["mrr@10"] for r in document["rows"]}
    assert rare["SINK=0"]["value"] > rare["SINK=1"]["value"] > rare["SINK=20"]["value"] == 0
    assert rare["SINK=20"]["collapse"] and rare["SINK=20"]["verdict"] == "regressed"
    assert document["best"]["rare"]["mrr@10"] == ["SINK=0"]
    common = {r["label"]: r["cells"]["common"]["mrr@10"]["value"] for r in document["rows"]}
    assert len(set(common.values())) == 1


@pytest.mark.slow
def test_sweep_saves_its_tables_and_each_comparison(
    swept: tuple[Sandbox, subprocess.CompletedProcess[str]],
) -> None:
    sandbox, done = swept
    (directory,) = sandbox.results.glob("sweep_*")
    assert f"results saved in {directory}" in done.stderr
    names = {p.name for p in directory.iterdir()}
    assert names == {"sweep.json", "report.md", "vs_SINK=1.json", "vs_SINK=20.json"}
    assert json.loads((directory / "sweep.json").read_text()) == json.loads(done.stdout)
    assert "### mrr@10 by slice" in (directory / "report.md").read_text()
    report = sandbox.harness("report", str(directory / "vs_SINK=20.json"))
    assert report.returncode == 1, report.stderr  # the full compare report: regressed
    assert "main [SINK=0]" in report.stdout and "main [SINK=20]" in report.stdout


@pytest.mark.slow
def test_a_second_sweep_reuses_the_records_and_renders_text(
    swept: tuple[Sandbox, subprocess.CompletedProcess[str]],
) -> None:
    sandbox, _ = swept
    boots = sandbox.boots()
    done = sandbox.harness("sweep", "--ref", "main", "--param", "SINK=0,20", "--reference", "20")
    assert done.returncode == 0, done.stderr
    assert sandbox.boots() == boots  # the same values, measured before: nothing booted
    assert "SINK=20 (reference)" in done.stdout
    assert "mrr@10 by slice" in done.stdout and "recall@10 by slice" in done.stdout


@pytest.mark.slow
def test_bad_parameters_fail_before_anything_is_built(
    swept: tuple[Sandbox, subprocess.CompletedProcess[str]],
) -> None:
    sandbox, _ = swept
    boots = sandbox.boots()
    done = sandbox.harness("sweep", "--ref", "main", "--param", "SINK=1")
    assert done.returncode == 2
    assert "harness: error: sweep: a sweep needs at least two values" in done.stderr
    done = sandbox.harness("sweep", "--ref", "main", "--param", "SINK=0,1", "--metrics", "PREC@10")
    assert done.returncode == 2 and "unknown metric 'PREC@10'" in done.stderr
    assert sandbox.boots() == boots


@pytest.mark.slow
def test_a_swept_pin_reaches_the_start_command_through_its_placeholder(tmp_path: Path) -> None:
    sandbox = knob_sandbox(tmp_path)
    unpinned = sandbox.harness("sweep", "--ref", "main", "--param", "RANK_SINK=0,20",
                               config=knob_flag_config(sandbox, pinned=False))  # fmt: skip
    assert unpinned.returncode == 2
    assert "unknown placeholder {RANK_SINK}" in unpinned.stderr
    assert "or pin RANK_SINK in service.env" in unpinned.stderr
    assert sandbox.boots() == 0  # refused at load time, before anything is built
    config = knob_flag_config(sandbox)
    done = sandbox.harness(
        "sweep", "--ref", "main", "--param", "RANK_SINK=0,20", "--format", "json", config=config
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["overridden_env"] == ["RANK_SINK"]  # the config's default, replaced per value
    # The service reads no RANK_SINK from its environment: only `--sink {RANK_SINK}` moves it.
    rare = {r["label"]: r["cells"]["rare"]["mrr@10"]["value"] for r in document["rows"]}
    assert rare["RANK_SINK=0"] > rare["RANK_SINK=20"] == 0
    common = {r["label"]: r["cells"]["common"]["mrr@10"]["value"] for r in document["rows"]}
    assert common["RANK_SINK=0"] == common["RANK_SINK=20"]
    assert sandbox.boots() == 2
    assert_clean(sandbox)

"""What a stored run may be reused for, and under which key (issue 12), inputs_hash included.

`harness.results.records.find_reusable` returns a record only when every field of the key
matches; one test per field changes that field alone and the record is no longer found.
`harness.config.inputs` covers the files the configuration names by path outside the checkout:
editing one changes the key.  Records are written with the real `save_run` into tmp_path.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness import __version__
from harness.config import QueryConfig, ServiceConfig, SideConfig
from harness.config.inputs import data_path, inputs_hash, referenced_paths
from harness.config.values import HarnessConfig
from harness.results.records import find_reusable, load_run, save_run
from harness.values.types import Machine, QueryResult, RefRun, Repeat

KEY: dict[str, object] = {
    "sha": "a" * 40,
    "config_hash": "c" * 64,
    "gold_hash": "g" * 64,
    "corpus_hash": "k" * 64,
    "inputs_hash": "i" * 64,
    "concurrency": 1,
}


def record(**changes: object) -> RefRun:
    reps = tuple(
        Repeat(
            index=i,
            results=(QueryResult("q1", ids=("d1",), status=200, latency_ns=1_000_000),),
            machine=Machine(0.5, 0.6, 2, 40_000),
        )
        for i in range(3)
    )
    run = RefRun(
        ref="main",
        sha=str(KEY["sha"]),
        config_hash=str(KEY["config_hash"]),
        gold_hash=str(KEY["gold_hash"]),
        corpus_hash=str(KEY["corpus_hash"]),
        tool_version=__version__,
        host={},
        repeats=reps,
        inputs_hash=str(KEY["inputs_hash"]),
        pair_id="p1",
    )
    return replace(run, **changes)  # type: ignore[arg-type]


def find(results: Path, repeats: int = 3, **changes: object) -> RefRun | None:
    """find_reusable on KEY with `changes` (one field set to another value)."""
    key = {**KEY, **changes}
    return find_reusable(results, repeats=repeats, **key)  # type: ignore[arg-type]


def test_a_record_on_exactly_the_key_is_found_with_its_machine_and_pair(tmp_path: Path) -> None:
    path = save_run(tmp_path, record())
    found = find(tmp_path)
    assert found is not None and found.record_path == str(path)
    assert found.repeats[0].machine == Machine(0.5, 0.6, 2, 40_000)
    assert (found.pair_id, found.inputs_hash, found.concurrency) == ("p1", "i" * 64, 1)
    assert load_run(path) == replace(found, record_path=str(path))


@pytest.mark.parametrize(
    ("field", "other"),
    [
        ("sha", "b" * 40),
        ("config_hash", "d" * 64),
        ("gold_hash", "h" * 64),
        ("corpus_hash", None),
        ("inputs_hash", "j" * 64),
        ("concurrency", 4),
    ],
)
def test_each_field_of_the_key_must_match(tmp_path: Path, field: str, other: object) -> None:
    save_run(tmp_path, record())
    assert find(tmp_path) is not None
    assert find(tmp_path, **{field: other}) is None  # type: ignore[arg-type]


def test_the_tool_version_is_part_of_the_key(tmp_path: Path) -> None:
    save_run(tmp_path, record(tool_version="0.0.older"))
    assert find(tmp_path) is None


def test_a_record_with_fewer_repeats_than_asked_is_not_reused(tmp_path: Path) -> None:
    save_run(tmp_path, record())
    assert find(tmp_path, repeats=3) is not None
    assert find(tmp_path, repeats=4) is None


def test_a_record_from_before_inputs_hash_is_not_reused(tmp_path: Path) -> None:
    save_run(tmp_path, record(inputs_hash=None))
    assert find(tmp_path) is None


# --------------------------------------------------------------------------- inputs_hash


def side(start: str, **service: object) -> SideConfig:
    return SideConfig(ServiceConfig(start, "/health", **service), QueryConfig("/s", "ids"))  # type: ignore[arg-type]


def config(repo: Path, s: SideConfig) -> HarnessConfig:
    return HarnessConfig(repo / "harness.toml", repo, repo / "gold.jsonl", None, s, s)


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    repo, outside = tmp_path / "repo", tmp_path / "shared"
    repo.mkdir()
    outside.mkdir()
    (repo / "svc.py").write_text("print('in the checkout')\n")
    (outside / "load.py").write_text("print('v1')\n")
    (outside / "settings.toml").write_text("depth = 10\n")
    (outside / "corpus").mkdir()
    (outside / "corpus" / "docs.jsonl").write_text('{"id": 1}\n')
    return repo, outside


@pytest.mark.parametrize(
    ("make", "edited"),
    [
        (lambda o: side(f"{{python}} {o}/load.py --port {{port}}"), "load.py"),
        (lambda o: side(f"svc --config={o}/settings.toml"), "settings.toml"),
        (lambda o: side("svc", prepare=(f"sh {o}/load.py",)), "load.py"),
        (lambda o: side("svc", build=f"python {o}/load.py"), "load.py"),
        (lambda o: side("svc", env={"SVC_SETTINGS": f"{o}/settings.toml"}), "settings.toml"),
        (lambda o: side("svc", env={"PYTHONPATH": f"/none:{o}/corpus"}), "corpus/docs.jsonl"),
        (lambda o: side("svc --data {data}", data=f"{o}/corpus"), "corpus/docs.jsonl"),
    ],
    ids=["start", "start --flag=", "prepare", "build", "env", "env path list", "data"],
)
def test_editing_a_named_file_outside_the_checkout_changes_the_key(
    layout: tuple[Path, Path], make: object, edited: str
) -> None:
    repo, outside = layout
    s = make(outside)  # type: ignore[operator]
    before = inputs_hash(s, config(repo, s))
    assert referenced_paths(s, repo) or data_path(s, repo, None)  # it was seen
    (outside / edited).write_text((outside / edited).read_text() + "# edited\n")
    assert inputs_hash(s, config(repo, s)) != before


def test_files_inside_the_checkout_and_bare_words_are_left_to_the_sha(
    layout: tuple[Path, Path],
) -> None:
    repo, _ = layout
    s = side("{python} svc.py --port {port} --data {data} --mode fast", data="data")
    assert referenced_paths(s, repo) == ()
    before = inputs_hash(s, config(repo, s))
    (repo / "svc.py").write_text("print('edited: the commit sha covers this')\n")
    assert inputs_hash(s, config(repo, s)) == before

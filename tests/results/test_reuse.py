"""harness.results.records.find_reusable: a run record is reused only when every field of the reuse
key matches and the record is clean.

The key, read off find_reusable: sha, config_hash, gold_hash, corpus_hash, the tool version, at
least `repeats` repeats; and clean: no build or repeat failure, no errored query, every teardown
confirmed. Each test below saves one record that differs from the lookup in exactly one of these
and asserts it is not reused; `test_a_record_matching_every_field_is_reused` is the control that
makes each of those "no" mean something (the same record, unchanged, is found).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from e2e_support import build_sandbox, config_text
from records_support import CONFIG, CORPUS, GOLD, REPEATS, SHA, clean_run
from records_support import clean_repeat as _repeat

from harness import __version__
from harness.results.records import find_reusable, load_run, save_run
from harness.values.types import ErrorKind, QueryResult, RefRun, RunFailure


def lookup(results: Path, **changes: Any) -> RefRun | None:
    key: dict[str, Any] = {
        "sha": SHA,
        "config_hash": CONFIG,
        "gold_hash": GOLD,
        "corpus_hash": CORPUS,
        "repeats": REPEATS,
    }
    key.update(changes)
    return find_reusable(results, **key)


def test_a_record_matching_every_field_is_reused(tmp_path: Path) -> None:
    path = save_run(tmp_path, clean_run())
    found = lookup(tmp_path)
    assert found is not None
    assert found == load_run(path)


def test_an_empty_results_directory_reuses_nothing(tmp_path: Path) -> None:
    assert lookup(tmp_path) is None


@pytest.mark.parametrize(
    ("field", "other"),
    [
        ("sha", "b" * 40),
        ("config_hash", "x" * 64),
        ("gold_hash", "y" * 64),
        ("corpus_hash", "z" * 64),
    ],
    ids=lambda v: v if v.endswith("hash") or v == "sha" else "other",
)
def test_a_record_of_other_inputs_is_not_reused(tmp_path: Path, field: str, other: str) -> None:
    save_run(tmp_path / "a", clean_run(**{field: other}))
    assert lookup(tmp_path / "a") is None
    # The same difference seen from the other side: the lookup asks for other inputs.
    save_run(tmp_path / "b", clean_run())
    assert lookup(tmp_path / "b", **{field: other}) is None


def test_a_record_without_a_corpus_is_not_reused_for_a_lookup_with_one(tmp_path: Path) -> None:
    save_run(tmp_path, clean_run(corpus_hash=None))
    assert lookup(tmp_path) is None
    assert lookup(tmp_path, corpus_hash=None) is not None


def test_a_record_of_another_tool_version_is_not_reused(tmp_path: Path) -> None:
    save_run(tmp_path, clean_run(tool_version=f"{__version__}.post1"))
    assert lookup(tmp_path) is None


def test_a_record_with_fewer_repeats_is_not_reused_and_one_with_more_is(tmp_path: Path) -> None:
    save_run(tmp_path, clean_run(repeats=(_repeat(0),)))
    assert lookup(tmp_path) is None
    assert lookup(tmp_path, repeats=1) is not None  # exactly as many is enough


def test_a_record_with_more_repeats_than_asked_is_reused(tmp_path: Path) -> None:
    save_run(tmp_path, clean_run(repeats=tuple(_repeat(i) for i in range(REPEATS + 1))))
    found = lookup(tmp_path)
    assert found is not None and len(found.repeats) == REPEATS + 1


def test_a_record_with_a_build_failure_is_never_reused(tmp_path: Path) -> None:
    save_run(tmp_path, clean_run(build_failure=RunFailure("build", "pip exited 1")))
    assert lookup(tmp_path) is None


@pytest.mark.parametrize("bad", [0, REPEATS - 1])
def test_a_record_with_a_failed_repeat_is_never_reused(tmp_path: Path, bad: int) -> None:
    repeats = tuple(
        _repeat(i, failure=RunFailure("boot", "exited 3")) if i == bad else _repeat(i)
        for i in range(REPEATS)
    )
    save_run(tmp_path, clean_run(repeats=repeats))
    assert lookup(tmp_path) is None


@pytest.mark.parametrize("bad", [0, REPEATS - 1])
def test_a_record_with_one_errored_query_is_never_reused(tmp_path: Path, bad: int) -> None:
    errored = QueryResult("q2", status=500, error=ErrorKind.HTTP_STATUS, detail="HTTP 500")
    repeats = tuple(
        _repeat(i, results=(*_repeat(i).results[:1], errored)) if i == bad else _repeat(i)
        for i in range(REPEATS)
    )
    save_run(tmp_path, clean_run(repeats=repeats))
    assert lookup(tmp_path) is None


@pytest.mark.parametrize("bad", [0, REPEATS - 1])
def test_a_record_with_an_unconfirmed_teardown_is_never_reused(tmp_path: Path, bad: int) -> None:
    repeats = tuple(
        _repeat(i, teardown_confirmed=False) if i == bad else _repeat(i) for i in range(REPEATS)
    )
    save_run(tmp_path, clean_run(repeats=repeats))
    assert lookup(tmp_path) is None


def _renamed(record: Path, name: str) -> None:
    """A record renamed as a user would: its JSON header and its answers file together."""
    record.with_suffix(".npz").rename((record.parent / name).with_suffix(".npz"))
    record.rename(record.parent / name)


def test_the_newest_matching_record_is_the_one_reused(tmp_path: Path) -> None:
    older = save_run(tmp_path, clean_run(host={"hostname": "older"}))
    newer = save_run(tmp_path, clean_run(host={"hostname": "newer"}))
    # Record names start with a UTC stamp to the second; make the order unambiguous.
    _renamed(older, f"20000101T000000Z_{older.name}")
    _renamed(newer, f"29990101T000000Z_{newer.name}")
    found = lookup(tmp_path)
    assert found is not None and found.host == {"hostname": "newer"}


def test_a_clean_match_is_found_past_newer_records_that_do_not_match(tmp_path: Path) -> None:
    good = save_run(tmp_path, clean_run(host={"hostname": "good"}))
    _renamed(good, f"20000101T000000Z_{good.name}")
    for i, bad in enumerate(
        [clean_run(sha="b" * 40), clean_run(build_failure=RunFailure("build", "no"))]
    ):
        path = save_run(tmp_path, bad)
        _renamed(path, f"2999010{i + 1}T000000Z_{path.name}")
    found = lookup(tmp_path)
    assert found is not None and found.host == {"hostname": "good"}


def test_an_unreadable_record_is_skipped_not_reused(tmp_path: Path) -> None:
    save_run(tmp_path, clean_run())
    (tmp_path / "runs" / "99999999T999999Z_garbage.json").write_text('{"schema": "other"}')
    assert lookup(tmp_path) is not None


# --------------------------------------------------------------------------- through the CLI


@pytest.mark.slow
def test_compare_reuses_a_record_until_the_corpus_changes(tmp_path: Path) -> None:
    # The end-to-end configs set no corpus; this one does, so the CLI's corpus hash is the one
    # that decides: the same inputs again reuse both records, one changed document does not.
    sandbox = build_sandbox(tmp_path / "s", {"twin": {"twin": True}})  # A/A is never reused
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text((sandbox.repo / "data" / "corpus.jsonl").read_text())
    config = tmp_path / "harness.toml"
    text = config_text(
        gold=str(sandbox.repo / "gold" / "gold.jsonl"), boot_counter=sandbox.boot_counter
    )
    config.write_text(text.replace("[gold]\n", f"[gold]\ncorpus = {json.dumps(str(corpus))}\n"))

    def compare() -> int:
        done = sandbox.harness(
            "compare",
            *("--baseline", "main", "--candidate", "twin", "--repeats", "1", "--reuse-runs"),
            *("--latency-budget", "2"),  # the latency rule needs 2 rounds: 1 past --repeats 1
            config=config,
        )
        assert done.returncode == 0, done.stderr
        return sandbox.boots()

    assert compare() == 4  # both measured (reuse is decided before either side runs)
    assert compare() == 4  # both reused
    with corpus.open("a") as f:
        f.write(json.dumps({"id": "extra", "title": "Extra", "text": "one more page"}) + "\n")
    assert compare() == 8  # a new corpus: both measured again
    assert compare() == 8
    assert sandbox.leftovers() == [] and sandbox.worktrees() == []


def test_a_record_that_asked_part_of_the_gold_set_is_not_reused(tmp_path: Path) -> None:
    # A sequential compare stops early and records only the queries it asked: reused by a
    # compare of the whole gold set, the rest would read as errored answers (exit 3, "invalid").
    save_run(tmp_path, clean_run())
    assert lookup(tmp_path, queries=2) is not None  # every repeat answered both queries
    assert lookup(tmp_path, queries=3) is None  # the gold set has a query none of them asked
    partial = tuple(replace(rep, results=rep.results[:1]) for rep in clean_run().repeats)
    save_run(tmp_path / "p", clean_run(repeats=partial))
    assert lookup(tmp_path / "p", queries=2) is None

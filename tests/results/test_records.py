"""harness.results on disk, byte for byte: the run record's JSON header (every field, and the
defaults an older or hand-written record falls back to) and the columns of its answers file,
its file names, the records of schema_version 1 that still load, the atomic never-overwrite
writers, and a comparison directory's name and reading back.

These pin what is written to disk, so that a change of a key, a default or a file name is a
failing test and not a silent change of every saved result (found by scripts/mutate.py).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import re
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from compare_support import make_gold, make_run, ranks
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from records_support import SAVED_FILES, clean_run
from records_v1 import run_to_dict_v1

from harness.errors import ResultsError
from harness.report.saved import save_comparison
from harness.results.comparisons import load_comparison
from harness.results.files import (
    json_text,
    read_json,
    utc_stamp,
    write_json_new,
    write_text_new,
)
from harness.results.records import (
    encode_run,
    host_fingerprint,
    load_record,
    load_run,
    run_from_dict,
    save_run,
    write_record,
)
from harness.values.types import ErrorKind, QueryResult, RefRun, Repeat, RunFailure, Usage
from harness.verdict.comparison import CompareSettings
from harness.verdict.decide import compare


def full_run() -> RefRun:
    """A run with every field set to something other than its default."""
    ok = QueryResult("q1", ids=("d1", "d2"), scores=(2.5, 1.0), status=200, latency_ns=1234)
    no_scores = QueryResult("q2", ids=("d3",), scores=None, status=201, latency_ns=99)
    failed = QueryResult(
        "q3", status=503, error=ErrorKind.HTTP_STATUS, detail="HTTP 503: busy", latency_ns=7
    )
    return RefRun(
        ref="feat/x",
        sha="f" * 40,
        config_hash="c" * 64,
        gold_hash="g" * 64,
        corpus_hash="d" * 64,
        tool_version="9.9.9",
        host={"hostname": "box", "cpu": "fast"},
        repeats=(
            Repeat(
                index=0,
                results=(ok, no_scores, failed),
                timings_s={"boot": 0.5, "queries": 1.25, "teardown": 0.125},
                teardown_confirmed=True,
                log_path="results/logs/a.log",
            ),
            Repeat(
                index=1,
                results=(),
                timings_s={},
                teardown_confirmed=False,
                log_path=None,
                failure=RunFailure("boot", "exited at boot with status 3", ("line 1", "line 2")),
            ),
        ),
        query_config={"method": "GET", "params": {"q": "{query}"}, "limit": 10},
        build_failure=RunFailure("build", "pip exited 1", ("tail",)),
        timings_s={"build": 3.5},
        build_cached=False,
    )


# The record as harness wrote it before issue 28: every answer a JSON object (still read).
EXPECTED_V1: dict[str, Any] = {
    "schema": "harness-run",
    "schema_version": 1,
    "ref": "feat/x",
    "sha": "f" * 40,
    "config_hash": "c" * 64,
    "gold_hash": "g" * 64,
    "corpus_hash": "d" * 64,
    "tool_version": "9.9.9",
    "host": {"hostname": "box", "cpu": "fast"},
    "query_config": {"method": "GET", "params": {"q": "{query}"}, "limit": 10},
    "build_failure": {"stage": "build", "message": "pip exited 1", "log_tail": ["tail"]},
    "timings_s": {"build": 3.5},
    "build_cached": False,
    "pair_id": None,
    "order_seed": None,
    "concurrency": 1,
    "inputs_hash": None,
    "definition": None,
    "latency_budget": None,
    "repeats": [
        {
            "index": 0,
            "timings_s": {"boot": 0.5, "queries": 1.25, "teardown": 0.125},
            "teardown_confirmed": True,
            "sandbox": None,
            "machine": None,
            "positions": [],
            "latency_only": False,
            "log_path": "results/logs/a.log",
            "failure": None,
            "results": [
                {
                    "query_id": "q1",
                    "ids": ["d1", "d2"],
                    "scores": [2.5, 1.0],
                    "status": 200,
                    "error": None,
                    "detail": None,
                    "latency_ns": 1234,
                },
                {
                    "query_id": "q2",
                    "ids": ["d3"],
                    "scores": None,
                    "status": 201,
                    "error": None,
                    "detail": None,
                    "latency_ns": 99,
                },
                {
                    "query_id": "q3",
                    "ids": [],
                    "scores": None,
                    "status": 503,
                    "error": "http_status",
                    "detail": "HTTP 503: busy",
                    "latency_ns": 7,
                },
            ],
        },
        {
            "index": 1,
            "timings_s": {},
            "teardown_confirmed": False,
            "sandbox": None,
            "machine": None,
            "positions": [],
            "latency_only": False,
            "log_path": None,
            "failure": {
                "stage": "boot",
                "message": "exited at boot with status 3",
                "log_tail": ["line 1", "line 2"],
            },
            "results": [],
        },
    ],
}


def _header(v1: dict[str, Any]) -> dict[str, Any]:
    """EXPECTED_V1 as a version 2 header: each repeat's answers counted, not listed."""
    repeats = [
        {
            **{k: v for k, v in rep.items() if k != "results"},
            "answers": len(rep["results"]),
            "errors": sum(r["error"] is not None for r in rep["results"]),
            "texts": all("texts" in r and r["texts"] is not None for r in rep["results"]),
        }
        for rep in v1["repeats"]
    ]
    return {**v1, "schema_version": 2, "repeats": repeats}


EXPECTED = _header(EXPECTED_V1)
# What a boot and the build cost (issue 40): null when not measured; a v1 record lacks them.
EXPECTED.update(build_seconds=None, build_bytes=None)
for _rep in EXPECTED["repeats"]:
    _rep["usage"] = None


def test_a_run_record_holds_exactly_these_keys_and_values() -> None:
    header, data = encode_run(full_run())
    assert {k: v for k, v in header.items() if k != "answers"} == EXPECTED
    assert header["answers"] == {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    assert encode_run(full_run()) == (header, data)  # the same run, the same bytes


def test_the_answers_file_holds_these_columns() -> None:
    _, data = encode_run(full_run())
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        got = {name: npz[name].tolist() for name in npz.files}
    assert got == {
        "format": [1],
        "answers": [0, 3, 3],  # repeat 0: rows 0-2; repeat 1 (failed at boot): none
        "queries_blob": list(b"q1\nq2\nq3"),
        "queries_ends": [2, 5, 8],
        "query": [0, 1, 2],
        "docs_blob": list(b"d1\nd2\nd3"),
        "docs_ends": [2, 5, 8],
        "ids": [0, 1, 2],
        "ids_at": [0, 2, 3, 3],
        "scores": [2.5, 1.0],
        "scores_at": [0, 2, 2, 2],
        "scored": [True, False, False],
        "status": [200, 201, 503],
        "error": [-1, -1, 2],  # ERROR_KINDS.index(ErrorKind.HTTP_STATUS)
        "latency_ns": [1234, 99, 7],
        "detail_rows": [2],
        "details_blob": list(b"HTTP 503: busy"),
        "details_ends": [14],
        "texts_blob": [],
        "texts_ends": [],
        "text": [],
        "text_at": [0, 0, 0, 0],
        "texted": [False, False, False],
    }


def test_a_record_reads_back_equal_naming_its_source(tmp_path: Path) -> None:
    header, data = encode_run(full_run())
    (tmp_path / "x.npz").write_bytes(data)
    back = run_from_dict(json.loads(json.dumps(header)), str(tmp_path / "x.json"))
    assert back == RefRun(**{**full_run().__dict__, "record_path": str(tmp_path / "x.json")})


def test_a_record_of_schema_version_1_reads_back_equal() -> None:
    assert run_to_dict_v1(full_run()) == EXPECTED_V1  # the oracle writes what harness wrote
    back = run_from_dict(json.loads(json.dumps(EXPECTED_V1)), "runs/x.json")
    assert back == RefRun(**{**full_run().__dict__, "record_path": "runs/x.json"})
    assert run_from_dict(EXPECTED_V1).record_path == "<memory>"


def test_a_saved_record_is_sorted_json_named_by_stamp_ref_and_sha(tmp_path: Path) -> None:
    path = save_run(tmp_path, full_run())
    assert path.parent == tmp_path / "runs"
    assert re.fullmatch(r"\d{8}T\d{6}Z_feat-x_ffffffff_[0-9a-f]{6}\.json", path.name), path.name
    header, data = encode_run(full_run())
    text = path.read_text(encoding="utf-8")
    assert text == json_text(header)
    assert path.with_suffix(".npz").read_bytes() == data  # the answers, beside it
    assert load_run(path) == RefRun(**{**full_run().__dict__, "record_path": str(path)})
    # no temp file left: the record and its answers
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name, path.stem + ".npz"]


def test_a_saved_record_of_schema_version_1_loads(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "20260101T000000Z_feat-x_ffffffff_abcdef.json"
    write_json_new(path, run_to_dict_v1(full_run()))
    assert load_run(path) == RefRun(**{**full_run().__dict__, "record_path": str(path)})


@pytest.mark.parametrize(
    ("ref", "slug"),
    [
        ("main", "main"),
        ("feat/x y", "feat-x-y"),
        ("v1.2_rc-3", "v1.2_rc-3"),
        ("/weird//ref/", "weird-ref"),
        ("é", "ref"),
        ("a" * 50, "a" * 40),
        ("Feat/X", "Feat-X"),
        ("--Xy--", "Xy"),
    ],
)
def test_record_names_carry_a_filename_safe_slug_of_the_ref(
    tmp_path: Path, ref: str, slug: str
) -> None:
    path = save_run(tmp_path, clean_run(ref=ref))
    m = re.fullmatch(r"\d{8}T\d{6}Z_(.+)_aaaaaaaa_[0-9a-f]{6}\.json", path.name)
    assert m is not None and m.group(1) == slug, path.name


def test_an_older_record_without_optional_keys_reads_with_the_defaults() -> None:
    minimal = {
        "schema": "harness-run",
        "schema_version": 1,
        "ref": "main",
        "sha": "a" * 40,
        "config_hash": "c",
        "gold_hash": "g",
        "tool_version": "0.1",
        "repeats": [
            {
                "index": 0,
                "results": [{"query_id": "q1"}],
            },
            {"index": 1, "results": [], "failure": {"stage": "boot", "message": "m"}},
        ],
    }
    run = run_from_dict(minimal)
    assert run.corpus_hash is None and run.host == {} and run.query_config == {}
    assert run.build_failure is None and run.timings_s == {} and run.build_cached is None
    first, second = run.repeats
    assert first.timings_s == {} and first.teardown_confirmed is False and first.log_path is None
    assert first.failure is None
    assert first.results == (QueryResult("q1", ids=(), scores=None, latency_ns=0),)
    assert second.failure == RunFailure("boot", "m", ())


def test_values_are_read_as_their_types() -> None:
    doc = json.loads(json.dumps(EXPECTED_V1))
    doc["repeats"][0]["results"][0].update({"ids": [1, 2], "scores": [2, 1], "latency_ns": 5.0})
    doc["repeats"][0]["timings_s"] = {"boot": 1}
    doc["timings_s"] = {"build": 2}
    doc["host"] = {"cpus": 4}
    run = run_from_dict(doc)
    result = run.repeats[0].results[0]
    assert result.ids == ("1", "2") and result.scores == (2.0, 1.0) and result.latency_ns == 5
    assert type(result.latency_ns) is int and all(type(s) is float for s in result.scores or ())
    assert run.repeats[0].timings_s == {"boot": 1.0} and run.timings_s == {"build": 2.0}
    assert run.host == {"cpus": "4"}
    assert run.repeats[0].results[2].error is ErrorKind.HTTP_STATUS


@pytest.mark.parametrize(
    "breakage",
    [
        lambda d: d.pop("sha"),
        lambda d: d.pop("repeats"),
        lambda d: d["repeats"][0].pop("results"),
        lambda d: d["repeats"][0]["results"][0].pop("query_id"),
        lambda d: d["repeats"][0]["results"][2].update(error="on fire"),
        lambda d: d["repeats"][0].update(index="first"),
        lambda d: d["repeats"][1]["failure"].pop("stage"),
    ],
    ids=["sha", "repeats", "results", "query_id", "error kind", "index", "failure stage"],
)
def test_a_malformed_record_is_a_results_error_naming_the_file(breakage: Any) -> None:
    doc = json.loads(json.dumps(EXPECTED_V1))
    breakage(doc)
    with pytest.raises(ResultsError, match=r"^runs/bad\.json: malformed run record"):
        run_from_dict(doc, "runs/bad.json")


@pytest.mark.parametrize(
    "breakage",
    [
        lambda d: d.pop("answers"),
        lambda d: d["answers"].pop("sha256"),
        lambda d: d["answers"].update(bytes="many"),
        lambda d: d["repeats"][0].pop("answers"),
        lambda d: d["repeats"][0].update(errors=None),
    ],
    ids=["answers", "sha256", "bytes", "repeat answers", "repeat errors"],
)
def test_a_malformed_header_is_a_results_error_naming_the_file(
    tmp_path: Path, breakage: Any
) -> None:
    header, data = encode_run(full_run())
    (tmp_path / "bad.npz").write_bytes(data)
    breakage(header)
    with pytest.raises(ResultsError, match=r"bad\.json: malformed run record"):
        run_from_dict(header, str(tmp_path / "bad.json"))


def test_load_record_reads_a_comparison_side_or_says_what_to_pass(tmp_path: Path) -> None:
    saved = tmp_path / "cmp"
    saved.mkdir()
    write_record(saved / "baseline.json", clean_run(ref="base"))
    write_json_new(saved / "candidate.json", run_to_dict_v1(clean_run(ref="cand")))  # an old one
    assert load_record(saved).ref == "cand"  # the candidate by default
    assert load_record(saved, "baseline").ref == "base"
    assert load_record(saved / "baseline.json").record_path == str(saved / "baseline.json")
    with pytest.raises(ResultsError) as caught:
        load_record(tmp_path, "baseline")
    assert caught.value.message == (
        f"{tmp_path}: neither a run record nor a comparison directory with baseline.json"
    )
    assert list(caught.value.details) == [
        "pass results/runs/<record>.json, or a results/<stamp>_<sha8>_<sha8>/ directory"
    ]


def test_a_record_of_another_schema_version_names_the_file_and_says_what_to_do() -> None:
    doc = {**EXPECTED, "schema_version": 3}
    with pytest.raises(ResultsError) as caught:
        run_from_dict(doc, "runs/new.json")
    assert caught.value.message.startswith("runs/new.json: ")
    assert "run record" in caught.value.message
    assert "re-run with --fresh to measure it again" in caught.value.details


def test_the_host_fingerprint_says_what_the_numbers_were_measured_on() -> None:
    host = host_fingerprint()
    assert set(host) == {
        "python",
        "implementation",
        "platform",
        "machine",
        "cpu",
        "cpu_count",
        "hostname",
    }
    assert host["python"] == platform.python_version()
    assert host["implementation"] == sys.implementation.name
    assert host["platform"] == platform.platform() and host["machine"] == platform.machine()
    assert host["cpu_count"] == str(os.cpu_count() or 0) and host["hostname"] == platform.node()
    names = (
        [
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ]
        if Path("/proc/cpuinfo").is_file()
        else []
    )
    assert host["cpu"] == (names[0] if names else platform.processor() or platform.machine())


# --------------------------------------------------------------------------- files


def test_utc_stamp_is_utc_whatever_the_local_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Asia/Kathmandu")  # +05:45: no whole-hour coincidence
    time.tzset()
    try:
        before = datetime.now(UTC).strftime("%Y%m%dT%H%M")
        stamp = utc_stamp()
        after = datetime.now(UTC).strftime("%Y%m%dT%H%M")
    finally:
        monkeypatch.undo()
        time.tzset()
    assert stamp[:13] in {before, after}


def test_the_temp_file_is_linked_from_the_target_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A temp file elsewhere could sit on another file system, where link() fails: atomicity
    # needs it beside the target.
    linked: list[tuple[str, str]] = []
    real_link = os.link

    def recording_link(src: str, dst: str) -> None:
        linked.append((str(src), str(dst)))
        real_link(src, dst)

    monkeypatch.setattr(os, "link", recording_link)
    write_text_new(tmp_path / "out" / "a.md", "x")
    ((src, dst),) = linked
    assert Path(src).parent == Path(dst).parent == tmp_path / "out"
    assert Path(src).name.startswith(".tmp-")  # hidden, never mistaken for a result


def test_utc_stamp_is_utc_and_sortable() -> None:
    moment = datetime(2026, 11, 29, 18, 45, 1, tzinfo=UTC)
    assert utc_stamp(moment) == "20261129T184501Z"
    assert re.fullmatch(r"\d{8}T\d{6}Z", utc_stamp())
    now = datetime.now(UTC)
    assert utc_stamp()[:8] in {
        now.strftime("%Y%m%d"),
        (now + timedelta(seconds=2)).strftime("%Y%m%d"),
    }


def test_write_json_new_writes_sorted_indented_utf8_and_refuses_to_overwrite(
    tmp_path: Path,
) -> None:
    path = tmp_path / "deep" / "er" / "doc.json"  # parents made on the way
    assert write_json_new(path, {"b": 1, "a": {"é": "ü"}}) == path
    assert path.read_bytes() == '{\n "a": {\n  "é": "ü"\n },\n "b": 1\n}\n'.encode()
    with pytest.raises(ResultsError) as caught:
        write_json_new(path, {"other": True})
    assert caught.value.message == f"{path}: already exists; results are never overwritten"
    assert list(caught.value.details) == ["remove it, or write to another results directory"]
    assert json.loads(path.read_text(encoding="utf-8")) == {"a": {"é": "ü"}, "b": 1}  # kept
    assert [p.name for p in path.parent.iterdir()] == ["doc.json"]  # no temp file left


def test_write_text_new_writes_exactly_the_text(tmp_path: Path) -> None:
    path = tmp_path / "report.md"
    write_text_new(path, "naïve text\nno newline at the end")
    assert path.read_bytes() == "naïve text\nno newline at the end".encode()
    with pytest.raises(ResultsError):
        write_text_new(path, "again")
    assert path.read_text(encoding="utf-8").startswith("naïve")
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]


def test_read_json_says_what_is_wrong_with_the_file(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match=r": no such file$"):
        read_json(tmp_path / "absent.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ResultsError, match=r"bad\.json: cannot be read as JSON \("):
        read_json(bad)
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    with pytest.raises(ResultsError, match=r"list\.json: expected a JSON object at the top level"):
        read_json(listed)
    good = tmp_path / "good.json"
    good.write_text('{"é": 1}', encoding="utf-8")
    assert read_json(good) == {"é": 1}
    with pytest.raises(ResultsError, match="the results file is a folder, not a file"):
        read_json(tmp_path)  # a directory: refused before it is opened (harness.process.inputs)


# --------------------------------------------------------------------------- comparisons


def test_a_comparison_directory_is_named_by_stamp_and_both_shas(tmp_path: Path) -> None:
    gold = make_gold()
    base = make_run(gold, ranks())
    cand = make_run(gold, ranks(), ref="feat/x", sha="2" * 40)
    comparison = compare(gold, base, cand, CompareSettings(resamples=200))
    first = save_comparison(tmp_path, comparison, (base, cand))
    second = save_comparison(tmp_path, comparison)
    assert re.fullmatch(r"\d{8}T\d{6}Z_11111111_22222222", first.name), first.name
    assert sorted(p.name for p in first.iterdir()) == SAVED_FILES
    names = sorted(p.name for p in second.iterdir())
    assert names == ["comparison.json", "report.html", "report.md"]
    assert second != first and first.parent == second.parent == tmp_path
    assert load_run(first / "baseline.json").ref == "main"
    assert load_run(first / "candidate.json").ref == "feat/x"
    assert load_comparison(first) == comparison
    assert load_comparison(first / "comparison.json") == comparison
    with pytest.raises(ResultsError, match="no such file"):
        load_comparison(tmp_path)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "comparison.json").write_text('{"schema": "harness-comparison"}')
    with pytest.raises(ResultsError, match=rf"^{re.escape(str(broken / 'comparison.json'))}: "):
        load_comparison(broken)


def test_a_record_keeps_the_texts_a_cutoff_can_read_and_redaction_drops_them(
    tmp_path: Path,
) -> None:
    from harness.results.records import bounded_texts

    ids = ("a", "b", "a", "c", "d")
    texts = ("ta", "tb", "ta again", "tc", "td")
    # limit 3: the first three unique ids a, b, c; the repeat of a keeps no text; d is past it.
    assert bounded_texts(ids, texts, 3) == ["ta", "tb", None, "tc"]
    assert bounded_texts(ids, texts, None) == ["ta", "tb", None, "tc", "td"]
    run = replace(full_run(), query_config={"limit": 2})
    result = replace(run.repeats[0].results[0], ids=ids, texts=texts)
    run = replace(run, repeats=(replace(run.repeats[0], results=(result,)), *run.repeats[1:]))
    header, data = encode_run(run)
    with np.load(io.BytesIO(data)) as npz:
        assert npz["texts_blob"].tobytes() == b"ta\ntb"  # only what a cutoff of 2 can read
    assert header["repeats"][0]["texts"] is True
    path = write_record(tmp_path / "r.json", run)
    assert load_run(path).repeats[0].results[0].texts == ("ta", "tb")
    redacted = write_record(tmp_path / "redacted.json", run, redact=True)
    assert load_run(redacted).repeats[0].results[0].texts is None
    assert read_json(redacted)["repeats"][0]["texts"] is False
    assert run_to_dict_v1(run)["repeats"][0]["results"][0]["texts"] == ["ta", "tb"]  # as before


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=examples(300), deadline=None)
@given(document=_JSON, levels=st.integers(0, 6))
def test_json_text_reads_back_equal_and_indents_only_the_top_levels(
    document: object, levels: int
) -> None:
    text = json_text(document, levels)
    assert json.loads(text) == document
    assert text.endswith("\n") and text.count("\n") >= 1
    one_line = json.dumps(document, sort_keys=True, ensure_ascii=False) + "\n"
    if levels == 0:
        assert text == one_line
    # Indented all the way down it is exactly json.dumps(indent=1): the layout is the same.
    assert json_text(document, 100) == (
        json.dumps(document, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    )


def test_a_boots_cost_and_the_builds_are_written_and_read_back(tmp_path: Path) -> None:
    usage = Usage(ready_s=1.5, peak_rss_bytes=200 << 20, cpu_s=0.25, queries=3, samples=17)
    run = full_run()
    run = replace(
        run,
        repeats=(replace(run.repeats[0], usage=usage), *run.repeats[1:]),
        build_seconds=12.5,
        build_bytes=4096,
    )
    header, _ = encode_run(run)
    assert header["build_seconds"] == 12.5 and header["build_bytes"] == 4096
    assert header["repeats"][0]["usage"] == {
        "ready_s": 1.5,
        "peak_rss_bytes": 200 << 20,
        "cpu_s": 0.25,
        "queries": 3,
        "samples": 17,
    }
    assert header["repeats"][1]["usage"] is None
    back = load_run(save_run(tmp_path, run))
    assert (back.build_seconds, back.build_bytes) == (12.5, 4096)
    assert back.repeats[0].usage == usage and back.repeats[1].usage is None
    assert usage.cpu_ms_per_query == 1000 * 0.25 / 3


def test_a_record_from_before_costs_were_measured_reads_them_as_none(tmp_path: Path) -> None:
    path = save_run(tmp_path, full_run())
    header = json.loads(path.read_text())
    old = {k: v for k, v in header.items() if k not in ("build_seconds", "build_bytes")}
    old["repeats"] = [{k: v for k, v in r.items() if k != "usage"} for r in header["repeats"]]
    path.write_text(json.dumps(old))
    back = load_run(path)
    assert back.build_seconds is None and back.build_bytes is None
    assert all(rep.usage is None for rep in back.repeats)

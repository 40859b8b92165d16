"""Run records of schema_version 2 (issue 28): a JSON header and the answers column by column in
the .npz beside it (harness.results.sidecar), held in memory as columns (harness.values.answers).

Promises, each with a test that fails when it is broken:
- any run reads back exactly as the JSON record of version 1 reads it (Hypothesis), and a
  compare of the columnar records is the compare of the JSON ones, value for value;
- a record's answers are read only when first used (a cache hit, a reuse lookup read none);
- an answers file that is missing, cut short, changed, another record's, or written by
  something else is a ResultsError naming it (exit 2 from the CLI, no traceback), never a
  wrong answer; one whose header was made to match is an error or the same answers, never a
  traceback (Hypothesis);
- saved again unchanged (a comparison's copy), the answers file is copied byte for byte.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_cli
from compare_support import buried, candidate, make_gold, make_run, ranks, with_scores
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from records_v1 import run_to_dict_v1

from harness.errors import ResultsError
from harness.report.saved import save_comparison
from harness.results.files import json_text, read_json, write_json_new
from harness.results.records import encode_run, load_run, run_from_dict, save_run
from harness.values.answers import Answers
from harness.values.types import ErrorKind, QueryResult, RefRun, Repeat, RunFailure
from harness.verdict.comparison import CompareSettings, Comparison
from harness.verdict.decide import compare
from harness.verdict.rankings import share_strings

# Ids and texts as a service may send them: any text, newlines and the non-ASCII included.
_ID = st.text(min_size=0, max_size=6) | st.sampled_from(["d1", "d2", "d\n3", "é", ""])
_TEXT = st.none() | st.text(max_size=8)


@st.composite
def _result(draw: st.DrawFn, query_id: str) -> QueryResult:
    ids = tuple(draw(st.lists(_ID, max_size=5)))
    error = draw(st.none() | st.sampled_from(list(ErrorKind)))
    scores = draw(
        st.none()
        | st.lists(st.floats(allow_nan=False), min_size=len(ids), max_size=len(ids)).map(tuple)
    )
    texts = draw(st.none() | st.lists(_TEXT, max_size=len(ids)).map(tuple))
    return QueryResult(
        query_id,
        ids=() if error else ids,
        scores=scores,
        status=draw(st.none() | st.integers(100, 599)),
        error=error,
        detail=draw(st.none() | st.text(max_size=10)) if error else None,
        latency_ns=draw(st.integers(0, 2**62)),
        texts=texts,
    )


@st.composite
def _runs(draw: st.DrawFn) -> RefRun:
    queries = draw(st.lists(st.sampled_from(["q1", "q2", "q\n3", "ü"]), max_size=5))
    repeats = []
    for index in range(draw(st.integers(0, 3))):
        results = tuple(draw(_result(q)) for q in queries)
        repeats.append(
            Repeat(
                index,
                results,
                positions=tuple(draw(st.integers(0, 1)) for _ in results),
                failure=draw(st.none() | st.just(RunFailure("boot", "exited 3"))),
                latency_only=draw(st.booleans()),
            )
        )
    limit = draw(st.none() | st.integers(1, 4))
    return RefRun(
        "main", "a" * 40, "c", "g", None, "0", {}, tuple(repeats),
        query_config={} if limit is None else {"limit": limit},
    )  # fmt: skip


@settings(max_examples=examples(150), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(run=_runs())
def test_a_record_reads_back_as_its_json_record_of_version_1_reads(
    tmp_path_factory: pytest.TempPathFactory, run: RefRun
) -> None:
    folder = tmp_path_factory.mktemp("r")
    path = save_run(folder, run)
    old = folder / "old.json"
    write_json_new(old, run_to_dict_v1(run))
    back, expected = load_run(path), load_run(old)
    assert back == replace(expected, record_path=str(path))
    for got, want in zip(back.repeats, expected.repeats, strict=True):
        assert list(got.results) == list(want.results)  # answer for answer, field for field
        assert got.errors == want.errors
    # Saved again from what was read, the same bytes (the answers copied, not re-encoded).
    again = save_run(folder / "again", back)
    assert again.read_bytes() == path.read_bytes()
    assert again.with_suffix(".npz").read_bytes() == path.with_suffix(".npz").read_bytes()


def _pair() -> tuple[Any, RefRun, RefRun]:
    gold = make_gold()
    base = with_scores(make_run(gold, ranks({"q03": 4, "q07": None})), gold, 5.0)
    errors = {(0, "q60"): ErrorKind.HTTP_STATUS, (2, "q61"): ErrorKind.TIMEOUT}
    cand = with_scores(candidate(gold, ranks(buried(*range(41, 53))), errors=errors), gold, 2.0)
    return gold, base, cand


def _without_paths(c: Comparison) -> Comparison:
    h = c.header
    header = replace(
        h,
        baseline=replace(h.baseline, record_path=None),
        candidate=replace(h.candidate, record_path=None),
    )
    return replace(c, header=header)


def test_a_compare_of_columnar_records_is_the_compare_of_the_json_ones(tmp_path: Path) -> None:
    gold, base, cand = _pair()
    s = CompareSettings(resamples=500, max_errors=5)
    new = [load_run(save_run(tmp_path / "new", run)) for run in (base, cand)]
    old = []
    for name, run in (("b.json", base), ("c.json", cand)):
        write_json_new(tmp_path / name, run_to_dict_v1(run))
        old.append(load_run(tmp_path / name))
    from_columns = compare(gold, *new, s)
    from_json = compare(gold, *old, s)
    assert from_columns.flips and from_columns.errors and from_columns.top_scores  # the control
    assert _without_paths(from_columns) == _without_paths(from_json)
    assert _without_paths(from_columns) == _without_paths(compare(gold, base, cand, s))


def test_a_record_is_read_only_when_its_answers_are_used(tmp_path: Path) -> None:
    gold, base, _ = _pair()
    path = save_run(tmp_path, base)
    run = load_run(path)
    first = run.repeats[0].answers
    assert not first.loaded and len(first) == len(gold.queries)  # counted by the header
    assert run.repeats[0].errors == 0 and first.all_texts is False and not first.loaded
    assert run.repeats[0].results[0].query_id == "q01"
    assert first.loaded


# --------------------------------------------------------------------------- damage


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    _, base, _ = _pair()
    return save_run(tmp_path / "results", base)


def _answers_error(record: Path) -> ResultsError:
    with pytest.raises(ResultsError) as caught:
        run = load_run(record)
        for rep in run.repeats:
            list(rep.results)
    return caught.value


def _exits_2_naming(record: Path, cwd: Path) -> str:
    done = run_cli("harness", "export", record, cwd=cwd)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert str(record.with_suffix(".npz")) in done.stderr
    return done.stderr


def test_a_missing_answers_file_is_an_error_naming_it(saved: Path, tmp_path: Path) -> None:
    saved.with_suffix(".npz").unlink()
    error = _answers_error(saved)
    assert error.message == f"{saved.with_suffix('.npz')}: missing: a run record's answers are " \
        "kept in the .npz file beside its .json"
    assert "copy the two files together" in error.details[0]
    _exits_2_naming(saved, tmp_path)


def test_a_cut_short_answers_file_is_an_error_naming_it(saved: Path, tmp_path: Path) -> None:
    answers = saved.with_suffix(".npz")
    data = answers.read_bytes()
    answers.write_bytes(data[: len(data) // 2])
    error = _answers_error(saved)
    assert f"{answers}: {len(data) // 2:,} bytes where its record says {len(data):,}" in str(error)
    assert "measure again" in error.details[0]
    _exits_2_naming(saved, tmp_path)


def test_a_changed_answers_file_is_an_error_naming_it(saved: Path, tmp_path: Path) -> None:
    answers = saved.with_suffix(".npz")
    data = bytearray(answers.read_bytes())
    data[len(data) // 2] ^= 0xFF  # the same size: found by its sha256 when read
    answers.write_bytes(bytes(data))
    run = load_run(saved)  # the header reads: the answers are read when used
    with pytest.raises(ResultsError, match="sha256 is not the one its record names"):
        list(run.repeats[0].results)
    assert "sha256" in _exits_2_naming(saved, tmp_path)


def test_another_records_answers_file_is_an_error(saved: Path, tmp_path: Path) -> None:
    _, _, cand = _pair()
    other = save_run(tmp_path / "other", cand)
    saved.with_suffix(".npz").unlink()
    other.with_suffix(".npz").rename(saved.with_suffix(".npz"))
    with pytest.raises(ResultsError, match=r"\.npz: .*(bytes where|sha256)"):
        run = load_run(saved)
        list(run.repeats[0].results)


def _resigned(record: Path, data: bytes) -> None:
    """Write `data` as the record's answers and make its header name them: a file that
    passes the integrity check, as if written by something else."""
    record.with_suffix(".npz").write_bytes(data)
    header = read_json(record)
    header["answers"] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    record.write_text(json_text(header))


@settings(max_examples=examples(60), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, 10_000), flips=st.lists(st.integers(0, 10_000), max_size=4))
def test_an_answers_file_that_passes_its_check_is_read_or_refused_never_a_traceback(
    tmp_path_factory: pytest.TempPathFactory, cut: int, flips: list[int]
) -> None:
    folder = tmp_path_factory.mktemp("d")
    run = RefRun("main", "a" * 40, "c", "g", None, "0", {}, (
        Repeat(0, (QueryResult("q1", ("d1", "d2"), (2.0, 1.0), 200, latency_ns=5),
                   QueryResult("q2", error=ErrorKind.TIMEOUT, detail="late", latency_ns=9))),
    ))  # fmt: skip
    path = save_run(folder, run)
    data = bytearray(path.with_suffix(".npz").read_bytes())
    for at in flips:
        data[at % len(data)] ^= 0x5A
    _resigned(path, bytes(data[: len(data) - cut % len(data)]))
    try:
        back = load_run(path)
        results = [list(rep.results) for rep in back.repeats]
    except ResultsError as error:
        assert str(path.with_suffix(".npz")) in error.message
        return
    assert len(results) == 1 and len(results[0]) == 2  # what the header says it holds


def test_answers_that_are_not_what_the_header_counts_are_an_error(saved: Path) -> None:
    header = read_json(saved)
    header["repeats"][0]["errors"] = 1  # the answers file says 0
    saved.write_text(json_text(header))
    with pytest.raises(ResultsError, match="errored answers of each repeat are not as many"):
        list(load_run(saved).repeats[0].results)


def test_a_damaged_reused_record_is_an_error_not_a_wrong_verdict(tmp_path: Path) -> None:
    gold, base, cand = _pair()
    runs = [load_run(save_run(tmp_path, run)) for run in (base, cand)]
    answers = Path(str(runs[1].record_path)).with_suffix(".npz")
    data = bytearray(answers.read_bytes())
    data[-100] ^= 0x01
    answers.write_bytes(bytes(data))
    with pytest.raises(ResultsError, match="sha256"):
        compare(gold, *runs, CompareSettings(resamples=200))


# --------------------------------------------------------------------------- copies


def test_a_comparison_copies_the_answers_of_its_records_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gold, base, cand = _pair()
    runs = [load_run(save_run(tmp_path, run)) for run in (base, cand)]
    comparison = compare(gold, *runs, CompareSettings(resamples=200, max_errors=5))

    def no_encoding(_: object) -> bytes:
        raise AssertionError("answers read from a record are copied, not encoded again")

    with monkeypatch.context() as patched:
        patched.setattr("harness.results.records.encode", no_encoding)
        out = save_comparison(tmp_path, comparison, runs)
    for side, run in zip(("baseline", "candidate"), runs, strict=True):
        record = Path(str(run.record_path))
        assert (out / f"{side}.json").read_bytes() == record.read_bytes()
        assert (out / f"{side}.npz").read_bytes() == record.with_suffix(".npz").read_bytes()
    # A run cut to fewer repeats (a reused record, --repeats lower) is encoded again.
    cut = replace(runs[0], repeats=runs[0].repeats[:1])
    header, data = encode_run(cut)
    assert header["repeats"] == read_json(Path(str(runs[0].record_path)))["repeats"][:1]
    assert run_from_dict(header, "x.json", answers=_write(tmp_path / "x.npz", data)) == replace(
        cut, record_path="x.json"
    )


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_answers_made_in_memory_and_read_back_are_equal_columns() -> None:
    results = (
        QueryResult("q1", ("a", "b", "a"), (3.0, 2.0, 1.0), 200, latency_ns=7, texts=("x", None)),
        QueryResult("q2", error=ErrorKind.NOT_JSON, status=200, detail="<html>", latency_ns=3),
    )
    answers = Answers.of(results)
    assert list(answers) == list(results) and answers == results and results == answers
    assert answers.errors == 1 and answers.where("q2") == 1 and answers.answered() == {"q1"}
    assert answers.rankings() == [("a", "b", "a"), ()]
    assert json.loads(json.dumps(answers.latencies().tolist())) == [7]


def test_the_cli_reads_a_record_of_version_1_as_it_reads_a_columnar_one(tmp_path: Path) -> None:
    _, base, _ = _pair()
    new = save_run(tmp_path / "results", base)
    old = tmp_path / "results" / "runs" / "20200101T000000Z_main_11111111_abcdef.json"
    write_json_new(old, run_to_dict_v1(base))  # as harness wrote it before issue 28
    for args in (("export",), ("export", "--format", "csv")):
        from_new = run_cli("harness", *args, new, cwd=tmp_path)
        from_old = run_cli("harness", *args, old, cwd=tmp_path)
        assert from_new.returncode == from_old.returncode == 0, from_old.stderr
        assert from_new.stdout == from_old.stdout and from_new.stdout



def test_two_records_read_together_hold_an_id_they_share_once(tmp_path: Path) -> None:
    # What `share_strings` promises a compare: each id both records returned at the same place
    # of the same query is one string object (memory at 100k queries), every answer unchanged.
    def run(sha: str, second: str) -> RefRun:
        results = (QueryResult("q1", ("d1", second, "d3"), status=200, latency_ns=5),
                   QueryResult("q2", ("d4",), status=200, latency_ns=6))  # fmt: skip
        return RefRun(sha, sha * 40, "c", "g" * 64, None, "t", {}, (Repeat(0, results),))

    made = [run("a", "d2"), run("b", "x2")]
    paths = [save_run(tmp_path / str(i), r) for i, r in enumerate(made)]
    a, b = (load_run(p).repeats[0].answers for p in paths)
    share_strings([a, b])
    assert [list(x) for x in (a, b)] == [list(r.repeats[0].answers) for r in made]
    (a1, a2), (b1, b2) = (a[0].ids, a[1].ids), (b[0].ids, b[1].ids)
    assert b1[0] is a1[0] and b1[2] is a1[2] and b2[0] is a2[0]
    assert b1[1] == "x2" and a1[1] == "d2"
    # Read apart, the two tables hold two objects of each id.
    c, d = (load_run(p).repeats[0].answers for p in paths)
    assert c[0].ids[0] == d[0].ids[0] and c[0].ids[0] is not d[0].ids[0]

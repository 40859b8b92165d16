"""harness.score.runfile: TREC and JSONL run files, trec_eval's order, every malformed line
reported."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
import pytrec_eval
from hypothesis import given
from hypothesis import strategies as st

from harness.errors import ResultsError
from harness.score.runfile import load_run, parse_run, trec_order


def write(tmp_path: Path, text: str, name: str = "run.txt") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- TREC


def test_trec_is_sorted_by_score_then_docid_descending_and_rank_is_ignored(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "q1 Q0 a 1 1.0 t\n"
        "q1 Q0 c 2 2.5 t\n"
        "q1 Q0 b 3 1.0 t\n"
        "q2 Q0 z 9 -3 t\n"
        "\n"
        "q1 Q0 d 4 1.0 other\n",
    )
    run = load_run(path)
    assert run.format == "trec" and run.source == str(path) and len(run) == 2
    # c first (2.5); then the 1.0 tie broken by docid descending: d, b, a
    assert run.rankings == {"q1": ("c", "d", "b", "a"), "q2": ("z",)}
    assert run.scores == {"q1": (2.5, 1.0, 1.0, 1.0), "q2": (-3.0,)}


def test_trec_order_matches_pytrec_eval_on_ties() -> None:
    # Oracle: pytrec_eval's reciprocal rank of each doc in turn reveals the order it used.
    scored = {"10": 1.0, "9": 1.0, "b": 2.0, "B": 2.0, "a": 1.0, "é": 1.0, "2": 0.5}
    ordered = [doc for doc, _ in trec_order(scored.items())]
    for doc in scored:
        rr = pytrec_eval.RelevanceEvaluator({"q": {doc: 1}}, {"recip_rank"}).evaluate({"q": scored})
        assert rr["q"]["recip_rank"] == 1 / (ordered.index(doc) + 1), doc
    assert ordered == ["b", "B", "é", "a", "9", "10", "2"]


@given(st.dictionaries(st.text("ab1Z", min_size=1, max_size=3), st.sampled_from([0.0, 0.5, 1.0])))
def test_trec_order_is_score_then_docid_descending(scored: dict[str, float]) -> None:
    ordered = trec_order(scored.items())
    assert sorted(ordered) == sorted(scored.items())
    for (d1, s1), (d2, s2) in itertools.pairwise(ordered):
        assert s1 > s2 or (s1 == s2 and d1 > d2)


def test_trec_problems_are_all_listed_with_path_line_and_field(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "q1 Q0 a 1 1.0 t\n"
        "q1 Q0 b 2 t\n"  # 5 columns
        "q1 Q0 c 3 high t\n"  # not a number
        "q1 Q0 a 4 0.5 t\n"  # a again
        "q2 Q0 x 1 inf t\n"  # not finite
        "q2 Q0 y 1 0.1 t extra\n",  # 7 columns
    )
    with pytest.raises(ResultsError) as info:
        load_run(path)
    err = info.value
    assert err.message == f"5 lines are malformed in TREC run file {path}"
    assert err.details == (
        f"  {path}:2: columns: expected 6 columns, found 5",
        f"  {path}:3: score: 'high' is not a finite number",
        f"  {path}:4: docid: a is listed twice for query q1",
        f"  {path}:5: score: 'inf' is not a finite number",
        f"  {path}:6: columns: expected 6 columns, found 7",
        "a TREC run line is: qid Q0 docid rank score tag",
    )


def test_long_problem_lists_are_capped(tmp_path: Path) -> None:
    path = write(tmp_path, "q1 Q0 a\n" * 60)
    with pytest.raises(ResultsError, match="60 lines are malformed") as info:
        load_run(path)
    assert len(info.value.details) == 50 + 2
    assert info.value.details[-2] == "  ... and 10 more problems"


# --------------------------------------------------------------------------- JSONL


def test_jsonl_keeps_list_order_duplicates_and_scores(tmp_path: Path) -> None:
    lines = [
        {"id": "q1", "ranking": ["b", "a", "b"], "scores": [3, 2.5, 1]},
        {"id": 7, "ranking": [12, "x"], "scores": [0.1, 0.0]},
        {"id": "q3", "ranking": [], "scores": []},
    ]
    path = write(tmp_path, "\n" + "\n".join(json.dumps(x) for x in lines) + "\n\n", "run.jsonl")
    run = load_run(path)
    assert run.format == "jsonl"
    assert run.rankings == {"q1": ("b", "a", "b"), "7": ("12", "x"), "q3": ()}
    assert run.scores == {"q1": (3.0, 2.5, 1.0), "7": (0.1, 0.0), "q3": ()}


def test_jsonl_without_scores_has_none() -> None:
    run = parse_run('{"id": "q1", "ranking": ["a"]}\n{"id": "q2", "ranking": []}\n')
    assert run.scores is None and run.rankings == {"q1": ("a",), "q2": ()}


def test_jsonl_problems_are_all_listed(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '{"id": "q1", "ranking": ["a"], "scores": [1]}\n'
        '{"id": "q1", "ranking": ["b"], "scores": [1]}\n'  # duplicate qid
        "{not json\n"
        '["a list"]\n'
        '{"ranking": ["a"], "scores": [1]}\n'  # no id
        '{"id": "q4", "ranking": "a b", "scores": [1]}\n'  # ranking not a list
        '{"id": "q5", "ranking": ["a", null, 1.5], "scores": [1, 2, 3]}\n'
        '{"id": "q6", "ranking": ["a"], "scores": [1, 2]}\n'
        '{"id": "q7", "ranking": ["a"], "scores": ["1"]}\n'
        '{"id": "q8", "ranking": ["a"], "score": [1]}\n'  # typo: no scores, unknown key
        '{"id": true, "ranking": [], "scores": []}\n',
        "run.jsonl",
    )
    with pytest.raises(ResultsError) as info:
        load_run(path)
    err = info.value
    assert err.message == f"10 lines are malformed in JSONL run file {path}"  # 13 problems
    details = [d.replace(str(path), "RUN") for d in err.details]
    assert details == [
        "  RUN:2: id: query q1 already given on line 1",
        "  RUN:3: json: not JSON (Expecting property name enclosed in double quotes; column 2)",
        "  RUN:4: json: expected a JSON object, found list",
        "  RUN:5: id: missing, or not a non-empty string or integer",
        "  RUN:6: ranking: missing, or not a list of doc ids",
        "  RUN:6: scores: 1 scores for 0 ids",
        "  RUN:7: ranking[1]: None is not a non-empty string or integer",
        "  RUN:7: ranking[2]: 1.5 is not a non-empty string or integer",
        "  RUN:8: scores: 2 scores for 1 ids",
        "  RUN:9: scores: not a list of finite numbers",
        "  RUN:10: score: unknown key (known: id, ranking, scores)",
        "  RUN:10: scores: no scores here but line 1 has them: give them on every line or on none",
        "  RUN:11: id: missing, or not a non-empty string or integer",
        'a JSONL run line is: {"id": qid, "ranking": [docid, ...], "scores": [number, ...]}',
    ]


def test_jsonl_rejects_non_finite_scores() -> None:
    with pytest.raises(ResultsError, match="1 line is malformed") as info:
        parse_run('{"id": "q", "ranking": ["a"], "scores": [NaN]}', "r.jsonl")
    assert info.value.details[0] == "  r.jsonl:1: scores: not a list of finite numbers"


# --------------------------------------------------------------------------- detection, I/O


def test_format_is_detected_by_the_first_non_blank_line() -> None:
    assert parse_run('\n  \n  {"id": "q", "ranking": []}').format == "jsonl"
    assert parse_run("\n\nq Q0 d 1 1 t").format == "trec"
    # A TREC line in a JSONL file is a JSON problem, not silently a second format.
    with pytest.raises(ResultsError, match="JSONL run file"):
        parse_run('{"id": "q", "ranking": []}\nq Q0 d 1 1 t\n')


def test_empty_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match="has no results"):
        load_run(write(tmp_path, "\n \n"))


def test_missing_and_undecodable_files(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match="does not exist") as info:
        load_run(tmp_path / "nope.trec")
    assert info.value.details == ("check the --run path",)
    path = tmp_path / "latin1.trec"
    path.write_bytes("q Q0 caf\xe9 1 1 t\n".encode("latin-1"))
    with pytest.raises(ResultsError, match="is not UTF-8 text"):
        load_run(path)
    with pytest.raises(ResultsError, match="the run file is a folder, not a file"):
        load_run(tmp_path)  # a directory: refused before it is opened (harness.process.inputs)


def test_run_is_frozen() -> None:
    run = parse_run("q Q0 d 1 1 t")
    with pytest.raises(AttributeError):
        run.source = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        run.rankings["q2"] = ()  # type: ignore[index]


def test_a_run_read_in_the_background_is_the_same_run_and_raises_the_same_error(
    tmp_path: Path,
) -> None:
    from harness.score.runfile import start_loading_run

    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 a 1 2 t\nq1 Q0 b 2 1 t\nq2 Q0 c 1 5 t\n")
    found, expected = start_loading_run(path)(), load_run(path)
    assert dict(found.rankings) == dict(expected.rankings) == {"q1": ("a", "b"), "q2": ("c",)}
    assert found.format == "trec" and found.source == str(path)
    with pytest.raises(ResultsError) as info:
        start_loading_run(tmp_path / "absent.trec")()
    assert info.value.message == f"run file {tmp_path / 'absent.trec'} does not exist"

"""Paths the user gives that cannot be read or written, and inputs a sweep of bad files found
breaking the rule (a traceback, the wrong thing named, a temp file left behind): each is now
`harness: error: ...` naming the file or option and the fix, exit status 2, nothing half-written.

The suite runs as root, which reads any file whatever its mode: a permission refused is simulated
where the harness meets it (the corpus opened, a path stat'ed, a rename), with the OSError the
kernel gives an unprivileged user.  The CLI runs in this process (`harness.cli.main.main`).
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest

import harness.gold.corpus
from harness.cli.main import main
from harness.errors import GoldError
from harness.gold import load_gold
from harness.gold.reading import MAX_GRADE
from harness.score.judged import JudgedRanks
from harness.score.metrics import ndcg_burges

DENIED = "Permission denied"


def _gold(folder: Path, n: int = 12, grade: int = 1) -> Path:
    path = folder / "gold.jsonl"
    rows = [{"id": f"q{i}", "query": f"question {i}", "relevant": {f"d{i}": grade}}
            for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _corpus(folder: Path, n: int = 12) -> Path:
    path = folder / "corpus.jsonl"
    rows = [{"_id": f"d{i}", "title": "", "text": f"document {i}"} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _run(path: Path, n: int = 12) -> Path:
    path.write_text("".join(f"q{i} Q0 d{i} 1 2.0 sys\nq{i} Q0 x{i} 2 1.0 sys\n" for i in range(n)))
    return path


def _harness(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str]:
    status = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return status, err


def test_an_unreadable_corpus_is_named_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    gold, corpus = _gold(tmp_path), _corpus(tmp_path)

    def refused(file: object, *args: object, **kwargs: object) -> object:
        raise PermissionError(errno.EACCES, DENIED, str(file))

    monkeypatch.setattr(harness.gold.corpus, "open_input", refused)  # root reads any file
    status, err = _harness(capsys, "gold", "check", gold, "--corpus", corpus)
    assert status == 2
    assert f"{corpus}: cannot read the corpus ({DENIED})" in err
    assert "enter every folder above it" in err


def test_a_gold_set_in_a_folder_this_user_cannot_enter_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    gold = _gold(tmp_path)
    real_exists = Path.exists

    def exists(self: Path, *args: object, **kwargs: object) -> bool:
        if self == gold:
            raise PermissionError(errno.EACCES, DENIED, str(self))
        return real_exists(self)

    monkeypatch.setattr(Path, "exists", exists)
    with pytest.raises(GoldError, match="cannot read: Permission denied; check that this user"):
        load_gold(gold)


def test_any_unreachable_path_is_an_error_naming_it_not_a_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.cli.main as cli

    def command(name: str) -> object:
        def run(args: object) -> int:
            raise PermissionError(errno.EACCES, DENIED, "/closed/gold.jsonl")

        return run

    monkeypatch.setattr(cli, "command", command)
    status, err = _harness(capsys, "gold", "stats", "/closed/gold.jsonl")
    assert status == 2
    assert "harness: error: /closed/gold.jsonl: Permission denied" in err
    assert "enter every folder above it" in err


def test_an_os_error_that_is_no_path_of_the_users_still_raises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import harness.cli.main as cli

    def command(name: str) -> object:
        def run(args: object) -> int:
            raise ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")

        return run

    monkeypatch.setattr(cli, "command", command)
    with pytest.raises(ConnectionResetError):
        main(["gold", "stats", "whatever.jsonl"])


def test_output_into_a_folder_is_refused_even_with_force_and_leaves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold, base, cand = _gold(tmp_path), _run(tmp_path / "a.run"), _run(tmp_path / "b.run")
    out = tmp_path / "out"
    out.mkdir()
    before = set(tmp_path.iterdir())
    status, err = _harness(
        capsys, "compare-runs", base, cand, "--gold", gold, "-o", out, "--force"
    )
    assert status == 2
    assert f"--output {out}: is a folder" in err and "-o FILE" in err
    assert set(tmp_path.iterdir()) == before  # no .out.<hex>.tmp beside it
    assert not any(out.iterdir())


def test_an_output_whose_rename_fails_leaves_no_temp_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    gold, base, cand = _gold(tmp_path), _run(tmp_path / "a.run"), _run(tmp_path / "b.run")
    before = set(tmp_path.iterdir())

    def replace(src: object, dst: object) -> None:
        raise PermissionError(errno.EACCES, DENIED, str(src), None, str(dst))

    monkeypatch.setattr(os, "replace", replace)
    status, err = _harness(
        capsys, "compare-runs", base, cand, "--gold", gold, "-o", tmp_path / "report.txt"
    )
    assert status == 2
    assert f"--output {tmp_path / 'report.txt'}: cannot be written ({DENIED})" in err
    assert set(tmp_path.iterdir()) == before


def test_binary_garbage_as_a_gold_set_says_it_is_not_utf8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(bytes(np.random.default_rng(0).integers(128, 256, 400, dtype=np.uint8)))
    status, err = _harness(capsys, "gold", "check", garbage, "--corpus", _corpus(tmp_path))
    assert status == 2
    assert f"{garbage}:1: not UTF-8 text" in err
    assert "queries file" not in err  # not taken for TREC qrels wanting their topics


def test_a_malformed_corpus_is_blamed_not_the_gold_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(b'{"_id": "d0", "text": "x"}\n\xff\xfe not text\n')
    status, err = _harness(
        capsys, "gold", "convert", _gold(tmp_path), "--to", "native", "--out",
        tmp_path / "copy.jsonl", "--corpus", corpus,
    )
    assert status == 2
    assert f"{corpus}: the corpus is malformed" in err
    assert f"{corpus}:2: not UTF-8 text" in err and "codec" not in err
    assert not (tmp_path / "copy.jsonl").exists()


def test_a_native_conversion_into_a_folder_is_refused_before_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "out").mkdir()
    for extra in ((), ("--force",)):
        status, err = _harness(
            capsys, "gold", "convert", _gold(tmp_path), "--to", "native", "--out",
            tmp_path / "out", *extra,
        )
        assert status == 2
        assert "is a folder, and a native gold set is one file" in err


def test_outputs_are_made_with_the_users_umask_not_0700(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = os.umask(0o022)
    try:
        status, _ = _harness(
            capsys, "gold", "convert", _gold(tmp_path), "--to", "beir", "--out", tmp_path / "beir"
        )
        assert status == 0
        from harness.results.files import new_directory_atomic

        with new_directory_atomic(tmp_path / "results", "stem") as tmp:
            (tmp / "f").write_text("x")
    finally:
        os.umask(old)
    for folder in (tmp_path / "beir", tmp_path / "results" / "stem"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o755, folder


def test_a_config_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    from harness.config.reader import read_text

    path = tmp_path / "harness.toml"
    path.write_bytes(b"\xef\xbb\xbf[compare]\nrepeats = 3\n")
    assert read_text(path).startswith("[compare]")


def test_a_grade_past_a_c_int_is_refused_in_every_format(tmp_path: Path) -> None:
    big = MAX_GRADE + 1
    native = _gold(tmp_path, grade=big)
    with pytest.raises(GoldError) as caught:
        load_gold(native)
    assert f"at most {MAX_GRADE}" in str(caught.value)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(f"q1 0 d1 {10**400}\n")
    with pytest.raises(GoldError) as caught:
        load_gold(qrels, texts=False)
    assert f"at most {MAX_GRADE}" in str(caught.value)
    assert load_gold(_gold(tmp_path, grade=MAX_GRADE)).queries[0].relevant == {"d0": MAX_GRADE}


@pytest.mark.parametrize("top", [3, 1100, MAX_GRADE])
def test_ndcg_burges_is_finite_for_any_grade_and_unchanged_for_small_ones(top: int) -> None:
    gains = np.array([[top - 1.0, 0.0, top]])
    ideal = np.array([[top, top - 1.0, 0.0]])
    ranks = JudgedRanks(gains, gains > 0, np.array([2.0]), ideal, np.array([True]))
    value = float(ndcg_burges(ranks, 3)[0])
    assert np.isfinite(value) and 0 < value < 1
    # At any grade the same ratio: 2**top dominates, so (2**(top-1) + 2**top/2) / (2**top + ...)
    expect = ((2.0 ** -1 - 2.0**-top) + (1 - 2.0**-top) / 2) / (
        (1 - 2.0**-top) + (2.0 ** -1 - 2.0**-top) / np.log2(3)
    )
    assert value == pytest.approx(expect, rel=1e-12)
    if top == 3:  # below the shift, exactly trec_eval's 2**g - 1
        plain = ((2.0**2 - 1) + (2.0**3 - 1) / 2) / ((2.0**3 - 1) + (2.0**2 - 1) / np.log2(3))
        assert value == plain


def test_a_run_file_not_utf8_names_its_line(tmp_path: Path) -> None:
    from harness.errors import ResultsError
    from harness.score.runfile import load_run

    run = tmp_path / "a.run"
    run.write_bytes(b"q1 Q0 d1 1 2.0 sys\nq1 Q0 d\xff2 2 1.0 sys\n")
    with pytest.raises(ResultsError) as caught:
        load_run(run)
    assert "line 2, byte 26: invalid start byte" in str(caught.value)


def test_an_answers_file_not_utf8_names_its_line_and_the_fix(tmp_path: Path) -> None:
    from harness.gold.grades import read_grades

    answers = tmp_path / "answers.jsonl"
    answers.write_bytes(b'{"query_id": "q1", "correct": true}\n\xff\n')
    with pytest.raises(GoldError, match=r"answers.jsonl:2: not UTF-8 text \(byte 36\); save"):
        read_grades(answers)


def test_an_empty_gold_file_says_so_in_any_format(tmp_path: Path) -> None:
    empty = tmp_path / "qrels.txt"
    empty.write_text("")
    with pytest.raises(GoldError) as caught:
        load_gold(empty)
    assert "the file is empty" in str(caught.value) and "after the header" not in str(caught.value)


@pytest.mark.parametrize("command", ["metrics", "compare-runs"])
def test_rel_level_0_is_refused_as_an_option_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    # trec_eval's -l0 counts grade 0 as relevant; here grade 0 is judged not relevant, and 0
    # passed the option check to fail deep in scoring (a ValueError, exit 1: "regressed" to CI).
    gold, run = _gold(tmp_path), _run(tmp_path / "a.run")
    runs = ["--run", run] if command == "metrics" else [run, run]
    status, err = _harness(capsys, command, *runs, "--gold", gold, "--rel-level", "0")
    assert status == 2
    assert "--rel-level 0: must be 1 or more" in err and "grade 0 is always judged" in err


def test_an_answers_file_error_gives_the_answers_files_advice(tmp_path: Path) -> None:
    from harness.gold.grades import read_grades

    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"query_id": "q1", "correct": "yes"}\n')
    with pytest.raises(GoldError) as caught:
        read_grades(answers)
    said = str(caught.value)
    assert "docs/reports.md" in said and "gold check" not in said  # check reads no answers


def test_answers_k_without_answer_files_is_a_usage_error(tmp_path: Path) -> None:
    # It was accepted and ignored: a user who set it expected a 2x2.
    from harness.compare.answer_grades import answer_grades
    from harness.errors import HarnessError

    gold = load_gold(_gold(tmp_path))
    with pytest.raises(HarnessError, match="--answers-k sets the 2x2's cutoff"):
        answer_grades(None, None, 2, gold)
    assert answer_grades(None, None, None, gold) is None

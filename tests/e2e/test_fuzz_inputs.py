"""Every input a user can give is an answer, never a traceback nor a hang: random files, special
files (a FIFO, a device, a folder, a sparse file past its cap) and deployment URLs to every
command (Hypothesis, each case under a time limit), and each input that once raised one
(issue 23) as a regression: exit 2, the message naming file:line, field or option and the fix,
and nothing created on disk (no results directory, no checkout) before validation passes.

scripts/fuzz_inputs.py runs the same strategies (tests/fuzz_support.py) for a fixed time.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import run_cli
from fuzz_support import (
    CONFIG,
    CORPUS,
    GOLD,
    NO_REF,
    SPECIAL_URLS,
    SPECIALS,
    Case,
    Workspace,
    case_strategy,
    run_case,
)
from fuzz_support import toml_text as _toml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return Workspace(tmp_path_factory.mktemp("fuzz") / "ws").create()


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache of this test's own: `recover()` and any checkout would look there."""
    path = tmp_path / "cache"
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(path))
    return path


# --------------------------------------------------------------------------- random inputs

@pytest.mark.slow  # 300 random cases: fuzzing, not the inner loop
def test_random_files_to_every_command_exit_0_to_4_without_a_traceback(
        workspace: Workspace) -> None:
    @settings(max_examples=300, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(case_strategy(workspace))
    def one(case: Case) -> None:
        outcome = run_case(case, workspace)
        assert not outcome.bad, case.describe() + "\n" + (outcome.traceback or outcome.stderr)

    one()


@pytest.mark.parametrize("command", [
    ("gold", "check", "{ws}/gold.jsonl", "--corpus", "{ws}/corpus.jsonl"),
    ("compare", "--baseline", NO_REF, "--candidate", "main", "--config", "{ws}/harness.toml",
     "--results", "{ws}/results"),
    ("report", "{ws}/record.json"),
], ids=["gold-check", "compare", "report"])
def test_random_bytes_through_the_installed_script_give_no_traceback(
        workspace: Workspace, tmp_path: Path, command: tuple[str, ...]) -> None:
    """The console script as a user runs it, on a few fixed random byte strings (each file
    the command reads): a subprocess adds what in-process cannot see (stdout encoding, exit)."""
    import random

    rng = random.Random(23)
    for _ in range(3):
        workspace.reset()
        for name in ("gold.jsonl", "corpus.jsonl", "harness.toml", "record.json"):
            (workspace.root / name).write_bytes(bytes(rng.randrange(256) for _ in range(120)))
        done = run_cli("harness", *(a.replace("{ws}", str(workspace.root)) for a in command),
                       cwd=tmp_path, env={"HARNESS_CACHE_DIR": str(tmp_path / "cache")})
        assert done.returncode in (0, 1, 2, 3, 4), done.stderr
        assert "Traceback" not in done.stderr
        assert not (workspace.root / "results").exists()
    workspace.reset()


def _readers() -> dict[str, tuple[str, ...]]:
    """Each input file of the workspace, with one command that reads it."""
    from fuzz_support import _commands

    found: dict[str, tuple[str, ...]] = {}
    for readable, argv in _commands():
        for name in readable:
            found.setdefault(name, argv)
    return found


@pytest.mark.slow  # each input as each special file: 60 subprocesses
@pytest.mark.parametrize("name", sorted(_readers()))
def test_each_special_file_in_place_of_each_input_is_refused_in_time(
        workspace: Workspace, name: str) -> None:
    argv = _readers()[name]
    for what in SPECIALS:
        if what == "long line" and name != "corpus.jsonl":
            continue
        outcome = run_case(Case((), argv, ((name, what),)), workspace)
        assert not outcome.bad, f"{name} as {what}: {outcome.stderr}"
        assert outcome.status in (0, 2), f"{name} as {what}: {outcome.stderr}"


def test_each_special_url_is_refused_in_time(workspace: Workspace) -> None:
    for url in SPECIAL_URLS:
        argv = ("compare", "--baseline-url", url, "--candidate-url", "http://127.0.0.1:9",
                "--config", "{ws}/no-such-config.toml", "-q")
        outcome = run_case(Case((), argv), workspace, seconds=30)
        assert not outcome.bad, f"{url!r}: {outcome.stderr}"
        assert outcome.status == 2, f"{url!r}: {outcome.stderr}"


def test_a_case_that_blocks_counts_as_a_hang(
        workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    # The fuzzer's own promise: with the regular-file check gone, a FIFO given as the gold set
    # blocks open(2) forever; the case is stopped at its limit and reported as hung.
    import os

    from harness.process import inputs

    monkeypatch.setattr(inputs, "_refuse", lambda *args: None)
    monkeypatch.setattr(inputs.os, "O_NONBLOCK", 0)
    workspace.reset()
    (workspace.root / "gold.jsonl").unlink()
    os.mkfifo(workspace.root / "gold.jsonl")
    from fuzz_support import _in_process

    try:
        outcome = _in_process(["gold", "check", str(workspace.root / "gold.jsonl")], workspace,
                              seconds=1)
    finally:
        workspace.reset()
    assert outcome.hung and outcome.bad, outcome


# --------------------------------------------------------------------------- each case of issue 23

def _lines(rows: list[dict[str, object]]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def _harness(workspace: Workspace, capsys: pytest.CaptureFixture[str],
             *argv: str) -> tuple[int, str]:
    from harness.cli.main import main

    argv = tuple(a.replace("{ws}", str(workspace.root)) for a in argv)
    try:
        status = main(list(argv))
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else 2
    return status, capsys.readouterr().err


def _refused(workspace: Workspace, cache: Path, capsys: pytest.CaptureFixture[str],
             files: dict[str, str | bytes], argv: tuple[str, ...], *fragments: str) -> str:
    """Write `files` over the valid workspace, run `argv`: exit 2, every fragment in stderr, no
    traceback, no results directory, nothing checked out (no worktree in the cache)."""
    workspace.reset()
    for name, content in files.items():
        data = content.encode() if isinstance(content, str) else content
        (workspace.root / name).write_bytes(data)
    before = sorted(p.name for p in workspace.root.iterdir())
    status, err = _harness(workspace, capsys, *argv)
    assert status == 2, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment.replace("{ws}", str(workspace.root)) in err, err
    assert sorted(p.name for p in workspace.root.iterdir()) == before, "a file or directory made"
    assert not (cache / "worktrees").exists()
    workspace.reset()
    return err


COMPARE = ("compare", "--baseline", "main", "--candidate", "main", "--config",
           "{ws}/harness.toml", "--results", "{ws}/results", "-q")
GOLD_CHECK = ("gold", "check", "{ws}/gold.jsonl")
SURROGATE_GOLD = _lines([*GOLD[:1], {**GOLD[1], "query": "roll back \ud800 now"}, *GOLD[2:]])
NESTED_GOLD = _lines(GOLD[:2]) + "[" * 100_000 + "\n" + _lines(GOLD[2:])


@pytest.mark.parametrize("argv", [
    GOLD_CHECK,
    ("gold", "stats", "{ws}/gold.jsonl"),
    ("gold", "convert", "{ws}/gold.jsonl", "--to", "trec", "--out", "{ws}/out"),
    COMPARE,
], ids=["check", "stats", "convert-trec", "compare"])
def test_a_lone_surrogate_in_a_query_is_a_gold_error_at_its_line(
        workspace: Workspace, cache: Path, capsys: pytest.CaptureFixture[str],
        argv: tuple[str, ...]) -> None:
    _refused(workspace, cache, capsys, {"gold.jsonl": SURROGATE_GOLD}, argv,
             "{ws}/gold.jsonl:2: ", "lone surrogate")


def test_a_lone_surrogate_in_a_topics_or_corpus_line_is_named_at_its_line(
        workspace: Workspace, cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    topics = '{"_id": "q1", "text": "roll back"}\n{"_id": "q2", "text": "x \\udc00"}\n'
    _refused(workspace, cache, capsys, {"topics.tsv": topics},
             ("gold", "check", "{ws}/qrels.txt", "--queries", "{ws}/topics.tsv"),
             "{ws}/topics.tsv:2: ", "lone surrogate")
    corpus = _lines([CORPUS[0], {**CORPUS[1], "text": "\ud800"}, CORPUS[2]])
    _refused(workspace, cache, capsys, {"corpus.jsonl": corpus},
             (*GOLD_CHECK, "--corpus", "{ws}/corpus.jsonl"), "{ws}/corpus.jsonl:2: ",
             "lone surrogate")


@pytest.mark.parametrize("argv", [GOLD_CHECK, COMPARE], ids=["check", "compare"])
def test_100000_nested_brackets_are_a_gold_error_at_their_line(
        workspace: Workspace, cache: Path, capsys: pytest.CaptureFixture[str],
        argv: tuple[str, ...]) -> None:
    _refused(workspace, cache, capsys, {"gold.jsonl": NESTED_GOLD}, argv,
             "{ws}/gold.jsonl:3: ", "nested too deeply")


def test_nested_brackets_in_a_corpus_line_are_named_at_their_line(
        workspace: Workspace, cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = _lines(CORPUS[:1]) + '{"id": "d9", "text": ' + "[" * 100_000 + "\n"
    _refused(workspace, cache, capsys, {"corpus.jsonl": corpus},
             (*GOLD_CHECK, "--corpus", "{ws}/corpus.jsonl"), "{ws}/corpus.jsonl:2: ",
             "nested too deeply")


def _config(**sections: dict[str, object]) -> str:
    doc = {name: dict(table) for name, table in CONFIG.items()}
    for name, table in sections.items():
        doc.setdefault(name, {}).update(table)
    return _toml(doc)


@pytest.mark.parametrize(("section", "key", "value", "fragment"), [
    ("service", "start", "python3 svc.py --port {port}\x00", "NUL byte"),
    ("service", "env", {"A": "x\x00y"}, "NUL byte"),
    ("service", "ready", "/health\x00", "NUL byte"),
    ("gold", "path", "gold.jsonl\x00", "NUL byte"),
    ("service", "data", "data\x00", "NUL byte"),
    ("query", "timeout", 1e308, "at most 86400 seconds (1 day)"),
    ("service", "stop_timeout", 1e308, "at most 86400 seconds (1 day)"),
    ("service", "kill_wait", 1e308, "at most 86400 seconds (1 day)"),
    ("service", "prepare_timeout", 1e308, "at most 86400 seconds (1 day)"),
    ("service", "ready_timeout", 1e20, "at most 86400 seconds (1 day)"),
    ("service", "build_timeout", 10**400, "reasonable size"),
    ("compare", "repeats", 100_000_000_000, "at most 1000"),
    ("query", "limit", 10**9, "at most 10000"),
    ("query", "max_bytes", 2**62, "at most"),
    ("compare", "k", [10, 10**9], "at most 10000"),
    ("compare", "seed", 2**70, "at most"),
    ("service", "env", {"N": 5}, 'quote it: N = "5"'),
    ("query", "headers", {"X-N": 5}, "expected a table of strings"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 20 else None)
def test_a_config_value_out_of_bounds_or_of_the_wrong_type_is_refused_naming_its_field(
        workspace: Workspace, cache: Path, capsys: pytest.CaptureFixture[str], section: str,
        key: str, value: object, fragment: str) -> None:
    _refused(workspace, cache, capsys, {"harness.toml": _config(**{section: {key: value}})},
             COMPARE, f"{section}.{key}", fragment)


@pytest.mark.parametrize(("option", "value"), [
    ("--repeats", "100000000000"), ("--concurrency", "1000000"), ("--k", "100000"),
    ("--max-errors", "1e400"), ("--seed", str(2**64)),
])
def test_a_cli_count_out_of_bounds_is_refused_naming_the_option_and_its_bound(
        workspace: Workspace, cache: Path, capsys: pytest.CaptureFixture[str], option: str,
        value: str) -> None:
    # An unknown baseline: were the bound missed, the run would stop there (without the option
    # in its message) rather than run 1e11 rounds.
    argv = ("compare", "--baseline", NO_REF, *COMPARE[3:], option, value)
    err = _refused(workspace, cache, capsys, {}, argv, option)
    assert "at most" in err or "invalid" in err  # argparse refuses 1e400 as an int first


def test_demo_with_refs_is_refused(workspace: Workspace, cache: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    _refused(workspace, cache, capsys, {},
             ("compare", "--demo", "--baseline", "main", "--candidate", "feat/same"),
             "--demo", "drop --baseline and --candidate")


@pytest.mark.parametrize("command", ["report", "export"])
def test_a_non_utf8_record_is_a_results_error_naming_the_file(
        workspace: Workspace, cache: Path, capsys: pytest.CaptureFixture[str],
        command: str) -> None:
    _refused(workspace, cache, capsys, {"record.json": b'{"schema": "\xff\xfe"}'},
             (command, "{ws}/record.json"), "{ws}/record.json: is not UTF-8")


@pytest.mark.parametrize(("name", "encoding", "argv", "named"), [
    ("gold.jsonl", "utf-16", GOLD_CHECK, "UTF-16 LE text (byte-order mark)"),
    ("gold.jsonl", "utf-16-le", GOLD_CHECK, "UTF-16 LE text (no byte-order mark"),
    ("gold.jsonl", "utf-16-be", COMPARE, "UTF-16 BE text (no byte-order mark"),
    ("corpus.jsonl", "utf-32", (*GOLD_CHECK, "--corpus", "{ws}/corpus.jsonl"), "UTF-32 LE"),
    ("qrels.txt", "utf-16", ("gold", "check", "{ws}/qrels.txt", "--queries",
                              "{ws}/topics.tsv"), "UTF-16 LE"),
    ("topics.tsv", "utf-32-be", ("gold", "check", "{ws}/qrels.txt", "--queries",
                                  "{ws}/topics.tsv"), "UTF-32 BE"),
    ("harness.toml", "utf-16", COMPARE, "UTF-16 LE"),
    ("record.json", "utf-16", ("report", "{ws}/record.json"), "UTF-16 LE"),
])
def test_a_utf16_or_utf32_file_is_named_with_its_encoding_and_the_fix(
        workspace: Workspace, cache: Path, capsys: pytest.CaptureFixture[str], name: str,
        encoding: str, argv: tuple[str, ...], named: str) -> None:
    text = workspace.originals[name].decode()
    err = _refused(workspace, cache, capsys, {name: text.encode(encoding)}, argv,
                   f"{{ws}}/{name}", named, "re-save it as UTF-8", "iconv -f")
    assert "TREC qrels need their query texts" not in err


@pytest.mark.parametrize(("name", "content", "argv", "where"), [
    ("gold.jsonl", _lines([GOLD[0], {**GOLD[1], "id": "   "}, *GOLD[2:]]), COMPARE,
     "{ws}/gold.jsonl:2: id: "),
    ("gold.jsonl", _lines([GOLD[0], {**GOLD[1], "relevant": {" ": 1}}, *GOLD[2:]]), GOLD_CHECK,
     "{ws}/gold.jsonl:2: relevant: "),
    ("corpus.jsonl", _lines([CORPUS[0], {**CORPUS[1], "id": "\t "}, CORPUS[2]]),
     (*GOLD_CHECK, "--corpus", "{ws}/corpus.jsonl"), "{ws}/corpus.jsonl:2: id: "),
    ("topics.tsv", '{"_id": "  ", "text": "roll back"}\n',
     ("gold", "check", "{ws}/qrels.txt", "--queries", "{ws}/topics.tsv"),
     "{ws}/topics.tsv:1: id: "),
], ids=["query-id", "judged-doc-id", "corpus-doc-id", "topics-id"])
def test_a_blank_id_is_refused_at_its_line(
        workspace: Workspace, cache: Path, capsys: pytest.CaptureFixture[str], name: str,
        content: str, argv: tuple[str, ...], where: str) -> None:
    _refused(workspace, cache, capsys, {name: content}, argv, where, "non-blank")


def test_an_unknown_ref_leaves_no_results_directory(
        workspace: Workspace, cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = tuple(NO_REF if a == "main" and i == 2 else a for i, a in enumerate(COMPARE))
    _refused(workspace, cache, capsys, {}, argv, f"unknown ref {NO_REF!r}")


@given(st.sampled_from(["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le",
                        "utf-32-be"]),
       st.text(st.characters(max_codepoint=0x7F, exclude_characters="\x00"), min_size=2,
               max_size=200))
@settings(max_examples=200, deadline=None)
def test_wide_encodings_of_ascii_text_are_told_apart(encoding: str, text: str) -> None:
    from harness.text.encodings import wide_encoding

    expected = encoding.upper().replace("-LE", " LE").replace("-BE", " BE")
    if expected in ("UTF-16", "UTF-32"):
        expected += " LE"  # Python writes a little-endian mark on this machine
    assert wide_encoding(text.encode(encoding)) == expected
    assert wide_encoding(text.encode("utf-8")) is None

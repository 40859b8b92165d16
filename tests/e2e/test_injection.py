"""No input can inject (issue 37, parts 4 and 5): what a config, a gold set or a service sends
is refused where it would change a request, escaped wherever it is shown, and scrubbed where it
is a credential; and four messages that said the wrong thing say what happened.

    header names and values   RFC 7230 token; no CR, LF, NUL or other control character (tab
                              is fine): a ConfigError naming query.headers.NAME, exit 2; a gold
                              query filled into a header is refused by id before anything boots
    service text              `harness.text.control_chars.shown` in every format: no raw ESC on the
                              terminal, in report.md, report.html, comparison.json or a record
    credential fields         query.params api_key = "..." is [scrubbed] in runs/*.json, the
                              comparison's baseline.json/candidate.json, reports and logs
    words                     query.scores blamed for its NaN, a crash mid-replay is "exited
                              with status N", an unsaved regression still exits 1, a newline in
                              the repository's path is said

The end-to-end tests run the real CLI against the fixture service (tests/fixtures/e2e_service)
on 127.0.0.1, in a sandbox built once for the module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from e2e_support import (
    Sandbox,
    build_sandbox,
    config_text,
    git,
    gold_lines,
    harness_on_a_full_disk,
    query_ids,
)
from hypothesis import given
from hypothesis import strategies as st

from harness.checkout.worktree import resolve_ref
from harness.cli.exits import EXIT_INVALID, EXIT_OK, EXIT_REGRESSED, EXIT_USAGE, unsaved_status
from harness.config import QueryConfig, load_config
from harness.driver.adapter_check import AdapterCheck
from harness.errors import AdapterError, ConfigError, GoldError, RefError, ServiceError
from harness.gold import load_gold
from harness.gold.check import check_gold
from harness.gold.render import render_check
from harness.replay.client import ask
from harness.replay.request import header_injections, make_request
from harness.report import layout
from harness.report.layout import Block
from harness.results.records import load_run
from harness.text.control_chars import control_chars, header_problem, one_line, shown
from harness.text.scrub import SCRUBBED, field_secrets, scrubbed_fields, secret_field
from harness.values.types import ErrorKind, RunFailure
from harness.verdict.validity import advice

ESC = "\x1b"
# Retitle the window, clear the screen, then overwrite the line with a verdict of its own.
ATTACK = "\x1b]0;pwned\x07\x1b[2J\r\x9b2Kquality: no measurable difference"
TOKEN = "sk-live-0123456789abcdef"  # query.params.api_key: a credential in the config file
BASE = "http://127.0.0.1:1"  # never reached: MockTransport answers
GET = QueryConfig(path="/search", ids="results[].id", params={"q": "{query}"})


# --------------------------------------------------------------------------- shown


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"),  # OSC: retitle the terminal
        ("\x1b[2J", "\\x1b[2J"),  # CSI: clear it
        ("ok\rINVALID", "ok\\x0dINVALID"),  # CR: overwrite the line
        ("a\x00b\x7fc", "a\\x00b\\x7fc"),  # NUL, DEL
        ("\x9b2J", "\\x9b2J"),  # C1 CSI: a terminal obeys it too
        ("abc\u202edef", "abc\\u202edef"),  # a bidirectional override reorders the line
        ("tab\tkept", "tab\tkept"),
        ("two\nlines", "two\\x0alines"),
        ("été ✓ 日本", "été ✓ 日本"),  # printable text is untouched
    ],
)
def test_every_control_character_is_shown_escaped(text: str, want: str) -> None:
    assert shown(text) == want


def test_newlines_are_kept_where_several_lines_are_allowed() -> None:
    assert shown("a\nb\x1b", lines=True) == "a\nb\\x1b"
    assert one_line('HTTP 500:\r\n  {\n\t"error": \x1b}') == 'HTTP 500: { "error": \\x1b}'


@given(st.text())
def test_shown_text_holds_no_control_character_and_is_shown_the_same_again(text: str) -> None:
    out = shown(text)
    assert control_chars(out) == ""
    assert not any((ord(c) < 0x20 and c != "\t") or 0x7F <= ord(c) <= 0x9F for c in out)
    assert shown(out) == out  # escaped at the source and again where shown: no double escapes


# --------------------------------------------------------------------------- headers


@pytest.mark.parametrize("name", ["X-Api-Key", "Authorization", "x_custom", "X.A~b!#$%&'*+^`|"])
def test_a_token_is_a_header_name(name: str) -> None:
    assert header_problem(name, "value\twith a tab") == ""


@pytest.mark.parametrize("name", ["Bad Name", "X:Y", "", "X\x1bY", "X\r\nY", "Ünï"])
def test_anything_else_is_no_header_name(name: str) -> None:
    assert "is not an HTTP header name" in header_problem(name, "v")


@pytest.mark.parametrize("value", ["a\r\nInjected: 1", "a\nb", "a\rb", "a\x00b", "\x1b[2J", "\x7f"])
def test_a_header_value_carries_no_control_character(value: str) -> None:
    assert "cannot carry a control character" in header_problem("X-A", value)


def _config(tmp_path: Path, query: str) -> Path:
    (tmp_path / "gold.jsonl").write_text("\n".join(gold_lines()) + "\n")
    path = tmp_path / "harness.toml"
    path.write_text(
        '[service]\nstart = "python3 svc.py --port {port}"\nready = "/health"\n\n'
        f'[query]\npath = "/search"\nids = "results[].id"\n{query}\n\n'
        '[gold]\npath = "gold.jsonl"\n'
    )
    return path


def test_a_configured_header_with_crlf_is_a_config_error_naming_it(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        'headers = { "X-A" = "a\\r\\nInjected: 1", "Bad Name" = "x", "X-Ok" = "{query}" }\n'
        '\n[candidate.query]\nheaders = { "X-B" = "\\u001b]0;t\\u0007" }',
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path, repo=tmp_path)
    said = str(caught.value)
    assert f"{path}:8: query.headers.X-A: the value holds \\x0d (CR), \\x0a (LF)" in said
    assert f"{path}:8: query.headers.Bad Name: the name 'Bad Name' is not an HTTP header" in said
    assert f"{path}:11: candidate.query.headers.X-B: the value holds \\x1b (ESC)" in said
    assert "X-Ok" not in said
    assert ESC not in said


def test_a_gold_query_is_never_filled_into_a_header_it_would_break() -> None:
    query = replace(GET, headers={"X-Q": "about {query}", "X-Fixed": "1"})
    with pytest.raises(GoldError, match=r"query\.headers\.X-Q: not sent"):
        make_request(query, "a\r\nInjected: 1")
    assert make_request(query, "tab\tis fine").headers["X-Q"] == "about tab\tis fine"
    items = [("q1", "fine"), ("q2", "a\r\nInjected: 1"), ("q3", "x\x1b[2J")]
    assert header_injections(query, items) == [
        ("q2", "X-Q", "\\x0d (CR), \\x0a (LF)"),
        ("q3", "X-Q", "\\x1b (ESC)"),
    ]
    assert header_injections(GET, items) == []  # in a parameter it is percent-encoded


def test_the_service_receives_no_injected_header() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"results": [{"id": "d1"}]})

    client = httpx.Client(transport=httpx.MockTransport(handler))
    text = "a\r\nInjected: 1"
    with pytest.raises(GoldError):  # in a header: refused, never sent
        ask(client, BASE, replace(GET, headers={"X-Q": "{query}"}), "q1", text)
    assert seen == []
    result = ask(client, BASE, GET, "q1", text)  # in a parameter: sent, harmlessly encoded
    assert result.ids == ("d1",)
    assert "injected" not in seen[0].headers and seen[0].url.params["q"] == text
    assert b"\r\nInjected" not in seen[0].url.raw_path


# --------------------------------------------------------------------------- gold check


def test_gold_check_warns_of_a_query_with_a_control_character(tmp_path: Path) -> None:
    path = tmp_path / "gold.jsonl"
    rows = [
        {"id": "q1", "query": "clean", "relevant": {"d1": 1}},
        {"id": "q2", "query": "bell \u0007 and \u001b[2J", "relevant": {"d1": 1}},
        {"id": "q3", "query": "tab\tis fine, \u00e9t\u00e9 too", "relevant": {}},
    ]
    header = {"format": "harness-gold", "version": 1}
    path.write_text("\n".join(json.dumps(r) for r in (header, *rows)) + "\n")
    report = check_gold(load_gold(path))
    (finding,) = [f for f in report.findings if f.check == "characters"]
    assert (finding.severity, finding.query_id, finding.line) == ("warning", "q2", 3)
    assert "holds \\x07 (BEL), \\x1b (ESC)" in finding.message
    text = render_check(report)
    assert f"{path}:3: warning: query 'q2': its text holds \\x07 (BEL)" in text
    assert ESC not in text and "\x07" not in text


# --------------------------------------------------------------------------- report formats


def test_every_format_shows_a_services_words_escaped() -> None:
    blocks = [
        Block("alert", ("INVALID", f"candidate: HTTP 500: {ATTACK}")),
        Block("lines", (f"e.g. q1: {ATTACK}",)),
        Block("table", headers=("sample",), rows=((ATTACK,),), fold=f"fold {ESC}"),
    ]
    for render in (layout.text, layout.markdown, layout.html):
        page = render(blocks)
        assert not any(c in page for c in (ESC, "\r", "\x07", "\x9b")), render.__name__
        assert "x1b" in page and "pwned" in page  # visibly: \x1b (Markdown: \\x1b\])


def test_an_error_quoting_a_service_reaches_the_terminal_escaped(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import harness.cli.main as cli

    def fails(args: object) -> int:
        raise ServiceError(f"exited {ESC}[2J", ["last lines of svc.log:", f"  | {ATTACK}"])

    monkeypatch.setattr(cli, "command", lambda name: fails)
    assert cli.main(["gold", "stats", "gold.jsonl"]) == 2
    err = capsys.readouterr().err
    assert _raw(err) == [] and "\r" not in err
    assert "harness: error: exited \\x1b[2J\n" in err and "  | \\x1b]0;pwned\\x07" in err


def test_a_run_failure_holds_its_log_tail_escaped_from_a_record_of_any_age() -> None:
    failure = RunFailure("boot", f"exited {ESC}[2J", (f"svc: {ATTACK}",))
    assert failure.message == "exited \\x1b[2J"
    assert ESC not in failure.log_tail[0] and "\\x1b]0;pwned\\x07" in failure.log_tail[0]


# --------------------------------------------------------------------------- credentials


@pytest.mark.parametrize(
    "name", ["api_key", "apiKey", "X-Api-Key", "access_token", "X-Amz-Signature", "password"]
)
def test_a_field_named_like_a_credential_is_one(name: str) -> None:
    assert secret_field(name)


@pytest.mark.parametrize("name", ["q", "k", "author", "passage", "keyword", "limit", "signal"])
def test_a_field_that_only_looks_like_one_is_not(name: str) -> None:
    assert not secret_field(name)


def test_a_credential_field_is_scrubbed_in_what_a_record_keeps() -> None:
    params = {"q": "{query}", "api_key": TOKEN, "session": "on", "token": "{query}"}
    assert scrubbed_fields(params) == {
        "q": "{query}",
        "api_key": SCRUBBED,
        "session": SCRUBBED,
        "token": "{query}",  # the gold query, no secret
    }
    assert scrubbed_fields({"auth": {"secret": TOKEN}, "n": 1}) == {
        "auth": {"secret": SCRUBBED},
        "n": 1,
    }
    # Hunted through every output only when long enough: "on" would blank every "on".
    assert field_secrets(params) == [TOKEN]


# --------------------------------------------------------------------------- wording


def _nan_answer(request: httpx.Request) -> httpx.Response:
    # NaN as Python's json writes it (and reads it back: a float, not a number JSON allows)
    body = '{"results": [{"id": "d01", "score": NaN}, {"id": "d02", "score": 1.0}]}'
    return httpx.Response(200, text=body, headers={"content-type": "application/json"})


def test_nan_scores_and_a_count_mismatch_blame_query_scores(tmp_path: Path) -> None:
    config = load_config(_config(tmp_path, 'scores = "results[].score"'), repo=tmp_path)
    query = config.side("candidate").query
    client = httpx.Client(transport=httpx.MockTransport(_nan_answer))
    results = [ask(client, BASE, query, f"q0{i}", "text") for i in range(1, 4)]
    assert all(r.error is ErrorKind.BAD_SHAPE for r in results)
    assert (results[0].detail or "").startswith("query.scores: scores[0] is a number (nan)")
    check = AdapterCheck(config, "candidate", query, None, load_gold(tmp_path / "gold.jsonl"))
    with pytest.raises(AdapterError) as caught:
        check(results, "candidate main (abc12345)")
    said = str(caught.value)
    assert 'query.scores = "results[].score" read no usable scores' in said
    assert f"fix {tmp_path / 'harness.toml'}:8: query.scores" in said
    assert "query.ids" not in said
    assert "query.scores" in advice("bad_shape", (), results[0].detail or "")
    assert "query.ids" in advice("bad_shape", (), "ids[0] is a boolean")


def test_a_repository_path_with_a_newline_is_said(tmp_path: Path) -> None:
    repo = tmp_path / "my\nrepo"
    repo.mkdir()
    git(repo, "init", "--quiet")
    git(repo, "commit", "--quiet", "--allow-empty", "-m", "x")
    with pytest.raises(RefError) as caught:
        resolve_ref(repo, "HEAD")
    assert "path holds a newline" in caught.value.message
    assert "no working tree" not in str(caught.value)


def test_an_unsaved_compare_keeps_its_verdicts_status_and_is_never_a_success() -> None:
    assert unsaved_status(EXIT_REGRESSED) == EXIT_REGRESSED
    assert unsaved_status(EXIT_INVALID) == EXIT_INVALID
    assert unsaved_status(EXIT_OK) == EXIT_USAGE


# --------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    box = build_sandbox(
        tmp_path_factory.mktemp("inject") / "s",
        {
            "errs": {"error_on": ["topic"], "error_body": ATTACK},
            "loud": {"say": f"svc: {ATTACK}", "exit_at_boot": 3},
            "crash": {"exit_after": [12, 7]},
            "bury40": {"bury": query_ids(1, 40)},
        },
        repeats=1,
    )
    yield box
    assert box.leftovers() == [] and box.worktrees() == []


def _write(sandbox: Sandbox, name: str, extra: str = "", gold: Path | None = None) -> Path:
    text = config_text(
        gold=str(gold or sandbox.repo / "gold" / "gold.jsonl"),
        boot_counter=sandbox.boot_counter,
        repeats=1,
    )
    path = sandbox.root / name
    path.write_text(text.replace("[query]\n", f"[query]\n{extra}\n"))
    return path


def test_a_crlf_header_is_refused_before_anything_starts(sandbox: Sandbox, tmp_path: Path) -> None:
    config = _write(sandbox, "crlf.toml", 'headers = { "X-A" = "a\\r\\nInjected: 1" }')
    before = sandbox.boots()
    done = sandbox.harness(
        "compare", "--baseline", "main", "--candidate", "main", results=tmp_path, config=config
    )
    assert done.returncode == 2, done.stderr
    assert "query.headers.X-A: the value holds \\x0d (CR), \\x0a (LF)" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert sandbox.boots() == before


def test_a_gold_query_that_would_break_a_header_is_refused_by_id_before_anything_boots(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    gold = sandbox.repo / "gold" / "header-query.jsonl"  # in the repository, untracked
    lines = gold_lines()
    lines[5] = lines[5].replace("tell me about", "tell me\\r\\nX-Injected: 1\\r\\nabout")
    gold.write_text("\n".join(lines) + "\n")
    config = _write(sandbox, "header-query.toml", 'headers = { "X-Query" = "{query}" }', gold)
    before = sandbox.boots()
    done = sandbox.harness(
        "compare", "--baseline", "main", "--candidate", "main", results=tmp_path, config=config
    )
    assert done.returncode == 2, done.stderr
    assert f"{gold}:6: query 'q05': its text holds \\x0d (CR), \\x0a (LF), which " in done.stderr
    assert "query.headers.X-Query would send in a header" in done.stderr
    assert "Traceback" not in done.stderr
    assert sandbox.boots() == before and sandbox.worktrees() == []


def _texts(folder: Path) -> list[str]:
    """The text files of a saved comparison: comparison.json, report.md, report.html, the two
    run records (not their .npz columns)."""
    return [p.read_text() for p in folder.iterdir() if p.suffix in (".json", ".md", ".html")]


def _raw(*texts: str) -> list[str]:
    """Which of the terminal's control sequences a text holds raw."""
    return [c for c in (ESC, "\x07", "\x9b") for t in texts if c in t]


@pytest.mark.slow
def test_an_escape_in_an_error_body_reaches_no_output_raw_and_no_token_is_written(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    config = _write(sandbox, "errs.toml")
    params = 'params = { q = "{query}", k = "{limit}"'
    config.write_text(config.read_text().replace(params, f'{params}, api_key = "{TOKEN}"'))
    done = sandbox.harness(
        "compare", "--baseline", "main", "--candidate", "errs", results=tmp_path, config=config
    )
    assert done.returncode == 3, done.stderr  # every candidate query failed: invalid
    (saved,) = [
        p for p in tmp_path.iterdir() if p.is_dir() and p.name not in ("runs", "logs", "cache")
    ]
    report = (saved / "report.md").read_text()
    assert "HTTP 500: \\\\x1b\\]0;pwned\\\\x07" in report  # escaped, visibly (in Markdown)
    assert "HTTP 500: \\x1b]0;pwned\\x07" in done.stdout
    assert _raw(done.stdout, done.stderr, report) == []
    for path in [*tmp_path.rglob("*.json"), *tmp_path.rglob("*.html"), *tmp_path.rglob("*.md")]:
        data = path.read_text()
        assert _raw(data) == [] and "\\u001b" not in data, path  # stored escaped, not raw
        assert TOKEN not in data, path
    assert all(TOKEN not in p.read_text() for p in tmp_path.rglob("*.log"))
    assert TOKEN not in done.stdout + done.stderr
    (errs,) = tmp_path.glob("runs/*_errs_*.json")  # the details are columns beside it (.npz)
    details = [r.detail or "" for rep in load_run(errs).repeats for r in rep.results]
    assert details and all(d.startswith("HTTP 500: \\x1b]0;pwned\\x07") for d in details)
    for name in (
        "baseline.json",
        "candidate.json",
        *(p.name for p in tmp_path.glob("runs/*.json")),
    ):
        record = json.loads(next(tmp_path.rglob(name)).read_text())
        params = record["query_config"]["params"]
        assert params == {"q": "{query}", "k": "{limit}", "api_key": SCRUBBED}


def test_an_escape_in_a_log_tail_reaches_no_output_raw(sandbox: Sandbox, tmp_path: Path) -> None:
    config = _write(sandbox, "loud.toml")
    done = sandbox.harness(
        "compare", "--baseline", "main", "--candidate", "loud", results=tmp_path, config=config
    )
    assert done.returncode == 3, done.stderr  # the candidate exits at boot
    # The log's last lines (a CR ends a line there: the next one starts on its own line).
    assert "svc: \\x1b]0;pwned\\x07\\x1b[2J" in done.stderr
    assert "\\x9b2Kquality: no measurable difference" in done.stderr
    (saved,) = [
        p for p in tmp_path.iterdir() if p.is_dir() and p.name not in ("runs", "logs", "cache")
    ]
    texts = [done.stdout, done.stderr, *_texts(saved)]
    assert _raw(*texts) == []
    (record,) = tmp_path.glob("runs/*_loud_*.json")
    assert "\\x1b]0;pwned" in record.read_text() and _raw(record.read_text()) == []


def test_a_service_that_crashes_mid_replay_exited_with_its_status(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    config = _write(sandbox, "crash.toml")
    done = sandbox.harness(
        "run", "--ref", "crash", "--repeats", "1", results=tmp_path, config=config
    )
    assert done.returncode == 3, done.stderr
    assert "the service exited with status 7 while being queried" in done.stderr
    assert "stalled" not in done.stderr


def test_scores_one_short_per_answer_blame_query_scores(sandbox: Sandbox, tmp_path: Path) -> None:
    config = _write(sandbox, "short-scores.toml")
    config.write_text(config.read_text().replace('"results[].score"', '"results[1:].score"'))
    done = sandbox.harness(
        "run", "--ref", "main", "--repeats", "1", results=tmp_path, config=config
    )
    assert done.returncode == 3, done.stderr
    assert 'query.scores = "results[1:].score" read no usable scores' in done.stderr
    assert "9 scores for 10 ids" in done.stderr and "query.ids =" not in done.stderr


@pytest.mark.slow
def test_a_full_disk_at_saving_does_not_hide_a_regression(sandbox: Sandbox, tmp_path: Path) -> None:
    """As tests/e2e/test_fault_matrix.py's full disk, with a candidate that regressed: the report is
    printed, the save fails, and the exit status is still the regression's, said on stderr."""
    config = _write(sandbox, "full.toml")
    done = harness_on_a_full_disk(
        sandbox, "compare", "--baseline", "main", "--candidate", "bury40", results=tmp_path,
        config=config,
    )
    assert done.returncode == EXIT_REGRESSED, done.stderr
    assert "regressed" in done.stdout  # the verdict, printed before the save
    assert "No space left on device" in done.stderr
    assert "the comparison above was NOT saved: exit status 1 is the verdict's" in done.stderr
    assert "results saved in" not in done.stderr and "Traceback" not in done.stderr

"""No credential anywhere (README "Credentials and logs"): a URL's user:password, an
Authorization header and a value the environment's allowlist removed are `[scrubbed]` in the
terminal, every results file and every file name; logs are scrubbed by stream whatever their size
and cut to `service.max_log_bytes`, their tail kept and the cut said.

The end-to-end tests run the real CLI against the fixture service (tests/fixtures/e2e_service):
started here as a deployment that wants HTTP Basic credentials, or booted by harness (plain mode)
reading a token from the harness's own /proc/<pid>/environ and writing it into its log.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import cli_server
import pytest
from e2e_support import SERVICE, Sandbox, build_sandbox, config_text, leased_port

from harness.config import QueryConfig
from harness.replay.request import encode_request, make_request
from harness.results.records import load_run
from harness.text.scrub import (
    CHUNK,
    SCRUBBED,
    Scrubber,
    header_secrets,
    safe_url,
    scrub_log,
    url_secrets,
)

USER, PASSWORD = "alice", "PASSWORD"
TOKEN = "tok-9c1e5f0a7b3d42e8"  # in harness's environment, never passed to the service


def hits(root: Path, needles: list[str]) -> list[str]:
    """Every path under `root` whose name or content holds one of `needles`."""
    found = []
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        text = rel + (path.read_bytes().decode("utf-8", "replace") if path.is_file() else "")
        found += [f"{rel}: {n}" for n in needles if n in text]
    return found


# --------------------------------------------------------------------------- units


def test_a_url_is_shown_without_its_userinfo() -> None:
    assert safe_url("http://alice:pw@127.0.0.1:8080/x") == f"http://{SCRUBBED}@127.0.0.1:8080/x"
    assert safe_url("http://127.0.0.1:8080") == "http://127.0.0.1:8080"
    shown = safe_url("https://h/x?q=tea&api_key=k1&access_token=t2&Signature=s3")
    assert (
        shown
        == f"https://h/x?q=tea&api_key={SCRUBBED}&access_token={SCRUBBED}&Signature={SCRUBBED}"
    )
    token = base64.b64encode(b"al ice:p@ss").decode()
    assert token in url_secrets("http://al%20ice:p%40ss@h:1")  # the decoded Basic token too


def test_credential_named_variables_are_secrets_and_nothing_else() -> None:
    from harness.text import scrub

    environ = {
        "API_TOKEN": "tok-aaaa1111", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI",
        "PGPASSWORD": "pg-pw-123", "OPENAI_API_KEY": "sk-proj-0000",
        "SSH_AUTH_SOCK": "/tmp/ssh-x/agent.1", "XDG_SESSION_DESKTOP": "ubuntu",
        "KEYBOARD": "us-intl-alt", "SHORT_TOKEN": "abc",
    }  # fmt: skip
    scrub.forget_all()  # this process's registry: nothing else in it for the check
    try:
        scrub.register_environment(environ)
        assert set(scrub.registered()) == {"tok-aaaa1111", "wJalrXUtnFEMI", "pg-pw-123",
                                           "sk-proj-0000"}  # fmt: skip
    finally:
        scrub.forget_all()


def test_credential_headers_are_secrets_whatever_their_case() -> None:
    headers = {"authorization": "Bearer abc123xyz", "COOKIE": "sid=77aa", "Accept": "x/y"}
    headers["Proxy-Authorization"] = "Basic cHJveHk6cHc="
    found = header_secrets(headers)
    assert set(found) == {"Bearer abc123xyz", "abc123xyz", "sid=77aa", "Basic cHJveHk6cHc=",
                          "cHJveHk6cHc="}  # fmt: skip


def test_userinfo_becomes_basic_credentials_and_never_the_host_header() -> None:
    query = QueryConfig(path="/search", ids="ids", params={"q": "{query}"})
    raw = encode_request("http://alice:PASSWORD@127.0.0.1:9/", make_request(query, "tea"))
    token = base64.b64encode(b"alice:PASSWORD").decode()
    assert b"\r\nHost: 127.0.0.1:9\r\n" in raw
    assert f"\r\nAuthorization: Basic {token}\r\n".encode() in raw
    assert b"alice:PASSWORD" not in raw
    # An Authorization of query.headers is the user's choice: sent instead, never both.
    own = QueryConfig(path="/s", ids="ids", headers={"Authorization": "Bearer x"})
    raw = encode_request("http://alice:PASSWORD@127.0.0.1:9", make_request(own, "tea"))
    assert raw.count(b"Authorization:") == 1 and b"Bearer x" in raw


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 7, 16])
def test_a_secret_across_any_chunk_boundary_is_scrubbed(chunk: int) -> None:
    scrubber = Scrubber({b"secret": b"[S]", b"secretive": b"[L]", b"ab": b"[A]"})
    text = b"a secret, secretive, ab secretsecret abab sec ret " * 3
    out = io.BytesIO()
    assert scrubber.stream(io.BytesIO(text), out, chunk=chunk)
    assert out.getvalue() == scrubber.data(text)
    assert b"secret" not in out.getvalue() and b"[L]" in out.getvalue()


# --------------------------------------------------------------------------- URL mode


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[tuple[Sandbox, int, Path]]:
    """The fixture service on 127.0.0.1, started here (not by harness), answering only requests
    with Basic alice:PASSWORD; the sandbox, its port and the file it logs each such request to."""
    sandbox = build_sandbox(tmp_path / "box", {})
    tree = tmp_path / "deployed"
    tree.mkdir()
    shutil.copy(SERVICE, tree / "svc.py")
    (tree / "behaviour.json").write_text(json.dumps({"basic_auth": f"{USER}:{PASSWORD}"}))
    log = tmp_path / "authorized.log"
    with leased_port() as port:  # e2e_support: no harness boot is handed it meanwhile
        proc = subprocess.Popen(
            [sys.executable, "svc.py", "--port", str(port), "--data", str(sandbox.repo / "data")],
            cwd=tree,
            env={"PATH": "/usr/bin:/bin", "E2E_AUTH_LOG": str(log)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.05)
            yield sandbox, port, log
        finally:
            proc.terminate()
            proc.wait(timeout=10)


@pytest.mark.slow
def test_a_url_password_is_used_for_every_request_and_shown_nowhere(
    deployment: tuple[Sandbox, int, Path], tmp_path: Path
) -> None:
    sandbox, port, authorized = deployment
    url = f"http://{USER}:{PASSWORD}@127.0.0.1:{port}"
    results = tmp_path / "results"
    done = sandbox.harness(
        "compare", "--repeats", "1", "--baseline-url", url, "--candidate-url", url,
        "--format", "markdown", results=results,
    )  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-3000:]
    # The requests carried the credentials: every query of both sides and the readiness
    # probes were let through (the service answers 401 to anything else).
    paths = authorized.read_text().splitlines()
    assert paths.count("/search") >= 2 * 80 and "/health" in paths
    token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    assert PASSWORD not in said and token not in said, said[-3000:]
    assert f"http://{SCRUBBED}@127.0.0.1:{port}" in said  # named, without its userinfo
    assert hits(results, [PASSWORD, token, f"{USER}:"]) == []
    records = sorted((results / "runs").glob("*.json"))
    assert len(records) == 2 and all("scrubbed" in p.name for p in records)
    # Its identity is the URL without the userinfo: a new password is the same deployment.
    shown = f"http://{SCRUBBED}@127.0.0.1:{port}"
    key = "url-" + hashlib.sha256(shown.encode()).hexdigest()[:12]
    assert {json.loads(p.read_text())["sha"] for p in records} == {key}


def _unready_config(sandbox: Sandbox, folder: Path, query_line: str = "") -> Path:
    """The fixture's configuration, one round, with no service.ready (the probe sends no
    credentials of query.headers: its 401 would be a ready failure) and `query_line` added."""
    text = config_text(gold=str(sandbox.repo / "gold" / "gold.jsonl"), repeats=1)
    text = text.replace('ready = "/health"\n', "").replace("[query]\n", f"[query]\n{query_line}\n")
    path = folder / "unready.toml"
    path.write_text(text)
    return path


@pytest.mark.slow
def test_without_the_credentials_every_answer_is_refused(
    deployment: tuple[Sandbox, int, Path], tmp_path: Path
) -> None:
    """The control of the test above: the service does check them."""
    sandbox, port, _ = deployment
    url = f"http://127.0.0.1:{port}"
    done = sandbox.harness(
        "compare", "--baseline-url", url, "--candidate-url", url, "--max-errors", "100",
        config=_unready_config(sandbox, tmp_path), results=tmp_path / "results",
    )  # fmt: skip
    assert done.returncode == 3 and "HTTP 401" in done.stdout, done.stdout[-3000:]
    assert "not authorized: None" in done.stdout  # it was sent no Authorization at all


@pytest.mark.slow
def test_an_authorization_header_quoted_back_by_the_service_is_scrubbed(
    deployment: tuple[Sandbox, int, Path], tmp_path: Path
) -> None:
    """query.headers' Authorization is sent as configured; a service that quotes it in its error
    bodies (here: every answer a 401 quoting it) does not get it into any output."""
    sandbox, port, _ = deployment
    bearer = "Bearer sk-live-5d1f0c3e9a7b"
    config = _unready_config(
        sandbox, tmp_path, f"headers = {{ Authorization = {json.dumps(bearer)} }}"
    )
    url = f"http://127.0.0.1:{port}"
    results = tmp_path / "results"
    done = sandbox.harness(
        "compare", "--baseline-url", url, "--candidate-url", url, "--max-errors", "100",
        config=config, results=results,
    )  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode == 3 and "HTTP 401" in said, said[-3000:]
    assert f"not authorized: {SCRUBBED}" in said  # the sample body, quoted scrubbed
    secret = bearer.split()[1]
    assert secret not in said
    assert hits(results, [secret]) == []


# --------------------------------------------------------------------------- logs


def _leaky_run(tmp_path: Path, behaviour: dict[str, object], max_log: int | None) -> Path:
    """`harness run` of a ref whose service writes TOKEN, read from harness's environ, into its
    log as `behaviour` says; the one boot's log."""
    leaky = {"leak_env": "API_TOKEN", "error_on": ["q05"], **behaviour}
    sandbox = build_sandbox(tmp_path / "box", {"leaky": leaky})
    config = sandbox.write_config("leaky.toml")
    text = config.read_text()
    if max_log is not None:
        text = text.replace("[service]\n", f"[service]\nmax_log_bytes = {max_log}\n")
    config.write_text(text)
    results = tmp_path / "results"
    # Fresh: the service reads /proc/PPID/environ, which for a forked command is the fork
    # server's (tests/cli_server.py), without API_TOKEN.
    done = sandbox.harness(
        "run", "--ref", "leaky", "--repeats", "1", config=config, results=results,
        env={"API_TOKEN": TOKEN, cli_server.FRESH: "1"},
    )  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode == 3, said[-3000:]  # its error answer: an invalid run, as it should
    assert "my token is [API_TOKEN scrubbed]" in said and TOKEN not in said
    (record,) = (results / "runs").glob("*.json")
    details = [r.detail or "" for rep in load_run(record).repeats for r in rep.results]
    assert any("my token is [API_TOKEN scrubbed]" in d for d in details)  # its error answers
    assert hits(results, [TOKEN]) == []
    (log,) = (results / "logs").glob("*_r0.log")
    return log


@pytest.mark.slow
def test_a_log_of_several_chunks_is_scrubbed_across_each_boundary(tmp_path: Path) -> None:
    offsets = [CHUNK, 2 * CHUNK, 3 * CHUNK - 1]
    log = _leaky_run(tmp_path, {"log_bytes": 3 * CHUNK + 50_000, "leak_at": offsets}, None)
    data = log.read_bytes()
    assert len(data) > 3 * CHUNK  # well under the default cap: nothing cut
    assert TOKEN.encode() not in data
    assert data.count(b"[API_TOKEN scrubbed]") == len(offsets)
    assert b"svc: last line of the log\n" in data
    assert b"bytes of this log" not in data


@pytest.mark.slow
def test_a_log_past_max_log_bytes_keeps_its_tail_and_says_what_was_cut(tmp_path: Path) -> None:
    limit = 64 << 10
    log = _leaky_run(tmp_path, {"log_bytes": 1 << 20, "leak_at": [(1 << 20) - 30_000]}, limit)
    data = log.read_bytes()
    first, rest = data.split(b"\n", 1)
    assert b"of this log" in first and b"were cut" in first
    assert f"service.max_log_bytes = {limit}".encode() in first
    cut = int(first.split(b"the first ")[1].split()[0])
    assert cut >= (1 << 20) - limit
    assert len(rest) <= limit
    assert b"svc: last line of the log\n" in rest
    assert b"svc: first line of the log" not in data  # the head is gone
    assert TOKEN.encode() not in data and b"[API_TOKEN scrubbed]" in rest


def test_a_cut_that_would_split_a_secret_keeps_it_whole_and_scrubbed(tmp_path: Path) -> None:
    log = tmp_path / "svc.log"
    secret = b"s3cr3t-value-0123456789"
    body = b"x" * 10_000 + secret + b"y" * 5_000  # no newline to move the cut to
    for at in range(1, len(secret)):  # the cut falls inside the secret at every place
        log.write_bytes(body)
        limit = 5_000 + len(secret) - at
        scrub_log(log, Scrubber({secret: b"[S]"}), limit=limit, key="service.max_log_bytes")
        data = log.read_bytes()
        assert data.split(b"\n", 1)[1] == b"[S]" + b"y" * 5_000, (at, data[:200])

"""The judging page of `harness judge`: a real serve() on 127.0.0.1 (port 0), driven by httpx and
by headless Chromium (tests/browser_support.py)."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.errors import ConfigError, GoldError
from harness.judge import page as judge_page
from harness.judge.page import MAX_BODY, load_pairs, serve
from harness.judge.pairs_file import read_pairs

ROOT = Path(__file__).resolve().parents[2]


def pair(query_id: str, doc_id: str, order: int, **fields: Any) -> dict[str, Any]:
    return {
        "query_id": query_id,
        "query": f"what is {query_id}?",
        "doc_id": doc_id,
        "title": f"Title of {doc_id}",
        "text": f"Text of {doc_id}.",
        "baseline_rank": 3,
        "candidate_rank": None,
        "why": "the baseline ranked it, the candidate dropped it",
        "order": order,
        "comparison": "main..feature",
        **fields,
    }


# In the file out of order: the page shows them by `order`, so q1/d1 comes first.
PAIRS = [pair("q2", "d2", 2), pair("q1", "d1", 1), pair("q3", "d3", 3, baseline_rank=None,
                                                        candidate_rank=1)]  # fmt: skip


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@contextmanager
def running(
    tmp_path: Path, rows: list[dict[str, Any]] = PAIRS, by: str = "alice"
) -> Iterator[tuple[str, Path]]:
    """serve() in a thread on 127.0.0.1:0: its URL and labels path; stopped by POST /done, and
    checked to have returned 0 and closed its port."""
    pairs = write_jsonl(tmp_path / "pairs.jsonl", rows)
    labels = tmp_path / "labels.jsonl"
    urls: queue.Queue[str] = queue.Queue()
    returned: list[int] = []
    thread = threading.Thread(
        target=lambda: returned.append(serve(pairs, labels, by=by, on_ready=urls.put)),
        daemon=True,
    )
    thread.start()
    url = urls.get(timeout=30)
    try:
        yield url, labels
    finally:
        if thread.is_alive():
            with contextlib.suppress(httpx.TransportError):  # the page's "stop" may be under way
                httpx.post(url + "done", json={})
        thread.join(timeout=30)
    assert not thread.is_alive() and returned == [0]
    with pytest.raises(httpx.ConnectError):
        httpx.get(url)


def post_label(url: str, body: object, **headers: str) -> httpx.Response:
    return httpx.post(url + "label", json=body, headers=headers)


# --------------------------------------------------------------------------- the server


def test_a_grade_is_appended_and_fsynced_before_the_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(judge_page.os, "fsync", fsync)
    with running(tmp_path) as (url, labels):
        before = datetime.now(UTC).replace(microsecond=0)
        answer = post_label(url, {"query_id": "q2", "doc_id": "d2", "grade": 2})
        assert answer.status_code == 200, answer.text
        # By the time the page hears 200, the line is in the file and the file was fsynced
        # (and its folder, the file being new).
        assert synced == [str(labels), str(labels.parent)]
        (label,) = lines(labels)
        assert list(label) == ["query_id", "doc_id", "grade", "by", "kind", "at", "from"]
        assert label | {"at": None} == {"query_id": "q2", "doc_id": "d2", "grade": 2,
                                        "by": "alice", "kind": "person", "at": None,
                                        "from": "pairs.jsonl"}  # fmt: skip
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", label["at"])
        at = datetime.strptime(label["at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        assert before <= at <= datetime.now(UTC) + timedelta(seconds=1)
        assert answer.json()["judged"] == 1
        assert post_label(url, {"query_id": "q2", "doc_id": "d2", "grade": 0}).status_code == 200
        assert [line["grade"] for line in lines(labels)] == [2, 0]  # appended, never rewritten
        listed = httpx.get(url + "pairs").json()
    assert [(p["query_id"], p["grade"]) for p in listed] == [("q1", None), ("q2", 0), ("q3", None)]
    assert listed[0] | {"grade": None} == PAIRS[1] | {"grade": None}


def test_reopening_resumes_with_this_judges_latest_grades(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    old = {"kind": "person", "at": "2026-12-06T07:10:00Z", "from": "pairs.jsonl"}
    write_jsonl(labels, [
        {"query_id": "q1", "doc_id": "d1", "grade": 1, "by": "alice", **old},
        {"query_id": "q1", "doc_id": "d1", "grade": 3, "by": "alice", **old},  # supersedes
        {"query_id": "q2", "doc_id": "d2", "grade": 2, "by": "bob", **old},  # another judge
        {"query_id": "q9", "doc_id": "d9", "grade": 0, "by": "alice", **old},  # another file's
    ])  # fmt: skip
    with running(tmp_path) as (url, _):
        listed = httpx.get(url + "pairs").json()
        answer = post_label(url, {"query_id": "q3", "doc_id": "d3", "grade": 1})
    assert [(p["doc_id"], p["grade"]) for p in listed] == [("d1", 3), ("d2", None), ("d3", None)]
    assert answer.json()["judged"] == 2  # d1 from before, d3 now; not q9, not bob's
    assert len(lines(labels)) == 5


def test_an_unreadable_labels_file_is_refused_naming_its_line(tmp_path: Path) -> None:
    pairs = write_jsonl(tmp_path / "pairs.jsonl", PAIRS)
    labels = tmp_path / "labels.jsonl"
    good = {"query_id": "q1", "doc_id": "d1", "grade": 1, "by": "a", "kind": "person",
            "at": "2026-12-06T07:10:00Z", "from": "pairs.jsonl"}
    labels.write_text(json.dumps(good) + '\n{"grade": 7\n')
    with pytest.raises(GoldError) as raised:
        serve(pairs, labels, by="a")
    said = str(raised.value)
    assert f"{labels}: the labels file is invalid: 1 problem" in said
    assert f"{labels}:2: malformed JSON" in said


REFUSED = [
    pytest.param(b"{not json", "application/json", 400, "not JSON", id="bad-json"),
    pytest.param(b"[1, 2]", "application/json", 400, "send {", id="not-an-object"),
    pytest.param(b'{"query_id": "q1", "doc_id": "d1"}', "application/json", 400, "send {",
                 id="no-grade"),
    pytest.param(b'{"query_id": "q1", "doc_id": "d1", "grade": 2, "by": "mallory"}',
                 "application/json", 400, "send {", id="extra-key"),
    pytest.param(b'{"query_id": "q1", "doc_id": "d1", "grade": 4}', "application/json", 400,
                 "grade must be", id="grade-4"),
    pytest.param(b'{"query_id": "q1", "doc_id": "d1", "grade": -1}', "application/json", 400,
                 "grade must be", id="grade-negative"),
    pytest.param(b'{"query_id": "q1", "doc_id": "d1", "grade": "2"}', "application/json", 400,
                 "grade must be", id="grade-string"),
    pytest.param(b'{"query_id": "q1", "doc_id": "d1", "grade": true}', "application/json", 400,
                 "grade must be", id="grade-bool"),
    pytest.param(b'{"query_id": "q1", "doc_id": "d1", "grade": 1.0}', "application/json", 400,
                 "grade must be", id="grade-float"),
    pytest.param(b'{"query_id": "q1", "doc_id": "d2", "grade": 1}', "application/json", 404,
                 "no pair", id="unknown-pair"),
    pytest.param(b'{"query_id": 1, "doc_id": "d1", "grade": 1}', "application/json", 404,
                 "no pair", id="id-not-a-string"),
    pytest.param(b'{"query_id": "q1", "doc_id": "d1", "grade": 1}', "text/plain", 415,
                 "application/json", id="form-content-type"),
    pytest.param(b" " * (MAX_BODY + 1), "application/json", 413, "bytes", id="oversize"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "content_type", "status", "said"), REFUSED)
def test_a_bad_label_is_refused_and_nothing_is_written(
    tmp_path: Path, body: bytes, content_type: str, status: int, said: str
) -> None:
    with running(tmp_path) as (url, labels):
        answer = httpx.post(url + "label", content=body, headers={"Content-Type": content_type})
        assert answer.status_code == status, answer.text
        assert answer.headers["content-type"] == "application/json"
        assert said in answer.json()["error"]
        # The server still answers (the refused connection did not take it down).
        good = {"query_id": "q1", "doc_id": "d1", "grade": 1}
        assert post_label(url, good).status_code == 200
    assert [(line["doc_id"], line["grade"]) for line in lines(labels)] == [("d1", 1)]


def test_a_body_just_under_the_cap_is_read(tmp_path: Path) -> None:
    body = json.dumps({"query_id": "q1", "doc_id": "d1", "grade": 1}).encode()
    padded = body + b" " * (MAX_BODY - len(body))  # exactly MAX_BODY: allowed
    with running(tmp_path) as (url, labels):
        answer = httpx.post(url + "label", content=padded,
                            headers={"Content-Type": "application/json"})  # fmt: skip
        assert answer.status_code == 200, answer.text
    assert len(lines(labels)) == 1


@pytest.mark.parametrize("route", ["", "pairs"])
def test_a_request_for_another_host_name_is_refused(tmp_path: Path, route: str) -> None:
    # DNS rebinding: evil.example resolves to 127.0.0.1, the browser sends Host: evil.example.
    with running(tmp_path) as (url, labels):
        port = httpx.URL(url).port
        answer = httpx.get(url + route, headers={"Host": f"evil.example:{port}"})
        assert answer.status_code == 403 and "Host" in answer.json()["error"]
        assert "Content-Security-Policy" not in answer.headers
        posted = post_label(url, {"query_id": "q1", "doc_id": "d1", "grade": 1},
                            Host=f"localhost:{port}")  # fmt: skip
        assert posted.status_code == 403
        assert httpx.get(url + route).status_code == 200
    assert not labels.exists()


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://127.0.0.1:1"])
def test_a_post_from_another_origin_is_refused(tmp_path: Path, origin: str) -> None:
    good = {"query_id": "q1", "doc_id": "d1", "grade": 1}
    with running(tmp_path) as (url, labels):
        assert post_label(url, good, Origin=origin).status_code == 403
        assert httpx.post(url + "done", json={}, headers={"Origin": origin}).status_code == 403
        assert not labels.exists()
        assert post_label(url, good, Origin=url.rstrip("/")).status_code == 200
    assert len(lines(labels)) == 1


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.org", ""])
def test_a_host_off_the_loopback_is_refused(tmp_path: Path, host: str) -> None:
    pairs = write_jsonl(tmp_path / "pairs.jsonl", PAIRS)
    with pytest.raises(ConfigError, match="listens only on this machine"):
        serve(pairs, tmp_path / "labels.jsonl", by="alice", host=host)


def test_the_page_is_self_contained_and_locked_down(tmp_path: Path) -> None:
    with running(tmp_path) as (url, _):
        answer = httpx.get(url)
        unknown = httpx.get(url + "nothing")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/html; charset=utf-8"
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["referrer-policy"] == "no-referrer"
    policy = answer.headers["content-security-policy"]
    assert policy.startswith("default-src 'none'; script-src 'sha256-") and "unsafe" not in policy
    assert "connect-src 'self'" in policy
    page = answer.text
    assert not re.search(r"https?:|//[a-z]|\bsrc=|\bhref=|@import|url\(", page)
    assert "<script>" in page and "judging as <strong>alice</strong>" in page
    assert unknown.status_code == 404 and unknown.json()["error"]


def test_the_judges_name_and_paths_are_escaped_into_the_page(tmp_path: Path) -> None:
    by = "<script>alert(1)</script>"
    with running(tmp_path, by=by) as (url, labels):
        page = httpx.get(url).text
        assert post_label(url, {"query_id": "q1", "doc_id": "d1", "grade": 1}).status_code == 200
    assert by not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert lines(labels)[0]["by"] == by


def test_ctrl_c_stops_it_cleanly_and_requests_are_not_logged(tmp_path: Path) -> None:
    pairs = write_jsonl(tmp_path / "pairs.jsonl", PAIRS)
    code = (
        "import sys; from pathlib import Path; from harness.judge.page import serve\n"
        "sys.exit(serve(Path(sys.argv[1]), Path(sys.argv[2]), by='alice',"
        " on_ready=lambda u: print(u, flush=True)))\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code, str(pairs), str(tmp_path / "labels.jsonl")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", url)
        assert httpx.get(url).status_code == 200
        assert post_label(url, {"query_id": "q1", "doc_id": "d1", "grade": 2}).status_code == 200
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 0 and err == "" and out == ""


@pytest.mark.parametrize("stop", ["done", "ctrl-c"])
def test_the_cli_prints_the_url_saves_a_label_and_exits_0(tmp_path: Path, stop: str) -> None:
    pairs = write_jsonl(tmp_path / "pairs.jsonl", PAIRS)
    labels = tmp_path / "labels.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.cli.main", "judge", "page", str(pairs),
         "--labels", str(labels), "--by", "alice", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        first: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: first.put(process.stdout.readline()),  # type: ignore[union-attr]
                         daemon=True).start()  # fmt: skip
        line = first.get(timeout=30)
        found = re.fullmatch(r"judging page: (http://127\.0\.0\.1:\d+/) \u2014 Ctrl-C to stop\n",
                             line)  # fmt: skip
        assert found, line
        url = found[1]
        answer = post_label(url, {"query_id": "q3", "doc_id": "d3", "grade": 3})  # default Host
        assert answer.status_code == 200, answer.text
        assert lines(labels) == [{"query_id": "q3", "doc_id": "d3", "grade": 3, "by": "alice",
                                  "kind": "person", "at": lines(labels)[0]["at"],
                                  "from": "pairs.jsonl"}]  # fmt: skip
        if stop == "done":
            assert httpx.post(url + "done", json={}).status_code == 200
        else:
            process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
        process.wait()
    assert (process.returncode, out, err) == (0, "", "")
    with pytest.raises(ProcessLookupError):
        os.kill(process.pid, 0)  # reaped: gone
    with pytest.raises(httpx.ConnectError):
        httpx.get(url)


# --------------------------------------------------------------------------- the pairs file


def test_a_csv_pairs_file_reads_like_the_jsonl(tmp_path: Path) -> None:
    import csv

    path = tmp_path / "pairs.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(PAIRS[0]))
        writer.writeheader()
        for row in PAIRS:
            writer.writerow({k: "" if v is None else v for k, v in row.items()})
    # One reader for both (harness judge label pipes these rows on): "" rank is null, ints ints.
    from_csv = read_pairs(path)
    assert from_csv == read_pairs(write_jsonl(tmp_path / "pairs.jsonl", PAIRS)) == PAIRS
    shown = load_pairs(path)  # the page's: by order
    assert [p.doc_id for p in shown] == ["d1", "d2", "d3"]
    assert shown[2].baseline_rank is None and shown[2].candidate_rank == 1


def test_a_bad_pairs_file_names_every_line_and_field(tmp_path: Path) -> None:
    rows = [json.dumps(PAIRS[0]), "{oops", json.dumps(pair("q5", "d5", "first")),
            json.dumps(pair("q6", "", 1, baseline_rank=0)), json.dumps(PAIRS[0]),
            json.dumps({k: v for k, v in PAIRS[1].items() if k != "why"}), "[]"]  # fmt: skip
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(GoldError) as raised:
        load_pairs(path)
    said = str(raised.value)
    assert f"{path}: the pairs file is invalid: 7 problems" in said
    for where in [":2: malformed JSON", ":3: order: must be a whole number",
                  ":4: doc_id: doc_id is a non-blank string", ":4: baseline_rank: must be a rank",
                  ":5: pair ('q2', 'd2') is listed twice (line 1 too)", ":6: why: missing",
                  ":7: expected a JSON object"]:  # fmt: skip
        assert f"{path}{where}" in said
    with pytest.raises(GoldError, match="header lacks order, query, title, text"):
        bad = tmp_path / "bad.csv"
        bad.write_text("query_id,doc_id\nq1,d1\n", encoding="utf-8")
        read_pairs(bad)


def test_a_bad_csv_row_is_named_at_its_line(tmp_path: Path) -> None:
    import csv

    path = tmp_path / "pairs.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(PAIRS[0])
        writer.writerow(["" if v is None else v for v in PAIRS[0].values()])
        bad_rank = PAIRS[1] | {"baseline_rank": "x"}
        writer.writerow(["" if v is None else v for v in bad_rank.values()])
        writer.writerow(["q9", "short"])
    with pytest.raises(GoldError) as raised:
        load_pairs(path)
    said = str(raised.value)
    assert f"{path}:3: baseline_rank: must be a rank" in said
    assert f"{path}:4: has 2 cells, the header 10" in said


def test_serve_refuses_a_bad_or_missing_pairs_file_before_listening(tmp_path: Path) -> None:
    ready: list[str] = []
    with pytest.raises(GoldError, match="pairs file not found"):
        serve(tmp_path / "none.jsonl", tmp_path / "l.jsonl", by="a", on_ready=ready.append)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(GoldError, match="no pairs in the file"):
        serve(empty, tmp_path / "l.jsonl", by="a", on_ready=ready.append)
    assert ready == []


# --------------------------------------------------------------------------- in a browser


def expect(locator: Any) -> Any:
    sync_api = pytest.importorskip("playwright.sync_api")
    return sync_api.expect(locator)


@contextmanager
def browsing(
    chromium: Any, url: str, routes: Mapping[str, Any] | None = None
) -> Iterator[tuple[Any, dict[str, list[str]]]]:
    """The page loaded at `url`; `routes` (pattern: handler) are in place before it loads (a
    route set on a page already loaded once let a request through on a busy machine)."""
    seen: dict[str, list[str]] = {"console": [], "errors": [], "requests": []}
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        for pattern, handler in (routes or {}).items():
            page.route(pattern, handler)
        page.on("console", lambda m: m.type == "error" and seen["console"].append(m.text))
        page.on("pageerror", lambda e: seen["errors"].append(str(e)))
        page.on("request", lambda r: seen["requests"].append(r.url))
        page.goto(url, wait_until="load")
        # Waits by locator, not wait_for_function: the page's policy forbids the eval it uses.
        expect(page.locator("#progress")).to_contain_text(" of ")
        yield page, seen
    finally:
        context.close()


def wait_for(condition: Any, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_keys_grade_move_and_regrade_in_a_browser(chromium: Any, tmp_path: Path) -> None:
    with running(tmp_path) as (url, labels), browsing(chromium, url) as (page, seen):
        assert page.inner_text("#progress") == "0 of 3 judged"
        assert page.inner_text("#query") == "what is q1?"  # order 1 first
        assert page.inner_text("#baseline") == "ranked #3"
        assert page.inner_text("#candidate") == "not in its results"
        legend = page.inner_text(".legend")
        for words in ["not relevant", "relevant", "highly relevant", "perfectly relevant"]:
            assert words in legend
        page.keyboard.press("2")
        expect(page.locator("#progress")).to_have_text("1 of 3 judged")
        assert [(x["doc_id"], x["grade"], x["by"]) for x in lines(labels)] == [("d1", 2, "alice")]
        assert page.inner_text("#query") == "what is q2?"  # on to the next unjudged
        page.keyboard.press("k")
        assert page.inner_text("#grade") == "2, highly relevant (saved)"
        page.keyboard.press("0")
        wait_for(lambda: len(lines(labels)) == 2)
        expect(page.locator("#status")).to_have_text("saved 0 (not relevant) for q1 / d1")
        assert page.inner_text("#query") == "what is q2?"  # on again to the next unjudged
        page.keyboard.press("ArrowLeft")
        assert page.inner_text("#grade") == "0, not relevant (saved)"
        assert lines(labels)[-1] | {"at": None} == {"query_id": "q1", "doc_id": "d1", "grade": 0,
                                                    "by": "alice", "kind": "person", "at": None,
                                                    "from": "pairs.jsonl"}  # fmt: skip
        assert page.inner_text("#progress") == "1 of 3 judged"
        page.keyboard.press("ArrowRight")
        page.keyboard.press("j")
        assert page.inner_text("#query") == "what is q3?"
        assert page.inner_text("#baseline") == "not in its results"
        assert page.is_hidden("#finished") and page.is_hidden("#error")
        requests = list(seen["requests"])
    assert seen["console"] == [] and seen["errors"] == []
    assert requests and all(r.startswith(url) for r in requests), requests  # 127.0.0.1 only
    assert url.startswith("http://127.0.0.1:")


def test_a_failed_save_shows_an_error_and_keeps_the_pair_unjudged(
    chromium: Any, tmp_path: Path
) -> None:
    def disk_full(route: Any) -> None:
        route.fulfill(status=500, content_type="application/json", body='{"error": "disk full"}')

    with (
        running(tmp_path) as (url, labels),
        browsing(chromium, url, {"**/label": disk_full}) as (page, _),
    ):
        page.keyboard.press("1")
        expect(page.locator("#error")).to_contain_text("disk full")  # waits: no fixed sleep
        assert "Not saved" in page.inner_text("#error")
        expect(page.locator("#progress")).to_have_text("0 of 3 judged")
        expect(page.locator("#grade")).to_have_text("not judged yet")
        expect(page.locator("#query")).to_have_text("what is q1?")  # stays on the pair
        page.keyboard.press("j")  # drawn again from what the page holds: still unjudged
        expect(page.locator("#query")).not_to_have_text("what is q1?")
        page.keyboard.press("k")
        expect(page.locator("#query")).to_have_text("what is q1?")
        expect(page.locator("#grade")).to_have_text("not judged yet")
        expect(page.locator("#progress")).to_have_text("0 of 3 judged")
        page.unroute("**/label")
        page.keyboard.press("1")  # a retry saves it
        expect(page.locator("#progress")).to_have_text("1 of 3 judged")
        expect(page.locator("#error")).to_be_hidden()
    assert [x["grade"] for x in lines(labels)] == [1]


def test_data_is_shown_as_text_never_as_markup(chromium: Any, tmp_path: Path) -> None:
    hostile = "<img src=x onerror=\"document.title='owned'\"><b>bold</b>"
    rows = [pair("q1", "d1", 1, title=hostile, text=hostile, query=hostile, why=hostile)]
    with running(tmp_path, rows) as (url, _), browsing(chromium, url) as (page, seen):
        assert page.inner_text("#text") == hostile and page.inner_text("#title") == hostile
        assert page.eval_on_selector_all("main img, main b", "e => e.length") == 0
        assert page.title() != "owned"
    assert all(r.startswith(url) for r in seen["requests"])


def test_the_last_grade_says_what_to_run_next(chromium: Any, tmp_path: Path) -> None:
    old = {"by": "alice", "kind": "person", "at": "2026-12-06T07:10:00Z", "from": "pairs.jsonl"}
    write_jsonl(tmp_path / "labels.jsonl", [
        {"query_id": "q1", "doc_id": "d1", "grade": 1, **old},
        {"query_id": "q3", "doc_id": "d3", "grade": 0, **old},
    ])  # fmt: skip
    with running(tmp_path) as (url, labels), browsing(chromium, url) as (page, _):
        assert page.inner_text("#progress") == "2 of 3 judged"
        assert page.inner_text("#query") == "what is q2?"  # resumed at the one left
        assert page.is_hidden("#finished")
        page.keyboard.press("3")
        page.wait_for_selector("#finished", state="visible")
        assert page.inner_text("#progress") == "3 of 3 judged"
        assert f"harness judge merge GOLD {labels} --out NEW" in page.inner_text("#finished")
        page.click("#stop")
        expect(page.locator("#status")).to_contain_text("has stopped")

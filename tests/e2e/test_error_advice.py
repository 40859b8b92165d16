"""Failures that explain themselves: per side and kind, HTTP statuses, one sample body (left out
under --redact) and the advice that fits; pure verdict code, then the real CLI on a real service.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from compare_support import FAST, candidate, make_gold, make_run, ranks
from e2e_support import build_sandbox, config_text, git, load_json, record_paths

from harness.report.page import render
from harness.results.document import comparison_to_dict
from harness.values.types import ErrorKind, RefRun
from harness.verdict import validity
from harness.verdict.decide import compare, summarise_run


def with_status(run: RefRun, status: int, body: str) -> RefRun:
    """Every HTTP_STATUS answer of `run` given `status` and the client's detail for `body`."""
    return replace(
        run,
        repeats=tuple(
            replace(
                rep,
                results=tuple(
                    replace(r, status=status, detail=f"HTTP {status}: {body}")
                    if r.error is ErrorKind.HTTP_STATUS
                    else r
                    for r in rep.results
                ),
            )
            for rep in run.repeats
        ),
    )


@pytest.mark.parametrize(
    ("status", "said"),
    [
        (422, "the body's shape is not what the endpoint takes"),
        (404, "check query.path"),
        (500, 'query.rewrite = "fts5_or"'),
        (405, "check query.method"),
        (503, "HTTP 503: the service failed: see the service log"),
    ],
)
def test_each_status_gets_the_advice_that_fits(status: int, said: str) -> None:
    assert said in validity.advice("http_status", ((status, 3),))


def test_the_most_frequent_status_decides_the_advice() -> None:
    assert validity.advice("http_status", ((404, 1), (422, 9))).startswith("HTTP 422")


def test_every_kind_has_a_sample_and_counts_over_the_usable_repeats() -> None:
    gold = make_gold()
    errors = {(r, q.id): ErrorKind.HTTP_STATUS for r in range(3) for q in gold.queries}
    errors[(1, "q07")] = ErrorKind.TIMEOUT
    run = with_status(candidate(gold, ranks(), errors=errors), 422, '{"detail":"field q: x"}')
    (http, timeout) = validity.error_kinds(gold, run, "candidate")
    assert (http.kind, http.count, http.asked) == ("http_status", 3 * len(gold) - 1, 3 * len(gold))
    assert http.statuses == ((422, 3 * len(gold) - 1),)
    assert http.sample == 'HTTP 422: {"detail":"field q: x"}' and http.sample_query == "q01"
    assert "form" in http.advice
    assert (timeout.kind, timeout.count, timeout.sample) == ("timeout", 1, "boom")


def test_a_long_sample_is_clipped() -> None:
    gold = make_gold()
    errors = {(0, "q01"): ErrorKind.HTTP_STATUS}
    run = with_status(candidate(gold, ranks(), errors=errors), 500, "x" * 5000)
    (summary,) = validity.error_kinds(gold, run, "candidate")
    assert summary.sample is not None and len(summary.sample) < 260


def test_all_failed_says_check_the_request_not_max_errors() -> None:
    gold = make_gold()
    errors = {(r, q.id): ErrorKind.HTTP_STATUS for r in range(3) for q in gold.queries}
    run = with_status(candidate(gold, ranks(), errors=errors), 422, "{}")
    c = compare(gold, make_run(gold, ranks()), run, FAST)
    (reason,) = [r for r in c.invalid_reasons if "errored answer" in r]
    assert "every query failed" in reason and "query.path" in reason and "query.ids" in reason
    assert "raise compare.max_errors" not in reason
    assert "HTTP 422: the body's shape" in reason


def test_nearly_all_failed_is_said_too() -> None:
    gold = make_gold()
    errors = {(r, q.id): ErrorKind.NO_MATCH for r in range(3) for q in gold.queries[2:]}
    c = compare(gold, make_run(gold, ranks()), candidate(gold, ranks(), errors=errors), FAST)
    (reason,) = [r for r in c.invalid_reasons if "errored answer" in r]
    assert "nearly every query failed" in reason and "raise compare.max_errors" not in reason


def test_the_sample_is_in_every_report_and_left_out_under_redact() -> None:
    gold = make_gold()
    errors = {(0, "q03"): ErrorKind.HTTP_STATUS}
    run = with_status(candidate(gold, ranks(), errors=errors), 422, "SECRET-BODY")
    c = compare(gold, make_run(gold, ranks()), run, FAST)
    for fmt in ("text", "markdown", "json"):
        assert "SECRET-BODY" in render(c, fmt), fmt
        assert "SECRET-BODY" not in render(c, fmt, redact=True), fmt
    assert "sample body left out (--redact)" in render(c, "text", redact=True)
    (saved,) = comparison_to_dict(c, redact=True)["errors"]
    assert saved["sample"] is None and saved["statuses"] == [[422, 1]]


def test_harness_run_summary_has_the_kinds_too() -> None:
    gold = make_gold()
    run = with_status(candidate(gold, ranks(), errors={(0, "q03"): ErrorKind.HTTP_STATUS}), 404, "")
    (summary,) = summarise_run(gold, run, FAST).error_kinds
    assert summary.statuses == ((404, 1),) and "query.path" in summary.advice


# --------------------------------------------------------------------------- end to end

FORM_ONLY = textwrap.dedent(
    '''
    """Answers /health; /search takes only a form (a JSON body gets FastAPI's 422 shape)."""
    import argparse, http.server, json

    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int)
    ap.add_argument("--data")
    args = ap.parse_args()


    class Handler(http.server.BaseHTTPRequestHandler):
        def _send(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/health":
                return self._send(200, {"ok": True})
            self._send(405, {"detail": "Method Not Allowed"})

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            miss = {"type": "missing", "loc": ["body", "q"], "msg": "Field required SECRET"}
            self._send(422, {"detail": [miss]})

        def log_message(self, *args):
            pass


    http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()
    '''
)


def test_a_service_refusing_every_json_body_explains_itself_and_redact_hides_the_body(
    tmp_path: Path,
) -> None:
    sandbox = build_sandbox(tmp_path / "x", {})
    (sandbox.repo / "svc.py").write_text(FORM_ONLY)
    git(sandbox.repo, "commit", "--quiet", "-am", "a form-only service", home=sandbox.home)
    config = sandbox.root / "harness.toml"
    text = config_text(gold=str(sandbox.repo / "gold" / "gold.jsonl"), repeats=1)
    text = text.replace(
        'params = { q = "{query}", k = "{limit}" }',
        'method = "POST"\njson = { q = "{query}", k = "{limit}" }',
    )
    config.write_text(text)
    shown = sandbox.harness(
        "compare", "--baseline", "main", "--candidate", "main", "--repeats", "1", config=config
    )
    said = shown.stdout + shown.stderr  # what a failure shows: why, when it is not this
    assert shown.returncode == 3, said
    assert "every query failed" in shown.stdout, said
    assert "HTTP 422: the body's shape is not what the endpoint takes" in shown.stdout
    assert "Field required SECRET" in shown.stdout  # the sample body, clipped
    assert "raise compare.max_errors" not in shown.stdout
    hidden = sandbox.harness(
        "compare",
        "--baseline",
        "main",
        "--candidate",
        "main",
        "--repeats",
        "1",
        "--redact",
        config=config,
        results=sandbox.root / "redacted",
    )
    assert hidden.returncode == 3, hidden.stderr
    assert "SECRET" not in hidden.stdout and "HTTP 422: the body's shape" in hidden.stdout
    for path in [*record_paths(sandbox.root / "redacted")]:
        assert "SECRET" not in path.read_text()
    saved = next((sandbox.root / "redacted").glob("*/comparison.json"))
    assert "SECRET" not in saved.read_text()
    assert all(e["sample"] is None for e in load_json(saved)["errors"])  # type: ignore[union-attr]
    assert json.loads(saved.read_text())["errors"][0]["statuses"] == [[422, 80]]  # 80 queries
    assert sandbox.worktrees() == [] and sandbox.leftovers() == []


def test_a_comparison_saved_before_errors_and_prepare_existed_reads_back() -> None:
    from harness.results.document import comparison_from_dict

    gold = make_gold()
    c = compare(gold, make_run(gold, ranks()), candidate(gold, ranks()), FAST)
    document = comparison_to_dict(c)
    del document["errors"], document["prepare"]
    old = comparison_from_dict(json.loads(json.dumps(document)))
    assert old.errors == () and old.prepare == ()

"""`summarise_run`: what `harness run` prints of one ref, from in-memory runs (no services)."""

from __future__ import annotations

import json

from compare_support import FAST, buried, make_gold, make_run, ranks

from harness.report.runs import render_failures, render_run
from harness.values.types import ErrorKind, RunFailure
from harness.verdict.decide import summarise_run


def test_metrics_are_means_over_repeats_and_errors_are_not_scored_as_misses() -> None:
    gold = make_gold()
    answerable = [q for q in gold.queries if q.answerable]
    timed_out = answerable[-1]  # not one of the buried q01..q04
    run = make_run(gold, ranks(buried(1, 2, 3, 4)), errors={(0, timed_out.id): ErrorKind.TIMEOUT})
    summary = summarise_run(gold, run, FAST)
    name, n, values = summary.scopes[0]
    # The timed-out query is left out of every repeat (it has no ranking in repeat 0), so the
    # 4 buried answers are the only misses among the others, in every repeat.
    assert (name, n) == ("all", len(answerable) - 1)
    assert abs(values["hit@5"] - (len(answerable) - 1 - 4) / (len(answerable) - 1)) < 1e-12
    assert summary.errors == {"timeout": 1}
    assert summary.latency is not None and summary.latency.n == 3 * len(gold) - 1
    assert summary.drift["hit@5"] == 0  # an outage is not drift
    for scope, count, _ in summary.scopes[1:]:
        assert count > 0, scope  # a slice of unanswerable queries only is not a metrics row


def test_table_and_json_say_errors_latency_metrics_and_drift() -> None:
    gold = make_gold()
    run = make_run(gold, ranks(), errors={(1, "q05"): ErrorKind.HTTP_STATUS})
    summary = summarise_run(gold, run, FAST)
    text = render_run(summary, "table")
    assert "errored answers (not scored): http_status 1" in text
    assert "latency ms over" in text and "p95" in text
    assert "slice " in text and "drift: hit@5" in text
    doc = json.loads(render_run(summary, "json"))
    assert doc["errors"] == {"http_status": 1}
    assert doc["metrics"]["all"]["n"] == sum(q.answerable for q in gold.queries) - 1  # q05 out
    assert set(doc["latency_ms"]) >= {"p50", "p95", "p99", "max", "mean"}


def test_a_run_is_complete_only_without_failures_and_errored_answers() -> None:
    gold = make_gold()
    assert summarise_run(gold, make_run(gold, ranks()), FAST).complete
    errored = make_run(gold, ranks(), errors={(1, "q05"): ErrorKind.HTTP_STATUS})
    assert not summarise_run(gold, errored, FAST).complete
    failed = make_run(gold, ranks(), failures={2: RunFailure("boot", "exited", ("log line",))})
    assert not summarise_run(gold, failed, FAST).complete


def test_failures_go_to_stderr_once_each_with_their_log_lines() -> None:
    gold = make_gold()
    boot = RunFailure("boot", "exited at boot with status 3", ("Traceback", "ValueError: port"))
    run = make_run(gold, ranks(), failures={0: boot, 1: boot})
    assert render_failures(run) == (
        "harness: error: boot: exited at boot with status 3\nTraceback\nValueError: port\n"
    )
    assert render_failures(make_run(gold, ranks())) == ""

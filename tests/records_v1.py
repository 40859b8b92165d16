"""The run record as harness wrote it before issue 28 (schema_version 1: every answer a JSON
object in the one file), kept verbatim from harness/results/records.py of that time as the
oracle of the promise that such records still load (tests/results/test_records.py,
tests/results/test_columnar_records.py). Never imported by harness."""

from __future__ import annotations

from typing import Any

from harness.results.records import bounded_texts
from harness.values.types import Machine, QueryResult, RefRun, RunFailure


def _failure_to_dict(failure: RunFailure | None) -> dict[str, Any] | None:
    if failure is None:
        return None
    return {"stage": failure.stage, "message": failure.message, "log_tail": list(failure.log_tail)}


def _machine_to_dict(machine: Machine | None) -> dict[str, Any] | None:
    if machine is None:
        return None
    return {
        "load_before": machine.load_before,
        "load_after": machine.load_after,
        "cpu_count": machine.cpu_count,
        "client_cpu_ns": machine.client_cpu_ns,
    }


def _result_to_dict(r: QueryResult, limit: int | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "query_id": r.query_id,
        "ids": list(r.ids),
        "scores": None if r.scores is None else list(r.scores),
        "status": r.status,
        "error": None if r.error is None else r.error.value,
        "detail": r.detail,
        "latency_ns": r.latency_ns,
    }
    if r.texts is not None:  # only with query.texts: older records have no such key
        record["texts"] = bounded_texts(r.ids, r.texts, limit)
    return record


def run_to_dict_v1(run: RefRun) -> dict[str, Any]:
    limit = run.query_config.get("limit")
    limit = limit if isinstance(limit, int) else None
    return {
        "schema": "harness-run",
        "schema_version": 1,
        "ref": run.ref,
        "sha": run.sha,
        "config_hash": run.config_hash,
        "gold_hash": run.gold_hash,
        "corpus_hash": run.corpus_hash,
        "tool_version": run.tool_version,
        "host": dict(run.host),
        "query_config": dict(run.query_config),
        "build_failure": _failure_to_dict(run.build_failure),
        "timings_s": dict(run.timings_s),
        "build_cached": run.build_cached,
        "pair_id": run.pair_id,
        "concurrency": run.concurrency,
        "inputs_hash": run.inputs_hash,
        "definition": None if run.definition is None else run.definition.to_dict(),
        "order_seed": run.order_seed,
        "latency_budget": run.latency_budget,
        "repeats": [
            {
                "index": rep.index,
                "timings_s": dict(rep.timings_s),
                "teardown_confirmed": rep.teardown_confirmed,
                "log_path": rep.log_path,
                "failure": _failure_to_dict(rep.failure),
                "sandbox": rep.sandbox,
                "machine": _machine_to_dict(rep.machine),
                "positions": list(rep.positions),
                "latency_only": rep.latency_only,
                "results": [_result_to_dict(r, limit) for r in rep.results],
            }
            for rep in run.repeats
        ],
    }

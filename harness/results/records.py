"""Run records and saved comparisons on disk: versioned JSON, sorted keys, written atomically and
never overwritten.

Layout under the results directory (see results/README.md):

    runs/<UTC stamp>_<ref slug>_<sha8>_<rand>.json   one RefRun (every repeat of one ref) ...
    runs/<UTC stamp>_<ref slug>_<sha8>_<rand>.npz    ... and its answers, column by column
    logs/<...>.log                                   service and build logs named by the records
    <UTC stamp>_<base sha8>_<cand sha8>/              one comparison (save_comparison):
                                                     comparison.json, report.md and a copy of
                                                     each run record (baseline.json + .npz, ...)

A record holds what makes two runs comparable (full SHA, config, gold and corpus hashes, tool
version, host) so `compare` can reuse a matching record and refuse to compare mismatched ones.

Version 2 (written since issue 28): the JSON is a header (everything but the answers, with
each repeat's count of answers, errors and whether all carry texts, and the sha256 and size of
the answers file); the answers are columns in the `.npz` beside it (`harness.results.sidecar`),
read only when first used. Version 1 records (every answer a JSON object in the one file) are
still read.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import secrets
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from harness import __version__
from harness.errors import ResultsError, require_schema
from harness.process.inputs import RESULTS, read_input
from harness.results.document import without_paths
from harness.results.files import read_json, utc_stamp, write_bytes_new, write_json_new
from harness.results.sidecar import Sidecar, encode, sidecar_of
from harness.score.definition import Definition, definition_from_dict, differing
from harness.text.scrub import scrub_bytes, scrub_text
from harness.values.types import (
    Answers,
    ErrorKind,
    Machine,
    QueryResult,
    RefRun,
    Repeat,
    RunFailure,
    Usage,
)

RUN_SCHEMA = "harness-run"
RUN_SCHEMA_VERSION = 2
READS = (1, 2)  # the versions load_run reads
REUSE_PARTS = ("gold", "corpus", "query", "config")  # what a record measured (find_reusable)


def host_fingerprint() -> dict[str, str]:
    """What the numbers were measured on: enough to refuse comparing across machines by mistake."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": cpu,
        "cpu_count": str(os.cpu_count() or 0),
        "hostname": platform.node(),
    }


# --------------------------------------------------------------------------- RefRun <-> JSON


def _failure_to_dict(failure: RunFailure | None) -> dict[str, Any] | None:
    if failure is None:
        return None
    return {"stage": failure.stage, "message": failure.message, "log_tail": list(failure.log_tail)}


def _failure_from_dict(data: Mapping[str, Any] | None) -> RunFailure | None:
    if data is None:
        return None
    return RunFailure(str(data["stage"]), str(data["message"]), tuple(data.get("log_tail", ())))


def _machine_to_dict(machine: Machine | None) -> dict[str, Any] | None:
    if machine is None:
        return None
    return {
        "load_before": machine.load_before,
        "load_after": machine.load_after,
        "cpu_count": machine.cpu_count,
        "client_cpu_ns": machine.client_cpu_ns,
    }


def _machine_from_dict(data: Mapping[str, Any] | None) -> Machine | None:
    if data is None:
        return None
    return Machine(
        load_before=float(data["load_before"]),
        load_after=float(data["load_after"]),
        cpu_count=int(data["cpu_count"]),
        client_cpu_ns=int(data.get("client_cpu_ns", 0)),
    )


def _usage_to_dict(usage: Usage | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    return {
        "ready_s": usage.ready_s,
        "peak_rss_bytes": usage.peak_rss_bytes,
        "cpu_s": usage.cpu_s,
        "queries": usage.queries,
        "samples": usage.samples,
    }


def _usage_from_dict(data: Mapping[str, Any] | None) -> Usage | None:
    """A repeat's `usage`: absent in records written before it was measured."""
    if data is None:
        return None
    return Usage(
        ready_s=float(data["ready_s"]),
        peak_rss_bytes=int(data["peak_rss_bytes"]),
        cpu_s=float(data["cpu_s"]),
        queries=int(data.get("queries", 0)),
        samples=int(data.get("samples", 0)),
    )


def bounded_texts(
    ids: tuple[str, ...], texts: tuple[str | None, ...], limit: int | None
) -> list[str | None]:
    """The returned texts a record keeps: those of the first occurrence of each of the first
    `limit` unique ids (what any cutoff <= query.limit reads), null elsewhere, trailing nulls
    dropped; every text whole, so a record rescored gives the numbers measured."""
    kept: list[str | None] = []
    seen: set[str] = set()
    for doc, text in zip(ids, texts, strict=False):
        if limit is not None and len(seen) >= limit:
            break
        kept.append(None if doc in seen else text)
        seen.add(doc)
    while kept and kept[-1] is None:
        kept.pop()
    return kept


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


def _result_from_dict(d: Mapping[str, Any]) -> QueryResult:
    scores = d.get("scores")
    return QueryResult(
        query_id=str(d["query_id"]),
        ids=tuple(str(i) for i in d.get("ids", ())),
        scores=None if scores is None else tuple(float(s) for s in scores),
        status=d.get("status"),
        error=None if d.get("error") is None else ErrorKind(d["error"]),
        detail=d.get("detail"),
        latency_ns=int(d.get("latency_ns", 0)),
        texts=_texts_from(d.get("texts")),
    )


def _texts_from(value: object) -> tuple[str | None, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise TypeError(f"texts is a list of strings or nulls, not {type(value).__name__}")
    return tuple(None if t is None else str(t) for t in value)


def _bounded(run: RefRun, answers: Answers) -> Answers:
    """`answers` with their texts cut to what a record keeps (`bounded_texts`)."""
    if answers.origin is not None or answers.columns.texts is None:
        return answers  # read from a record (bounded when it was written), or no texts
    limit = run.query_config.get("limit")
    limit = limit if isinstance(limit, int) else None
    return Answers.of(
        replace(r, texts=None if r.texts is None else tuple(bounded_texts(r.ids, r.texts, limit)))
        for r in answers
    )


def _repeat_header(rep: Repeat, answers: Answers) -> dict[str, Any]:
    return {
        "index": rep.index,
        "timings_s": dict(rep.timings_s),
        "teardown_confirmed": rep.teardown_confirmed,
        "log_path": rep.log_path,
        "failure": _failure_to_dict(rep.failure),
        "sandbox": rep.sandbox,
        "machine": _machine_to_dict(rep.machine),
        "positions": list(rep.positions),
        "latency_only": rep.latency_only,
        "usage": _usage_to_dict(rep.usage),
        "answers": len(answers),
        "errors": answers.errors,
        "texts": answers.all_texts,
    }


def _copied(run: RefRun) -> tuple[Path, str] | None:
    """(answers file, sha256) when `run`'s repeats are exactly every repeat of one answers
    file, in order: saved again, it is copied, not encoded again."""
    origins = [rep.answers.origin for rep in run.repeats]
    if not origins or any(o is None for o in origins):
        return None
    files = {(o[0], o[1], o[3]) for o in origins if o is not None}
    places = [o[2] for o in origins if o is not None]
    if len(files) != 1 or places != list(range(len(origins))):
        return None
    path, sha, repeats = files.pop()
    return (Path(path), sha) if repeats == len(origins) else None


def encode_run(run: RefRun, *, redact: bool = False) -> tuple[dict[str, Any], bytes]:
    """`run` as a record: its JSON header and the bytes of its answers file; with `redact`,
    without what may quote a response body or a document (`_redacted_header`)."""
    copied = None if redact else _copied(run)
    data = b""
    if copied is not None:
        try:
            data = read_input(copied[0], RESULTS)
        except (OSError, ResultsError):  # gone or swapped since it was read: encoded again
            copied = None
        if hashlib.sha256(data).hexdigest() != (copied or ("", ""))[1]:
            copied = None
    answers = [_bounded(run, rep.answers) for rep in run.repeats]
    if copied is None:
        if redact:
            answers = [a.redacted() for a in answers]
        data = encode(answers)
    header = {
        "schema": RUN_SCHEMA,
        "schema_version": RUN_SCHEMA_VERSION,
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
        "build_seconds": run.build_seconds,
        "build_bytes": run.build_bytes,
        "answers": {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)},
        "repeats": [_repeat_header(rep, a) for rep, a in zip(run.repeats, answers, strict=True)],
    }
    return (_redacted_header(header) if redact else header), data


def run_from_dict(
    data: Mapping[str, Any], source: str = "<memory>", answers: Path | None = None
) -> RefRun:
    """The RefRun of a record: a version 1 document (its answers inline), or a version 2
    header whose answers are in the file `answers` (default: beside `source`)."""
    version = data.get("schema_version")
    require_schema(
        data,
        source,
        schema=RUN_SCHEMA,
        version=version if version in READS else RUN_SCHEMA_VERSION,
        what="run record",
        version_hint=["re-run with --fresh to measure it again"],
    )
    try:
        results: list[Sequence[QueryResult]] = (
            [tuple(map(_result_from_dict, rep["results"])) for rep in data["repeats"]]
            if version == 1
            else list(_later(data, source, answers))
        )
        repeats = tuple(
            Repeat(
                index=int(rep["index"]),
                results=got,
                timings_s={str(k): float(v) for k, v in rep.get("timings_s", {}).items()},
                teardown_confirmed=bool(rep.get("teardown_confirmed", False)),
                log_path=rep.get("log_path"),
                failure=_failure_from_dict(rep.get("failure")),
                sandbox=rep.get("sandbox"),
                machine=_machine_from_dict(rep.get("machine")),
                positions=tuple(int(p) for p in rep.get("positions", ())),
                latency_only=bool(rep.get("latency_only", False)),
                usage=_usage_from_dict(rep.get("usage")),
            )
            for rep, got in zip(data["repeats"], results, strict=True)
        )
        return RefRun(
            ref=str(data["ref"]),
            sha=str(data["sha"]),
            config_hash=str(data["config_hash"]),
            gold_hash=str(data["gold_hash"]),
            corpus_hash=data.get("corpus_hash"),
            tool_version=str(data["tool_version"]),
            host={str(k): str(v) for k, v in data.get("host", {}).items()},
            repeats=repeats,
            query_config=dict(data.get("query_config", {})),
            build_failure=_failure_from_dict(data.get("build_failure")),
            timings_s={str(k): float(v) for k, v in data.get("timings_s", {}).items()},
            build_cached=data.get("build_cached"),
            record_path=source,
            pair_id=data.get("pair_id"),
            concurrency=int(data.get("concurrency", 1)),
            inputs_hash=data.get("inputs_hash"),
            definition=definition_from_dict(data.get("definition")),
            order_seed=None if data.get("order_seed") is None else int(data["order_seed"]),
            latency_budget=data.get("latency_budget"),
            build_seconds=_seconds(data.get("build_seconds")),
            build_bytes=None if data.get("build_bytes") is None else int(data["build_bytes"]),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ResultsError(f"{source}: malformed run record ({exc!r})") from None


def _later(data: Mapping[str, Any], source: str, answers: Path | None) -> list[Answers]:
    """Each repeat's answers, read from the answers file when first used."""
    entry, repeats = data["answers"], data["repeats"]
    path = answers if answers is not None else sidecar_of(Path(source))
    counts = [(int(rep["answers"]), int(rep["errors"])) for rep in repeats]
    sidecar = Sidecar(path, str(entry["sha256"]), int(entry["bytes"]), counts)
    sidecar.check_present()
    return [
        Answers.later(
            int(rep["answers"]),
            int(rep["errors"]),
            bool(rep["texts"]),
            partial(sidecar.repeat, r),
            (str(path), sidecar.sha256, r, len(repeats)),
        )
        for r, rep in enumerate(repeats)
    ]


# --------------------------------------------------------------------------- the results directory


def _slug(ref: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", ref).strip("-")[:40] or "ref"


def save_run(results_dir: Path, run: RefRun, *, redact: bool = False) -> Path:
    """Write `run` as a new record under results_dir/runs/ and return its path; with `redact`,
    without the error details (`encode_run`)."""
    name = f"{utc_stamp()}_{_slug(run.ref)}_{run.sha[:8]}_{secrets.token_hex(3)}.json"
    return write_record(results_dir / "runs" / name, run, redact=redact)


def write_record(path: Path, run: RefRun, *, redact: bool = False) -> Path:
    """Write `run` as the record `path` (X.json) with its answers beside it (X.npz): the
    answers first, so a header is never there without them; neither file is ever overwritten.
    A crash between the two leaves an answers file no header names, which nothing reads."""
    header, data = encode_run(run, redact=redact)
    if not _linked(run, header, data, sidecar_of(path), redact):
        write_bytes_new(sidecar_of(path), data)
    return write_json_new(path, header)


def _linked(run: RefRun, header: Mapping[str, Any], data: bytes, target: Path,
            redact: bool) -> bool:
    """Whether the answers file `encode_run` copied unchanged (every repeat of one file, its
    bytes as recorded, no credential in them to scrub) was hard-linked as `target` instead of
    written again: records are never overwritten, so two names of one file stay equal. False
    (then it is written) when they are not such a copy or the link fails (another file
    system)."""
    copied = None if redact else _copied(run)
    if copied is None or header["answers"]["sha256"] != copied[1] or scrub_bytes(data) != data:
        return False
    try:
        os.link(copied[0], target.with_name(scrub_text(target.name)))
    except OSError:
        return False
    return True


def _redacted_header(record: dict[str, Any]) -> dict[str, Any]:
    """A record's header without what may quote a response body, the query text or a document
    (its answers file loses every error detail and returned text: `Answers.redacted`; error
    kinds and ids stay): each log path becomes its file name (logs/ of the same results
    directory), a failure keeps its message without paths and no service log tail, and no
    repeat claims its texts. A record without texts is never reused for a run that asks for
    them."""
    for failure in [record.get("build_failure"), *(r.get("failure") for r in record["repeats"])]:
        if failure:
            failure["message"] = without_paths(failure["message"])
            failure["log_tail"] = []  # the service's own words may quote a query
    for rep in record["repeats"]:
        if rep.get("log_path"):
            rep["log_path"] = Path(rep["log_path"]).name
        if "texts" in rep:
            rep["texts"] = False
    return record


def load_run(path: Path) -> RefRun:
    """The record `path`: its header read now, its answers (version 2) when first used."""
    return run_from_dict(read_json(path), str(path))


def load_record(path: Path, side: str = "candidate") -> RefRun:
    """A run record file, or a saved comparison directory (its `side`.json record)."""
    if path.is_dir():
        record = path / f"{side}.json"
        if not record.is_file():
            raise ResultsError(
                f"{path}: neither a run record nor a comparison directory with {side}.json",
                ["pass results/runs/<record>.json, or a results/<stamp>_<sha8>_<sha8>/ directory"],
            )
        return load_run(record)
    return load_run(path)


def iter_runs(results_dir: Path) -> Iterator[RefRun]:
    """Every readable run record, newest first; unreadable ones are skipped (they are not ours)."""
    for path in sorted((results_dir / "runs").glob("*.json"), reverse=True):
        try:
            yield load_run(path)
        except ResultsError:
            continue


def find_reusable(
    results_dir: Path,
    *,
    sha: str,
    config_hash: str,
    gold_hash: str,
    corpus_hash: str | None,
    repeats: int,
    inputs_hash: str | None = None,
    concurrency: int = 1,
    texts: bool = False,
    definition: Definition | None = None,
    queries: int | None = None,
) -> RefRun | None:
    """The newest complete, clean record measured on exactly these inputs with this tool version.

    Complete: at least `repeats` quality repeats, each holding an answer to every one of the
    gold set's `queries` (a compare that stopped early, as the sequential one does, records only
    the queries it asked; such a record serves no other compare, which may need the rest).

    The key: the commit (sha, with the dirty hash of an uncommitted tree), the side's effective
    configuration (config_hash), the gold set and corpus hashes, the contents of every file the
    configuration names by path outside the checkout (inputs_hash,
    `harness.config.inputs`), the tool version, the concurrency, and at least `repeats`
    repeats.  A record with a failure, an errored query or an unconfirmed teardown is never
    reused: the point of reuse is to skip re-measuring something already measured well; nor,
    when `texts` (query.texts is set), one whose answers lack their returned texts (redacted);
    nor one whose evaluation definition differs from `definition` in what it measured (gold,
    corpus, query settings, configuration: `REUSE_PARTS`; a record made before definitions
    were recorded is judged by the keys above alone).  A
    reused record serves quality only: its latencies were measured at another time and are
    never paired with new ones (see `harness.verdict.decide`).
    """
    for run in iter_runs(results_dir):
        if (
            run.sha == sha
            and run.config_hash == config_hash
            and run.gold_hash == gold_hash
            and run.corpus_hash == corpus_hash
            and run.tool_version == __version__
            and run.inputs_hash == inputs_hash
            and run.concurrency == concurrency
            and sum(not rep.latency_only for rep in run.repeats) >= repeats
            and (
                queries is None
                or all(len(rep.results) == queries for rep in run.repeats if not rep.latency_only)
            )
            and not run.failures
            and all(rep.errors == 0 and rep.teardown_confirmed for rep in run.repeats)
            and not (texts and not all(rep.answers.all_texts for rep in run.repeats))
            and not (
                definition is not None
                and run.definition is not None
                and differing(run.definition, definition, REUSE_PARTS)
            )
        ):
            return run
    return None


def _seconds(value: Any) -> float | None:
    return None if value is None else float(value)

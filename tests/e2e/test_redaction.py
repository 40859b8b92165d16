"""`--redact`: "leave query, document and span text and local paths out of every output" (README),
checked in every file a redacted compare writes, not only in the rendered report.

What may carry text: a flip's query text (comparison.json, report.md, stdout) and a failed query's
error detail, which quotes the response body, which many services fill with the query
(baseline.npz and candidate.npz, the answers of the copies of the run records:
results.comparisons). Each
test first shows the unredacted output does hold the text, so that "absent" means redacted.

The run records under results/runs/, written as each run finishes, are redacted as they are
written (RunPlan.redact); the services' own logs under results/logs/ are theirs, never rewritten
by harness (scrubbed of secrets only).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from compare_support import buried, candidate, make_gold, make_run, ranks
from e2e_support import Sandbox, build_sandbox, query_id, query_ids
from records_support import SAVED_FILES

from harness.report.saved import save_comparison
from harness.results.records import load_run
from harness.values.types import ErrorKind, GoldSet, RefRun
from harness.verdict.comparison import CompareSettings
from harness.verdict.decide import compare

SECRET = "told to fail on"  # every error detail below starts with this


def files_holding(root: Path, needles: list[str]) -> dict[str, list[str]]:
    """Every file under root (relative path) and which needles it holds."""
    found = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8", errors="replace")
        hits = [n for n in needles if n in text]
        if hits:
            found[str(path.relative_to(root))] = hits
    return found


# --------------------------------------------------------------------------- save_comparison


def _with_quoting_details(run: RefRun, gold: GoldSet) -> RefRun:
    """Every errored query's detail quotes the query text, as a chatty service's body would."""
    text = {q.id: q.text for q in gold.queries}
    reps = tuple(
        replace(
            rep,
            results=tuple(
                replace(r, detail=f"HTTP 500: {SECRET} {text[r.query_id]}") if r.error else r
                for r in rep.results
            ),
        )
        for rep in run.repeats
    )
    return replace(run, repeats=reps)


def _saved(tmp_path: Path, redact: bool) -> tuple[Path, list[str]]:
    gold = make_gold()
    base = make_run(gold, ranks())
    errors = {(0, "q60"): ErrorKind.HTTP_STATUS, (2, "q61"): ErrorKind.HTTP_STATUS}
    cand = _with_quoting_details(
        candidate(gold, ranks(buried(*range(41, 53))), errors=errors), gold
    )
    comparison = compare(gold, base, cand, CompareSettings(resamples=500, max_errors=2))
    assert comparison.flips, "the fixture must flip queries, or there is no text to leave out"
    out = save_comparison(tmp_path, comparison, (base, cand), redact=redact)
    return out, [q.text for q in gold.queries] + [SECRET]


def test_unredacted_saved_files_do_hold_query_text_and_details(tmp_path: Path) -> None:
    out, needles = _saved(tmp_path, redact=False)
    found = files_holding(out, needles)
    # The details are answers' columns: in the record's answers file, beside its JSON header.
    assert set(found) == {"comparison.json", "report.md", "report.html", "candidate.npz"}
    assert SECRET in found["candidate.npz"]


def test_redacted_saved_files_hold_no_query_text_and_no_detail(tmp_path: Path) -> None:
    out, needles = _saved(tmp_path, redact=True)
    assert sorted(p.name for p in out.iterdir()) == SAVED_FILES
    assert files_holding(out, needles) == {}  # the page too
    assert b"q60" in (out / "candidate.npz").read_bytes()  # ids stay: only text goes
    # The copies' details are null (not "" or a placeholder), everything else as recorded.
    for side in ("baseline", "candidate"):
        run = load_run(out / f"{side}.json")
        details = [r.detail for rep in run.repeats for r in rep.results]
        assert details and all(d is None for d in details)
        errors = [r.error for rep in run.repeats for r in rep.results if r.error]
        assert errors == ([] if side == "baseline" else [ErrorKind.HTTP_STATUS] * 2)


# --------------------------------------------------------------------------- a real compare

ECHOED = query_ids(70, 71)
BURIED = query_ids(1, 12)


@pytest.fixture(scope="module")
def redacted_compare(tmp_path_factory: pytest.TempPathFactory) -> tuple[Sandbox, Path, str]:
    sandbox = build_sandbox(
        tmp_path_factory.mktemp("redaction") / "s",
        {"chatty": {"bury": BURIED, "error_on": ECHOED, "echo_errors": True}},
    )
    results = sandbox.root / "results-redacted"
    done = sandbox.harness(
        "compare", "--baseline", "main", "--candidate", "chatty", "--redact", results=results
    )
    assert done.returncode == 3, done.stderr  # failed queries: invalid, whatever else it shows
    assert sandbox.leftovers(sandbox.run_ids(results)) == []
    return sandbox, results, done.stdout + done.stderr


def _texts() -> list[str]:
    return [f"tell me about topic {q}" for q in (*BURIED, *ECHOED)] + [SECRET]


@pytest.mark.slow
def test_a_redacted_compare_writes_no_text_into_its_comparison(
    redacted_compare: tuple[Sandbox, Path, str],
) -> None:
    _, results, output = redacted_compare
    (saved,) = [p for p in results.iterdir() if p.is_dir() and p.name not in ("runs", "logs")]
    assert sorted(p.name for p in saved.iterdir()) == SAVED_FILES
    assert files_holding(saved, _texts()) == {}
    assert not [t for t in _texts() if t in output]  # nor on stdout or stderr
    asked = {r.query_id for rep in load_run(saved / "candidate.json").repeats for r in rep.results}
    assert query_id(70) in asked  # ids are kept: they name no text


@pytest.mark.slow
def test_the_fixture_does_echo_text_into_an_unredacted_record(
    redacted_compare: tuple[Sandbox, Path, str], tmp_path: Path
) -> None:
    # The control for the test below: without --redact, the candidate's errors really quote the
    # query text into its run record.
    sandbox, _, _ = redacted_compare
    sandbox.harness("run", "--ref", "chatty", "--repeats", "1", results=tmp_path)
    records = files_holding(tmp_path / "runs", [f"{SECRET} tell me about topic {ECHOED[0]}"])
    assert len(records) == 1 and "chatty" in next(iter(records))


@pytest.mark.slow
def test_a_redacted_compare_writes_no_text_into_any_file_under_results(
    redacted_compare: tuple[Sandbox, Path, str],
) -> None:
    _, results, _ = redacted_compare
    assert files_holding(results, _texts()) == {}


# --------------------------------------------------------------------------- texts, spans, paths


@pytest.fixture(scope="module")
def redacted_with_texts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Sandbox, Path, str]:
    """A real compare of a service that returns each document's text, over a gold set with
    answer spans and a 2x2 answers file, with --redact."""
    sandbox = build_sandbox(
        tmp_path_factory.mktemp("redaction-texts") / "s", {"bury12": {"bury": BURIED}}, texts=True
    )
    answers = sandbox.root / "answers.tsv"
    answers.write_text("".join(f"{q}\t1\n" for q in query_ids(1, 80)))
    results = sandbox.root / "results-redacted"
    done = sandbox.harness(
        "compare", "--baseline", "main", "--candidate", "bury12", "--redact",
        "--baseline-answers", str(answers), "--candidate-answers", str(answers),
        results=results,
    )
    assert done.returncode in (0, 1), done.stderr
    assert sandbox.leftovers(sandbox.run_ids(results)) == []
    return sandbox, results, done.stdout


def _gold_and_corpus_text() -> list[str]:
    """Every query text, document title and body, and answer span of the texts fixture."""
    from e2e_support import FILLERS, GOLD_SIZE, span

    found = []
    for n in range(1, GOLD_SIZE + 1):
        qid = query_id(n)
        found += [f"tell me about topic {qid}", f"Topic {qid}", span(n),
                  f"this document covers topic {qid} in depth"]
    return found + [f"unrelated filler page number {n}" for n in range(1, FILLERS + 1)]


def _written_by_harness(results: Path) -> list[Path]:
    """Every file harness wrote under the results directory: not logs/, where each service's
    own stdout and stderr go (they are the service's words, never rewritten by harness)."""
    return [p for p in results.rglob("*") if p.is_file() and "logs" not in p.relative_to(
        results).parts]


@pytest.mark.slow
def test_the_texts_fixture_does_write_text_and_paths_when_not_redacted(
    redacted_with_texts: tuple[Sandbox, Path, str], tmp_path: Path
) -> None:
    # The control: unredacted, a run record holds the documents' texts and local paths.
    sandbox, _, _ = redacted_with_texts
    sandbox.harness("run", "--ref", "main", "--repeats", "1", results=tmp_path)
    (record,) = (tmp_path / "runs").glob("*.json")
    texts = record.with_suffix(".npz").read_bytes()  # the answers' columns
    assert b"this document covers topic q01 in depth" in texts
    assert str(tmp_path) in record.read_text()  # the log path, as a redacted run's would be


@pytest.mark.slow
def test_a_redacted_compare_writes_only_ids_hashes_and_aggregates(
    redacted_with_texts: tuple[Sandbox, Path, str],
) -> None:
    sandbox, results, stdout = redacted_with_texts
    written = _written_by_harness(results)
    names = {p.name for p in written}
    assert {"comparison.json", "report.md", "baseline.json", "candidate.json"} <= names
    # both run records, each a JSON header and its answers
    assert len([p for p in written if p.parent.name == "runs"]) == 4
    needles = [*_gold_and_corpus_text(), str(sandbox.root), str(sandbox.repo)]
    for path in written:
        text = path.read_bytes().decode("utf-8", "replace")
        assert [n for n in needles if n in text] == [], path
    assert [n for n in needles if n in stdout] == []
    # What stays: ids, hashes and aggregates (the context metrics were measured).
    document = json.loads(next(p for p in written if p.name == "comparison.json").read_text())
    rows = {r["metric"] for r in document["overall"]["rows"]}
    assert {"context_precision@5", "context_recall@10"} <= rows
    assert len(document["header"]["definition"]["sha256"]) == 64
    assert document["twobytwo"]["baseline"]["answers"] == "answers.tsv"


def test_redaction_cuts_paths_out_of_reasons_warnings_and_failures() -> None:
    from harness.results.document import redacted
    from harness.results.records import encode_run
    from harness.values.types import RunFailure

    gold = make_gold()
    base = make_run(gold, ranks())
    log = "/home/someone/project/results/logs/20261201_main_1.log"
    failed = replace(
        base,
        repeats=(
            replace(base.repeats[0], log_path=log,
                    failure=RunFailure("boot", f"exited 3; see {log}", ("svc: tell me about q1",))),
            *base.repeats[1:],
        ),
    )
    comparison = compare(gold, failed, candidate(gold, ranks()), CompareSettings(resamples=200))
    assert any(log in r for r in comparison.invalid_reasons)  # the control
    clean = redacted(comparison)
    assert not any("/home/someone" in t for t in (*clean.invalid_reasons, *clean.warnings))
    assert any("20261201_main_1.log" in r for r in clean.invalid_reasons)
    header, data = encode_run(failed, redact=True)
    record = json.dumps(header) + data.decode("utf-8", "replace")
    assert "/home/someone" not in record and "tell me about" not in record

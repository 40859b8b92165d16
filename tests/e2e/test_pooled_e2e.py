"""A pooled gold set on a real service, its truth known: see the holes, bound the verdict, judge.

The service is SQLite FTS5's BM25 over SciFact (tests/fixtures/fts_service/svc.py), booted by
`harness compare` from a throwaway repository.  main indexes each abstract's first 60 words (a
truncating chunker); branch `full` indexes the whole abstract, a true gain (SciFact's full
qrels: hit@10 0.703 -> 0.820, 5 queries lost and 40 won); branch `titles` indexes titles only,
a true loss.  The gold set is built as a team builds one: by judging main's top 10 with the full
qrels (relevant as graded, the rest of main's top 10 judged 0, header "judged": "pooled").
The candidate's new relevant documents are then unjudged: without the bound, `full` reads no
gain (5 lost, 0 won: SciFact's wins are all among the holes).

- `full` on the pool is "inconclusive: judgments incomplete", never "no measurable difference";
- `titles` on the pool stays "regressed" (its loss holds on the judged documents alone);
- `harness judge pairs` lists what decides it; graded from the full qrels (the oracle a person
  would be) and merged by `harness judge merge`, the compare reaches the full qrels' verdict.

Slow (four compares of 300 queries, one boot a side each: SQLite's BM25 is deterministic, and
only quality is asked); skipped without ../shared.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import cli_server
import pytest
from conftest import shared_collection
from e2e_support import Sandbox, git

pytestmark = pytest.mark.slow

SERVICE = Path(__file__).resolve().parents[1] / "fixtures" / "fts_service"
CONFIG = """\
[service]
start = "{python} svc.py --port {port} --data {data}"
ready = "/health"
data = "data"
venv = false
ready_timeout = 120
stop_timeout = 1.0

[query]
path = "/search"
params = { q = "{query}", k = "{limit}" }
ids = "results[].id"
scores = "results[].score"
limit = 100

[gold]
path = "{gold}"

[compare]
repeats = 1
k = [10]
sequential = false
latency_budget = 1
"""


def _qrels(folder: Path) -> dict[str, dict[str, int]]:
    grades: dict[str, dict[str, int]] = {}
    with (folder / "qrels.tsv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            grades.setdefault(row["query-id"], {})[row["corpus-id" if "corpus-id" in row
                                                        else "doc-id"]] = int(row["score"])
    return grades


def _gold_lines(queries: list[dict[str, Any]], relevant: dict[str, dict[str, int]],
                judged: str) -> str:
    head = {"format": "harness-gold", "version": 1, "judged": judged}
    rows = [json.dumps(head)]
    for q in queries:
        rows.append(json.dumps({"id": q["id"], "query": q["text"],
                                "relevant": relevant[q["id"]], "answerable": True}))
    return "\n".join(rows) + "\n"


def _sandbox(root: Path) -> tuple[Sandbox, dict[str, dict[str, int]]]:
    folder = shared_collection("scifact")
    sandbox = Sandbox(root)
    for d in (sandbox.repo, sandbox.cache, sandbox.home, sandbox.tmp):
        d.mkdir(parents=True)
    repo, home = sandbox.repo, sandbox.home
    shutil.copyfile(SERVICE / "svc.py", repo / "svc.py")
    (repo / "data").mkdir()
    shutil.copyfile(folder / "corpus.jsonl", repo / "data" / "corpus.jsonl")
    qrels = _qrels(folder)
    with (folder / "queries.jsonl").open(encoding="utf-8") as f:
        queries = [q for q in map(json.loads, f) if q["id"] in qrels]
    # The pool: main's top 10 judged with the full qrels, as a team judging main would.
    sys.path.insert(0, str(SERVICE))
    try:
        from svc import Index, read_corpus  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(SERVICE))
    main = Index(read_corpus(str(repo / "data")), {"index": "lead"})
    pool = {
        q["id"]: {d: qrels[q["id"]].get(d, 0) for d, _ in main.search(q["text"], 10)}
        for q in queries
    }
    golds = root / "gold"  # outside the repository: judging never dirties its tree
    golds.mkdir()
    (golds / "pool.jsonl").write_text(_gold_lines(queries, pool, "pooled"))
    (golds / "full.jsonl").write_text(_gold_lines(queries, qrels, "complete"))
    (repo / ".gitignore").write_text("results/\n")
    (repo / "behaviour.json").write_text('{"index": "lead"}\n')
    git(repo, "init", "--quiet", "--initial-branch=main", home=home)
    git(repo, "add", "--all", home=home)
    git(repo, "commit", "--quiet", "-m", "FTS5 over SciFact, first 60 words", home=home)
    for name in ("full", "titles"):
        git(repo, "checkout", "--quiet", "-b", name, "main", home=home)
        (repo / "behaviour.json").write_text(json.dumps({"index": name}) + "\n")
        git(repo, "commit", "--quiet", "-am", f"index {name}", home=home)
        git(repo, "checkout", "--quiet", "main", home=home)
    return sandbox, qrels


def _compare(sandbox: Sandbox, candidate: str, gold: str) -> tuple[dict[str, Any], Path]:
    """compare main against `candidate` on the gold file `gold` (in the sandbox's gold/),
    the config outside the repository (its tree stays clean); the comparison and its folder."""
    config = sandbox.root / f"{gold}.toml"
    path = sandbox.root / "gold" / gold
    config.write_text(CONFIG.replace("{gold}", str(path)))
    before = set(sandbox.results.glob("*/comparison.json"))
    done = sandbox.harness("compare", "--baseline", "main", "--candidate", candidate,
                           "--format", "json", config=config)  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-3000:]
    (saved,) = set(sandbox.results.glob("*/comparison.json")) - before
    return json.loads(saved.read_text()), saved.parent


def _judge(sandbox: Sandbox, *args: str) -> subprocess.CompletedProcess[str]:
    """`harness judge ...` run as a user would, in the repository."""
    return cli_server.run("-m harness.cli.main", ["judge", *args], cwd=sandbox.repo,
                          env=sandbox.env(), timeout=600)  # fmt: skip


def test_a_pooled_gold_set_bounds_the_verdict_and_judging_closes_it(tmp_path: Path) -> None:
    sandbox, qrels = _sandbox(tmp_path / "x")
    golds = sandbox.root / "gold"

    truth, _ = _compare(sandbox, "full", "full.jsonl")
    assert truth["verdict"]["quality"] == "improved", truth["quality_reason"]

    pooled, saved = _compare(sandbox, "full", "pool.jsonl")
    assert pooled["verdict"]["quality"] == "inconclusive", pooled["quality_reason"]
    assert pooled["quality_reason"].startswith("judgments incomplete"), pooled["quality_reason"]
    assert "harness judge pairs" in pooled["quality_reason"]
    shares = pooled["holes"]["shares"][0]
    assert shares["baseline"] > shares["candidate"] + 0.05  # the holes, seen

    worse, _ = _compare(sandbox, "titles", "pool.jsonl")
    assert worse["verdict"]["quality"] == "regressed", worse["quality_reason"]
    twin = next(r for r in worse["holes"]["condensed"] if r["metric"] == "hit'@10")
    assert twin["verdict"] == "regressed"

    # Judge what the comparison asks for, from the full qrels, and merge it.
    pairs = tmp_path / "pairs.jsonl"
    done = _judge(sandbox, "pairs", str(saved), "--corpus", "data/corpus.jsonl",
                           "--out", str(pairs))  # fmt: skip
    assert done.returncode == 0, done.stderr
    listed = [json.loads(line) for line in pairs.read_text().splitlines()]
    assert listed and all(row["title"] or row["text"] for row in listed)
    labels = tmp_path / "labels.jsonl"
    with labels.open("w") as f:
        for row in listed:
            grade = min(3, qrels[row["query_id"]].get(row["doc_id"], 0))
            f.write(json.dumps({"query_id": row["query_id"], "doc_id": row["doc_id"],
                                "grade": grade, "by": "qrels", "kind": "person",
                                "at": "2026-12-06T07:00:00Z", "from": saved.name}) + "\n")
    done = _judge(sandbox, "merge", str(golds / "pool.jsonl"), str(labels),
                           "--out", str(golds / "pool2.jsonl"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    again, _ = _compare(sandbox, "full", "pool2.jsonl")
    assert again["verdict"]["quality"] == truth["verdict"]["quality"], again["quality_reason"]
    for name, c in (("full qrels", truth), ("pool", pooled), ("titles, pool", worse),
                    (f"pool + {len(listed)} judged pairs", again)):
        hit = next(r for r in c["overall"]["rows"] if r["metric"] == "hit@10")
        b, n = hit["hit"]["test"]["b"], hit["hit"]["test"]["c"]
        print(f"{name}: {c['verdict']['quality']}, hit@10 {hit['baseline']:.3f} -> "
              f"{hit['candidate']:.3f} (b={b} c={n}): {c['quality_reason'][:160]}")
    merged = [json.loads(line) for line in (golds / "pool2.jsonl").read_text().splitlines()]
    provenance = [(q["id"], d) for q in merged[1:] for d in q.get("judged_by", {})]
    assert len(provenance) == len({(r["query_id"], r["doc_id"]) for r in listed})

#!/usr/bin/env python
"""The "no measurable difference" rule, live, on real BM25 services over SciFact.

    pip install bm25s==0.3.16 PyStemmer      # once, into the harness's venv
    python scripts/live_equivalence.py [--data ../shared/data/scifact] [--queries 80]

Builds a throwaway git repository (removed at the end) holding a small stdlib-HTTP search
service (http.server, JSON) that builds a bm25s index of the SciFact corpus when it starts and
answers `GET /search?q=...&k=10` with `{"results": [{"id": ..., "score": ...}]}` and
`GET /health`. Its three branches:

- `main`: bm25s with English stopwords, no stemmer;
- `refactor`: the same ranking from differently structured code (the index in a module of its
  own, tokens asked for as strings instead of ids), so its answers are identical;
- `stemmer`: bm25s with PyStemmer's English stemmer, a real gain on SciFact (over the 300 test
  queries, hit@10 0.797 -> 0.837: 2 queries lost, 14 gained, McNemar exact p = 0.004).

Two gold sets sit beside the configurations, outside the repository: all 300 SciFact test
queries (`gold.path` names a BEIR folder holding copies of `queries.jsonl` and `qrels.tsv`)
and the first N answerable ones, in queries.jsonl's order (native JSONL, written here). Then
it runs the real CLI, `python -m harness.cli.main compare ... --format json`, as a subprocess,
for:

- main vs main (A/A), N queries: expected "no measurable difference";
- main vs refactor, N queries: expected "no measurable difference";
- main vs stemmer, 300 queries: expected "improved";
- main vs stemmer, N queries: for information (too few queries to promise a call).

It prints one line per compare (the quality verdict and its reason from the JSON, the latency
verdict, the exit status), then how long each compare took. Its own exit status is 0 when every
expectation held, 1 when one did not or a compare gave no comparison, 2 when bm25s or
PyStemmer is missing or the data folder is not there. Nothing here tunes the verdict: what the
CLI says is printed as it said it.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "scifact"
DATA_FILES = ("corpus.jsonl", "queries.jsonl", "qrels.tsv")
COMPARE_TIMEOUT = 1800.0  # seconds one compare may take before it counts as failed
READY_TIMEOUT = 120  # service.ready_timeout: each boot indexes 5,183 abstracts first
GIT_ENV = {
    "GIT_AUTHOR_NAME": "live-equivalence", "GIT_AUTHOR_EMAIL": "live-equivalence@localhost",
    "GIT_COMMITTER_NAME": "live-equivalence",
    "GIT_COMMITTER_EMAIL": "live-equivalence@localhost",
}

# The service on `main`: one file.
SERVICE_MAIN = '''\
"""A BM25 search service over a JSON Lines corpus: bm25s, English stopwords, no stemmer.

    python service.py --port 8080 --corpus corpus.jsonl

GET /search?q=...&k=10 answers {"results": [{"id": ..., "score": ...}]}; GET /health answers
once the index is built (it is built before the port is opened).
"""
import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import bm25s


def read_corpus(path):
    ids, texts = [], []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                doc = json.loads(line)
                ids.append(str(doc.get("_id", doc.get("id"))))
                texts.append(f"{doc.get('title', '')} {doc.get('text', '')}")
    return ids, texts


class Search:
    def __init__(self, path):
        self.ids, texts = read_corpus(path)
        self.retriever = bm25s.BM25()
        tokens = bm25s.tokenize(texts, stopwords="en", show_progress=False)
        self.retriever.index(tokens, show_progress=False)

    def __call__(self, query, k):
        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        docs, scores = self.retriever.retrieve(
            tokens, k=min(k, len(self.ids)), show_progress=False, n_threads=1)
        return [{"id": self.ids[i], "score": float(s)} for i, s in zip(docs[0], scores[0])]


def serve(search, port):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the harness reuses its connection

        def do_GET(self):
            url = urlsplit(self.path)
            if url.path == "/health":
                return self.answer(200, {"status": "ok", "documents": len(search.ids)})
            if url.path != "/search":
                return self.answer(404, {"error": f"no such path {url.path}"})
            params = parse_qs(url.query)
            query = params.get("q", [""])[0]
            try:
                k = int(params.get("k", ["10"])[0])
            except ValueError:
                return self.answer(400, {"error": "k must be an integer"})
            if not query.strip() or k < 1:
                return self.answer(400, {"error": "q must not be empty and k must be >= 1"})
            return self.answer(200, {"results": search(query, k)})

        def answer(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--corpus", required=True)
    args = parser.parse_args()
    serve(Search(args.corpus), args.port)
'''

# `refactor`: the index moves to a module of its own and tokens travel as strings, not ids
# (bm25s builds the index's vocabulary itself); "english" names the list "en" named.
RANKING_REFACTOR = '''\
"""The BM25 index the service answers from, kept apart from HTTP."""
import json

import bm25s

STOPWORDS = "english"  # bm25s's English list (the one "en" names)


def words(texts):
    """Lowercased tokens of two or more word characters, English stopwords left out."""
    return bm25s.tokenize(texts, stopwords=STOPWORDS, return_ids=False, show_progress=False)


class Index:
    def __init__(self, ids, texts):
        self.ids = ids
        self.bm25 = bm25s.BM25()
        self.bm25.index(words(texts), show_progress=False)

    @classmethod
    def from_jsonl(cls, path):
        ids, texts = [], []
        with open(path, encoding="utf-8") as lines:
            for doc in (json.loads(line) for line in lines if line.strip()):
                ids.append(str(doc.get("_id", doc.get("id"))))
                texts.append(f"{doc.get('title', '')} {doc.get('text', '')}")
        return cls(ids, texts)

    def __len__(self):
        return len(self.ids)

    def top(self, query, k):
        """[(id, score)] of the k best documents, best first."""
        found = self.bm25.retrieve(
            words(query), k=min(k, len(self.ids)), show_progress=False, n_threads=1)
        return [(self.ids[i], float(s)) for i, s in zip(found.documents[0], found.scores[0])]
'''

SERVICE_REFACTOR = '''\
"""A BM25 search service over a JSON Lines corpus: bm25s, English stopwords, no stemmer.

    python service.py --port 8080 --corpus corpus.jsonl

The index is ranking.Index; this file is HTTP only. GET /search?q=...&k=10 answers
{"results": [{"id": ..., "score": ...}]}; GET /health answers once the index is built.
"""
import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from ranking import Index


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    index = None  # set by main() before the port opens

    def do_GET(self):
        url = urlsplit(self.path)
        routes = {"/health": self.health, "/search": self.search}
        if url.path not in routes:
            self.reply(404, {"error": f"no such path {url.path}"})
            return
        status, body = routes[url.path](parse_qs(url.query))
        self.reply(status, body)

    def health(self, params):
        return 200, {"status": "ok", "documents": len(self.index)}

    def search(self, params):
        (query,) = params.get("q", [""])[:1] or [""]
        (limit,) = params.get("k", ["10"])[:1] or ["10"]
        if not limit.isdigit() or int(limit) < 1:
            return 400, {"error": "k must be an integer >= 1"}
        if not query.strip():
            return 400, {"error": "q must not be empty"}
        hits = self.index.top(query, int(limit))
        return 200, {"results": [{"id": doc, "score": score} for doc, score in hits]}

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--corpus", required=True)
    args = parser.parse_args()
    Handler.index = Index.from_jsonl(args.corpus)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
'''

SERVICE_STEMMER = (
    SERVICE_MAIN.replace("import bm25s\n", "import bm25s\nimport Stemmer\n\nSTEMMER = "
                         'Stemmer.Stemmer("english")\n')
    .replace('stopwords="en", show_progress=False',
             'stopwords="en", stemmer=STEMMER, show_progress=False')
    .replace("English stopwords, no stemmer", "English stopwords, PyStemmer's English stemmer")
)

CONFIG = """\
# Written by scripts/live_equivalence.py: the SciFact BM25 service of its throwaway repository.
[service]
start = "{{python}} service.py --port {{port}} --corpus {{data}}"
ready = "/health"
ready_timeout = {ready_timeout}
data = {corpus}
data_mode = "copy"       # a fresh copy per boot, with or without the bubblewrap sandbox

[query]
path = "/search"
params = {{ q = "{{query}}", k = "{{limit}}" }}
ids = "results[].id"
scores = "results[].score"

[gold]
path = {gold}
corpus = {corpus}
"""


@dataclass(frozen=True)
class Case:
    label: str
    candidate: str
    gold: str  # "small" or "full"
    expected: str | None  # the quality verdict this demonstration promises, if any


@dataclass(frozen=True)
class Outcome:
    case: Case
    status: int
    seconds: float
    quality: str | None
    reason: str
    latency: str | None
    details: tuple[str, ...] = ()


def missing_packages() -> list[str]:
    """The packages (by their PyPI names) whose module this Python cannot import."""
    modules = {"bm25s": "bm25s", "PyStemmer": "Stemmer"}
    return [name for name, module in modules.items() if importlib.util.find_spec(module) is None]


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """{query id: {doc id: grade}} from a BEIR qrels.tsv (header line skipped)."""
    judged: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines):
            cells = line.rstrip("\n").split("\t")
            if len(cells) != 3 or (number == 0 and not cells[2].strip().isdigit()):
                continue
            judged.setdefault(cells[0], {})[cells[1]] = int(cells[2])
    return judged


def write_small_gold(data: Path, out: Path, n: int) -> int:
    """The first n answerable queries of queries.jsonl, in its order, as a native gold set."""
    judged = read_qrels(data / "qrels.tsv")
    header = {"format": "harness-gold", "version": 1,
              "corpus": {"name": "corpus.jsonl", "sha256": sha256(data / "corpus.jsonl")},
              "description": f"the first {n} answerable SciFact test queries"}
    rows = [json.dumps(header, sort_keys=True)]
    with (data / "queries.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            if len(rows) > n:
                break
            if not line.strip():
                continue
            query = json.loads(line)
            qid = str(query.get("_id", query.get("id")))
            if any(grade > 0 for grade in judged.get(qid, {}).values()):
                rows.append(json.dumps({"id": qid, "query": query["text"],
                                        "relevant": judged[qid]}, sort_keys=True))
    out.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return len(rows) - 1


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as data:
        for block in iter(lambda: data.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "commit.gpgsign=false", *args], cwd=repo, check=True,
                   env={**os.environ, **GIT_ENV}, stdout=subprocess.DEVNULL)


def build_repository(repo: Path) -> None:
    """`main`, then `refactor` and `stemmer` each one commit on top of it."""
    repo.mkdir()
    git(repo, "init", "--quiet", "--initial-branch=main")
    (repo / "service.py").write_text(SERVICE_MAIN, encoding="utf-8")
    git(repo, "add", "service.py")
    git(repo, "commit", "--quiet", "-m", "BM25 over the corpus: English stopwords, no stemmer")
    git(repo, "checkout", "--quiet", "-b", "refactor")
    (repo / "ranking.py").write_text(RANKING_REFACTOR, encoding="utf-8")
    (repo / "service.py").write_text(SERVICE_REFACTOR, encoding="utf-8")
    git(repo, "add", "service.py", "ranking.py")
    git(repo, "commit", "--quiet", "-m", "move the index into ranking.py; tokens as strings")
    git(repo, "checkout", "--quiet", "main")
    git(repo, "checkout", "--quiet", "-b", "stemmer")
    (repo / "service.py").write_text(SERVICE_STEMMER, encoding="utf-8")
    git(repo, "commit", "--quiet", "-am", "stem with PyStemmer's English stemmer")
    git(repo, "checkout", "--quiet", "main")


def write_config(folder: Path, gold: str, corpus: Path) -> Path:
    config = folder / "harness.toml"
    config.write_text(CONFIG.format(ready_timeout=READY_TIMEOUT, gold=json.dumps(gold),
                                    corpus=json.dumps(str(corpus))), encoding="utf-8")
    return config


def run_compare(case: Case, config: Path, repo: Path, results: Path, env: dict[str, str],
                args: argparse.Namespace) -> Outcome:
    command = [sys.executable, "-m", "harness.cli.main", "compare", "--baseline", "main",
               "--candidate", case.candidate, "--config", str(config), "--repo", str(repo),
               "--format", "json", "--quiet", "--repeats", str(args.repeats),
               "--latency-budget", str(args.latency_budget), "--results", str(results)]
    if args.seed is not None:
        command += ["--seed", str(args.seed)]
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=COMPARE_TIMEOUT)
    except subprocess.TimeoutExpired:
        return Outcome(case, -1, time.monotonic() - started, None,
                       f"no answer within {COMPARE_TIMEOUT:.0f} s", None)
    seconds = time.monotonic() - started
    try:
        document = json.loads(done.stdout)
    except json.JSONDecodeError:
        tail = " | ".join(done.stderr.strip().splitlines()[-3:]) or "(nothing on stderr)"
        return Outcome(case, done.returncode, seconds, None, f"no comparison: {tail}", None)
    verdict = document.get("verdict", {})
    reason = document.get("quality_reason") or "; ".join(document.get("invalid_reasons", []))
    return Outcome(case, done.returncode, seconds, verdict.get("quality"), str(reason),
                   verdict.get("latency"), details(document))


def details(document: dict) -> tuple[str, ...]:
    """The headline rows behind the verdict, as the JSON gives them, and how many queries the
    (sequential) compare asked."""
    lines = []
    for row in (document.get("overall") or {}).get("rows", []):
        if not row.get("deciding"):
            continue
        test = (row.get("hit") or {}).get("test") or {}
        band = row.get("equivalence") or {}
        line = f"{row.get('metric')} {row.get('baseline', 0):.3f} -> {row.get('candidate', 0):.3f}"
        if "b" in test:
            line += (f" (b={test['b']:g} c={test['c']:g}, {test.get('exact', 'exact test')} "
                     f"p={test.get('p', float('nan')):.2g}, Holm p="
                     f"{row.get('p_adjusted', float('nan')):.2g})")
        if "low" in band:
            line += f", 90% CI [{band['low']:+.3f}, {band['high']:+.3f}]"
        lines.append(line)
    said = (document.get("sequential") or {}).get("said")
    if said:
        lines.append(said)
    return tuple(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="SciFact in BEIR's layout (default: %(default)s)")
    parser.add_argument("--queries", type=int, default=80,
                        help="size of the small gold set (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=2,
                        help="compare --repeats, rounds booting both refs (default: %(default)s)")
    parser.add_argument("--latency-budget", type=int, default=4,
                        help="compare --latency-budget, at most this many rounds in all "
                             "(default: %(default)s)")
    parser.add_argument("--seed", type=int, default=None, help="compare --seed (default: drawn)")
    args = parser.parse_args(argv)

    missing = missing_packages()
    if missing:
        print(f"live_equivalence: {' and '.join(missing)} not installed for {sys.executable}; "
              "run: pip install bm25s==0.3.16 PyStemmer", file=sys.stderr)
        return 2
    data = args.data.expanduser().resolve()
    absent = [name for name in DATA_FILES if not (data / name).is_file()]
    if absent:
        print(f"live_equivalence: no SciFact data at {data} (missing {', '.join(absent)}); "
              "give the BEIR folder with --data DIR", file=sys.stderr)
        return 2
    if args.queries < 1:
        parser.error("--queries must be at least 1")

    import bm25s  # only for its version: the services import it themselves

    scratch = Path(tempfile.mkdtemp(prefix="live-equivalence-"))
    try:
        repo = scratch / "repo"
        build_repository(repo)
        small, full = scratch / "gold-small", scratch / "gold-full"
        small.mkdir()
        (full / "scifact").mkdir(parents=True)
        n = write_small_gold(data, small / "gold.jsonl", args.queries)
        for name in ("queries.jsonl", "qrels.tsv"):
            shutil.copyfile(data / name, full / "scifact" / name)
        total = len(read_qrels(data / "qrels.tsv"))
        configs = {"small": write_config(small, "gold.jsonl", data / "corpus.jsonl"),
                   "full": write_config(full, "scifact", data / "corpus.jsonl")}
        sizes = {"small": n, "full": total}
        cases = [
            Case("main vs main (A/A)", "main", "small", "no measurable difference"),
            Case("main vs refactor", "refactor", "small", "no measurable difference"),
            Case("main vs stemmer", "stemmer", "full", "improved"),
            Case("main vs stemmer", "stemmer", "small", None),
        ]
        # The harness's cache (worktrees, its crash-recovery state) lives and dies with the
        # scratch folder, apart from any other compare running on this machine.
        env = {**os.environ, "HARNESS_CACHE_DIR": str(scratch / "cache")}
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"SciFact at {data}; bm25s {bm25s.__version__}; gold sets of {n} and {total} "
              f"queries; --repeats {args.repeats}, --latency-budget {args.latency_budget}; "
              f"load average {load:.1f} on {os.cpu_count()} CPUs", flush=True)
        outcomes = []
        for case in cases:
            outcome = run_compare(case, configs[case.gold], repo, scratch / "results", env, args)
            outcomes.append(outcome)
            expect = (f"expected {case.expected}" if case.expected else "for information")
            latency = outcome.latency or "-"
            print(f"{case.label}, {sizes[case.gold]} queries: {outcome.quality or 'no verdict'}: "
                  f"{outcome.reason} [latency: {latency}] (exit {outcome.status}; {expect})",
                  flush=True)
            for line in outcome.details:
                print(f"    {line}", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    print("\ntime per compare:")
    width = max(len(o.case.label) for o in outcomes) + 12
    for o in outcomes:
        print(f"  {f'{o.case.label}, {sizes[o.case.gold]} queries':<{width}} {o.seconds:6.1f} s")
    print(f"  {'all':<{width}} {sum(o.seconds for o in outcomes):6.1f} s")
    unmet = [o for o in outcomes if o.quality is None
             or (o.case.expected is not None and o.quality != o.case.expected)]
    for o in unmet:
        print(f"not as expected: {o.case.label}, {sizes[o.case.gold]} queries: "
              f"{o.quality or 'no comparison'} (expected {o.case.expected or 'a comparison'})")
    if not unmet:
        print("every expected verdict was given")
    return 1 if unmet else 0


if __name__ == "__main__":
    sys.exit(main())

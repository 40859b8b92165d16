"""The knob service: a tiny retrieval service in a throwaway git repository, whose ranking knob
is an environment variable, for the real-CLI tests of sweep, gate and threshold.

KNOB_SERVICE ranks documents by the share of query words they contain, and reads two knobs from
its environment, falling back to knob.json next to it (so a branch can change a default, as a
code change would); `--sink n` on its command line beats both (`knob_flag_config` sets it through
a {RANK_SINK} placeholder, a pin the service never reads from its environment):

    SINK=n     a query containing the word "rare" has its best document moved down n places
               (0: untouched; 1: the answer at rank 2; 20: out of the top 10)
    FLAT=1     every score is 1.0: the service cannot tell a good answer from a bad one

Gold set: slice "common" (q01..q12, "tell me about topic qNN" -> dNN), slice "rare"
(q13..q24, "rare topic qNN" -> dNN) and four unanswerable queries ("tell me about topic zzNN",
slice "none"). Tests on it never pin numbers: they assert structure and direction.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from e2e_support import Sandbox, config_text, git

KNOB_SERVICE = '''\
"""Fixture service for harness's sweep, gate and threshold tests (see tests/knob_support.py)."""
import argparse, json, os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--sink", type=int)
    args = parser.parse_args()
    with open(os.path.join(HERE, "knob.json"), encoding="utf-8") as f:
        defaults = json.load(f)
    sink = int(os.environ.get("SINK", defaults.get("SINK", 0)))
    if args.sink is not None:
        sink = args.sink
    flat = os.environ.get("FLAT", str(defaults.get("FLAT", 0))) == "1"
    counter = os.environ.get("E2E_BOOT_COUNTER")
    if counter:
        with open(counter, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\\n")
    print(f"svc: HARNESS_RUN_ID={os.environ.get('HARNESS_RUN_ID', '')}", flush=True)
    print(f"svc: SINK={sink} FLAT={flat}", flush=True)
    docs = []
    with open(os.path.join(args.data, "corpus.jsonl"), encoding="utf-8") as f:
        for line in f:
            if line.strip():
                doc = json.loads(line)
                docs.append((doc["id"], set((doc["title"] + " " + doc["text"]).lower().split())))

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        disable_nagle_algorithm = True

        def log_message(self, format, *args):
            pass

        def send(self, body):
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            url = urlsplit(self.path)
            if url.path == "/health":
                return self.send({"status": "ok"})
            params = parse_qs(url.query)
            query = set(params["q"][0].lower().split())
            k = int(params.get("k", ["10"])[0])
            ranked = sorted(
                ((len(query & words) / len(query), doc) for doc, words in docs),
                key=lambda s: (-s[0], s[1]),
            )
            ranked = [s for s in ranked if s[0] > 0]
            if sink and "rare" in query and ranked:
                best = ranked.pop(0)
                ranked.insert(min(sink, len(ranked)), best)
            results = [{"id": d, "score": 1.0 if flat else round(s, 6)} for s, d in ranked[:k]]
            self.send({"results": results})

    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


main()
'''

COMMON, RARE, NONE = range(1, 13), range(13, 25), range(1, 5)


def knob_gold_lines(*, extra_unanswerable: int = 0) -> list[str]:
    """The gold set; `extra_unanswerable` adds queries, so that its sha256 changes."""
    rows: list[dict[str, object]] = [{"format": "harness-gold", "version": 1}]
    rows += [
        {
            "id": f"q{n:02d}",
            "query": f"tell me about topic q{n:02d}",
            "slice": "common",
            "relevant": {f"d{n:02d}": 1},
        }
        for n in COMMON
    ]
    rows += [
        {
            "id": f"q{n:02d}",
            "query": f"rare topic q{n:02d}",
            "slice": "rare",
            "relevant": {f"d{n:02d}": 1},
        }
        for n in RARE
    ]
    rows += [
        {
            "id": f"u{n:02d}",
            "query": f"tell me about topic zz{n:02d}",
            "slice": "none",
            "relevant": {},
        }
        for n in range(1, len(NONE) + 1 + extra_unanswerable)
    ]
    return [json.dumps(row, sort_keys=True) for row in rows]


def knob_corpus_lines() -> list[str]:
    docs = [
        {"id": f"d{n:02d}", "title": f"Topic q{n:02d}", "text": f"this document covers q{n:02d}"}
        for n in range(1, 31)
    ]
    return [json.dumps(doc, sort_keys=True) for doc in docs]


def knob_sandbox(root: Path, branches: Mapping[str, Mapping[str, object]] | None = None) -> Sandbox:
    """A Sandbox (tests/e2e_support.py layout) holding the knob service: main with knob.json
    {}, plus one branch per entry, each changing only knob.json."""
    sandbox = Sandbox(root)
    for folder in (sandbox.repo, sandbox.cache, sandbox.home, sandbox.tmp):
        folder.mkdir(parents=True)
    repo = sandbox.repo
    (repo / "svc.py").write_text(KNOB_SERVICE)
    (repo / "knob.json").write_text("{}\n")
    (repo / "data").mkdir()
    (repo / "data" / "corpus.jsonl").write_text("\n".join(knob_corpus_lines()) + "\n")
    (repo / "gold").mkdir()
    (repo / "gold" / "gold.jsonl").write_text("\n".join(knob_gold_lines()) + "\n")
    (repo / "harness.toml").write_text(config_text(boot_counter=sandbox.boot_counter, repeats=1))
    (repo / ".gitignore").write_text("results/\n")
    home = sandbox.home
    git(repo, "init", "--quiet", "--initial-branch=main", home=home)
    git(repo, "add", "--all", home=home)
    git(repo, "commit", "--quiet", "-m", "knob service, gold set and config", home=home)
    for name, knobs in (branches or {}).items():
        git(repo, "checkout", "--quiet", "-b", name, "main", home=home)
        (repo / "knob.json").write_text(json.dumps(knobs, sort_keys=True) + "\n")
        git(repo, "commit", "--quiet", "-am", f"knob: {name}", home=home)
        git(repo, "checkout", "--quiet", "main", home=home)
    return sandbox


def knob_flag_config(sandbox: Sandbox, *, pinned: bool = True) -> Path:
    """A config outside the repository whose start command passes `--sink {RANK_SINK}`, with
    RANK_SINK pinned to "0" in service.env (or, with `pinned=False`, not pinned at all)."""
    text = config_text(gold="repo/gold/gold.jsonl", boot_counter=sandbox.boot_counter, repeats=1)
    start = '--data {data}"\n'
    counter = 'pass_env = ["E2E_BOOT_COUNTER"]'
    assert start in text and counter in text  # the lines of e2e_support.config_text
    text = text.replace(start, '--data {data} --sink {RANK_SINK}"\n')
    if pinned:
        text = text.replace(counter, f'env = {{ RANK_SINK = "0" }}\n{counter}')
    path = sandbox.root / ("flag.toml" if pinned else "flag-unpinned.toml")
    path.write_text(text)
    return path


def assert_clean(sandbox: Sandbox) -> None:
    assert sandbox.leftovers(sandbox.run_ids()) == []
    assert sandbox.worktrees() == []

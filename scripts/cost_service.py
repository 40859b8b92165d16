"""A retrieval service whose per-query cost the caller controls, in a throwaway git repository,
for the latency scripts (`latency_noise.py`, `latency_calibration.py`).

    repo = make_repo(folder, queries=60, cost_ms=2.0, branches={"cost-10": Cost(work=1.1)})
    config = repo / "harness.toml"          # what `harness compare` reads in that folder

The service (standard library only, `SERVICE` below, one file per commit) answers
`GET /search?q=...` after a fixed amount of CPU work: `iterations` turns of a small integer loop,
read at boot from `cost.json` beside it, so a branch that raises the count costs exactly that
much more of the service's own CPU per query, whatever the machine's load (a time-based busy-wait
would stretch with the load it is meant to meet); `sleep_ms` adds a sleep (the "+30 ms"
branch, or a sleep-bound service like the end-to-end fixture's); `tail_ms` adds a sleep to the
share `tail_share` of the gold set's queries whose text hashes lowest (sha256; at least one
query), a change in the tail alone (the "+20ms tail" branch of `latency_calibration.py`).
`/health` answers at once.  Keep-alive HTTP/1.1, one thread per connection
(`ThreadingHTTPServer`, as most Python services).

`iterations_per_ms()` measures this machine's loop speed in this process, the fastest of a few
tries (the least disturbed by other work), so `cost_ms` is a CPU cost, not a wall time.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

SERVICE = '''"""A retrieval service with a controlled per-query cost (scripts/cost_service.py)."""
import hashlib
import json
import math
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "cost.json"), encoding="utf-8") as f:
    COST = json.load(f)
ITERATIONS = int(COST.get("iterations", 0))
SLEEP = float(COST.get("sleep_ms", 0)) / 1000
TAIL = float(COST.get("tail_ms", 0)) / 1000
with open(os.path.join(HERE, "gold", "gold.jsonl"), encoding="utf-8") as f:
    TEXTS = [json.loads(line)["query"] for line in f.read().splitlines()[1:] if line.strip()]
_KEYED = sorted(TEXTS, key=lambda t: hashlib.sha256(t.encode()).hexdigest())
SLOW = set(_KEYED[: math.ceil(float(COST.get("tail_share", 0)) * len(_KEYED))]) if TAIL else set()


def work(n):
    x = 1
    for _ in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
    return x


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        url = urlsplit(self.path)
        if url.path == "/health":
            self._send({"status": "ok"})
            return
        text = parse_qs(url.query).get("q", [""])[0]
        work(ITERATIONS)
        if SLEEP:
            time.sleep(SLEEP)
        if text in SLOW:
            time.sleep(TAIL)
        number = text.rsplit("q", 1)[-1]
        self._send({"results": [{"id": "d" + number, "score": 1.0}]})


if __name__ == "__main__":
    port = int(sys.argv[sys.argv.index("--port") + 1])
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
'''

CONFIG = """[service]
start = "{python} svc.py --port {port}"
ready = "/health"
venv = false
stop_timeout = 2.0

[query]
path = "/search"
params = { q = "{query}", k = "{limit}" }
ids = "results[].id"
limit = 10

[gold]
path = "gold/gold.jsonl"
corpus = "data/corpus.jsonl"

[compare]
k = [1]
"""


@dataclass(frozen=True)
class Cost:
    """A branch's cost relative to main's: `work` times main's CPU work per query, plus
    `extra_ms` of CPU work and `sleep_ms` of sleep."""

    work: float = 1.0
    extra_ms: float = 0.0
    sleep_ms: float = 0.0
    tail_ms: float = 0.0  # slept by the `tail_share` of queries whose text hashes lowest
    tail_share: float = 0.0


def iterations_per_ms(tries: int = 7, n: int = 200_000) -> float:
    """The loop's turns per millisecond of CPU in this interpreter: the fastest of `tries`."""
    best = float("inf")
    for _ in range(tries):
        started = time.thread_time()
        x = 1
        for _ in range(n):
            x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        best = min(best, time.thread_time() - started)
    return n / (best * 1000)


def _git(repo: Path, *args: str) -> None:
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(repo.parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    subprocess.run(
        ["git", "-c", "user.name=latency", "-c", "user.email=latency@localhost", *args],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
    )


def make_repo(
    folder: Path,
    *,
    queries: int,
    cost_ms: float,
    sleep_ms: float = 0.0,
    branches: Mapping[str, Cost] | None = None,
    speed: float | None = None,
) -> Path:
    """A git repository at `folder`: branch main whose service costs `cost_ms` of CPU (and
    `sleep_ms` of sleep) per query, one branch per entry of `branches`, a gold set of `queries`
    queries (q001 -> d001) and a corpus; harness.toml beside them.  `speed`: iterations per ms
    (measured when None)."""
    per_ms = iterations_per_ms() if speed is None else speed
    folder.mkdir(parents=True)
    _git(folder, "init", "-q", "-b", "main")
    (folder / "svc.py").write_text(SERVICE)
    (folder / "harness.toml").write_text(CONFIG)
    (folder / "data").mkdir()
    (folder / "gold").mkdir()
    width = max(3, len(str(queries)))
    ids = [f"{n:0{width}d}" for n in range(1, queries + 1)]
    corpus = [json.dumps({"id": f"d{i}", "title": "", "text": f"document {i}"}) for i in ids]
    (folder / "data" / "corpus.jsonl").write_text("\n".join(corpus) + "\n")
    header = {"format": "harness-gold", "version": 1, "description": "controlled cost"}
    rows = [json.dumps(header)] + [
        json.dumps({"id": f"q{i}", "query": f"topic q{i}", "relevant": {f"d{i}": 1}}) for i in ids
    ]
    (folder / "gold" / "gold.jsonl").write_text("\n".join(rows) + "\n")

    def write_cost(cost: Cost) -> None:
        iterations = round(per_ms * (cost_ms * cost.work + cost.extra_ms))
        body = {"iterations": iterations, "sleep_ms": sleep_ms + cost.sleep_ms}
        if cost.tail_ms:
            body |= {"tail_ms": cost.tail_ms, "tail_share": cost.tail_share}
        (folder / "cost.json").write_text(json.dumps(body, sort_keys=True) + "\n")

    write_cost(Cost())
    _git(folder, "add", "-A")
    _git(folder, "commit", "-q", "-m", f"main: {cost_ms:g} ms of CPU per query")
    for name, cost in (branches or {}).items():
        _git(folder, "checkout", "-q", "-b", name, "main")
        write_cost(cost)
        _git(folder, "commit", "-q", "-am", f"{name}: {cost}")
        _git(folder, "checkout", "-q", "main")
    return folder

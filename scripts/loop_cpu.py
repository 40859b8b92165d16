"""The harness's CPU per exchange inside its replay loop against a raw socket loop's, on the
same service, and a demo compare's own CPU against its wall (`bench_client.py --loop`).

    tiny_service(ids) -> (url, stop)      a stdlib HTTP service on 127.0.0.1 answering one
                                          fixed JSON (in one write), in a process of its own
    measure(mode, tree=, url=, repo=)     one fresh interpreter: a compare, then the raw loop

In the fresh interpreter (`fresh.run_fresh`, with `tree` first on PYTHONPATH: the harness of
another checkout), a compare runs in-process: `compare --demo` ("demo": the demo's two services
booted five rounds and more, as a user runs it), or `compare --baseline-url URL --candidate-url
URL` of the tiny service with the demo's config and gold set ("tiny": nothing booted). Its
replay loop's CPU is the thread CPU of the rounds (`blocks._quality_rounds`,
`pairs.paired_round`) less what they call that is not the loop: the boots and teardowns (the
service contexts' enter and exit), the sequential rule's looks (`verdict.asked.stop_rule`'s
callback) and each round's record (`RefSession.record_repeat`, `_record` in older trees, which
fingerprints the checkout); what is left is every exchange (warm-up included), reading the
answers, the order within pairs, streaks, progress and the batches. Exchanges are counted at
`wire.Connection.exchange` (a wrapper that costs both trees alike: it reads the thread's CPU
clock twice, a system call each on this kind of machine), whose own CPU is the "wire" part. What
the wrapper costs is measured afterwards in the same process (the same wrapper around a function
that does nothing, 20,000 calls, against that function called directly) and taken off both
figures: its whole cost off the loop's, the clock reads inside its bracket off the wire part's.
Then, in the same process and on the same service (the tiny one; for the demo a service of its
main booted afresh), a raw socket loop sends the same request bytes (`Requests.for_url`, the
harness's own), as many exchanges (at most `RAW_MOST`), on one keep-alive TCP_NODELAY socket:
send, recv until the head and Content-Length bytes of body are in (bench_client.py's native
client), in nine equal parts timed one by one: the median part's CPU per exchange is the raw
loop's (a burst of load during its tenth of a second inflated one run's raw figure 3x and read
as a ratio below 1). CPU is `time.thread_time_ns`: user and system of the one thread, the
kernel's loopback work on our side included."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from fresh import run_fresh

RAW_MOST = 3000

TINY = r"""
import http.server, json, socketserver, sys
ids = json.loads(sys.argv[2])
BODY = json.dumps({"results": [{"id": i, "score": 1.0 / (n + 1)} for n, i in enumerate(ids)]})
HEAD = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
ANSWER = (HEAD % len(BODY.encode())).encode() + BODY.encode()
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        self.wfile.write(ANSWER)
    def log_message(self, *args):
        pass
class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
server = Server(("127.0.0.1", int(sys.argv[1])), Handler)
print("ready", flush=True)
server.serve_forever()
"""

INNER = r"""
import json, os, resource, socket, sys, tempfile, time
from pathlib import Path
out, results, mode, raw_most = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
RAW_PARTS = 9
t0 = time.perf_counter()
load_before = os.getloadavg()[0]
import harness.replay.wire as wire, harness.verdict.asked as asked
try:
    import harness.driver.blocks as blocks, harness.driver.pairs as pairs
    import harness.driver.runner as runner, harness.driver.session as session
except ImportError:  # a tree (--tree OLD) from before the run driver left harness.replay
    import harness.replay.blocks as blocks, harness.replay.pairs as pairs
    import harness.replay.runner as runner, harness.replay.session as session
from harness.boot.service import ServiceContext
from harness.boot.deployed import DeployedContext
tt = time.thread_time_ns
spent = {"rounds": 0, "boots": 0, "looks": 0, "records": 0, "wire": 0}
count = [0]
exchange = wire.Connection.exchange
def counted(self, raw, query):
    count[0] += 1
    started = tt()
    try:
        return exchange(self, raw, query)
    finally:
        spent["wire"] += tt() - started
wire.Connection.exchange = counted
def timed(function, key):
    def wrapper(*args, **kwargs):
        started = tt()
        try:
            return function(*args, **kwargs)
        finally:
            spent[key] += tt() - started
    return wrapper
blocks._quality_rounds = timed(blocks._quality_rounds, "rounds")
round_name = "paired_round" if hasattr(pairs, "paired_round") else "_paired_round"  # or older
setattr(pairs, round_name, timed(getattr(pairs, round_name), "rounds"))
setattr(runner, round_name, getattr(pairs, round_name))
for cls in (ServiceContext, DeployedContext):
    cls.__enter__ = timed(cls.__enter__, "boots")
    cls.__exit__ = timed(cls.__exit__, "boots")
record_name = "record_repeat" if hasattr(session.RefSession, "record_repeat") else "_record"
setattr(session.RefSession, record_name, timed(getattr(session.RefSession, record_name), "records"))
rule = asked.stop_rule
asked.stop_rule = lambda *a, **k: timed(rule(*a, **k), "looks")
from harness.cli.main import main
if mode == "demo":
    argv = ["compare", "--demo", "--results", results]
else:
    url, repo = sys.argv[5], sys.argv[6]
    argv = ["compare", "--baseline-url", url, "--candidate-url", url, "--config",
            str(Path(repo) / "harness.toml"), "--repo", repo, "--quiet", "--results", results]
status = main(argv)
wall = time.perf_counter() - t0
me = resource.getrusage(resource.RUSAGE_SELF)
load_after = os.getloadavg()[0]
own = me.ru_utime + me.ru_stime

# What the counting wrapper itself costs per call (the clock read twice, the count): the
# same wrapper around a function that does nothing, against that function called directly.
def nothing(self, raw, query):
    return None
exchange = nothing
spent_before = dict(spent)
calls = 20000
direct = tt()
for _ in range(calls):
    nothing(None, None, None)
direct = tt() - direct
wrapped = tt()
for _ in range(calls):
    counted(None, None, None)
wrapped = tt() - wrapped
wrapper_ns = max(0, wrapped - direct) / calls
bracket_ns = (spent["wire"] - spent_before["wire"]) / calls
count[0] -= calls
spent = spent_before

# The raw loop: the same requests, on the same service, in this process.
from harness.config import load_config
from harness.gold import load_gold
from harness.replay.request import Requests
class Raw:
    def __init__(self, sock):
        self.sock = sock
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    def exchange(self, raw):
        self.sock.sendall(raw)
        data = b""
        while b"\r\n\r\n" not in data:
            data += self.sock.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        while len(body) < length:
            body += self.sock.recv(65536)
        return len(body)
def raw_loop(url, sock, query, texts):
    prepared = Requests(query, [(t, t) for t in texts]).for_url(url)
    loop = Raw(sock)
    n = max(1, min(count[0], raw_most))
    for i in range(50):  # warm-up, untimed
        loop.exchange(prepared[texts[i % len(texts)]])
    # In RAW_PARTS parts, each timed on its own: the median part's CPU per exchange stands for
    # the raw loop, so a burst of load during one part does not flatter the ratio.
    per = []
    size = max(1, n // RAW_PARTS)
    for part in range(RAW_PARTS):
        started = tt()
        for i in range(part * size, (part + 1) * size):
            loop.exchange(prepared[texts[i % len(texts)]])
        per.append((tt() - started) / size)
    sock.close()
    per.sort()
    return per[len(per) // 2] * n, n
with tempfile.TemporaryDirectory(prefix="raw-loop-") as tmp:
    if mode == "demo":
        from harness.boot.service import running_service
        from harness.demo import materialise
        repo = materialise(Path(tmp) / "demo")
    else:
        repo = Path(sys.argv[6])
    config = load_config(repo / "harness.toml", repo=repo)
    gold = load_gold(config.gold, corpus=config.corpus)
    side = config.side("baseline")
    texts = [q.text for q in gold.queries]
    if mode == "demo":
        with running_service(side.service, repo, log_path=Path(tmp) / "svc.log") as svc:
            raw_ns, raw_n = raw_loop(svc.url, svc.connect(), side.query, texts)
    else:
        host, port = url.rsplit("/", 1)[-1].split(":")
        sock = socket.create_connection((host, int(port)))
        raw_ns, raw_n = raw_loop(url, sock, side.query, texts)
with open(out, "w") as f:
    json.dump({"status": status, "wall": wall, "own": own, "exchanges": count[0],
               "raw_ns": raw_ns, "raw_n": raw_n, "load": [load_before, load_after],
               "wrapper_ns": wrapper_ns, "bracket_ns": bracket_ns,
               "package": wire.__file__, **spent}, f)
"""


def tiny_service(ids: list[str], port: int) -> tuple[str, Callable[[], None]]:
    """The tiny service on `port`, answering `ids` as `results[].id` (and a score each) to
    every GET; its URL and what stops it."""
    child = subprocess.Popen(
        [sys.executable, "-c", TINY, str(port), json.dumps(ids)], stdout=subprocess.PIPE
    )
    assert child.stdout is not None
    if child.stdout.readline().strip() != b"ready":
        child.kill()
        raise SystemExit("the tiny service did not start")

    def stop() -> None:
        child.kill()
        child.wait()

    return f"http://127.0.0.1:{port}", stop


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def measure(mode: str, *, tree: str | None, url: str = "", repo: str = "") -> dict[str, Any]:
    """One compare ("demo" or "tiny") and its raw loop, in a fresh interpreter; the figures:
    loop CPU per exchange (`loop_us`), the raw loop's (`raw_us`), the wire part's (`wire_us`),
    the process's own CPU and wall, the load average before and after."""
    args = [mode, str(RAW_MOST)] + ([url, repo] if mode == "tiny" else [])
    found = run_fresh(INNER, args, tree=tree, what=f"the {mode} compare")
    n = max(int(found["exchanges"]), 1)
    loop = found["rounds"] - found["boots"] - found["looks"] - found["records"]
    found["loop_us"] = (loop / n - found["wrapper_ns"]) / 1e3
    found["wire_us"] = (found["wire"] / n - found["bracket_ns"]) / 1e3
    found["raw_us"] = found["raw_ns"] / max(int(found["raw_n"]), 1) / 1e3
    found["ratio"] = found["loop_us"] / found["raw_us"] if found["raw_us"] else float("nan")
    found["share"] = found["own"] / found["wall"]
    return found


def elapsed(since: float) -> str:
    return f"{time.perf_counter() - since:.0f} s"

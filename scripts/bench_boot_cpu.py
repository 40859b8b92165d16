#!/usr/bin/env python
"""The harness's own CPU per boot and teardown of the demo service: user and system.

    python scripts/bench_boot_cpu.py [--boots 10] [--rounds 3] [--tree OLD_CHECKOUT ...]
                                     [--profile N] [--fast] [--demos N]

Each round runs, in a fresh interpreter, `--boots` boots and teardowns of the demo service
(`compare --demo`'s own, `harness.demo.materialise`d into a temp dir, the sandbox the machine
gives: bubblewrap where it works) through `harness.boot.service.running_service`, with one
readiness answer and nothing else between boot and teardown, and reads getrusage(RUSAGE_SELF)
(every thread of the harness; the service's processes are not its own) around each
boot+teardown. Printed per round: the median harness CPU of one boot+teardown, user and
system, and the median wall time from spawn to ready (`boot_seconds`, so a change to the
readiness polling that made a fast service slower to be found ready would show). `--fast` boots,
instead of the demo's, a stdlib http.server that answers 200 as soon as it listens. `--demos N`
then runs N `compare --demo` per harness (in-process, interleaved) and prints the CPU of their
boots and teardowns (every ServiceContext's enter and exit) and the process's own CPU / wall.

`--tree DIR` also measures the harness package under DIR (a checkout of another commit:
`git archive main | tar -x -C DIR`), each round interleaved with the installed harness's, so
that the machine's load hits both alike. `--profile N` prints the N hottest functions of the
installed harness's boots from a SIGPROF sampler (CPU time; inclusive for harness functions,
`self` for the function running), for finding what to cut.
The load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
from pathlib import Path

from fresh import compile_tree, run_fresh

INNER = """
import collections, json, resource, signal, sys, tempfile, time
from pathlib import Path
out, boots, profile, fast = sys.argv[1], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
from harness.boot.service import running_service
from harness.config import ServiceConfig
from harness.config.loader import load_config
from harness.demo import materialise
tmp = Path(tempfile.mkdtemp(prefix="bench-boot-"))
if fast:  # answers 200 as soon as it listens: readiness found by the probing alone
    repo = tmp / "fast"
    repo.mkdir()
    (repo / "svc.py").write_text(
        "import http.server, sys\\n"
        "class H(http.server.BaseHTTPRequestHandler):\\n"
        "    def do_GET(self):\\n"
        "        self.send_response(200); self.send_header('Content-Length', '0')\\n"
        "        self.end_headers()\\n"
        "http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()\\n")
    spec = ServiceConfig(start="{python} -S svc.py {port}", ready="/health")
else:
    repo = materialise(tmp / "demo")
    spec = load_config(repo / "harness.toml").baseline.service
samples = collections.Counter()
def sample(signum, frame):
    leaf = f"{Path(frame.f_code.co_filename).name}:{frame.f_code.co_name}"
    seen = {"self " + leaf}
    while frame is not None:
        code = frame.f_code
        if "harness" in code.co_filename:
            seen.add(f"{Path(code.co_filename).name}:{code.co_name}")
        frame = frame.f_back
    samples.update(seen)
def one(i):
    ctx = running_service(spec, repo, log_path=tmp / "logs" / f"boot{i}.log")
    with ctx as svc:
        ready = svc.boot_seconds
        sandbox = svc.sandbox
    return ready, sandbox, ctx.teardown.seconds
one(-1)  # warm: imports, the bwrap probe, the first .pyc reads
rows = []
if profile:
    signal.signal(signal.SIGPROF, sample)
    signal.setitimer(signal.ITIMER_PROF, 0.001, 0.001)
for i in range(boots):
    r0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    ready, sandbox, teardown = one(i)
    r1, w1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    rows.append({"user": r1.ru_utime - r0.ru_utime, "sys": r1.ru_stime - r0.ru_stime,
                 "wall": w1 - w0, "ready": ready, "teardown": teardown, "sandbox": sandbox})
signal.setitimer(signal.ITIMER_PROF, 0, 0)
import shutil; shutil.rmtree(tmp, ignore_errors=True)
with open(out, "w") as fh:
    json.dump({"rows": rows, "profile": samples.most_common(profile),
               "samples": sum(samples.values())}, fh)
"""

DEMO = """
import json, resource, sys, time
t0 = time.perf_counter()
import harness.boot.service as service
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime
spent = {"user": 0.0, "sys": 0.0, "boots": 0}
def timed(method):
    def run(*args, **kwargs):
        u0, s0 = cpu()
        try:
            return method(*args, **kwargs)
        finally:
            u1, s1 = cpu()
            spent["user"] += u1 - u0
            spent["sys"] += s1 - s0
    return run
enter = service.ServiceContext.__enter__
def counted(self):
    spent["boots"] += 1
    return enter(self)
service.ServiceContext.__enter__ = timed(counted)
service.ServiceContext.__exit__ = timed(service.ServiceContext.__exit__)
from harness.cli.main import main
main(["compare", "--demo", "--quiet", "--results", sys.argv[2]])
me = resource.getrusage(resource.RUSAGE_SELF)
with open(sys.argv[1], "w") as out:
    json.dump({**spent, "self": me.ru_utime + me.ru_stime, "wall": time.perf_counter() - t0}, out)
"""


def demo(tree: str | None) -> dict[str, float]:
    """One `compare --demo`, in-process in a fresh interpreter: the CPU of its boots and
    teardowns (ServiceContext enter and exit), and of the whole process against its wall."""
    return run_fresh(DEMO, [], tree=tree, what="the demo compare")


def one(tree: str | None, boots: int, profile: int, fast: bool) -> dict[str, object]:
    args = [str(boots), str(profile), str(int(fast))]
    return run_fresh(INNER, args, tree=tree, what="the boots", quiet=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--boots", type=int, default=10, help="boots per round (default 10)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", type=int, default=0, metavar="N")
    parser.add_argument(
        "--fast",
        action="store_true",
        help="boot a stdlib service that is ready once it listens, not the demo's",
    )
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        help="also measure the harness package of this checkout (DIR/harness), interleaved",
    )
    parser.add_argument(
        "--demos",
        type=int,
        default=0,
        metavar="N",
        help="also run N demo compares per harness: the CPU of their boots and teardowns",
    )
    args = parser.parse_args()
    trees: dict[str, str | None] = {"installed": None}
    trees |= {f"tree {i}": str(Path(t).resolve()) for i, t in enumerate(args.tree, 1)}
    for tree in trees.values():
        compile_tree(tree)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(
        f"  {'harness':<10} {'ms CPU/boot user':>16} {'sys':>5} {'total':>6}"
        f" {'ready ms':>8} {'teardown ms':>11} sandbox"
    )
    per: dict[str, list[float]] = {label: [] for label in trees}
    for _ in range(args.rounds):
        for label, tree in trees.items():
            found = one(tree, args.boots, args.profile if tree is None else 0, args.fast)
            rows: list[dict[str, float]] = found["rows"]  # type: ignore[assignment]
            user = statistics.median(r["user"] for r in rows) * 1e3
            system = statistics.median(r["sys"] for r in rows) * 1e3
            total = statistics.median(r["user"] + r["sys"] for r in rows) * 1e3
            ready = statistics.median(r["ready"] for r in rows) * 1e3
            down = statistics.median(r["teardown"] for r in rows) * 1e3
            per[label].append(total)
            print(
                f"  {label:<10} {user:16.1f} {system:5.1f} {total:6.1f} {ready:8.1f}"
                f" {down:11.1f} {rows[0]['sandbox']}"
            )
            if found.get("profile"):
                print(f"    {found['samples']} SIGPROF samples (1 ms of CPU each); hottest:")
                for stack, n in found["profile"]:  # type: ignore[attr-defined]
                    print(f"    {n:5d}  {stack}")
    for label, tree in trees.items():
        where = tree or "the installed harness"
        print(
            f"{label}: median {statistics.median(per[label]):.1f} ms of harness CPU per "
            f"boot+teardown ({where})"
        )
    if args.demos:
        print(
            f"  {'harness':<10} {'demo: boots':>11} {'user s':>7} {'sys s':>6}"
            f" {'own CPU / wall':>15}"
        )
    for _ in range(args.demos):
        for label, tree in trees.items():
            found = demo(tree)
            print(
                f"  {label:<10} {int(found['boots']):11d} {found['user']:7.3f} {found['sys']:6.3f}"
                f" {found['self']:7.2f}/{found['wall']:.2f} s = {found['self'] / found['wall']:.0%}"
            )
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""The harness's fixed costs: start-up against `python -c pass`, and its own CPU in a demo compare.

    python scripts/bench_overhead.py [--runs 15] [--demos 5] [--skip-demo] [--quick] [--as-is]
                                     [--python OTHER_VENV/bin/python ...]

Start-up: `harness --help`, `harness --version` and `python -c pass` (the floor any Python tool
pays), each run `--runs` times, interleaved (pass, --help, --version, pass, ...) so the machine's
load hits all three alike; the median wall time of each, its excess over the floor, and the
median CPU (user + system) of the process, which the load inflates less than the wall.

Demo: `compare --demo` in a fresh interpreter that runs the CLI in-process, then reads
getrusage: RUSAGE_SELF is the harness's own CPU (parsing, scoring, statistics, rendering, the
HTTP client), RUSAGE_CHILDREN everything it started and waited for (bubblewrap and what it
reaped, git, the build commands, the services). The sandbox helper of each boot
(harness/boot/inside.py, the harness's own code inside bubblewrap) is sampled apart (psutil,
every 50 ms) and counted as the harness's own. Target (issue 28): the harness's own CPU, its
process and the helpers together, at most 10% of the compare's wall time in every run
(`--demos 5`). `--quick` runs each demo compare in two rounds (a smoke run: not the demo's
figures).

It measures the harness this interpreter imports (and, with `--python`, other interpreters',
interleaved with it) and says which install each is: editable (`pip install -e`, whose import
finder site.py loads in every interpreter of that venv, `python -c pass` included) or regular
(`pip install .`, what the README's demo command installs).  Bytecode: `pip install .` writes
every module's .pyc at install; an editable install writes them on first import, unless
PYTHONDONTWRITEBYTECODE is set (as in some CI and sandbox shells), when every run compiles the
harness from source again (~0.25 s of CPU for a demo compare).  So the harness's .pyc files are
brought up to date first, as an install leaves them; `--as-is` measures without that.  The load
average is printed before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fresh import QUICK_HELP, quick_options

INNER = """
import json, resource, sys, threading, time
import psutil
# The sandbox helper (harness/boot/inside.py, one per boot, inside bubblewrap) is the harness's
# own code too: its CPU is sampled every 50 ms while it lives (the last sample of each helper
# counts: what it spends after that, at teardown, is missed).
helpers, done = {}, threading.Event()
def sample():
    me = psutil.Process()
    while not done.wait(0.05):
        try:
            kids = me.children(recursive=True)
        except psutil.Error:
            continue
        for kid in kids:
            try:
                if any(part.endswith("inside.py") for part in kid.cmdline()):
                    t = kid.cpu_times()
                    helpers[kid.pid] = t.user + t.system
            except psutil.Error:
                pass
threading.Thread(target=sample, daemon=True).start()
t0 = time.perf_counter()
from harness.cli.main import main
status = main(["compare", "--demo", "--results", sys.argv[2], *sys.argv[3:]])
wall = time.perf_counter() - t0
done.set()
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as out:
    json.dump({"status": status, "wall": wall, "self": me.ru_utime + me.ru_stime,
               "children": kids.ru_utime + kids.ru_stime, "self_rss_kib": me.ru_maxrss,
               "helper": sum(helpers.values()), "helpers": len(helpers)}, out)
"""


PROBE = """
import importlib.metadata, importlib.util, json, sys
from pathlib import Path
package = Path(importlib.util.find_spec("harness").origin).parent
stale = 0
for source in package.rglob("*.py"):
    cached = Path(importlib.util.cache_from_source(str(source)))
    stale += not cached.exists() or cached.stat().st_mtime < source.stat().st_mtime
try:
    direct = importlib.metadata.distribution("retrieval-harness").read_text("direct_url.json")
    editable = bool(direct and json.loads(direct).get("dir_info", {}).get("editable"))
    kind = "editable (pip install -e)" if editable else "regular (pip install .)"
except importlib.metadata.PackageNotFoundError:
    kind = "not installed"
print(json.dumps({"install": kind, "package": str(package), "stale": stale}))
"""


def harness_exe(python: str) -> list[str]:
    found = Path(python).with_name("harness")
    return [str(found)] if found.exists() else [python, "-m", "harness.cli.main"]


def prepare(python: str, as_is: bool) -> str:
    """Which install of harness `python` imports (editable or regular, and where), after
    compiling its modules that have no up-to-date .pyc (unless `as_is`)."""
    probe = [python, "-I", "-c", PROBE]  # -I: not a harness in the current directory
    found = json.loads(subprocess.run(probe, capture_output=True, text=True, check=True).stdout)
    note = f"{found['install']}, {found['package']}"
    if found["stale"] and not as_is:
        subprocess.run(
            [python, "-m", "compileall", "-q", found["package"]],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        return f"{note} (compiled {found['stale']} modules that had no up-to-date .pyc)"
    return f"{note} ({found['stale']} modules without an up-to-date .pyc)"


def _timed(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of running `argv` to completion."""
    t0 = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t0
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def startup(runs: int, pythons: dict[str, str]) -> None:
    commands: dict[str, list[str]] = {}
    for label, python in pythons.items():
        commands[f"{label}python -c pass"] = [python, "-c", "pass"]
        commands[f"{label}harness --help"] = [*harness_exe(python), "--help"]
        commands[f"{label}harness --version"] = [*harness_exe(python), "--version"]
    seconds: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            wall, used = _timed(argv)
            seconds[name].append(wall)
            cpu[name].append(used)
    print(f"start-up, median of {runs} interleaved runs (target: --help, --version < 0.15 s)")
    print(
        f"  {'command':<26} {'median s':>9} {'min s':>7} {'over python -c pass':>20} {'CPU s':>7}"
    )
    for label in pythons:
        floor = statistics.median(seconds[f"{label}python -c pass"])
        for name, times in seconds.items():
            if not name.startswith(label):
                continue
            median = statistics.median(times)
            print(
                f"  {name:<26} {median:9.3f} {min(times):7.3f} {median - floor:+19.3f} s"
                f" {statistics.median(cpu[name]):7.3f}"
            )


def demo(count: int, pythons: dict[str, str], options: list[str]) -> None:
    print(
        "\ncompare --demo: the harness's own CPU (its process and the sandbox helper of each boot)"
        " against the compare's wall (target, issue 28: own <= 10% in every run)"
    )
    print(
        f"  {'':<12} {'wall s':>7} {'harness CPU s':>14} {'helper CPU s':>13}"
        f" {'children CPU s':>15} {'own / wall':>11}"
    )
    shares: dict[str, list[float]] = {label: [] for label in pythons}
    for _ in range(count):
        for label, python in pythons.items():
            with tempfile.TemporaryDirectory(prefix="bench-overhead-") as tmp:
                out = Path(tmp) / "usage.json"
                subprocess.run(
                    [python, "-c", INNER, str(out), str(Path(tmp) / "results"), *options],
                    check=False,
                    cwd=tmp,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                found = json.loads(out.read_text())
            share = (found["self"] + found["helper"]) / found["wall"]
            shares[label].append(share)
            print(
                f"  {label:<12} {found['wall']:7.2f} {found['self']:14.2f}"
                f" {found['helper']:13.2f} {found['children']:15.2f} {share:10.1%}"
                f"   ({found['helpers']} boots sampled, exit status {found['status']},"
                f" load {os.getloadavg()[0]:.1f})"
            )
    for label, values in shares.items():
        met = sum(v <= 0.10 for v in values)
        print(
            f"  {label:<12} own / wall {min(values):.1%}-{max(values):.1%}, "
            f"at most 10% in {met} of {len(values)} runs"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--demos", type=int, default=5)
    parser.add_argument("--skip-demo", action="store_true")
    parser.add_argument("--quick", action="store_true", help=QUICK_HELP)
    parser.add_argument(
        "--as-is", action="store_true", help="do not bring the harness's .pyc files up to date"
    )
    parser.add_argument(
        "--python",
        action="append",
        default=[],
        help="also measure the harness this interpreter runs (another venv), interleaved",
    )
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    options = quick_options(args.quick)
    pythons = {"[0] ": sys.executable} | {f"[{i}] ": p for i, p in enumerate(args.python, 1)}
    for label, python in pythons.items():
        print(f"{label}{python}: harness {prepare(python, args.as_is)}")
    startup(args.runs, pythons)
    if not args.skip_demo:
        demo(args.demos, pythons, options)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()

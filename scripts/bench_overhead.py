#!/usr/bin/env python
"""The harness's fixed costs: start-up against `python -c pass`, and its own CPU in a demo compare.

    python scripts/bench_overhead.py [--runs 15] [--demos 1] [--skip-demo] [--as-is]

Start-up: `harness --help`, `harness --version` and `python -c pass` (the floor any Python tool
pays), each run `--runs` times, interleaved (pass, --help, --version, pass, ...) so the machine's
load hits all three alike; the median wall time of each, its excess over the floor, and the
median CPU (user + system) of the process, which the load inflates less than the wall.

Demo: `compare --demo` in a fresh interpreter that runs the CLI in-process, then reads
getrusage: RUSAGE_SELF is the harness's own CPU (parsing, scoring, statistics, rendering, the
HTTP client), RUSAGE_CHILDREN everything it started and waited for (bubblewrap and what it
reaped, git, the build commands). Target (issue 17): the harness's own CPU at most 25% of the
compare's wall time.

It measures the harness this interpreter imports and says which install that is: editable
(`pip install -e`, whose import finder site.py loads in every interpreter) or regular
(`pip install .`, what the README's demo command installs).  Bytecode: `pip install .` writes
every module's .pyc at install; an editable install writes them on first import, unless
PYTHONDONTWRITEBYTECODE is set (as in some CI and sandbox shells), when every run compiles the
harness from source again (~0.25 s of CPU for a demo compare).  So the harness's .pyc files are
brought up to date first, as an install leaves them; `--as-is` measures without that.  The load
average is printed before and after.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.metadata
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

INNER = """
import json, resource, sys, time
t0 = time.perf_counter()
from harness.cli.main import main
status = main(["compare", "--demo", "--results", sys.argv[2]])
wall = time.perf_counter() - t0
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as out:
    json.dump({"status": status, "wall": wall, "self": me.ru_utime + me.ru_stime,
               "children": kids.ru_utime + kids.ru_stime, "self_rss_kib": me.ru_maxrss}, out)
"""


def harness_exe() -> list[str]:
    found = Path(sys.executable).with_name("harness")
    return [str(found)] if found.exists() else [sys.executable, "-m", "harness.cli.main"]


def install() -> str:
    """Which install of harness this interpreter imports: editable or regular, and where."""
    spec = importlib.util.find_spec("harness")
    where = Path(spec.origin).parent if spec and spec.origin else Path("?")
    try:
        direct = importlib.metadata.distribution("retrieval-harness").read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        return f"not installed (imported from {where})"
    editable = bool(direct and json.loads(direct).get("dir_info", {}).get("editable"))
    return f"{'editable (pip install -e)' if editable else 'regular (pip install .)'}, {where}"


def stale_bytecode(package: Path) -> int:
    """How many of the package's modules have no up-to-date .pyc."""
    count = 0
    for source in package.rglob("*.py"):
        cached = Path(importlib.util.cache_from_source(str(source)))
        if not cached.exists() or cached.stat().st_mtime < source.stat().st_mtime:
            count += 1
    return count


def bytecode(as_is: bool) -> None:
    spec = importlib.util.find_spec("harness")
    assert spec is not None and spec.origin is not None
    package = Path(spec.origin).parent
    stale = stale_bytecode(package)
    if as_is or not stale:
        print(f"bytecode: {stale} harness modules without an up-to-date .pyc, measured as is")
        return
    compileall.compile_dir(package, quiet=1)
    print(f"bytecode: compiled the {stale} harness modules that had no up-to-date .pyc")


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


def startup(runs: int) -> None:
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "harness --help": [*harness_exe(), "--help"],
        "harness --version": [*harness_exe(), "--version"],
    }
    seconds: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            wall, used = _timed(argv)
            seconds[name].append(wall)
            cpu[name].append(used)
    floor = statistics.median(seconds["python -c pass"])
    print(f"start-up, median of {runs} interleaved runs (target: --help, --version < 0.15 s)")
    print(
        f"  {'command':<20} {'median s':>9} {'min s':>7} {'over python -c pass':>20} {'CPU s':>7}"
    )
    for name, times in seconds.items():
        median = statistics.median(times)
        print(
            f"  {name:<20} {median:9.3f} {min(times):7.3f} {median - floor:+19.3f} s"
            f" {statistics.median(cpu[name]):7.3f}"
        )


def demo(count: int) -> None:
    print("\ncompare --demo: the harness's own CPU vs what it started (target: own CPU <= 25%)")
    print(f"  {'wall s':>7} {'harness CPU s':>14} {'children CPU s':>15} {'own / wall':>11}")
    for _ in range(count):
        with tempfile.TemporaryDirectory(prefix="bench-overhead-") as tmp:
            out = Path(tmp) / "usage.json"
            subprocess.run(
                [sys.executable, "-c", INNER, str(out), str(Path(tmp) / "results")],
                check=False,
                cwd=tmp,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
            )
            found = json.loads(out.read_text())
        share = found["self"] / found["wall"]
        print(
            f"  {found['wall']:7.2f} {found['self']:14.2f} {found['children']:15.2f}"
            f" {share:10.0%}   (exit status {found['status']})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--demos", type=int, default=1)
    parser.add_argument("--skip-demo", action="store_true")
    parser.add_argument(
        "--as-is", action="store_true", help="do not bring the harness's .pyc files up to date"
    )
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"harness: {install()}")
    bytecode(args.as_is)
    startup(args.runs)
    if not args.skip_demo:
        demo(args.demos)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""Calibrate the latency verdict on this machine: how often it calls a change that is not there,
and how often it calls one that is.

    python scripts/latency_calibration.py [--runs 20] [--repeats 3] [--no-load]
                                          [--scenarios A/A,+50%,+10%]

Everything goes through the project's own code, end to end: the bundled demo repository
(harness.demo.materialise), and for every compare the real CLI in a subprocess,
`python -m harness.cli.main compare --fresh --format json`, whose JSON verdict is read back.

Scenarios, `--runs` fresh compares each, in this order:

    A/A     main against main: identical code, both sides measured (target: at most 1 latency
            call in 20, slower or faster)
    +50%    main against a branch whose /search handler, before it answers, busy-waits for half
            the time it has spent on the request so far (from parsing its headers): +50% of the
            service's own work per query, whatever the load (target: at least 18 of 20
            "slower", none "faster")
    +10%    the same at a tenth (target: never "faster")

The end-to-end ratio a client sees is a little below 1.5 or 1.1 (the client and the loopback
are not slowed); the median ratio measured is printed beside the verdict counts.

Unless --no-load, one core is kept busy for the whole run by a bounded background loop (a
Python busy loop with its own deadline, ended by its pid when the script finishes), on top of
whatever else the machine is doing; the load averages seen are printed.  Rates are printed with
Wilson 95% intervals.  SIGTERM or Ctrl-C stops it after tearing down the compare in flight
and prints the table of the compares done.  Exits 0 when every target is met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.demo import materialise

HANDLER_START = "    def do_GET(self) -> None:\n"
HANDLER_ANSWER = (
    '            self._send(200, {"results": [{"id": i, "score": s} for i, s in hits]})\n'
)
LOAD_LIMIT_S = 4 * 3600  # the background loop ends itself after this, whatever happens
COMPARE_TIMEOUT_S = 600


@dataclass
class Scenario:
    name: str
    candidate: str
    outcomes: Counter[str] = field(default_factory=Counter)
    ratios: list[float] = field(default_factory=list)
    p50s: list[float] = field(default_factory=list)
    loads: list[float] = field(default_factory=list)


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials (95% by default)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def git(repo: Path, *args: str) -> None:
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(repo.parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    subprocess.run(
        ["git", "-c", "user.name=calibration", "-c", "user.email=calibration@localhost", *args],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
    )


def costly_branch(repo: Path, name: str, extra: float) -> str:
    """A branch of main whose search handler costs `extra` (0.5: +50%) more of its own time per
    query: before answering it busy-waits (CPU, like work) for `extra` times the time the
    request has taken since its headers began to be parsed."""
    git(repo, "checkout", "-q", "-b", name, "main")
    svc = repo / "svc.py"
    text = svc.read_text()
    if HANDLER_START not in text or HANDLER_ANSWER not in text or "import threading\n" not in text:
        raise SystemExit("the demo service changed: update HANDLER_* in this script")
    start = (
        "    def parse_request(self) -> bool:\n"
        "        self._started = time.perf_counter()\n"
        "        return super().parse_request()\n\n" + HANDLER_START
    )
    spin = (
        f"            _until = time.perf_counter() * {1 + extra!r} - self._started * {extra!r}\n"
        "            while time.perf_counter() < _until:\n"
        "                pass\n"
    )
    text = text.replace("import threading\n", "import threading\nimport time\n", 1)
    text = text.replace(HANDLER_START, start, 1).replace(HANDLER_ANSWER, spin + HANDLER_ANSWER, 1)
    svc.write_text(text)
    git(repo, "commit", "-q", "-am", f"search costs {extra:.0%} more of its own time per query")
    git(repo, "checkout", "-q", "main")
    return name


def one_compare(repo: Path, results: Path, candidate: str, repeats: int) -> dict[str, Any]:
    command = [
        sys.executable,
        "-m",
        "harness.cli.main",
        "compare",
        "--baseline",
        "main",
        "--candidate",
        candidate,
        "--fresh",
        "--format",
        "json",
        "--repeats",
        str(repeats),
        "--results",
        str(results),
    ]
    process = subprocess.Popen(
        command, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        stdout, stderr = process.communicate(timeout=COMPARE_TIMEOUT_S)
    except BaseException:
        # Stopped: let the compare tear its services and worktrees down (it handles SIGTERM).
        process.terminate()
        process.communicate(timeout=120)
        raise
    if process.returncode not in (0, 1):
        raise SystemExit(f"compare failed ({process.returncode}):\n{stderr}")
    document: dict[str, Any] = json.loads(stdout)
    return document


def run(scenario: Scenario, repo: Path, results: Path, runs: int, repeats: int) -> None:
    for i in range(runs):
        doc = one_compare(repo, results, scenario.candidate, repeats)
        latency = doc["latency"]
        verdict = doc["verdict"]["latency"]
        scenario.outcomes[verdict] += 1
        test = latency["test"]
        if test is not None:
            scenario.ratios.append(float(test["ratio"]))
        if latency["baseline"] is not None:
            scenario.p50s.append(float(latency["baseline"]["p50"]))
        if latency.get("machine"):
            scenario.loads.append(float(latency["machine"]["load_max"]))
        ratio = f"{test['ratio']:.3f}" if test else "-"
        rounds = ", ".join(f"{r:.2f}" for r in test["rounds"]) if test else "-"
        print(
            f"  {scenario.name} {i + 1}/{runs}: {verdict} (ratio {ratio}, rounds {rounds}; "
            f"{doc['latency_reason']})",
            flush=True,
        )


def median(values: list[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    return (ordered[(n - 1) // 2] + ordered[n // 2]) / 2 if n else float("nan")


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(f"signal {signum}")


def main() -> int:
    signal.signal(signal.SIGTERM, _stop)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=20, help="compares per scenario")
    parser.add_argument("--repeats", type=int, default=3, help="rounds per compare")
    parser.add_argument("--no-load", action="store_true", help="no background busy loop")
    parser.add_argument(
        "--scenarios", default="A/A,+50%,+10%", help="which to run, comma-separated (default all)"
    )
    args = parser.parse_args()

    load = None
    if not args.no_load:
        loop = f"import time\nd = time.monotonic() + {LOAD_LIMIT_S}\n"
        loop += "while time.monotonic() < d: pass\n"
        load = subprocess.Popen([sys.executable, "-c", loop])
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="latency-calibration-") as tmp:
            repo = materialise(Path(tmp) / "demo")
            results = Path(tmp) / "results"
            aa = Scenario("A/A", "main")
            plus50 = Scenario("+50%", costly_branch(repo, "cost-50", 0.5))
            plus10 = Scenario("+10%", costly_branch(repo, "cost-10", 0.1))
            try:
                chosen = set(args.scenarios.split(","))
                for scenario in (aa, plus50, plus10):
                    if scenario.name in chosen:
                        run(scenario, repo, results, args.runs, args.repeats)
            except (KeyboardInterrupt, SystemExit) as stop:
                print(f"  stopped ({stop!r}): the table holds the compares done", flush=True)
    finally:
        if load is not None:
            load.terminate()
            load.wait(timeout=10)
    minutes = (time.monotonic() - started) / 60

    print()
    print(
        f"latency calibration: {args.runs} fresh compares per scenario of the bundled demo, "
        f"{args.repeats} rounds each, {'one core kept busy' if load else 'no added load'} "
        f"on {os.cpu_count()} CPUs; {minutes:.1f} min"
    )
    header = (
        f"{'scenario':<9}{'slower':>7}{'faster':>7}{'same':>6}{'inconcl.':>9}"
        f"{'median ratio':>13}{'load avg':>11}   target: rate (95% Wilson CI)"
    )
    print(header)
    met = True
    for s, (what, k, ok) in (
        (aa, ("latency calls", s_calls(aa), s_calls(aa) <= max(1, args.runs // 20))),
        (plus50, ("slower", plus50.outcomes["regressed"], _power_ok(plus50, args.runs))),
        (plus10, ("faster", plus10.outcomes["improved"], plus10.outcomes["improved"] == 0)),
    ):
        n = sum(s.outcomes.values())
        if n == 0:
            print(f"{s.name:<9} not run")
            met = met and s.name not in set(args.scenarios.split(","))
            continue
        lo, hi = wilson(k, n)
        loads = f"{min(s.loads):.1f}-{max(s.loads):.1f}" if s.loads else "-"
        print(
            f"{s.name:<9}{s.outcomes['regressed']:>7}{s.outcomes['improved']:>7}"
            f"{s.outcomes['no measurable difference']:>6}{s.outcomes['inconclusive']:>9}"
            f"{median(s.ratios):>13.3f}{loads:>11}   {what} {k}/{n} = {k / n:.2f} "
            f"({lo:.2f}-{hi:.2f}){'' if ok else '  MISSED'}"
        )
        met = met and ok
    print("every target met" if met else "a target was missed")
    return 0 if met else 1


def s_calls(s: Scenario) -> int:
    return s.outcomes["regressed"] + s.outcomes["improved"]


def _power_ok(s: Scenario, runs: int) -> bool:
    return s.outcomes["regressed"] >= math.ceil(0.9 * runs) and s.outcomes["improved"] == 0


if __name__ == "__main__":
    sys.exit(main())

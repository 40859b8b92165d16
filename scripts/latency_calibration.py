#!/usr/bin/env python
"""Calibrate the latency verdict: how often it calls a change that is not there, how often it
says "no measurable difference" of an A/A, how often it calls one that is, when it stops.

    python scripts/latency_calibration.py --simulate [--sims 2000]        # seconds, no services
    python scripts/latency_calibration.py [--runs 10] [--effect-runs 5]   # live, slow
                                          [--modes plain,sandbox] [--loads quiet,bursty]
                                          [--scenarios A/A,+10%,+25%,+30ms] [--follow-advice]

Both modes print the same rows, each a rate with its Wilson 95% interval and its target:

    A/A false calls            slower or faster of main against main (target <= 5%)
    A/A no measurable diff.    within the default budget (target >= 80%)
    +10% / +25% / +30 ms       called slower (targets >= 50%, >= 90%, 100%)
    stops by rounds            the A/As' rounds at the stop (share per round count)
    advice followed decides    an inconclusive A/A compared again with the budget its verdict
                               advised ("--latency-budget N") decides (target >= 70%)

--simulate: thousands of simulated compares per row through the project's own decision code
(scripts/latency_simulation.py: boot-level shifts with heavy tails, per-query noise and spikes,
load bursts, the order effect), at three noise levels; it is how the design and its constants
(harness.verdict.latency_rule: GAMMA, EQUIVALENCE, the default budget) were chosen.

Live: every compare is the real CLI in a subprocess on the bundled demo repository
(harness.demo.materialise), `python -m harness.cli.main compare --fresh --format json` with no
--repeats (compare.repeats and compare.latency_budget at their defaults), its JSON verdict read
back.  Candidates: main (A/A); a branch whose /search handler busy-waits for 10% or 25% of the
time it has spent on the request (its own work per query, whatever the load); one that sleeps
30 ms per query.  Modes: plain (HARNESS_SANDBOX=off) and sandbox (bubblewrap, when it works).
Loads: quiet (whatever else the machine does) and bursty: one bounded CPU hog that bursts on
and off (busy 0.2-1.0 s, idle 0.2-1.5 s, seeded; it ends itself after LOAD_LIMIT_S and is ended
by its pid when the cell is done).  SIGTERM or Ctrl-C stops it after tearing
down the compare in flight and prints the rows of the compares done.  Exits 0 when every target
is met, 1 otherwise.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))  # latency_simulation beside it

import latency_simulation

from harness.demo import materialise
from harness.verdict.latency_rule import DEFAULT_BUDGET, parse_budget

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
    loads: list[float] = field(default_factory=list)
    stops: Counter[int] = field(default_factory=Counter)
    advised: list[int] = field(default_factory=list)  # budgets advised by inconclusive ones
    advice_decided: int = 0
    advice_followed: int = 0
    minutes: list[float] = field(default_factory=list)


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


def sleepy_branch(repo: Path, name: str, ms: float) -> str:
    """A branch of main whose search handler sleeps `ms` milliseconds before answering."""
    git(repo, "checkout", "-q", "-b", name, "main")
    svc = repo / "svc.py"
    text = svc.read_text()
    if HANDLER_ANSWER not in text or "import threading\n" not in text:
        raise SystemExit("the demo service changed: update HANDLER_* in this script")
    text = text.replace("import threading\n", "import threading\nimport time\n", 1)
    sleep = f"            time.sleep({ms / 1000!r})\n"
    svc.write_text(text.replace(HANDLER_ANSWER, sleep + HANDLER_ANSWER, 1))
    git(repo, "commit", "-q", "-am", f"search sleeps {ms:g} ms per query")
    git(repo, "checkout", "-q", "main")
    return name


def one_compare(
    repo: Path, results: Path, candidate: str, mode: str, extra: list[str]
) -> dict[str, Any]:
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
        "--results",
        str(results),
        "--quiet",
        *extra,
    ]
    env = dict(os.environ)
    if mode == "plain":
        env["HARNESS_SANDBOX"] = "off"
    else:
        env.pop("HARNESS_SANDBOX", None)
    process = subprocess.Popen(
        command, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
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


def run(
    scenario: Scenario,
    repo: Path,
    results: Path,
    runs: int,
    mode: str,
    budget: list[str],
    follow: bool,
) -> None:
    for i in range(runs):
        started = time.monotonic()
        doc = one_compare(repo, results, scenario.candidate, mode, budget)
        scenario.minutes.append((time.monotonic() - started) / 60)
        verdict = doc["verdict"]["latency"]
        scenario.outcomes[verdict] += 1
        test = doc["latency"]["test"]
        if test is not None:
            scenario.ratios.append(float(test["ratio"]))
            scenario.stops[len(test["rounds"])] += 1
        if doc["latency"].get("machine"):
            scenario.loads.append(float(doc["latency"]["machine"]["load_max"]))
        print(
            f"  {mode} {scenario.name} {i + 1}/{runs}: {verdict} ({doc['latency_reason']})",
            flush=True,
        )
        needed = test.get("rounds_needed") if test else None
        if follow and verdict == "inconclusive" and needed:
            scenario.advised.append(int(needed))
            again = one_compare(
                repo, results, scenario.candidate, mode, ["--latency-budget", str(needed)]
            )
            scenario.advice_followed += 1
            decided = again["verdict"]["latency"] != "inconclusive"
            scenario.advice_decided += decided
            print(
                f"    advice --latency-budget {needed} followed: {again['verdict']['latency']}",
                flush=True,
            )


def median(values: list[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    return (ordered[(n - 1) // 2] + ordered[n // 2]) / 2 if n else float("nan")


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(f"signal {signum}")


TARGETS = {  # row -> (at least?, bound)
    "A/A false calls": (False, 0.05),
    "A/A calls at tolerance 0": (False, 0.05),
    "  naive t after every round": (False, 1.0),  # shown for contrast, not a target
    "A/A no measurable difference": (True, 0.80),
    "+10% called slower": (True, 0.50),
    "+25% called slower": (True, 0.90),
    "+30 ms called slower": (True, 1.00),
    "advice followed decides": (True, 0.70),
}


def row(name: str, k: int, n: int) -> bool:
    """Print one row; True when its target is met (its point estimate, not its interval)."""
    at_least, bound = TARGETS[name]
    if n == 0:
        print(f"  {name:<30} not measured")
        return True
    lo, hi = wilson(k, n)
    ok = k / n >= bound if at_least else k / n <= bound
    target = (
        f"target {'>=' if at_least else '<='} {bound:.0%}"
        if bound < 1 or at_least
        else "for contrast, not valid"
    )
    print(
        f"  {name:<30} {k:>5}/{n:<5} {k / n:>7.1%}  ({lo:.1%}-{hi:.1%})  {target}"
        f"{'' if ok else '  MISSED'}"
    )
    return ok


def stops_row(stops: dict[int, int]) -> None:
    total = sum(stops.values())
    if total:
        shares = ", ".join(f"{k}: {v / total:.0%}" for k, v in sorted(stops.items()))
        print(f"  {'A/A stops by rounds':<30} {shares}")


def simulate(args: argparse.Namespace) -> int:
    budget = parse_budget(args.latency_budget or DEFAULT_BUDGET).rounds or 15
    print(
        f"latency calibration, simulated: {args.sims} compares per row, first look at round "
        f"{args.first}, budget {budget} rounds (harness.verdict.latency_rule)"
    )
    met = True
    for noise in latency_simulation.NOISES.values():
        started = time.monotonic()
        rates = latency_simulation.calibrate(noise, args.sims, first=args.first, budget=budget)
        print(
            f"{noise.name} (boot sd {noise.boot}, per-request sd {noise.within}, spikes "
            f"{noise.spike_rate:.0%}, bursts {noise.burst_share:.0%}):"
        )
        met &= row("A/A false calls", *rates.aa_calls)
        met &= row("A/A no measurable difference", *rates.aa_same)
        for name, (k, n) in rates.power.items():
            met &= row(f"{name} called slower", k, n)
        stops_row(rates.stops)
        met &= row("advice followed decides", *rates.advice)
        met &= row("A/A calls at tolerance 0", *rates.strict)
        row("  naive t after every round", *rates.strict_naive)
        print(f"  ({time.monotonic() - started:.0f} s)", flush=True)
    print("every target met" if met else "a target was missed")
    return 0 if met else 1


def bursty_hog(seed: int) -> subprocess.Popen[bytes]:
    """A CPU hog that bursts on and off, ending itself after LOAD_LIMIT_S."""
    loop = (
        "import random, time\n"
        f"r = random.Random({seed})\n"
        f"d = time.monotonic() + {LOAD_LIMIT_S}\n"
        "while time.monotonic() < d:\n"
        "    e = time.monotonic() + r.uniform(0.2, 1.0)\n"
        "    while time.monotonic() < e: pass\n"
        "    time.sleep(r.uniform(0.2, 1.5))\n"
    )
    return subprocess.Popen([sys.executable, "-c", loop])


def live(args: argparse.Namespace) -> int:
    chosen = set(args.scenarios.split(","))
    budget = ["--latency-budget", args.latency_budget] if args.latency_budget else []
    cells: list[tuple[str, str, list[Scenario]]] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="latency-calibration-") as tmp:
        repo = materialise(Path(tmp) / "demo")
        branches = {
            "A/A": "main",
            "+10%": costly_branch(repo, "cost-10", 0.10),
            "+25%": costly_branch(repo, "cost-25", 0.25),
            "+30ms": sleepy_branch(repo, "sleep-30", 30),
        }
        try:
            for load in args.loads.split(","):
                for mode in args.modes.split(","):
                    scenarios = [Scenario(n, b) for n, b in branches.items() if n in chosen]
                    cells.append((mode, load, scenarios))
                    hogs = [bursty_hog(0)] if (load == "bursty") else []
                    try:
                        for s in scenarios:
                            runs = args.runs if s.name == "A/A" else args.effect_runs
                            results = Path(tmp) / f"results-{mode}-{load}"
                            run(
                                s,
                                repo,
                                results,
                                runs,
                                mode,
                                budget,
                                args.follow_advice and s.name == "A/A",
                            )
                    finally:
                        for hog in hogs:
                            hog.terminate()
                            hog.wait(timeout=10)
        except (KeyboardInterrupt, SystemExit) as stop:
            print(f"  stopped ({stop!r}): the rows hold the compares done", flush=True)
    minutes = (time.monotonic() - started) / 60
    print()
    print(
        f"latency calibration, live: the bundled demo, default compares (--fresh, no --repeats; "
        f"budget {args.latency_budget or DEFAULT_BUDGET}), {args.runs} A/A and "
        f"{args.effect_runs} per effect per cell, {os.cpu_count()} CPUs; {minutes:.1f} min"
    )
    met = True
    for mode, load, scenarios in cells:
        by = {s.name: s for s in scenarios}
        loads = [x for s in scenarios for x in s.loads]
        span = f"load {min(loads):.1f}-{max(loads):.1f}" if loads else "load -"
        aa = by.get("A/A")
        times = f", median A/A compare {median(aa.minutes) * 60:.0f} s" if aa and aa.minutes else ""
        print(f"{mode}, {load} ({span}{times}):")
        if aa is not None:
            n = sum(aa.outcomes.values())
            met &= row("A/A false calls", aa.outcomes["regressed"] + aa.outcomes["improved"], n)
            met &= row("A/A no measurable difference", aa.outcomes["no measurable difference"], n)
        for name in ("+10%", "+25%", "+30ms"):
            effect = by.get(name)
            if effect is not None:
                label = "+30 ms" if name == "+30ms" else name
                met &= row(
                    f"{label} called slower",
                    effect.outcomes["regressed"],
                    sum(effect.outcomes.values()),
                )
        if aa is not None:
            stops_row(dict(aa.stops))
            met &= row("advice followed decides", aa.advice_decided, aa.advice_followed)
    print("every target met" if met else "a target was missed")
    return 0 if met else 1


def main() -> int:
    signal.signal(signal.SIGTERM, _stop)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--simulate", action="store_true", help="simulated compares only")
    parser.add_argument("--sims", type=int, default=2000, help="simulated compares per row")
    parser.add_argument("--first", type=int, default=5, help="simulated: compare.repeats")
    parser.add_argument("--runs", type=int, default=10, help="live A/A compares per cell")
    parser.add_argument("--effect-runs", type=int, default=5, help="live compares per effect")
    parser.add_argument("--modes", default="plain,sandbox", help="plain, sandbox or both")
    parser.add_argument("--loads", default="quiet,bursty", help="quiet, bursty or both")
    parser.add_argument(
        "--scenarios", default="A/A,+10%,+25%,+30ms", help="which to run, comma-separated"
    )
    parser.add_argument("--latency-budget", help="passed to every compare (default: its default)")
    parser.add_argument(
        "--follow-advice",
        action="store_true",
        help="live: compare an inconclusive A/A again with the budget it advised",
    )
    args = parser.parse_args()
    return simulate(args) if args.simulate else live(args)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""Calibrate the latency verdict: how often it calls a change that is not there, how often it
says "no measurable difference" of an A/A, how often it calls one that is, when it stops, and
whether its advice decides.

    python scripts/latency_calibration.py --simulate [--sims 2000]       # minutes, no services
    python scripts/latency_calibration.py [--runs 10] [--effect-runs 10]  # live, slow
        [--modes plain,sandbox] [--loads quiet,bursty]
        [--scenarios A/A,+10%,+25%,+30ms,+20ms tail]
        [--advice-runs 6] [--timing-runs 6] [--service cost|demo] [--quick]

Both print the same rows, each a count, its rate and Wilson 95% interval, and its target:

    A/A false calls            slower or faster of main against main (target <= 5%)
    A/A no measurable diff.    within the default budget (target >= 80%)
    +10% / +25% / +30 ms       called slower (targets >= 50%, >= 90%, 100%)
    +20ms tail                 called slower (target >= 80%), and by the mean alone (contrast)
    stops by rounds            the A/As' rounds at the stop (share per round count)
    advice followed decides    an inconclusive A/A compared again with the budget its verdict
                               advised ("--latency-budget N") decides (target >= 70%)

--simulate: thousands of simulated compares per row through the project's own decision code
(scripts/latency_simulation.py: boot-level shifts with heavy tails, per-query noise and spikes,
load bursts, the order effect, a persistent side bias), at each noise level; it is how the
design and its constants (harness.verdict.latency_rule) were chosen.

Live: every compare is the real CLI in a subprocess, a default compare (`compare --baseline
main --candidate X --format json`: no --fresh, no --repeats, compare.repeats and
compare.latency_budget at their defaults), its JSON verdict read back.  The service
(`--service cost`, the default) is `cost_service.py`: a fixed CPU cost per query (4 ms, 40
queries), so its branches cost what they say end to end: "+10%" and "+25%" add that share of
main's whole per-query latency (its CPU work plus the client, the loopback and the parsing,
measured before the runs on fresh processes, the fastest of 400 queries each) as CPU work;
"+30ms" sleeps 30 ms per query; "+20ms tail" sleeps 20 ms on the 10% of queries whose text
hashes lowest (4 of 40) and nothing else: a change the trimmed mean leaves out, called by the
tail rows (harness.verdict.latency_tail; p95 tells from 200 answers a side, 5 rounds here, p99
never at 40 queries), whose row also counts the compares the mean alone called.  Each
compare's measured ratio is printed and summarised.
`--service demo` runs the bundled demo instead (its handler busy-waits a share of its own
time: the client sees less).
Modes: plain (HARNESS_SANDBOX=off) and sandbox (bubblewrap, when it works).  Loads: quiet
(whatever else the machine does) and bursty: 2 x CPU count bounded hogs that each burst on and
off (busy 0.2-1.0 s, idle 0.2-1.5 s, seeded; each ends itself after LOAD_LIMIT_S and is ended by
its pid when the cell is done), so the load is well above the core count in bursts.

Then, in the first mode: advice followed (`--advice-runs` A/A compares forced to end
inconclusive more often, `--repeats 3 --latency-budget 3`, under the bursty hogs; each that
does is compared again exactly so with the `--latency-budget N` it advised), and time side by
side (`--timing-runs` default A/A compares alternating with the design before the sequential
rule, a fixed 5 rounds and one look: `--latency-budget 5`), quiet.  SIGTERM or Ctrl-C stops it
after tearing down the compare in flight and prints the rows of the compares done.  Exits 0
when every target is met, 1 otherwise.  `--quick`: a few compares per row, plain mode.
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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the scripts beside it

import cost_service
import latency_simulation

from harness.demo import materialise
from harness.verdict.latency_rule import DEFAULT_BUDGET, parse_budget

HANDLER_START = "    def do_GET(self) -> None:\n"
HANDLER_ANSWER = (
    '            self._send(200, {"results": [{"id": i, "score": s} for i, s in hits]})\n'
)
LOAD_LIMIT_S = 4 * 3600  # the background loop ends itself after this, whatever happens
COMPARE_TIMEOUT_S = 600
COST_MS = 4.0  # main's CPU work per query (cost service): the client's part is ~5% of it
QUERIES = 40
FIXED_ROUNDS = "5"  # the design before the sequential rule: compare.repeats rounds, one look


@dataclass
class Scenario:
    name: str
    candidate: str
    outcomes: Counter[str] = field(default_factory=Counter)
    ratios: list[float] = field(default_factory=list)
    loads: list[float] = field(default_factory=list)
    stops: Counter[int] = field(default_factory=Counter)
    seconds: list[float] = field(default_factory=list)
    mean_alone: Counter[str] = field(default_factory=Counter)  # the trimmed mean's own verdict


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
    """A branch of the demo whose search handler costs `extra` (0.5: +50%) more of its own
    time per query: before answering it busy-waits (CPU, like work) for `extra` times the time
    the request has taken since its headers began to be parsed."""
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
    """A branch of the demo whose search handler sleeps `ms` milliseconds before answering."""
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


def overhead_share(folder: Path) -> float:
    """The share of a cost-service query's end-to-end latency that is not its CPU work: the
    fastest latency of a service with no work over that of main's (fresh processes, a raw
    keep-alive socket, 400 queries each, interleaved)."""
    from latency_noise import BareService

    speed = cost_service.iterations_per_ms()
    zero = cost_service.make_repo(folder / "zero", queries=10, cost_ms=0.0, speed=speed)
    full = cost_service.make_repo(folder / "full", queries=10, cost_ms=COST_MS, speed=speed)
    env = {"PATH": os.environ.get("PATH", os.defpath)}
    services = [BareService(zero, env, None), BareService(full, env, None)]
    try:
        times: list[list[int]] = [[], []]
        for i in range(400):
            for side in (0, 1) if i % 2 else (1, 0):
                times[side].append(services[side].ask(b"/search?q=topic+q001&k=10"))
    finally:
        for service in services:
            service.close()
    # The fastest of each: the least disturbed by other work (under load the median of a
    # service with no work is mostly the scheduler's delay, and the share would read ~90%).
    return min(times[0]) / min(times[1])


def cost_repo(folder: Path) -> tuple[Path, dict[str, str], float]:
    """The cost service's repository: main and one branch per scenario, the overhead share."""
    share = median([overhead_share(folder / f"overhead-{i}") for i in range(3)])
    # Per query main takes COST_MS of work plus the overhead, i.e. COST_MS / (1 - share) in
    # all: a branch +X% end to end adds X% of that as work.
    whole = COST_MS / max(1 - share, 0.2)
    branches = {
        "cost-10": cost_service.Cost(extra_ms=0.10 * whole),
        "cost-25": cost_service.Cost(extra_ms=0.25 * whole),
        "sleep-30": cost_service.Cost(sleep_ms=30.0),
        "tail-20": cost_service.Cost(tail_ms=20.0, tail_share=0.10),
    }
    repo = cost_service.make_repo(
        folder / "cost", queries=QUERIES, cost_ms=COST_MS, branches=branches
    )
    names = {"A/A": "main", "+10%": "cost-10", "+25%": "cost-25", "+30ms": "sleep-30",
             "+20ms tail": "tail-20"}  # fmt: skip
    return repo, names, share


def demo_repo(folder: Path) -> tuple[Path, dict[str, str]]:
    repo = materialise(folder / "demo")
    return repo, {
        "A/A": "main",
        "+10%": costly_branch(repo, "cost-10", 0.10),
        "+25%": costly_branch(repo, "cost-25", 0.25),
        "+30ms": sleepy_branch(repo, "sleep-30", 30),
    }


def one_compare(
    repo: Path, results: Path, candidate: str, mode: str, extra: Sequence[str]
) -> tuple[dict[str, Any], float]:
    """A default compare of main against `candidate` (plus `extra` options): its JSON, seconds."""
    command = [
        sys.executable,
        "-m",
        "harness.cli.main",
        "compare",
        "--baseline",
        "main",
        "--candidate",
        candidate,
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
    started = time.monotonic()
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
    return document, time.monotonic() - started


def _verdict(doc: dict[str, Any]) -> tuple[str, float | None, int | None, int | None]:
    """(latency verdict, ratio, rounds run, rounds advised) of a compare's JSON."""
    test = doc["latency"]["test"]
    if test is None:
        return doc["verdict"]["latency"], None, None, None
    needed = test.get("rounds_needed")
    return (
        doc["verdict"]["latency"],
        float(test["ratio"]),
        len(test["rounds"]),
        int(needed) if needed else None,
    )


def run(
    scenario: Scenario, repo: Path, results: Path, runs: int, mode: str, extra: Sequence[str]
) -> None:
    for i in range(runs):
        doc, seconds = one_compare(repo, results, scenario.candidate, mode, extra)
        verdict, ratio, rounds, _ = _verdict(doc)
        scenario.seconds.append(seconds)
        scenario.outcomes[verdict] += 1
        test = doc["latency"]["test"]
        scenario.mean_alone[test["verdict"] if test else "none"] += 1
        if ratio is not None and rounds is not None:
            scenario.ratios.append(ratio)
            scenario.stops[rounds] += 1
        if doc["latency"].get("machine"):
            scenario.loads.append(float(doc["latency"]["machine"]["load_max"]))
        print(
            f"  {mode} {scenario.name} {i + 1}/{runs} ({seconds:.0f} s, ratio "
            f"{ratio if ratio is None else round(ratio, 3)}, {rounds} rounds): {verdict}",
            flush=True,
        )


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    return (ordered[(n - 1) // 2] + ordered[n // 2]) / 2 if n else float("nan")


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(f"signal {signum}")


TARGETS = {  # row -> (at least?, bound)
    "A/A false calls": (False, 0.05),
    "A/A calls at tolerance 0": (False, 0.05),
    "  naive t after every round": (False, 1.0),  # shown for contrast, not a target
    "  random effects, Satterthwaite": (False, 1.0),  # shown for contrast
    "  each round whole, not by order": (False, 1.0),  # shown for contrast
    "A/A no measurable difference": (True, 0.80),
    "+10% called slower": (True, 0.50),
    "+25% called slower": (True, 0.90),
    "+30 ms called slower": (True, 1.00),
    "+20ms tail called slower": (True, 0.80),  # by the tail rows: p95 about 6x
    "  the mean alone called it": (False, 1.0),  # shown for contrast
    "advice followed decides": (True, 0.70),
}


def row(name: str, k: int, n: int, *, targeted: bool = True) -> bool:
    """Print one row; True when its target is met (its point estimate, not its interval)."""
    at_least, bound = TARGETS[name]
    if not targeted:
        bound, at_least = 1.0, False
    if n == 0:
        print(f"  {name:<30} not measured")
        return True
    lo, hi = wilson(k, n)
    ok = k / n >= bound if at_least else k / n <= bound
    target = (
        f"target {'>=' if at_least else '<='} {bound:.0%}"
        if bound < 1 or at_least
        else "for contrast"
    )
    print(
        f"  {name:<30} {k:>5}/{n:<5} {k / n:>7.1%}  ({lo:.1%}-{hi:.1%})  {target}"
        f"{'' if ok else '  MISSED'}"
    )
    return ok


def stops_row(stops: dict[int, int]) -> None:
    """The share of compares stopped at each round count, each with its Wilson interval."""
    total = sum(stops.values())
    if total:
        shares = ", ".join(
            f"{k}: {v / total:.0%} ({wilson(v, total)[0]:.0%}-{wilson(v, total)[1]:.0%})"
            for k, v in sorted(stops.items())
        )
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
        kept = {
            "all": set(TARGETS),
            "validity": {"A/A false calls", "A/A calls at tolerance 0"},
            "none": set(),
        }[noise.targets]
        print(
            f"{noise.name} (boot sd {noise.boot}, t with {noise.boot_df:g} df; per-request sd "
            f"{noise.within}, spikes {noise.spike_rate:.0%}, bursts {noise.burst_share:.0%}, "
            f"side bias {math.exp(noise.side_bias) - 1:+.1%}; targets: {noise.targets}):"
        )

        def shown(name: str, k: int, n: int, kept: set[str] = kept) -> bool:
            return row(name, k, n, targeted=name in kept) or name not in kept

        met &= shown("A/A false calls", *rates.aa_calls)
        met &= shown("A/A no measurable difference", *rates.aa_same)
        row("  each round whole, not by order", *rates.aa_same_whole)
        for name, (k, n) in rates.power.items():
            met &= shown(f"{name} called slower", k, n)
        stops_row(rates.stops)
        print(
            f"  {'A/A mean rounds at the stop':<30} {rates.mean_rounds:.1f} (random effects, "
            f"Satterthwaite: {rates.mean_rounds_satterthwaite:.1f})"
        )
        met &= shown("advice followed decides", *rates.advice)
        met &= shown("A/A calls at tolerance 0", *rates.strict)
        row("  random effects, Satterthwaite", *rates.strict_satterthwaite)
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


class Hogs:
    """`count` bursty hogs for the length of a with-block, each ended by its pid."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.hogs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Hogs:
        self.hogs = [bursty_hog(seed) for seed in range(self.count)]
        return self

    def __exit__(self, *exc: object) -> None:
        for hog in self.hogs:
            hog.terminate()
            hog.wait(timeout=10)


def loads_span(loads: Sequence[float]) -> str:
    return f"load {min(loads):.1f}-{max(loads):.1f}" if loads else "load -"


def ratio_span(ratios: Sequence[float]) -> str:
    if not ratios:
        return ""
    return f"measured ratio median {median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})"


def live(args: argparse.Namespace) -> int:
    chosen = args.scenarios.split(",")
    hogs = args.hogs or 2 * (os.cpu_count() or 1)
    cells: list[tuple[str, str, list[Scenario]]] = []
    advice = [0, 0]  # decided, followed
    timing: dict[str, Scenario] = {}
    modes = args.modes.split(",")
    started = time.monotonic()
    share = None
    with tempfile.TemporaryDirectory(prefix="latency-calibration-") as tmp:
        os.environ.setdefault("HARNESS_CACHE_DIR", str(Path(tmp) / "cache"))
        if args.service == "cost":
            repo, branches, share = cost_repo(Path(tmp))
            print(
                f"cost service: {COST_MS:g} ms of CPU per query, {QUERIES} queries; the client, "
                f"loopback and parsing are {share:.0%} of main's latency (measured), so +10% "
                "and +25% add that share of the whole as work",
                flush=True,
            )
        else:
            repo, branches = demo_repo(Path(tmp))
        try:
            for load in args.loads.split(","):
                for mode in modes:
                    scenarios = [Scenario(n, branches[n]) for n in chosen]
                    cells.append((mode, load, scenarios))
                    with Hogs(hogs if load == "bursty" else 0):
                        for s in scenarios:
                            runs = args.runs if s.name == "A/A" else args.effect_runs
                            results = Path(tmp) / f"results-{mode}-{load}"
                            run(s, repo, results, runs, mode, [])
            mode = modes[0]
            # Advice followed: A/As forced toward "inconclusive" (3 rounds, one look), under load.
            forced = ["--repeats", "3", "--latency-budget", "3"]
            with Hogs(hogs):
                for i in range(args.advice_runs * 4):
                    if advice[1] >= args.advice_runs:
                        break
                    doc, _ = one_compare(repo, Path(tmp) / "advice", "main", mode, forced)
                    verdict, _, _, needed = _verdict(doc)
                    print(f"  advice: forced A/A {i + 1}: {verdict} ({needed} advised)", flush=True)
                    if verdict != "inconclusive" or needed is None:
                        continue
                    again, _ = one_compare(
                        repo,
                        Path(tmp) / "advice",
                        "main",
                        mode,
                        ["--repeats", "3", "--latency-budget", str(needed)],
                    )
                    followed = _verdict(again)
                    advice[1] += 1
                    advice[0] += followed[0] != "inconclusive"
                    print(
                        f"    --latency-budget {needed} followed: {followed[0]} after "
                        f"{followed[2]} rounds",
                        flush=True,
                    )
            # Time, side by side: a default A/A against the fixed 5 rounds, alternating.
            timing = {"default": Scenario("default", "main"), "fixed": Scenario("fixed", "main")}
            for i in range(args.timing_runs):
                for name in ("default", "fixed") if i % 2 == 0 else ("fixed", "default"):
                    extra = [] if name == "default" else ["--latency-budget", FIXED_ROUNDS]
                    run(timing[name], repo, Path(tmp) / "timing", 1, mode, extra)
        except (KeyboardInterrupt, SystemExit) as stop:
            print(f"  stopped ({stop!r}): the rows hold the compares done", flush=True)
    minutes = (time.monotonic() - started) / 60
    print()
    what = "the cost service" if args.service == "cost" else "the bundled demo"
    print(
        f"latency calibration, live: {what}, default compares (no --fresh, no --repeats; budget "
        f"{DEFAULT_BUDGET}), {args.runs} A/A and {args.effect_runs} per effect per cell, "
        f"{os.cpu_count()} CPUs, bursty = {hogs} hogs; {minutes:.1f} min"
    )
    met = True
    for mode, load, scenarios in cells:
        by = {s.name: s for s in scenarios}
        loads = [x for s in scenarios for x in s.loads]
        aa = by.get("A/A")
        times = f", median A/A compare {median(aa.seconds):.1f} s" if aa and aa.seconds else ""
        print(f"{mode}, {load} ({loads_span(loads)}{times}):")
        if aa is not None:
            n = sum(aa.outcomes.values())
            met &= row("A/A false calls", aa.outcomes["regressed"] + aa.outcomes["improved"], n)
            met &= row("A/A no measurable difference", aa.outcomes["no measurable difference"], n)
            print(f"  {'':<30} {ratio_span(aa.ratios)}")
        for name in ("+10%", "+25%", "+30ms", "+20ms tail"):
            effect = by.get(name)
            if effect is not None:
                label = "+30 ms" if name == "+30ms" else name
                met &= row(
                    f"{label} called slower",
                    effect.outcomes["regressed"],
                    sum(effect.outcomes.values()),
                )
                print(f"  {'':<30} {ratio_span(effect.ratios)}")
                if name == "+20ms tail":
                    row("  the mean alone called it", effect.mean_alone["regressed"],
                        sum(effect.mean_alone.values()), targeted=False)  # fmt: skip
        if aa is not None:
            stops_row(dict(aa.stops))
    print(f"{modes[0]}, bursty, A/A at --repeats 3 --latency-budget 3 then the advised budget:")
    met &= row("advice followed decides", *advice)
    if timing and timing["default"].seconds:
        print(f"{modes[0]}, quiet, time of an A/A compare, alternating:")
        for name, said in (
            ("default", f"default (budget {DEFAULT_BUDGET})"),
            ("fixed", f"fixed {FIXED_ROUNDS} rounds"),
        ):
            s = timing[name]
            if not s.seconds:
                print(f"  {said:<30} not measured")
                continue
            same = s.outcomes["no measurable difference"]
            n = len(s.seconds)
            lo, hi = wilson(same, n)
            print(
                f"  {said:<30} median {median(s.seconds):.1f} s ({min(s.seconds):.1f}-"
                f"{max(s.seconds):.1f}, {n} compares, {loads_span(s.loads)}); "
                f"no measurable difference {same}/{n} ({lo:.0%}-{hi:.0%})"
            )
    print("every target met" if met else "a target was missed")
    return 0 if met else 1


def main() -> int:
    signal.signal(signal.SIGTERM, _stop)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--simulate", action="store_true", help="simulated compares only")
    parser.add_argument("--sims", type=int, default=2000, help="simulated compares per row")
    parser.add_argument("--first", type=int, default=5, help="simulated: compare.repeats")
    parser.add_argument("--runs", type=int, default=10, help="live A/A compares per cell")
    parser.add_argument("--effect-runs", type=int, default=10, help="live compares per effect")
    parser.add_argument("--advice-runs", type=int, default=6, help="inconclusive A/As to follow")
    parser.add_argument("--timing-runs", type=int, default=6, help="A/As timed per design")
    parser.add_argument("--modes", default="plain,sandbox", help="plain, sandbox or both")
    parser.add_argument("--loads", default="quiet,bursty", help="quiet, bursty or both")
    parser.add_argument("--hogs", type=int, default=0, help="bursty hogs (default 2 x CPUs)")
    parser.add_argument("--service", choices=("cost", "demo"), default="cost")
    parser.add_argument(
        "--scenarios", default="A/A,+10%,+25%,+30ms", help="which to run, comma-separated"
    )
    parser.add_argument("--latency-budget", help="simulated: the budget (default: the default)")
    parser.add_argument("--quick", action="store_true", help="a few compares per row, plain")
    args = parser.parse_args()
    if args.quick:
        args.sims = min(args.sims, 200)
        args.runs, args.effect_runs, args.advice_runs, args.timing_runs = 3, 2, 2, 2
        args.modes = "plain"
    return simulate(args) if args.simulate else live(args)


if __name__ == "__main__":
    sys.exit(main())

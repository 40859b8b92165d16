"""Every scripts/bench_*.py runs, on tiny data, to its figures: none rots silently.

Each benchmark runs as a user runs it (`python scripts/bench_X.py ...`, a subprocess, from a
temporary folder), with the smallest arguments it has (a few queries, one round, one boot), and
must exit 0 and print the lines its figures are on.  Its numbers are not judged here (a busy
test machine would fail any bound): the scripts print them against their targets.  One exception
to "exit 0": bench_client exits 1 when the harness's overhead is over its bound, which on a
loaded test machine says nothing; there the test asks for the verdict line instead.  The ones that
boot demo compares or generate data take 5-20 s and are `slow`; a benchmark that compares
against a peer library (pytrec_eval, ir_measures, ranx: the test extra) skips, saying so, when
it is not installed.  A new bench script needs a case here (the first test fails otherwise).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"


@dataclass(frozen=True)
class Bench:
    script: str
    args: tuple[str, ...]
    prints: tuple[str, ...]  # each on some line of stdout: the figures' lines
    needs: tuple[str, ...] = ()  # peer libraries (skipped without)
    exits: tuple[int, ...] = (0,)

    @property
    def id(self) -> str:
        return f"{self.script} {' '.join(self.args)}".strip()


FAST = [
    Bench("bench_advice.py", ("--quick",), ("budget_for (", "power.power", "<= 50 ms: met")),
    Bench("bench_stages.py", ("--runs", "1"), ("generate()", "gold check_files")),
    Bench("bench_looks.py", ("--queries", "60", "--runs", "1"), ("60 queries, blocks of 10",)),
    Bench(
        "bench_overhead.py",
        ("--runs", "1", "--skip-demo"),
        ("python -c pass", "harness --help", "load average"),
    ),
    Bench(
        "bench_client.py",
        ("--queries", "40"),
        ("raw ", "harness ", "httpx ", "harness timed path: "),
        exits=(0, 1),
    ),
    Bench(
        "bench_data.py",
        ("--index-gib", "1", "--small", "10", "--copy-mib", "1", "--runs", "1"),
        ("manifest:", "data_mode = 'read-only'", "data_mode = 'copy'"),
    ),
    Bench(
        "bench_boot_cpu.py",
        ("--boots", "1", "--rounds", "1", "--fast"),
        ("ms of harness CPU per boot+teardown",),
    ),
    Bench(
        "bench_metrics.py",
        ("--sizes", "200x10", "--runs", "1", "--tools", "harness"),
        ("200 queries x 10", "harness "),
    ),
]
SLOW = [
    Bench("bench_replay_cpu.py", ("--demos", "1", "--phases", "--quick"),
          ("--quick: each demo compare with --repeats 2", "us of measuring CPU per exchange",
           "of which the boots", "the analysis")),
    Bench(
        "bench_overhead.py",
        ("--runs", "1", "--demos", "1", "--quick"),
        ("--quick: each demo compare with --repeats 2", "harness --help", "own / wall"),
    ),
    Bench(
        "bench_cache.py",
        ("--queries", "200", "--runs", "1"),
        ("cold wall", "cached wall", "cold / cached, wall"),
    ),
    Bench(
        "bench_scale.py",
        ("--queries", "300", "--rss-queries", "300", "--runs", "1"),
        ("analysis wall at", "peak RSS at", "verdicts:"),
    ),
    # One run against the peers: each run generates the data and starts Python and harness.
    # Not ranx here: its import and numba's cached code cost ~10 s of CPU a process, twice (the
    # warm-up and the run); bench_compare_runs.py's case runs ranx's run reader and compare.
    Bench(
        "bench_metrics.py",
        ("--sizes", "200x10", "--runs", "1", "--tools", "harness,pytrec_eval,ir_measures"),
        ("200 queries x 10", "pytrec_eval ", "ir_measures "),
        needs=("pytrec_eval", "ir_measures"),
    ),
]


def _run(bench: Bench, cwd: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    missing = [name for name in bench.needs if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"{bench.script} needs {', '.join(missing)}: not installed "
                    "(the test extra has them: pip install -e '.[test]')")  # fmt: skip
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / bench.script), *bench.args, *extra],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        timeout=900,
    )
    said = f"exit {done.returncode}\nstdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    assert done.returncode in bench.exits, said
    assert "Traceback" not in done.stderr, said
    for text in bench.prints:
        assert any(text in line for line in done.stdout.splitlines()), f"no {text!r}: {said}"
    return done


def test_every_bench_script_has_a_case() -> None:
    scripts = {path.name for path in (ROOT / "scripts").glob("bench_*.py")}
    covered = {bench.script for bench in FAST + SLOW} | {"bench_compare_runs.py"}
    assert scripts - covered == set(), "give each bench script a case here"


@pytest.mark.parametrize("bench", FAST, ids=lambda b: b.id)
def test_bench_runs_on_tiny_data(bench: Bench, tmp_path: Path) -> None:
    _run(bench, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("bench", SLOW, ids=lambda b: b.id)
def test_slow_bench_runs_on_tiny_data(bench: Bench, tmp_path: Path) -> None:
    _run(bench, tmp_path)


@pytest.mark.slow
def test_bench_compare_runs_on_scifact(tmp_path: Path) -> None:
    # Its data is a public collection and runs made by bm25s (scripts/make_scifact_runs.py).
    if not (SCIFACT / "qrels.tsv").exists():
        pytest.skip(f"{SCIFACT} is absent: the public collections are not on this machine")
    bench = Bench(
        "bench_compare_runs.py",
        ("--gold", str(SCIFACT), "--runs", str(tmp_path / "runs"), "--rounds", "1"),
        ("largest difference of a mean:", "p-values, each candidate"),
        needs=("ranx", "bm25s"),
    )
    printed = _run(bench, tmp_path).stdout.splitlines()
    # ranx is compare-runs' oracle here, on real runs: every mean equal, every p within
    # resampling error of ranx's Fisher test (1,000 permutations; ours at least 1,000 draws).
    (worst,) = [line for line in printed if line.startswith("largest difference of a mean:")]
    assert float(worst.split()[5]) <= 1e-9, worst
    table = printed.index("p-values, each candidate against the baseline")
    rows = [line.split() for line in printed[table + 2 :] if line.startswith("  bm25")]
    assert len(rows) == 12, printed[table:]  # 2 candidates x 6 metrics
    for row in rows:
        ours, fisher = float(row[2]), float(row[-3])
        error = (max(fisher, 1e-3) * (1 - min(fisher, 0.999)) / 1000) ** 0.5
        assert abs(ours - fisher) <= 5 * 2**0.5 * error + 2e-3, row

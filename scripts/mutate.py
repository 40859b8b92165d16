#!/usr/bin/env python3
"""Mutation testing of the code whose bugs change a verdict, a reuse decision or a file on disk.

    python scripts/mutate.py                     # every target below, one after the other
    python scripts/mutate.py results runner      # some of them
    python scripts/mutate.py --list              # the targets and their tests

Not part of CI (minutes to tens of minutes). For each target, a copy of the working tree goes to a
scratch directory (the checkout is never written to), a [tool.mutmut] section naming the target's
files and its focused tests is appended to the copy's pyproject.toml, and `mutmut run` mutates
there. It prints killed / survived / other counts per target and every survivor's name; `mutmut
show NAME` in the scratch directory (printed, kept with --keep) shows a survivor's diff.

Tests run with `-m "not slow"`: the slow tests drive the CLI as a subprocess, which imports the
unmutated package, so they cannot kill a mutant anyway; and without the purity tests (a mutated
module imports mutmut's trampoline, which they rightly refuse). Hypothesis runs the "mutate"
profile (fewer examples, tests/conftest.py). Needs mutmut (`pip install -e '.[dev]'`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Target:
    files: tuple[str, ...]  # globs relative to the repository, as mutmut's only_mutate
    tests: tuple[str, ...]


TARGETS = {
    "score": Target(
        ("harness/score/*.py",),
        (
            "tests/score/test_metrics.py",
            "tests/score/test_metrics_generated_oracle.py",
            "tests/score/test_runfile.py",
            "tests/score/test_evaluation_edges.py",
        ),
    ),
    "verdict": Target(
        ("harness/verdict/*.py",),
        (
            "tests/verdict/test_compare.py",
            "tests/verdict/test_stats.py",
            "tests/report/test_run_summary.py",
            "tests/report/test_report.py",
            "tests/verdict/test_verdict_edges.py",
        ),
    ),
    "results": Target(
        ("harness/results/*.py",),
        (
            "tests/results/test_results.py",
            "tests/results/test_records.py",
            "tests/results/test_reuse.py",
            "tests/e2e/test_redaction.py",
            "tests/report/test_report.py",
        ),
    ),
    "runner": Target(
        ("harness/driver/runner.py", "harness/driver/session.py", "harness/driver/pairs.py"),
        ("tests/driver/test_interleave.py", "tests/driver/test_runner.py"),
    ),
}

# The purity tests fail under mutmut (every mutated module imports its trampoline): left out.
PYTEST_ARGS = [
    "-p",
    "no:cacheprovider",
    "-m",
    "not slow",
    "-k",
    "not nothing_that_does_io and not without_io",
]

# mutmut's `results` lines: "    harness.x.y.f__mutmut_3: survived"
RESULT_LINE = re.compile(r"^\s*(\S+__mutmut_\d+): (.+)$")
ANYWHERE = shutil.ignore_patterns("__pycache__", "*.egg-info")
AT_ROOT = {".git", ".venv", "mutants", "results", ".mypy_cache", ".ruff_cache", ".hypothesis"}


def _ignore(folder: str, names: list[str]) -> set[str]:
    """What the scratch copy leaves out: caches anywhere, the checkout's own state at its root
    (not harness/results, which is code)."""
    skipped = set(ANYWHERE(folder, names))
    if Path(folder).resolve() == ROOT:
        skipped |= AT_ROOT & set(names)
    return skipped


def mutmut_section(target: Target) -> str:
    def toml_list(items: tuple[str, ...] | list[str]) -> str:
        return json.dumps(list(items))

    return "\n".join(
        [
            "",
            "[tool.mutmut]",
            'source_paths = ["harness"]',
            f"only_mutate = {toml_list(target.files)}",
            f"pytest_add_cli_args_test_selection = {toml_list(target.tests)}",
            f"pytest_add_cli_args = {toml_list(PYTEST_ARGS)}",
            "",
        ]
    )


def end_leftovers(work: Path) -> None:
    """SIGKILL every process of ours whose command line or cwd lies inside `work`: services that
    tests booted in sessions of their own outlive mutmut's process group when it is stopped."""
    import psutil

    inside = str(work)
    for proc in psutil.process_iter(["pid", "uids", "cmdline", "cwd"]):
        info = proc.info
        if proc.pid == os.getpid() or info["uids"] is None or info["uids"].real != os.getuid():
            continue
        if any(inside in arg for arg in info["cmdline"] or ()) or (info["cwd"] or "").startswith(
            inside
        ):
            with contextlib.suppress(psutil.Error):
                proc.kill()


def run_target(
    name: str, target: Target, scratch: Path, children: int, budget: float
) -> Counter[str]:
    work = scratch / name
    shutil.copytree(ROOT, work, ignore=_ignore)
    with (work / "pyproject.toml").open("a", encoding="utf-8") as f:
        f.write(mutmut_section(target))
    # Every test's temporary directory inside the scratch copy, so that whatever a test started
    # (a fixture service in its own session) can be found and ended if mutmut is stopped.
    (work / "tmp").mkdir()
    env = {**os.environ, "HARNESS_HYPOTHESIS_PROFILE": "mutate", "TMPDIR": str(work / "tmp")}
    started = time.monotonic()
    run = subprocess.Popen(
        [sys.executable, "-m", "mutmut", "run", "--max-children", str(children)],
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        start_new_session=True,  # its workers too are ended with it, by process group
    )
    try:
        run.wait(timeout=budget)
    except subprocess.TimeoutExpired:
        print(f"{name}: stopped after the {budget:.0f} s budget; unchecked mutants are listed")
        os.killpg(run.pid, signal.SIGTERM)
        try:
            run.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
        end_leftovers(work)
    listed = subprocess.run(
        [sys.executable, "-m", "mutmut", "results", "--all", "true"],
        cwd=work,
        env=env,
        check=False,
        capture_output=True,
        text=True,
    ).stdout
    counts: Counter[str] = Counter()
    survivors = []
    for line in listed.splitlines():
        m = RESULT_LINE.match(line)
        if m:
            status = m.group(2).strip()
            counts[status] += 1
            if status == "survived":
                survivors.append(m.group(1))
    elapsed = time.monotonic() - started
    summary = ", ".join(f"{status} {n}" for status, n in sorted(counts.items()))
    print(f"{name}: {summary or 'no mutants (see mutmut output)'} in {elapsed:.0f} s  [{work}]")
    for survivor in survivors:
        print(f"  survived: {survivor}")
    sys.stdout.flush()
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", metavar="TARGET", help=f"of {', '.join(TARGETS)}")
    parser.add_argument("--children", type=int, default=2, help="parallel mutmut workers")
    parser.add_argument(
        "--budget", type=float, default=1200, help="seconds per target before mutmut is stopped"
    )
    parser.add_argument("--keep", action="store_true", help="keep the scratch directories")
    parser.add_argument("--list", action="store_true", help="print the targets and exit")
    args = parser.parse_args()
    unknown = [t for t in args.targets if t not in TARGETS]
    if unknown:
        parser.error(f"unknown target {', '.join(unknown)} (choose from {', '.join(TARGETS)})")
    if args.list:
        for name, target in TARGETS.items():
            print(f"{name}: {' '.join(target.files)}  <-  {' '.join(target.tests)}")
        return 0
    scratch = Path(tempfile.mkdtemp(prefix="harness-mutate-"))
    total: Counter[str] = Counter()
    try:
        for name in args.targets or list(TARGETS):
            total += run_target(name, TARGETS[name], scratch, args.children, args.budget)
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    print("total: " + ", ".join(f"{status} {n}" for status, n in sorted(total.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())

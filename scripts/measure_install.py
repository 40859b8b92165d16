#!/usr/bin/env python3
"""What a new user pays to pick harness up: a clean clone, a fresh venv, `pip install .`.

    scripts/measure_install.py                      # install time, site-packages size, demo
    scripts/measure_install.py --extras all         # the same with `pip install '.[all]'`
    scripts/measure_install.py --tests              # and the two test commands' wall times
    scripts/measure_install.py --only-tests         # the test timings alone (no clone, no install)
    scripts/measure_install.py --only-tests --slowest 15   # and the 15 costliest test files
    scripts/measure_install.py --only-tests inner   # the inner loop alone

Prints, one line each: the load average (1 min) before and after, the wall time of
`pip install .` (pip's cache off by default: a first install), the size of the fresh venv's
site-packages (MB, 10^6 bytes, every file counted once), the README's length in characters,
and whether `compare --demo` runs from that venv (its exit status and wall time). With
--tests, the wall time of `pytest` (the default: `-n auto`) and of the inner loop
`pytest -m "not slow"`, both run in this checkout with --python (default: this interpreter,
which needs the test extra installed). --only-tests skips the clone, the install and the demo
(`--only-tests inner`: the inner loop alone);
--slowest N adds, per test command, the N test files with the most test time (setup, call and
teardown summed over a file's tests, from pytest's JUnit XML: the time a worker spends on it).

Targets (issue 26): site-packages <= 450 MB, install <= 45 s at light load, the demo runs;
`pytest` <= 5 min and `pytest -m "not slow"` <= 90 s at light load. The machine's load is
printed beside each time because on a shared 2-core machine it moves every time measured.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"site_mb": 450.0, "install_s": 45.0, "suite_s": 300.0, "inner_s": 90.0}


def load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def tree_bytes(path: Path) -> int:
    """Bytes of every regular file under `path`, each inode once (hard links are not doubled)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            st = os.lstat(os.path.join(folder, name))
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


def timed(cmd: list[str], **kwargs: object) -> tuple[int, float, str]:
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]
    return done.returncode, time.monotonic() - t0, done.stdout + done.stderr


def clean_clone(source: Path, dest: Path) -> Path:
    """HEAD of `source`, cloned (what a user gets from `git clone`: no venv, no caches)."""
    subprocess.run(
        ["git", "clone", "--quiet", "--no-hardlinks", str(source), str(dest)], check=True
    )
    return dest


def verdict(value: float, target: float) -> str:
    return "met" if value <= target else "NOT met"


def file_seconds(junit: Path) -> Counter[str]:
    """Seconds of test time per test file, from pytest's JUnit XML (classname tests.test_x)."""
    seconds: Counter[str] = Counter()
    for case in ET.parse(junit).iter("testcase"):
        parts = case.get("classname", "").split(".")
        while parts and parts[-1][:1].isupper():  # a test class: its file is the module
            parts.pop()
        name = "/".join(parts) + ".py" if parts else "?"
        seconds[name] += float(case.get("time", "0"))
    return seconds


def time_tests(python: str, slowest: int, work: Path, which: str = "both") -> bool:
    """Time `pytest` (unless `which` is "inner") and `pytest -m "not slow"` in this checkout;
    True when one failed."""
    failed = False
    for label, extra, limit in (
        ("pytest", [], TARGETS["suite_s"]),
        ('pytest -m "not slow"', ["-m", "not slow"], TARGETS["inner_s"]),
    ):
        if which == "inner" and not extra:
            continue
        junit = work / f"junit-{len(extra)}.xml"
        before = load()
        cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}"]
        status, seconds, output = timed([*cmd, *extra], cwd=ROOT)
        tail = output.strip().splitlines()[-1:] or [""]
        print(
            f"{label}: {seconds:.0f} s, exit {status} (load {before} -> {load()}; "
            f"target <= {limit:.0f} s at light load): {tail[0]}"
        )
        for line in output.splitlines():  # -ra: one line per failed or erroring test
            if line.startswith(("FAILED ", "ERROR ")):
                print(f"  {line}")
        said = [line for line in output.splitlines() if line.startswith("E ")]
        for line in said[:12]:  # what failed, from the tracebacks: a failure seen once is kept
            print(f"    {line}")
        if slowest and junit.is_file():
            for name, spent in file_seconds(junit).most_common(slowest):
                print(f"  {spent:7.1f} s  {name}")
        failed = failed or status != 0
    return failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extras", default="", help="install '.[EXTRAS]' (e.g. arrow or all)")
    parser.add_argument("--cache", action="store_true", help="let pip use its cache")
    parser.add_argument(
        "--source", type=Path, default=ROOT, help="the git checkout to clone (default: this one)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--tests", action="store_true", help="also time pytest and the inner loop")
    parser.add_argument(
        "--only-tests",
        nargs="?",
        const="both",
        choices=["both", "inner"],
        help="time the two test commands (or the inner loop alone), nothing else",
    )
    parser.add_argument(
        "--slowest",
        type=int,
        default=0,
        metavar="N",
        help="with the test timings: N costliest files",
    )
    parser.add_argument(
        "--python", default=sys.executable, help="the interpreter --tests runs pytest with"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="harness-install-"))
    failed = False
    try:
        if args.only_tests:
            return 1 if time_tests(args.python, args.slowest, work, args.only_tests) else 0
        clone = clean_clone(args.source, work / "clone")
        venv = work / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        py = venv / "bin" / "python"
        target = f".[{args.extras}]" if args.extras else "."
        pip = [str(py), "-m", "pip", "install", "--quiet", target]
        if not args.cache:
            pip.insert(4, "--no-cache-dir")
        before = load()
        status, seconds, output = timed(pip, cwd=clone)
        if status != 0:
            print(output[-4000:], file=sys.stderr)
            print(f"pip install {target}: exit {status}", file=sys.stderr)
            return 1
        site = next((venv / "lib").glob("python3.*/site-packages"))
        size = tree_bytes(site) / 1e6
        readme = len((clone / "README.md").read_text(encoding="utf-8"))
        print(
            f"pip install {target}: {seconds:.1f} s (load {before} -> {load()}; target "
            f"<= {TARGETS['install_s']:.0f} s at light load)"
        )
        print(
            f"site-packages: {size:.0f} MB ({verdict(size, TARGETS['site_mb'])}: "
            f"target <= {TARGETS['site_mb']:.0f} MB)"
        )
        print(f"README.md: {readme} characters")
        demo_dir = work / "demo"
        demo_dir.mkdir()
        before = load()
        status, seconds, output = timed([str(venv / "bin" / "compare"), "--demo"], cwd=demo_dir)
        print(
            f"compare --demo from the fresh venv: exit {status} in {seconds:.1f} s "
            f"(load {before} -> {load()})"
        )
        if status != 0:
            failed = True
            print(output[-2000:], file=sys.stderr)
        if args.tests:
            failed = time_tests(args.python, args.slowest, work) or failed
    finally:
        if args.keep:
            print(f"kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

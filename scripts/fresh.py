"""Shared by the bench scripts: measure code in a fresh interpreter, against this install or a
checkout's harness package.

    quick_options(quick) -> [...]              the demo compare's options under --quick (said)
    compile_tree(tree)                         bring DIR/harness's .pyc up to date, as an install
    run_fresh(code, args, tree=, what=) -> {}  `python -c code OUT ARGS...` in a temp dir; the
                                               JSON the code wrote to OUT (argv[1])
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent
# --quick of the scripts that time `compare --demo`: each demo compare in two rounds (4 boots,
# not 10), a smoke run of the script whose figures are then not the demo's.
QUICK = ["--repeats", "2", "--latency-budget", "2"]
QUICK_HELP = f"each demo compare with {' '.join(QUICK)} (a smoke run: not the demo's figures)"


def quick_options(quick: bool) -> list[str]:
    """The options each demo compare gets: QUICK under --quick, which is then said on stdout."""
    if not quick:
        return []
    print(f"--quick: {QUICK_HELP}")
    return QUICK


def compile_tree(tree: str | None) -> None:
    """The .pyc files of `tree`/harness (None: this project's) brought up to date first, as a
    `pip install` leaves them (see bench_overhead.py on PYTHONDONTWRITEBYTECODE)."""
    package = Path(tree or PROJECT) / "harness"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=False)


def run_fresh(
    code: str, args: list[str], *, tree: str | None, what: str, quiet: bool = True
) -> dict[str, Any]:
    """Run `code` as `python -c code OUT RESULTS ARGS...` in a new temp dir (not a harness of the
    current directory), with `tree` first on PYTHONPATH when given; return the JSON it wrote to
    OUT. RESULTS is a results directory inside the temp dir. SystemExit when it wrote none."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [tree, env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="bench-fresh-") as tmp:
        out = Path(tmp) / "usage.json"
        subprocess.run(
            [sys.executable, "-c", code, str(out), str(Path(tmp) / "results"), *args],
            check=False,
            cwd=tmp,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL if quiet else None,
        )
        if not out.exists():
            raise SystemExit(f"{what} {'of ' + tree if tree else ''} did not finish")
        found: dict[str, Any] = json.loads(out.read_text())
    return found

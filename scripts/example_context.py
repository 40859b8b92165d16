#!/usr/bin/env python
"""Answer spans, the retrieval/generation 2x2 and the evaluation definition on a real service:
the README's excerpts of them come from this script.

    python scripts/example_context.py [--keep DIR]

It builds the end-to-end fixture of the test suite (tests/e2e_support.py: a throwaway git
repository holding a tiny stdlib search service over 100 documents, 80 gold queries q01..q80,
one answer span per query, `query.texts` set) with a branch `bury12` that loses the answer of
q01..q12, writes an answers file (q01..q40 graded correct, the rest wrong), and runs

    harness compare --baseline main --candidate bury12 --baseline-answers A --candidate-answers A
    harness twobytwo --run <the candidate's record> --answers A --k 5
    harness report <saved comparison> --against <the same compare again>
    harness report <saved comparison> --against <the compare with --k 10>

printing each command and its output.  Everything lives in a temporary directory, removed at
the end (unless --keep); every service it boots is ended by harness.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from e2e_support import Sandbox, build_sandbox, query_ids


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="build the fixture here and keep it")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="harness-example-"))
    try:
        sandbox = build_sandbox(root / "s", {"bury12": {"bury": query_ids(1, 12)}}, texts=True)
        answers = sandbox.root / "answers.tsv"
        answers.write_text("".join(f"{q}\t{int(q <= 'q40')}\n" for q in query_ids(1, 80)))
        compare = ["compare", "--baseline", "main", "--candidate", "bury12",
                   "--baseline-answers", str(answers), "--candidate-answers", str(answers)]
        done = sandbox.harness(*compare)
        show("harness " + " ".join(compare[:5]) + " --baseline-answers answers.tsv "
             "--candidate-answers answers.tsv", done.stdout)
        sandbox.harness(*compare)  # the same again (its records reused)
        sandbox.harness(*compare, "--k", "10")  # one cutoff only: another definition
        saved = sorted(p for p in sandbox.results.iterdir() if (p / "report.md").is_file())
        records = sorted((sandbox.results / "runs").glob("*bury12*.json"))
        done = cli(sandbox, "twobytwo", "--run", str(records[0]), "--answers", str(answers),
                   "--k", "5")
        show("harness twobytwo --run results/runs/<bury12 record>.json --answers answers.tsv "
             "--k 5", done.stdout + done.stderr)
        for other, what in ((saved[1], "the same compare again"), (saved[2], "with --k 10")):
            done = cli(sandbox, "report", str(saved[0]), "--against", str(other))
            show(f"harness report <first> --against <{what}> > /dev/null  (exit "
                 f"{done.returncode})", done.stderr)
        return 0
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


def cli(sandbox: Sandbox, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in the fixture's repository and environment, with no --results added."""
    return subprocess.run([sys.executable, "-m", "harness.cli.main", *args], cwd=sandbox.repo,
                          env=sandbox.env(), capture_output=True, text=True, check=False)


def show(command: str, output: str) -> None:
    print(f"$ {command}\n{output}", flush=True)


if __name__ == "__main__":
    sys.exit(main())

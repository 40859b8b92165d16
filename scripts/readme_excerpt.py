#!/usr/bin/env python
"""The README's "Trimmed, the report reads" excerpt, from a real `compare --demo` run.

    python scripts/readme_excerpt.py [--repeats N]

Runs the installed `compare --demo` in a scratch directory (removed afterwards), then prints the
report trimmed the way the README shows it: the title, verdicts and the line saying how many
queries the (sequential) compare asked, the hit@k lines, two slices
(entity, freshness; rows hit@5 and mrr@10), the unanswerable and outranks lines, the latency
table and its lines, the headline's drift and power, and the first two flips.  Every line is
the report's own, unchanged; only whole lines are left out.  The last lines (on stderr) say the
exit status and the machine's load average, since the latency figures move with it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SLICES = ("Slice entity", "Slice freshness")
SLICE_ROWS = ("hit@5 ", "mrr@10 ")


def sections(report: str) -> list[tuple[str, list[str]]]:
    """(heading, lines) in order; the part before the first underlined heading has heading ""."""
    lines = report.splitlines()
    out: list[tuple[str, list[str]]] = [("", [])]
    i = 0
    while i < len(lines):
        if i + 1 < len(lines) and lines[i] and set(lines[i + 1]) == {"-"} and (
            len(lines[i + 1]) == len(lines[i])
        ):
            out.append((lines[i], []))
            i += 2
            continue
        out[-1][1].append(lines[i])
        i += 1
    return out


def trim(report: str) -> str:
    keep: list[str] = []
    for heading, body in sections(report):
        text = [line for line in body if line.strip()]
        if heading == "":
            keep += [text[0], ""] + [x for x in text if x.startswith(("quality:", "latency:"))]
            keep += ["", *[x for x in text if x.startswith("sequential:")]]
        elif heading.startswith("hit@k over"):
            keep += ["", heading, "-" * len(heading), "", *text]
        elif heading.startswith(SLICES):
            table = [x for x in text if x.startswith(("metric", "----", *SLICE_ROWS))]
            keep += ["", heading, "-" * len(heading), "", *table]
        elif heading.startswith("Unanswerable"):
            keep += ["", *text]
        elif heading.startswith("Latency"):
            keep += ["", *text[:4], "", *[x for x in text[4:] if not x.startswith("machine:")]]
        elif heading.startswith("Drift and power"):
            keep += ["", *[x for x in text if x.startswith(("hit@5:", "minimum detectable"))]]
        elif heading.startswith("Flips at hit@5"):
            keep += ["", heading, "-" * len(heading), "", *text[:4]]
    return "\n".join(keep) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, help="rounds (default: the demo's, 5)")
    args = parser.parse_args()
    compare = Path(sys.executable).parent / "compare"
    command = [str(compare), "--demo", *(["--repeats", str(args.repeats)] if args.repeats else [])]
    with tempfile.TemporaryDirectory(prefix="readme-excerpt-") as tmp:
        done = subprocess.run(
            command, cwd=tmp, capture_output=True, text=True, timeout=900, check=False
        )
    if done.returncode not in (0, 1, 3):
        print(done.stderr, file=sys.stderr)
        return 2
    print(trim(done.stdout), end="")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"\n# {' '.join(['compare', *command[1:]])}: exit {done.returncode}; "
        f"load average {load} on {os.cpu_count()} CPUs",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

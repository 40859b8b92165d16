"""Progress when stderr is a pipe (CI logs, `2>&1 | tee`): a real compare of the fixture service
(tests/e2e_support.py) prints plain lines while it runs, not only between rounds: each block's
count, after the first block how long the round takes at the measured pace, and, from its own
clock, a line whenever HARNESS_PROGRESS_INTERVAL seconds (30 by default) passed without one
(here a boot held back 1.5 s by the service, at an interval of 0.3 s)."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest
from e2e_support import CLI_TIMEOUT_S, GOLD_SIZE, build_sandbox

from harness.cli.progress import _EVERY
from harness.replay.client import READ_BATCH

COUNT = re.compile(rf"(\d+)/{GOLD_SIZE} queries, \d+ errors")


def test_the_count_lines_fall_at_the_runners_batch_ends() -> None:
    # A count between two batch ends would be shown with the time of the batch's end.
    assert _EVERY % READ_BATCH == 0


@pytest.mark.slow
@pytest.mark.parametrize("design", ["--sequential", "--no-sequential"])
def test_a_piped_compare_says_how_it_goes_while_it_runs(tmp_path: Path, design: str) -> None:
    sandbox = build_sandbox(
        tmp_path / "s", {"slower": {"slow_ms": 20, "ready_delay_s": 1.5}}, repeats=2
    )
    argv = sandbox.command(
        ["compare", "--baseline", "main", "--candidate", "slower", design,
         "--latency-budget", "3"]
    )  # fmt: skip
    env = sandbox.env({"HARNESS_PROGRESS_INTERVAL": "0.3"})
    started = time.monotonic()
    with subprocess.Popen(
        argv, cwd=sandbox.repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True,
    ) as proc:  # fmt: skip
        assert proc.stderr is not None
        lines = [(time.monotonic() - started, line.rstrip("\n")) for line in proc.stderr]
        status = proc.wait(timeout=CLI_TIMEOUT_S)
    said = "\n".join(line for _, line in lines)
    assert status in (0, 1), said
    assert not any(line.startswith("harness: error") for _, line in lines), said
    blocks = design == "--sequential"
    # The quality rounds' label: all of them asked block by block, else round 1 alone.
    first_round = "asked block by block" if blocks else "harness: round 1 "
    quality = [(t, line) for t, line in lines if first_round in line]
    counts = [(t, int(m.group(1))) for t, line in quality if (m := COUNT.search(line))]
    # Block by block, a line per block of 10 (quality_sequential.default_block), as each ends;
    # else every 32 queries (the runner's batch); the first well before the round is done.
    step = 10 if blocks else _EVERY
    # (the clock's lines repeat the last count: each count once, in order)
    assert list(dict.fromkeys(n for _, n in counts if n))[:2] == [step, 2 * step], said
    done_at = next(t for t, line in quality if ": done, " in line)
    assert counts[0][0] < done_at - 0.5, said
    # After the first block: the round's expected time from the pace measured.
    first = next(line for _, line in quality if COUNT.search(line) and "pace" in line)
    whole = (
        rf"all {GOLD_SIZE} take about [\d.]+s \([\d.]+s left; the rule may stop sooner\)$"
        if blocks
        else r"the round takes about [\d.]+s \([\d.]+s left\)$"
    )
    assert re.search(rf"{step}/{GOLD_SIZE} queries, 0 errors, [\d.]+s; at this pace {whole}",
                     first), first  # fmt: skip
    # The clock's lines: the boot held back 1.5 s at an interval of 0.3 s is not silent.
    assert re.search(r": booting, \d\.\ds$", said, re.MULTILINE), said
    assert "\r" not in said and "\x1b" not in said  # plain lines, no live display

"""The fault matrix: one row per fault or bad input, each run through the real CLI against a real
git repository and (where a row needs one) a real subprocess service on 127.0.0.1.

Inputs: every bad CLI number and config file is refused before anything starts, exit 2, one
line naming the option (or file:line: field) and the fix, no traceback, nothing booted.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_support import Sandbox, build_sandbox, config_text

NOTHING_STARTED = "a bad input must be refused before anything is built or booted"


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    return build_sandbox(tmp_path_factory.mktemp("faults") / "s", {})


def compare(sandbox: Sandbox, *extra: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return sandbox.harness(
        "compare",
        "--baseline",
        "main",
        "--candidate",
        "main",
        "--fresh",
        *extra,
        **kw,  # type: ignore[arg-type]
    )


def assert_refused(done: subprocess.CompletedProcess[str], *phrases: str) -> str:
    """Exit 2, no traceback, a first line `harness: error: ...` holding every phrase."""
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    first = done.stderr.splitlines()[0]
    assert first.startswith("harness: error: "), done.stderr
    for phrase in phrases:
        assert phrase in done.stderr, done.stderr
    assert done.stdout == ""
    return first


# --------------------------------------------------------------------------- CLI numbers

BAD_NUMBERS = [
    (["--alpha", "2"], "--alpha 2.0: must be between 0 and 1 (exclusive), e.g. --alpha 0.05"),
    (["--alpha", "nan"], "--alpha nan: must be between 0 and 1"),
    (["--k", "0"], "--k 0: must be 1 or more, e.g. --k 10"),
    (["--k", "5", "--k", "5"], "--k: the cutoff 5 is given twice"),
    (["--concurrency", "0"], "--concurrency 0: must be 1 or more"),
    (["--latency-tolerance", "-1"], "--latency-tolerance -1.0: must be at least 0 and below 1"),
    (["--latency-tolerance", "1"], "--latency-tolerance 1.0: must be at least 0 and below 1"),
    (["--repeats", "0"], "--repeats 0: must be 1 or more, e.g. --repeats 3"),
    (["--repeats", "-1"], "--repeats -1: must be 1 or more"),
    (["--max-errors", "-1"], "--max-errors -1: must be 0 or more, e.g. --max-errors 0"),
    (["--seed", "-3"], "--seed -3: must be 0 or more"),
]


@pytest.mark.parametrize(
    ("args", "message"), BAD_NUMBERS, ids=[" ".join(a) for a, _ in BAD_NUMBERS]
)
def test_a_bad_cli_number_is_refused_before_anything_starts(
    sandbox: Sandbox, tmp_path: Path, args: list[str], message: str
) -> None:
    boots = sandbox.boots()
    done = compare(sandbox, *args, results=tmp_path / "r")
    first = assert_refused(done, message)
    assert first == f"harness: error: {message}" or message in first
    assert len(done.stderr.splitlines()) == 1
    assert sandbox.boots() == boots, NOTHING_STARTED
    assert sandbox.worktrees() == []


def test_a_huge_cli_value_is_echoed_at_most_200_characters(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    done = compare(sandbox, "--alpha", "x" * 5000, results=tmp_path / "r")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "invalid float value" in done.stderr and "more characters" in done.stderr
    assert len(done.stderr) < 1000


# --------------------------------------------------------------------------- results directory


def test_results_that_is_a_file_is_refused_first(sandbox: Sandbox, tmp_path: Path) -> None:
    results = tmp_path / "results.txt"
    results.write_text("not a directory\n")
    done = compare(sandbox, results=results)
    assert_refused(done, f"--results {results}: is a file, not a directory")
    assert sandbox.worktrees() == []


def test_results_that_cannot_be_written_is_refused_first(sandbox: Sandbox, tmp_path: Path) -> None:
    # /proc refuses every new directory, whoever asks (root included): a read-only place.
    done = compare(sandbox, results=Path("/proc/harness-results"))
    assert_refused(done, "--results /proc/harness-results: cannot be written")
    assert sandbox.worktrees() == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through a read-only mode")
def test_results_in_a_read_only_directory_is_refused_first(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    results = tmp_path / "ro"
    results.mkdir(mode=0o555)
    try:
        done = compare(sandbox, results=results)
    finally:
        results.chmod(0o755)
    assert_refused(done, f"--results {results}: cannot be written")


# --------------------------------------------------------------------------- config files


def config_with(sandbox: Sandbox, tmp_path: Path, old: str, new: str) -> Path:
    text = config_text(gold=str(sandbox.repo / "gold" / "gold.jsonl"))
    assert old in text
    path = tmp_path / "harness.toml"
    path.write_text(text.replace(old, new, 1))
    return path


BAD_CONFIGS = [
    (
        "unknown table",
        "[compare]\n",
        "[comparre]\nx = 1\n[compare]\n",
        ":19: comparre: unknown key 'comparre' in the top level; did you mean 'compare'?",
    ),
    (
        "start without {port}",
        " --port {port}",
        "",
        ":2: service.start: start never receives the port the harness picks: write {port}",
    ),
    (
        "empty start",
        'start = "{python} svc.py --port {port} --data {data}"',
        'start = "  "',
        ":2: service.start: is empty: give the command to run",
    ),
    (
        "empty prepare command",
        'ready = "/health"',
        'ready = "/health"\nprepare = ["true", ""]',
        ":4: service.prepare[1]: is empty",
    ),
    (
        "empty build",
        'ready = "/health"',
        'ready = "/health"\nbuild = ""',
        ":4: service.build: is empty: remove the key",
    ),
    (
        "tolerance of 1",
        "k = [5, 10]",
        "k = [5, 10]\nlatency_tolerance = 1.0",
        ":22: compare.latency_tolerance: must be a fraction at least 0 and below 1",
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "message"), [c[1:] for c in BAD_CONFIGS], ids=[c[0] for c in BAD_CONFIGS]
)
def test_a_bad_config_is_refused_naming_file_line_and_field(
    sandbox: Sandbox, tmp_path: Path, old: str, new: str, message: str
) -> None:
    config = config_with(sandbox, tmp_path, old, new)
    boots = sandbox.boots()
    done = compare(sandbox, results=tmp_path / "r", config=config)
    assert_refused(done, f"{config}{message}")
    assert sandbox.boots() == boots, NOTHING_STARTED


def test_a_port_pinned_in_env_is_a_port_received(sandbox: Sandbox, tmp_path: Path) -> None:
    from harness.config import load_config

    config = config_with(
        sandbox,
        tmp_path,
        'start = "{python} svc.py --port {port} --data {data}"',
        'start = "{python} svc.py --port $PORT --data {data}"\nenv = { PORT = "{port}" }',
    )
    assert load_config(config, repo=sandbox.repo).baseline.service.env == {"PORT": "{port}"}


def test_a_20_mb_gold_line_is_not_echoed_whole(sandbox: Sandbox, tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    header = '{"format": "harness-gold", "version": 1}\n'
    gold.write_text(header + '{"id": "q1", "query": "' + "x" * 20_000_000 + '", "relevant": 7\n')
    config = config_with(
        sandbox, tmp_path, f'path = "{sandbox.repo}/gold/gold.jsonl"', f'path = "{gold}"'
    )
    done = compare(sandbox, results=tmp_path / "r", config=config)
    assert_refused(done, f"{gold}:2")
    assert len(done.stderr) < 5000


# --------------------------------------------------------------------------- saving


def test_a_full_disk_at_saving_leaves_no_comparison_and_still_prints_the_report(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """Both sides measured, then the comparison's write fails with ENOSPC (simulated: the real
    CLI, its real services, one write function replaced)."""
    results = tmp_path / "r"
    program = (
        "import errno, os, sys\n"
        "import harness.results.comparisons as c\n"
        "from harness.results import files\n"
        "def full(path, text):\n"  # the comparison.json went through; the report hits ENOSPC
        "    raise files._write_error(path, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))\n"
        "c.write_text_new = full\n"
        "from harness.cli.main import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    argv = sandbox.command(
        ["compare", "--baseline", "main", "--candidate", "main", "--repeats", "1"], results
    )
    done = subprocess.run(
        [sys.executable, "-c", program, *argv[3:]],
        cwd=sandbox.repo,
        env=sandbox.env(),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "No space left on device" in done.stderr
    assert "hit@5" in done.stdout  # the report was printed
    saved = [p.name for p in results.iterdir() if p.name not in ("runs", "logs")]
    assert saved == []  # no empty or partial comparison, no temporary directory left

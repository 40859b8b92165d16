"""tests/cli_server.py: a command forked from the server says, and exits, what a fresh process of
it says, and honours the timeout and limits `subprocess.run` would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import cli_server
import psutil
import pytest

CASES = [
    ("harness", ["--version"]),
    ("harness", ["compare", "--repeats", "zero"]),  # a usage error: argparse's SystemExit(2)
    ("harness", ["gold", "check", "missing.jsonl"]),  # a HarnessError: exit 2, one line
    ("harness", ["metrics", "--gold", "gold.jsonl", "--run", "run.tsv", "--format", "json"]),
    ("compare", ["--help"]),
    ("-m harness.cli.main", ["schema", "--help"]),
]


def _inputs(folder: Path) -> None:
    (folder / "gold.jsonl").write_text(
        '{"id": "q1", "query": "a b", "relevant": ["d1"]}\n'
        '{"id": "q2", "query": "c", "relevant": ["d2"]}\n'
    )
    (folder / "run.tsv").write_text("q1\td1\t2.0\nq1\td2\t1.0\nq2\td1\t1.0\n")


def _id(value: object) -> str:
    return " ".join(value) if isinstance(value, list) else str(value)


@pytest.mark.parametrize(("entry", "args"), CASES, ids=_id)
def test_a_forked_command_is_what_a_fresh_one_is(
    tmp_path: Path, entry: str, args: list[str]
) -> None:
    _inputs(tmp_path)
    env = dict(os.environ)
    env.pop(cli_server.FRESH, None)
    forked = cli_server.run(entry, args, cwd=tmp_path, env=env, timeout=120)
    fresh = subprocess.run(cli_server.argv(entry, args), cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        fresh.returncode, fresh.stdout, fresh.stderr,
    )
    assert forked.args == fresh.args


def test_the_command_runs_in_its_cwd_with_its_environment(tmp_path: Path) -> None:
    # The gold path is relative to the cwd, and the config's gold comes from the environment's
    # HOME-free run: a wrong cwd or a leaked environment reads another file.
    _inputs(tmp_path)
    # Only what Python reads as it starts is kept (the test process's server serves it).
    started = {k: v for k, v in os.environ.items() if k.startswith(("PYTHON", "LC_", "LANG"))}
    env = {**started, "PATH": os.environ["PATH"], "HOME": str(tmp_path), "TMPDIR": str(tmp_path)}
    done = cli_server.run("harness", ["gold", "check", "gold.jsonl"], cwd=tmp_path, env=env,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    elsewhere = cli_server.run("harness", ["gold", "check", "gold.jsonl"], cwd=tmp_path.parent,
                               env=env, timeout=120)  # fmt: skip
    assert elsewhere.returncode == 2 and "gold.jsonl" in elsewhere.stderr


def test_a_command_past_its_timeout_is_killed_and_raises(tmp_path: Path) -> None:
    # `harness judge page` serves its page until stopped: past the timeout it is killed.
    pair = {"query_id": "q1", "query": "what?", "doc_id": "d1", "title": "T", "text": "x.",
            "baseline_rank": 3, "candidate_rank": None, "why": "dropped", "order": 1,
            "comparison": "main..feature"}  # fmt: skip
    (tmp_path / "pairs.jsonl").write_text(json.dumps(pair) + "\n")
    args = ["judge", "page", "pairs.jsonl", "--labels", "labels.jsonl", "--by", "a", "--port", "0"]
    env = {**os.environ, "HARNESS_CACHE_DIR": str(tmp_path / "cache")}  # what it leaves: here
    with pytest.raises(subprocess.TimeoutExpired):
        cli_server.run("harness", args, cwd=tmp_path, env=env, timeout=3)


def test_a_limit_is_set_in_the_command_as_preexec_would(tmp_path: Path) -> None:
    _inputs(tmp_path)
    args = ["gold", "check", "gold.jsonl"]
    free = cli_server.run("harness", args, cwd=tmp_path, env=dict(os.environ), timeout=120)
    assert free.returncode == 0, free.stderr
    done = cli_server.run("harness", args, cwd=tmp_path, env=dict(os.environ), timeout=120,
                          limits={"RLIMIT_NOFILE": 3})  # fmt: skip
    assert done.returncode != 0  # with 3 open files at most, not even the gold set opens
    assert "Too many open files" in done.stderr, done.stderr


def test_the_server_ends_with_its_test_process_and_leaves_nothing(tmp_path: Path) -> None:
    code = (
        "import os, cli_server\n"
        "done = cli_server.run('harness', ['--version'], cwd='.', env=dict(os.environ),"
        " timeout=120)\n"
        "(server,) = cli_server._servers.values()\n"
        "print(server.process.pid, server.folder, done.returncode)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    env.pop(cli_server.FRESH, None)
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=True, timeout=120)  # fmt: skip
    pid, folder, status = done.stdout.split()
    assert status == "0"
    deadline = time.monotonic() + 30
    while (Path(folder).exists() or psutil.pid_exists(int(pid))) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(folder).exists()  # its socket's folder removed
    assert not psutil.pid_exists(int(pid)) or psutil.Process(int(pid)).status() == "zombie"

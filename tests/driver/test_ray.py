"""compare, sweep and matrix on Ray: each round one task, records and verdict as without Ray.

The CLI runs as a subprocess with `--ray auto` and no cluster running: it starts a local Ray
(include_dashboard=False) for the run and shuts it down.  Ray's session directory is put under a
short temp dir of the test's (RAY_TMPDIR), so every Ray process of the run names it on its
command line: after the CLI exits, none may be left.  Skipped when ray is not importable.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from e2e_support import Sandbox, build_sandbox, query_ids, record_document, record_paths

from harness.errors import GoldError, Problem, RefError

# Looked up, not imported: an import here would load ray into every worker's collection.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("ray") is None,
        reason="ray is not installed (pip install 'retrieval-harness[ray]')",
    ),
]

BURIED = query_ids(1, 12)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    return build_sandbox(
        tmp_path_factory.mktemp("ray") / "s", {"bury12": {"bury": BURIED}}, repeats=2
    )


@pytest.fixture
def ray_tmp() -> Iterator[Path]:
    # Short: Ray's unix sockets live under it (a socket path has at most 107 characters).
    path = Path(tempfile.mkdtemp(prefix="hray-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def ray_processes(ray_tmp: Path) -> list[str]:
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        if proc.info["status"] == psutil.STATUS_ZOMBIE or proc.pid == os.getpid():
            continue
        cmdline = proc.info["cmdline"] or []
        if any(str(ray_tmp) in arg for arg in cmdline):
            found.append(f"{proc.pid}: {' '.join(cmdline)[:200]}")
    return found


def wait_gone(ray_tmp: Path) -> list[str]:
    """Ray's processes of the run, after giving the reaper a moment to end them."""
    for _ in range(50):
        left = ray_processes(ray_tmp)
        if not left:
            return []
        psutil.wait_procs([psutil.Process(int(p.split(":")[0])) for p in left], timeout=0.2)
    return ray_processes(ray_tmp)


def shape(record: dict[str, Any]) -> dict[str, Any]:
    """What a run record holds, without the values a new measurement changes."""
    repeats = record["repeats"]
    return {
        "keys": sorted(record),
        "ref": record["ref"],
        "sha": record["sha"],
        "config_hash": record["config_hash"],
        "repeats": [
            {
                "index": r["index"],
                "keys": sorted(r),
                "failure": r["failure"],
                "ids": [q["ids"] for q in r["results"]],
                "timings": sorted(r["timings_s"]),
            }
            for r in repeats
        ],
        "paired": record["pair_id"] is not None,
    }


def records(results: Path) -> list[dict[str, Any]]:
    return [record_document(p) for p in record_paths(results)]


def test_a_compare_on_ray_gives_the_verdict_and_records_of_one_without(
    sandbox: Sandbox, tmp_path: Path, ray_tmp: Path
) -> None:
    args = ("compare", "--baseline", "main", "--candidate", "bury12", "--fresh")
    # On Ray the rounds are compare.repeats (2), one look: so are they here, by the budget.
    args += ("--format", "json", "--latency-tolerance", "0.9", "--latency-budget", "2")
    plain = sandbox.harness(*args, results=tmp_path / "plain")
    assert plain.returncode == 1, plain.stderr

    on_ray = sandbox.harness(
        *args, "--ray", "auto", results=tmp_path / "ray", env={"RAY_TMPDIR": str(ray_tmp)}
    )
    assert on_ray.returncode == 1, on_ray.stderr
    assert "harness: round 1/2 done on" in on_ray.stderr
    assert "harness: round 2/2 done on" in on_ray.stderr
    assert wait_gone(ray_tmp) == []
    assert sandbox.leftovers(sandbox.run_ids(tmp_path / "ray")) == []
    assert sandbox.worktrees() == []

    a, b = json.loads(plain.stdout), json.loads(on_ray.stdout)
    assert b["verdict"]["quality"] == a["verdict"]["quality"] == "regressed"
    assert b["verdict"]["latency"] != "not compared"  # both sides of each round paired
    assert len(b["latency"]["test"]["rounds"]) == 2
    plain_records = [shape(r) for r in records(tmp_path / "plain")]
    ray_records = [shape(r) for r in records(tmp_path / "ray")]
    assert sorted(ray_records, key=str) == sorted(plain_records, key=str)
    assert len(ray_records) == 2
    # Every boot's log is in the driver's results directory (one machine: the same paths).
    for record in records(tmp_path / "ray"):
        for repeat in record["repeats"]:
            assert Path(repeat["log_path"]).is_relative_to(tmp_path / "ray" / "logs")


def test_a_sweep_on_ray_measures_every_point_each_round(
    sandbox: Sandbox, tmp_path: Path, ray_tmp: Path
) -> None:
    done = sandbox.harness(
        "sweep", "--ref", "main", "--param", "RRF_K=1,2", "--fresh", "--ray", "auto",
        results=tmp_path, env={"RAY_TMPDIR": str(ray_tmp)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert wait_gone(ray_tmp) == []
    assert sandbox.leftovers(sandbox.run_ids(tmp_path)) == []
    saved = records(tmp_path)
    assert sorted(r["ref"] for r in saved) == ["main [RRF_K=1]", "main [RRF_K=2]"]
    assert len({r["pair_id"] for r in saved}) == 1  # measured together, round by round
    assert all([rep["index"] for rep in r["repeats"]] == [0, 1] for r in saved)


def test_a_matrix_on_ray_runs_each_configuration_as_written(
    sandbox: Sandbox, tmp_path: Path, ray_tmp: Path
) -> None:
    # Each configuration has its own config: "short" asks the service for 3 results, so its
    # worker must boot it with that query table, not the first configuration's.
    matrix = tmp_path / "m.toml"
    matrix.write_text(
        'reference = "full"\nmetrics = ["recall@10"]\n'
        '[config.full]\nenv = { RRF_K = "1" }\n'
        '[config.short]\nenv = { RRF_K = "1" }\n'
        '[config.short.query]\nparams = { q = "{query}", k = "3" }\n'
    )
    done = sandbox.harness(
        "matrix", "--ref", "main", "--matrix", str(matrix), "--fresh", "--ray", "auto",
        "--format", "json", results=tmp_path / "r", env={"RAY_TMPDIR": str(ray_tmp)},
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    assert "harness: round 2/2 done on" in done.stderr
    assert wait_gone(ray_tmp) == []
    assert sandbox.leftovers(sandbox.run_ids(tmp_path / "r")) == []
    saved = {r["ref"]: r for r in records(tmp_path / "r")}
    assert sorted(saved) == ["main [full]", "main [short]"]
    assert saved["main [full]"]["config_hash"] != saved["main [short]"]["config_hash"]
    assert len({r["pair_id"] for r in saved.values()}) == 1
    longest = {
        ref: max(len(q["ids"]) for rep in r["repeats"] for q in rep["results"])
        for ref, r in saved.items()
    }
    assert longest["main [short]"] <= 3 < longest["main [full]"]


def test_ray_missing_is_a_clear_error_before_anything_runs(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    # A Python that cannot import ray: a module named ray that raises ImportError first.
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "ray.py").write_text("raise ImportError('no ray here')\n")
    boots = sandbox.boots()
    done = sandbox.harness(
        "compare", "--baseline", "main", "--candidate", "main", "--ray", "auto",
        results=tmp_path / "results", env={"PYTHONPATH": str(blocker)},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "harness: error: --ray needs ray, which is not installed" in done.stderr
    assert "pip install 'retrieval-harness[ray]'" in done.stderr
    assert "Traceback" not in done.stderr
    assert sandbox.boots() == boots


def test_harness_help_does_not_import_ray() -> None:
    code = "import sys, harness.cli.main, harness.driver.runner; print('ray' in sys.modules)"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "False"


def test_ctrl_c_on_ray_tears_down_the_rounds_and_ray(
    sandbox: Sandbox, tmp_path: Path, ray_tmp: Path
) -> None:
    boots = sandbox.boots()
    proc = subprocess.Popen(
        sandbox.command(
            ["compare", "--baseline", "main", "--candidate", "main", "--fresh", "--ray", "auto"],
            tmp_path,
        ),
        cwd=sandbox.repo,
        env=sandbox.env({"RAY_TMPDIR": str(ray_tmp)}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Interrupted once a round's worker has booted a service: mid-round.
        for _ in range(1200):
            if sandbox.boots() > boots or proc.poll() is not None:
                break
            psutil.wait_procs([psutil.Process(proc.pid)], timeout=0.1)
        assert sandbox.boots() > boots
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=150)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGINT, err
    assert "harness: interrupted; every service and worktree was torn down" in err
    assert wait_gone(ray_tmp) == []
    assert sandbox.leftovers(sandbox.run_ids(tmp_path)) == []
    assert sandbox.worktrees() == []


def test_an_error_raised_on_a_worker_reaches_the_driver_whole(
    ray_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ray

    from harness.driver.remote import _get

    def fails() -> None:  # nested: pickled by value, so the worker needs no tests/ on its path
        raise RefError("main is abc on w1 but def here", ["update the repository"])

    monkeypatch.setenv("RAY_TMPDIR", str(ray_tmp))
    ray.init(num_cpus=2, include_dashboard=False, configure_logging=False)
    try:
        with pytest.raises(RefError) as raised:
            _get(ray, ray.remote(max_retries=0)(fails).remote())
    finally:
        ray.shutdown()
    assert raised.value.message == "main is abc on w1 but def here"
    assert raised.value.details == ("update the repository",)
    assert wait_gone(ray_tmp) == []


def test_a_harness_error_survives_pickling_with_its_details() -> None:
    error = GoldError("gold.jsonl is malformed", [Problem("gold.jsonl", "no id", line=3)], "fix it")
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is GoldError
    assert (back.message, back.details, back.problems) == (
        error.message,
        error.details,
        error.problems,
    )


@pytest.mark.parametrize(
    ("address", "said"),
    [
        ("127.0.0.1:1", "--ray 127.0.0.1:1: nothing answers there"),
        ("nowhere", "--ray nowhere: not auto and not HOST:PORT"),
    ],
)
def test_a_wrong_ray_address_is_a_clear_error(
    sandbox: Sandbox, tmp_path: Path, address: str, said: str
) -> None:
    boots = sandbox.boots()
    done = sandbox.harness(
        "compare", "--baseline", "main", "--candidate", "main", "--ray", address,
        results=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"harness: error: {said}" in done.stderr
    assert "Traceback" not in done.stderr
    assert sandbox.boots() == boots

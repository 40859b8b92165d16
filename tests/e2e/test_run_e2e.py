"""`harness run` end to end: the real CLI in a subprocess, against real throwaway git repositories
holding the fixture service (tests/e2e_support.py, tests/fixtures/e2e_service/svc.py).

Each test writes its records to its own results directory; the repository (read-only to the
harness) is shared by the module, except where a test changes it.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import psutil
import pytest
from e2e_support import (
    BASE_BEHAVIOUR,
    GOLD_SIZE,
    Sandbox,
    build_sandbox,
    doc_id,
    git,
    query_ids,
    record_document,
    record_paths,
)

pytestmark = pytest.mark.slow

BRANCHES: dict[str, dict[str, object]] = {
    "exits": {"exit_at_boot": 3},
    "never": {"never_ready": True},
    "stubborn": {"ignore_sigterm_and_spawn_setsid_grandchild": True},
    "errors": {"error_on": ["q05", "q06", "q07"]},
    "notjson": {"non_json": True},
}
SECRET = "ghp_e2eSecretTokenValue0123456789"


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    return build_sandbox(tmp_path_factory.mktemp("run-e2e") / "s", BRANCHES)


def only_record(results: Path) -> dict[str, Any]:
    paths = record_paths(results)
    assert len(paths) == 1, paths
    return record_document(paths[0])


def log_lines(repeat: dict[str, Any]) -> list[str]:
    return Path(repeat["log_path"]).read_text(errors="replace").splitlines()


def svc_value(lines: list[str], prefix: str) -> str:
    """The rest of the first line the fixture service printed starting with `svc: <prefix>`."""
    found = [
        line.removeprefix(f"svc: {prefix}") for line in lines if line.startswith(f"svc: {prefix}")
    ]
    assert found, f"no 'svc: {prefix}' line in the log"
    return found[0]


def assert_nothing_left(sandbox: Sandbox, results: Path) -> None:
    assert sandbox.leftovers(sandbox.run_ids(results)) == []
    assert sandbox.worktrees() == []


# --------------------------------------------------------------------------- a good ref


def test_a_good_ref_is_measured_recorded_and_torn_down(sandbox: Sandbox, tmp_path: Path) -> None:
    results = tmp_path / "results"
    done = sandbox.harness("run", "--ref", "main", results=results)

    assert done.returncode == 0, done.stderr
    sha = git(sandbox.repo, "rev-parse", "main").strip()
    assert f"main ({sha[:8]}): 2 repeats of {GOLD_SIZE} queries" in done.stdout
    assert done.stdout.count("confirmed") == 2
    assert f"latency ms over {2 * GOLD_SIZE} answers" in done.stdout  # 2 repeats, no error
    record = only_record(results)
    assert f"run record: {record_paths(results)[0]}" in done.stderr
    assert (record["schema"], record["schema_version"]) == ("harness-run", 2)
    assert (record["ref"], record["sha"], record["build_failure"]) == ("main", sha, None)
    assert len(record["repeats"]) == 2
    for repeat in record["repeats"]:
        assert repeat["teardown_confirmed"] is True
        assert repeat["failure"] is None
        answers = repeat["results"]
        assert [r["query_id"] for r in answers] == query_ids(1, GOLD_SIZE)
        for n, answer in enumerate(answers, start=1):
            assert answer["status"] == 200 and answer["error"] is None
            assert len(answer["ids"]) == 10  # limit = 10 and the corpus has 100 documents
            assert answer["ids"][0] == doc_id(n)  # the one document sharing "qNN" ranks first
            assert answer["latency_ns"] > 0
    assert len(sandbox.run_ids(results)) == 2  # two boots, each with its own marker
    assert_nothing_left(sandbox, results)


def test_each_repeat_boots_on_a_fresh_copy_of_the_data(sandbox: Sandbox, tmp_path: Path) -> None:
    results = tmp_path / "results"
    done = sandbox.harness("run", "--ref", "main", "--repeats", "3", results=results)

    assert done.returncode == 0, done.stderr
    repeats = only_record(results)["repeats"]
    assert len(repeats) == 3
    # The service appends to data/boots.txt at boot: each copy has seen exactly one boot.
    assert [svc_value(log_lines(r), "data boots seen ") for r in repeats] == ["1", "1", "1"]
    assert not (sandbox.repo / "data" / "boots.txt").exists()  # the user's copy is never used
    assert_nothing_left(sandbox, results)


def test_the_callers_secrets_and_home_never_reach_the_service(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    caller = {"GITHUB_TOKEN": SECRET, "AWS_SECRET_ACCESS_KEY": SECRET, "HOME": str(tmp_path)}
    done = sandbox.harness("run", "--ref", "main", "--repeats", "1", results=results, env=caller)

    assert done.returncode == 0, done.stderr
    (repeat,) = only_record(results)["repeats"]
    lines = log_lines(repeat)
    keys = svc_value(lines, "env keys ").split()
    assert "GITHUB_TOKEN" not in keys and "AWS_SECRET_ACCESS_KEY" not in keys
    assert "HARNESS_RUN_ID" in keys  # the marker teardown relies on
    assert SECRET not in "\n".join(lines)
    home = Path(svc_value(lines, "HOME="))
    assert home != tmp_path and home != Path.home()
    assert home.is_relative_to(sandbox.tmp)  # a throwaway root under the harness's TMPDIR ...
    assert not home.exists()  # ... removed at teardown
    assert_nothing_left(sandbox, results)


# --------------------------------------------------------------------------- the user's tree


def tree_state(repo: Path) -> dict[str, object]:
    """Everything a user could notice: every file's bytes outside .git, the index, status,
    HEAD, the branch list and the stash."""
    files = {
        str(p.relative_to(repo)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(repo).parts
    }
    return {
        "files": files,
        "index": hashlib.sha256((repo / ".git" / "index").read_bytes()).hexdigest(),
        "status": git(
            repo, "--no-optional-locks", "status", "--porcelain=v1", "--untracked-files=all"
        ),
        "head": git(repo, "rev-parse", "HEAD"),
        "symbolic": git(repo, "symbolic-ref", "HEAD"),
        "branches": git(repo, "branch", "--list", "--verbose", "--no-abbrev"),
        "stash": git(repo, "stash", "list"),
    }


def test_a_dirty_tree_is_left_untouched_and_worktree_measures_the_edit(tmp_path: Path) -> None:
    sandbox = build_sandbox(tmp_path / "s", {})
    repo = sandbox.repo
    with (repo / "svc.py").open("a") as f:  # a staged change ...
        f.write("# staged, not committed\n")
    git(repo, "add", "svc.py")
    buried = query_ids(1, 12)  # ... an unstaged edit of a tracked file ...
    (repo / "behaviour.json").write_text(json.dumps({**BASE_BEHAVIOUR, "bury": buried}) + "\n")
    (repo / "scratch.txt").write_text("an untracked file\n")  # ... and an untracked file
    before = tree_state(repo)
    assert before["status"] == " M behaviour.json\nM  svc.py\n?? scratch.txt\n"

    committed = sandbox.harness("run", "--ref", "main", "--repeats", "1")
    uncommitted = sandbox.harness("run", "--ref", "WORKTREE", "--repeats", "1")

    assert committed.returncode == 0, committed.stderr
    assert uncommitted.returncode == 0, uncommitted.stderr
    assert tree_state(repo) == before
    head = git(repo, "rev-parse", "HEAD").strip()
    records = {r["ref"]: r for r in map(record_document, record_paths(sandbox.results))}
    assert records["main"]["sha"] == head
    assert re.fullmatch(rf"{head}\+dirty\.[0-9a-f]{{12}}", records["WORKTREE"]["sha"])
    # Committed: every answer first. WORKTREE: the edit buries q01..q12 and nothing else.
    for ref, missed in (("main", set()), ("WORKTREE", set(buried))):
        (repeat,) = records[ref]["repeats"]
        first = {r["query_id"]: r["ids"][0] for r in repeat["results"]}
        hit = {qid for qid, top in first.items() if top == doc_id(int(qid[1:]))}
        assert set(query_ids(1, GOLD_SIZE)) - hit == missed, ref
    assert_nothing_left(sandbox, sandbox.results)


# --------------------------------------------------------------------------- failures


def test_a_service_that_exits_at_boot_makes_the_run_invalid(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    done = sandbox.harness("run", "--ref", "exits", "--repeats", "1", results=results)

    assert done.returncode == 3, done.stderr
    assert "service exited at boot with status 3" in done.stderr
    assert "| svc: told to exit at boot (behaviour.json: exit_at_boot)" in done.stderr  # log tail
    (repeat,) = only_record(results)["repeats"]
    assert repeat["failure"]["stage"] == "boot"
    assert repeat["results"] == []  # nothing scored, not an empty ranking per query
    assert_nothing_left(sandbox, results)


def test_a_service_never_ready_fails_within_ready_timeout(sandbox: Sandbox, tmp_path: Path) -> None:
    results = tmp_path / "results"
    # 10 s: the service must have started answering 503 within it even on a busy machine (5 s
    # once was not, in a whole run at load 3-4: no "HTTP 503" in the message)
    config = sandbox.write_config(f"ready-{tmp_path.name}.toml", ready_timeout=10.0)
    done = sandbox.harness(
        "run", "--ref", "never", "--repeats", "1", results=results, config=config
    )

    assert done.returncode == 3, done.stderr
    assert "service not ready after 10 s" in done.stderr, done.stderr
    assert "gave HTTP 503" in done.stderr, done.stderr  # what /health kept answering
    assert "raise service.ready_timeout" in done.stderr
    (repeat,) = only_record(results)["repeats"]
    assert "not ready after 10 s" in repeat["failure"]["message"]
    assert_nothing_left(sandbox, results)


def test_a_ready_path_it_does_not_serve_says_so_and_boots_once(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    config = sandbox.write_config(f"ready404-{tmp_path.name}.toml", ready_timeout=3.0)
    config.write_text(config.read_text().replace('ready = "/health"', 'ready = "/healthz"'))
    before = sandbox.boots()
    done = sandbox.harness(
        "run", "--ref", "main", "--repeats", "3", results=results, config=config
    )

    assert done.returncode == 3, done.stderr
    assert "gave HTTP 404 (service.ready is not a path it serves)" in done.stderr
    assert "raise service.ready_timeout" not in done.stderr  # waiting longer changes nothing
    assert '"/openapi.json"' in done.stderr  # what to try instead
    # The next two boots would wait as long for the same 404: one boot, not three.
    assert sandbox.boots() - before == 1
    assert len(only_record(results)["repeats"]) == 1
    assert_nothing_left(sandbox, results)


def test_a_service_ignoring_sigterm_with_a_setsid_grandchild_is_killed(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    done = sandbox.harness("run", "--ref", "stubborn", "--repeats", "1", results=results)

    assert done.returncode == 0, done.stderr
    (repeat,) = only_record(results)["repeats"]
    assert repeat["teardown_confirmed"] is True and repeat["failure"] is None
    lines = log_lines(repeat)
    for pid in (int(svc_value(lines, "pid ")), int(svc_value(lines, "grandchild pid "))):
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert_nothing_left(sandbox, results)


@pytest.mark.parametrize(
    ("branch", "kind", "status", "failing"),
    [
        ("errors", "http_status", 500, query_ids(5, 7)),
        ("notjson", "not_json", 200, query_ids(1, GOLD_SIZE)),
    ],
)
def test_bad_answers_are_recorded_as_errors_never_as_empty_rankings(
    sandbox: Sandbox, tmp_path: Path, branch: str, kind: str, status: int, failing: list[str]
) -> None:
    results = tmp_path / "results"
    done = sandbox.harness("run", "--ref", branch, "--repeats", "1", results=results)

    assert done.returncode == 3, done.stderr
    (repeat,) = only_record(results)["repeats"]
    assert repeat["failure"] is None and repeat["teardown_confirmed"] is True
    errored = {r["query_id"]: r for r in repeat["results"] if r["error"] is not None}
    assert sorted(errored) == failing
    for answer in errored.values():
        assert (answer["error"], answer["status"], answer["ids"]) == (kind, status, [])
        assert answer["detail"]
    answered = [r for r in repeat["results"] if r["error"] is None]
    assert len(answered) == GOLD_SIZE - len(failing)
    assert all(r["ids"][0] == doc_id(int(r["query_id"][1:])) for r in answered)
    row = next(line for line in done.stdout.splitlines() if line.startswith("1 "))
    assert row.split()[:3] == ["1", str(GOLD_SIZE), str(len(failing))]  # repeat, answers, errors
    assert_nothing_left(sandbox, results)


# --------------------------------------------------------------------------- build and refs


def test_the_build_runs_once_per_commit(sandbox: Sandbox, tmp_path: Path) -> None:
    counter = tmp_path / "builds.log"
    config = sandbox.write_config(f"build-{tmp_path.name}.toml", build=f"echo built >> {counter}")
    runs = [
        sandbox.harness(
            "run", "--ref", "main", "--repeats", "1", results=tmp_path / "r", config=config
        )
        for _ in range(2)
    ]

    assert [r.returncode for r in runs] == [0, 0], runs[-1].stderr
    assert counter.read_text() == "built\n"  # the second run found the build cached
    assert len(record_paths(tmp_path / "r")) == 2
    markers = list((sandbox.cache / "builds").glob("*/built.json"))
    assert [json.loads(m.read_text())["command"] for m in markers].count(
        f"echo built >> {counter}"
    ) == 1
    assert_nothing_left(sandbox, tmp_path / "r")


def test_an_unknown_ref_is_a_usage_error_with_a_suggestion(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    done = sandbox.harness("run", "--ref", "mian", results=results)

    assert done.returncode == 2
    assert "harness: error:" in done.stderr and "unknown ref 'mian'" in done.stderr
    assert "did you mean 'main'?" in done.stderr
    assert done.stdout == ""
    assert record_paths(results) == []
    assert_nothing_left(sandbox, results)

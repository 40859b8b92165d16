"""Recovery is complete: what a run killed at any instant leaves, the next invocation removes.

    (a) SIGKILL inside the results save: its hidden `results/.tmp-<pid>-*` directory is removed
        by the next `harness clean`, and separately by the next run (the "cleaned up after an
        earlier run (pid N)" line); a `.tmp-<pid>-*` of a dead pid with no state is removed by
        the next run writing there, one of a live pid never.
    (b) Every temp dir and worktree directory the harness makes is in the leftovers state at the
        moment of its mkdir (tracked before it exists), and a signal right after the mkdir
        leaves it removed or recorded, never made and unrecorded.
    (c) Ctrl-C three times 30 ms apart during checkout: "torn down" only when nothing is left,
        otherwise the line names what is; a second Ctrl-C inside a checkout's teardown does
        not cut it short; nothing stays registered after the next run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cli_server
import pytest
from e2e_support import CLI_TIMEOUT_S, Sandbox, build_sandbox, git
from serve_support import OK_SERVICE_PY

from harness.boot.service import running_service
from harness.checkout import worktree as worktree_module
from harness.checkout.build import build
from harness.checkout.worktree import checkout, resolve_ref
from harness.config import ServiceConfig
from harness.driver import recovery
from harness.process import leftovers
from harness.results.files import check_writable, new_directory_atomic, remove_dead_temps

SAVE_TEMP = re.compile(r"\.tmp-(\d+)-\d{8}T\d{6}Z_")
KILL_ATTEMPTS = 3  # a save the poller did not see in time is tried again, not counted as a pass


@pytest.fixture(autouse=True)
def nothing_held_after() -> Iterator[None]:
    """This process's leftovers state is global: what a test leaves held is dropped after it,
    so that no later test writes it into its own cache."""
    yield
    for items in leftovers._held.values():  # no rewrite: the test's cache is gone from the env
        items.clear()


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    return build_sandbox(tmp_path_factory.mktemp("recovery") / "s", {"crawl": {"slow_ms": 500}})


def live_files(sandbox: Sandbox) -> list[Path]:
    folder = sandbox.cache / "live"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def held_values(cache: Path) -> set[str]:
    values: set[str] = set()
    for path in (cache / "live").glob("*.json"):
        held = json.loads(path.read_text())["held"]
        values.update(item["value"] for items in held.values() for item in items)
    return values


def run_cli(sandbox: Sandbox, *args: str) -> subprocess.CompletedProcess[str]:
    return cli_server.run(
        "-m harness.cli.main", args, cwd=sandbox.repo, env=sandbox.env(), timeout=CLI_TIMEOUT_S
    )


# --------------------------------------------------------------------------- (a) the results save


def save_temps(results: Path) -> list[str]:
    try:
        return [name for name in os.listdir(results) if SAVE_TEMP.match(name)]
    except FileNotFoundError:
        return []


def kill_inside_the_save(sandbox: Sandbox, results: Path) -> tuple[int, Path]:
    """A real compare SIGKILLed while its results save's temp dir exists (seen by polling the
    results directory); (its pid, that temp dir)."""
    for attempt in range(KILL_ATTEMPTS):
        where = results.with_name(f"{results.name}-{attempt}")
        argv = sandbox.command(
            ["compare", "--baseline", "main", "--candidate", "main", "--repeats", "1", "--fresh"],
            where,
        )
        with open(results.parent / f"{where.name}.out", "w") as out:
            proc = subprocess.Popen(
                argv, cwd=sandbox.repo, env=sandbox.env(), stdout=out, stderr=out
            )
        try:
            seen: list[str] = []
            deadline = time.monotonic() + CLI_TIMEOUT_S
            while not seen and proc.poll() is None and time.monotonic() < deadline:
                seen = save_temps(where)
            if seen:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=CLI_TIMEOUT_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if seen and (where / seen[0]).is_dir():
            assert proc.returncode == -signal.SIGKILL
            match = SAVE_TEMP.match(seen[0])
            assert match is not None and match.group(1) == str(proc.pid)  # its owner, by name
            return proc.pid, where / seen[0]
    said = (results.parent / f"{where.name}.out").read_text()[-2000:]
    raise AssertionError(f"the save's temp dir was never seen in {KILL_ATTEMPTS} compares: {said}")


@pytest.mark.slow
@pytest.mark.parametrize("next_command", ["clean", "run"])
def test_a_save_killed_midway_leaves_a_temp_dir_the_next_invocation_removes(
    sandbox: Sandbox, tmp_path: Path, next_command: str
) -> None:
    pid, temp = kill_inside_the_save(sandbox, tmp_path / "results")
    assert temp.is_dir() and str(temp) in held_values(sandbox.cache)  # recorded before made

    # A dry run says what it would clean up after the dead run, and removes nothing (it ran
    # the recovery like any command, and deleted while it printed "would remove 0 entries").
    dry = run_cli(sandbox, "clean", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"would clean up after an earlier run (pid {pid})" in dry.stdout
    assert "cleaned up" not in dry.stderr and temp.is_dir()

    if next_command == "clean":
        done = run_cli(sandbox, "clean")
    else:  # any run: here one that reads the gold set and writes nowhere near the results
        done = run_cli(sandbox, "gold", "stats", "gold/gold.jsonl")
    assert done.returncode == 0, done.stderr
    (line,) = [x for x in done.stderr.splitlines() if "cleaned up" in x]
    assert line.startswith(f"harness: cleaned up after an earlier run (pid {pid})"), line
    assert "temp dir" in line
    assert not temp.exists()
    assert save_temps(temp.parent) == []
    assert live_files(sandbox) == []
    assert sandbox.worktrees() == []


def test_a_temp_of_a_dead_pid_is_removed_by_the_next_run_there_and_a_live_ones_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without any leftovers state (another cache, a state file lost): the pid in the name."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # reaped: its pid names no process now
    dead_dir = tmp_path / f".tmp-{gone.pid}-20261201T000000Z_aaaaaaaa_bbbbbbbb-x1"
    dead_file = tmp_path / "runs" / f".tmp-{gone.pid}-abc.json"
    mine = tmp_path / f".tmp-{os.getpid()}-20261201T000000Z_aaaaaaaa_bbbbbbbb-x2"
    unrelated = tmp_path / ".tmp-notapid"
    for path in (dead_dir, mine, unrelated):
        path.mkdir(parents=True)
        (path / "comparison.json").write_text("{}")
    dead_file.parent.mkdir()
    dead_file.write_text("{}")
    fresh = tmp_path / f".tmp-{gone.pid}-20261201T000000Z_aaaaaaaa_bbbbbbbb-x3"
    fresh.mkdir()  # dead pid, but changed just now: perhaps another machine's, kept
    hour_ago = time.time() - 3700
    for path in (dead_dir, dead_file, mine, unrelated):
        os.utime(path, (hour_ago, hour_ago))

    assert check_writable(tmp_path) == tmp_path  # what every run does first with --results
    assert not dead_dir.exists() and not dead_file.exists()
    said = capsys.readouterr().err
    assert f"harness: removed 2 leftovers of results saves cut short in {tmp_path}" in said
    assert remove_dead_temps(tmp_path) == []  # nothing more to remove
    assert mine.is_dir() and unrelated.is_dir()  # a live harness's save is never touched
    assert fresh.is_dir()


def test_the_save_names_its_temp_dir_by_pid_and_records_it_while_it_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    saving = new_directory_atomic(tmp_path / "results", "20261201T000000Z_aaaaaaaa_bbbbbbbb")
    with saving as temp:
        assert temp.name.startswith(f".tmp-{os.getpid()}-20261201T000000Z_")
        assert str(temp) in held_values(tmp_path / "cache")
        (temp / "report.md").write_text("x\n")
    assert saving.path is not None and (saving.path / "report.md").is_file()
    assert not (tmp_path / "cache" / "live").exists() or held_values(tmp_path / "cache") == set()

    with pytest.raises(KeyboardInterrupt), new_directory_atomic(tmp_path / "results", "s") as t:
        raise KeyboardInterrupt
    assert not t.exists() and held_values(tmp_path / "cache") == set()


# --------------------------------------------------------------------------- (b) tracked, then made


@pytest.fixture
def mkdir_spy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[list[tuple[Path, set[str]]]]:
    """Every os.mkdir of this test, with the leftovers state on disk at that moment."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(cache))
    calls: list[tuple[Path, set[str]]] = []
    real = os.mkdir

    def spy(path: Any, mode: int = 0o777, *args: Any, **kwargs: Any) -> None:
        if (cache / "live").is_dir():
            calls.append((Path(path), held_values(cache)))
        else:
            calls.append((Path(path), set()))
        real(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", spy)
    yield calls


def made_untracked(calls: list[tuple[Path, set[str]]], pattern: str) -> list[Path]:
    """The dirs matching `pattern` whose mkdir came before their record (none, if tracked)."""
    made = [(p, held) for p, held in calls if re.fullmatch(pattern, p.name)]
    assert made, f"no mkdir of {pattern} seen"
    return [p for p, held in made if str(p) not in held]


def test_a_checkout_and_a_boot_root_are_recorded_before_their_mkdir(
    sandbox: Sandbox, tmp_path: Path, mkdir_spy: list[tuple[Path, set[str]]]
) -> None:
    repo = sandbox.repo
    resolved = resolve_ref(repo, "main")
    with checkout(repo, resolved) as path:
        assert path.is_dir()
    assert made_untracked(mkdir_spy, resolved.short + r"-\w{8}") == []

    # A real boot (its root) and a real build (its throwaway HOME), as a run makes them.
    (tmp_path / "wt").mkdir()
    (tmp_path / "wt" / "svc.py").write_text(OK_SERVICE_PY)
    spec = ServiceConfig(
        start="{python} svc.py {port}", ready="/health", ready_timeout=20.0, venv=False,
        build="true",
    )
    with running_service(
        spec, tmp_path / "wt", log_path=tmp_path / "svc.log", temp_parent=tmp_path,
        sandbox="plain",
    ) as svc:
        assert svc.root is not None and svc.root.is_dir()
    assert made_untracked(mkdir_spy, r"harness-svc-\w{8}") == []
    build(tmp_path / "wt", sha_key="0" * 40, service=spec, log_dir=tmp_path / "logs")
    assert made_untracked(mkdir_spy, r"build-\w{8}") == []
    assert held_values(tmp_path / "cache") == set()  # and each forgotten once removed


def test_a_signal_at_the_mkdir_leaves_the_dir_recorded_or_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM (Terminated) landing just after the mkdir returned, before the caller holds the
    path: the directory is removed and forgotten, never made and unrecorded."""
    from harness.process.signals import Terminated

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    real = os.mkdir

    def mkdir_then_sigterm(path: Any, mode: int = 0o777) -> None:
        real(path, mode)
        if Path(path).name.startswith("harness-svc-"):  # not the state file's own directory
            raise Terminated(signal.SIGTERM)

    monkeypatch.setattr(os, "mkdir", mkdir_then_sigterm)
    with pytest.raises(Terminated):
        leftovers.make_dir("dir", tmp_path, "harness-svc-")
    monkeypatch.setattr(os, "mkdir", real)
    made = list(tmp_path.glob("harness-svc-*"))
    assert made == [] or {str(p) for p in made} <= held_values(tmp_path / "cache")
    assert made == [] and held_values(tmp_path / "cache") == set()


# --------------------------------------------------------------------------- (c) Ctrl-C x 3


def test_a_second_ctrl_c_inside_a_checkout_teardown_does_not_cut_it_short(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deterministic: SIGINT to ourselves while git removes the worktree."""
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    real_git = worktree_module._git

    def ctrl_c_then_git(cwd: Path, *args: str, **kwargs: Any) -> Any:
        if args[:2] == ("worktree", "remove"):
            os.kill(os.getpid(), signal.SIGINT)  # the second Ctrl-C, as the removal starts
            time.sleep(0.05)  # where an unguarded teardown would be interrupted
        return real_git(cwd, *args, **kwargs)

    monkeypatch.setattr(worktree_module, "_git", ctrl_c_then_git)
    resolved = resolve_ref(sandbox.repo, "main")
    with pytest.raises(KeyboardInterrupt), checkout(sandbox.repo, resolved) as path:
        raise KeyboardInterrupt  # the first Ctrl-C
    assert not path.exists()
    assert str(path) not in git(sandbox.repo, "worktree", "list", "--porcelain", home=sandbox.home)
    assert recovery.remaining() == [] and held_values(tmp_path / "cache") == set()


def test_the_torn_down_line_is_said_only_when_nothing_is_left(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from harness.cli.main import _say_torn_down

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    _say_torn_down("interrupted", exiting=False)
    assert capsys.readouterr().err == TORN_DOWN + "\n"

    # A temp dir still there, and a worktree whose directory is gone but which git still lists.
    temp = leftovers.make_dir("dir", tmp_path, "harness-svc-")
    registered, half = tmp_path / "wt-registered", tmp_path / "wt-half"
    for path in (registered, half):
        git(sandbox.repo, "worktree", "add", "--detach", str(path), "main", home=sandbox.home)
        leftovers.track("worktree", path, repo=sandbox.repo)
    shutil.rmtree(registered)
    # As a `git worktree add` cut short by Ctrl-C leaves one: locked (which prune skips), and
    # no .git file yet (which `git worktree remove` refuses).
    git(sandbox.repo, "worktree", "lock", str(half), home=sandbox.home)
    (half / ".git").unlink()
    leftovers.track("dir", tmp_path / "gone")  # held but already gone: forgotten, not said
    _say_torn_down("interrupted", exiting=False)
    said = capsys.readouterr().err
    assert "torn down:" in said and TORN_DOWN not in said
    assert f"worktree {registered} (still registered with git)" in said
    assert f"worktree {half} (still registered with git)" in said
    assert f"temp dir {temp}" in said and str(tmp_path / "gone") not in said
    assert "are left, and the next run (or `harness clean`) will remove them" in said
    assert held_values(tmp_path / "cache") == {str(registered), str(half), str(temp)}

    # What the next run does, run here as if this process were dead.
    monkeypatch.setattr(leftovers, "dead", lambda document: True)
    (line,) = recovery.recover(quiet=True)
    assert "removed 2 worktrees, 1 temp dir" in line
    listed = git(sandbox.repo, "worktree", "list", home=sandbox.home)
    assert str(registered) not in listed and str(half) not in listed
    assert not temp.exists() and not half.exists()


TORN_DOWN = "harness: interrupted; every service and worktree was torn down"
NOT_TORN_DOWN = re.compile(
    r"harness: interrupted; not everything was torn down: (.*) (is|are) left"
)


@pytest.mark.slow
def test_three_ctrl_c_30_ms_apart_during_checkout_never_claim_a_false_torn_down(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    outcomes = []
    for attempt in range(4):
        results = tmp_path / f"r{attempt}"
        proc = sandbox.start_harness(
            "compare", "--baseline", "crawl", "--candidate", "main", "--fresh", results=results
        )
        try:
            folder = sandbox.cache / "worktrees"
            deadline = time.monotonic() + CLI_TIMEOUT_S
            while not (folder.is_dir() and any(folder.iterdir())):
                assert proc.poll() is None and time.monotonic() < deadline, "no checkout began"
                time.sleep(0.001)
            for _ in range(3):
                proc.send_signal(signal.SIGINT)
                time.sleep(0.03)
            _, stderr = proc.communicate(timeout=CLI_TIMEOUT_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == 130, stderr
        assert "Traceback" not in stderr, stderr
        left = sandbox.worktrees() + [str(p) for p in sandbox.tmp.iterdir()]
        if TORN_DOWN in stderr:
            assert left == [] and live_files(sandbox) == [], stderr  # the line is true
            outcomes.append("torn down")
        else:
            match = NOT_TORN_DOWN.search(stderr)
            assert match is not None, stderr
            assert "the next run (or `harness clean`) will remove" in stderr
            for path in left:  # each thing left is named ...
                assert path in match.group(1), (path, stderr)
            assert live_files(sandbox) != []  # ... and recorded for the next run
            outcomes.append("named")
        done = run_cli(sandbox, "gold", "stats", "gold/gold.jsonl")
        assert done.returncode == 0, done.stderr
        assert sandbox.worktrees() == [] and live_files(sandbox) == []  # nothing registered
        assert list(sandbox.tmp.iterdir()) == []
    print(f"outcomes of 4 tries: {outcomes}")

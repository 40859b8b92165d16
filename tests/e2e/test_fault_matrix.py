"""The fault matrix: one row per fault or bad input, each run through the real CLI against a real
git repository and (where a row needs one) a real subprocess service on 127.0.0.1.

Inputs: every bad CLI number and config file is refused before anything starts, exit 2, one
line naming the option (or file:line: field) and the fix, no traceback, nothing booted.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

import cli_server
import httpx
import psutil
import pytest
from e2e_support import Sandbox, build_sandbox, config_text, git, harness_on_a_full_disk

from harness.boot.isolation import scrubber
from harness.boot.sandbox import BUBBLEWRAP, sandbox_mode
from harness.boot.service import RunningService, ServiceContext, running_service
from harness.checkout.build import build
from harness.config import ServiceConfig
from harness.errors import BuildError, ServiceError

NOTHING_STARTED = "a bad input must be refused before anything is built or booted"


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    return build_sandbox(tmp_path_factory.mktemp("faults") / "s", {"crawl": {"slow_ms": 500}})


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


PROGRESS = re.compile(r"harness: (checkout|build|boot|analysis): ")


def assert_refused(done: subprocess.CompletedProcess[str], *phrases: str) -> str:
    """Exit 2, no traceback, a first line `harness: error: ...` holding every phrase."""
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    # Progress lines (a checkout or build begun) may come first; then the error, first of all.
    lines = [x for x in done.stderr.splitlines() if not PROGRESS.match(x)]
    first = lines[0]
    assert first.startswith("harness: error: "), done.stderr
    for phrase in phrases:
        assert phrase in done.stderr, done.stderr
    assert done.stdout == ""
    return first


# --------------------------------------------------------------------------- CLI numbers

BAD_NUMBERS = [
    (["--alpha", "2"], "--alpha 2.0: must be between 0 and 1 (exclusive), e.g. --alpha 0.05"),
    (["--alpha", "nan"], "--alpha nan: must be between 0 and 1"),
    (["--k", "0"], "--k 0: must be 1 or more and at most 10,000, e.g. --k 10"),
    (["--k", "5", "--k", "5"], "--k: the cutoff 5 is given twice"),
    (["--concurrency", "0"], "--concurrency 0: must be 1 or more"),
    (["--latency-tolerance", "-1"], "--latency-tolerance -1.0: must be at least 0 and below 1"),
    (["--latency-tolerance", "1"], "--latency-tolerance 1.0: must be at least 0 and below 1"),
    (["--repeats", "0"], "--repeats 0: must be 1 or more and at most 1,000, e.g. --repeats 3"),
    (["--repeats", "-1"], "--repeats -1: must be 1 or more"),
    (["--max-errors", "-1"], "--max-errors -1: must be 0 or more and at most 1,000,000,000"),
    (["--seed", "-3"], "--seed -3: must be 0 or more"),
    (["--min-effect", "0"], "--min-effect 0.0: must be above 0 and at most 1"),
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
    # The message after the usage (which grows with every option) echoes at most 200 characters.
    assert len(done.stderr.split("error:", 1)[1]) < 500


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


@pytest.mark.slow
def test_a_full_disk_at_saving_leaves_no_comparison_and_still_prints_the_report(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """Both sides measured, then the comparison's write fails with ENOSPC (simulated: the real
    CLI, its real services, one write function replaced)."""
    results = tmp_path / "r"
    done = harness_on_a_full_disk(
        sandbox, "compare", "--baseline", "main", "--candidate", "main", "--repeats", "1",
        results=results,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "No space left on device" in done.stderr
    assert "hit@5" in done.stdout  # the report was printed
    saved = [p.name for p in results.iterdir() if p.name not in ("runs", "logs", "cache")]
    assert saved == []  # no empty or partial comparison, no temporary directory left


# --------------------------------------------------------------------------- containment
#
# The same misbehaving service (tests/fixtures/fault_service/svc.py) booted by the service stage
# in each mode. The bubblewrap rows are what the sandbox contains; the plain rows pin down what
# the README says plain isolation does not contain, so that paragraph stays true.

FAULT_SERVICE = Path(__file__).resolve().parents[1] / "fixtures" / "fault_service" / "svc.py"
MODES = [
    pytest.param(
        "bubblewrap",
        marks=pytest.mark.skipif(sandbox_mode() != BUBBLEWRAP, reason="no usable bubblewrap"),
    ),
    "plain",
]


@pytest.fixture
def fault_worktree(tmp_path: Path) -> Path:
    tree = tmp_path / "worktree"
    tree.mkdir()
    shutil.copyfile(FAULT_SERVICE, tree / "svc.py")
    return tree


def boot_fault(tree: Path, tmp_path: Path, mode: str, extra: str) -> ServiceContext:
    spec = ServiceConfig(
        start="{python} svc.py --port {port} " + extra, ready="/health", stop_timeout=1.0
    )
    roots = tmp_path / "roots"
    roots.mkdir(exist_ok=True)
    return running_service(
        spec, tree, log_path=tmp_path / "svc.log", temp_parent=roots, sandbox=mode
    )


def probe(svc: RunningService) -> dict[str, str | None]:
    with httpx.Client(trust_env=False, transport=svc.transport()) as client:
        answer = client.get(svc.url + "/probe", timeout=10.0)
    answer.raise_for_status()
    found: dict[str, str | None] = answer.json()
    return found


def host_address() -> str | None:
    """An address of this host other than loopback, if it has one."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))  # no packet is sent: only picks the outgoing address
        address = str(s.getsockname()[0])
        return None if address.startswith("127.") else address
    return None


def reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


@pytest.mark.parametrize("mode", MODES)
def test_a_service_binding_0_0_0_0_is_reachable_from_nowhere_else(
    fault_worktree: Path, tmp_path: Path, mode: str
) -> None:
    with boot_fault(fault_worktree, tmp_path, mode, "--bind 0.0.0.0") as svc:
        assert svc.sandbox == mode
        assert probe(svc) is not None  # the harness still reaches it
        from_host = [reachable("127.0.0.1", svc.port)]
        if (address := host_address()) is not None:
            from_host.append(reachable(address, svc.port))
    assert from_host == (
        [False] * len(from_host) if mode == "bubblewrap" else [True] * len(from_host)
    )


@pytest.mark.parametrize("mode", MODES)
def test_an_outbound_connection_to_another_loopback_address_fails(
    fault_worktree: Path, tmp_path: Path, mode: str
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.2", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with boot_fault(
            fault_worktree, tmp_path, mode, f"--out-host 127.0.0.2 --out-port {port}"
        ) as svc:
            outcome = probe(svc)["connect_out"]
    assert (outcome != "ok") if mode == "bubblewrap" else (outcome == "ok"), outcome


@pytest.mark.parametrize("mode", MODES)
def test_writes_outside_the_boot_root_and_reads_of_the_real_home(
    fault_worktree: Path, tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    secret = home / ".secret"
    secret.write_text("hunter2\n")
    monkeypatch.setenv("HOME", str(home))  # the harness's real home, as the sandbox sees it
    outside = tmp_path / "outside.txt"
    extra = f"--write {outside} --read {secret}"
    with boot_fault(fault_worktree, tmp_path, mode, extra) as svc:
        outcome = probe(svc)
        inside_write = svc.home / "mine.txt"
    if mode == "bubblewrap":
        assert outcome["write"] == "OSError" and not outside.exists()  # EROFS
        assert outcome["read"] == "FileNotFoundError"  # the home is an empty tmpfs
    else:
        assert outcome == {"connect_out": None, "write": "ok", "read": "ok"}
        assert outside.read_text() == "escaped\n"
    assert not inside_write.exists()  # the boot root itself is gone after teardown


def sleepers(token: str) -> list[int]:
    """The daemons that exec'd: argv[0] is the token. (The service and its first fork carry the
    token further along their argv; matching those, a loaded machine could end the boot before
    the second fork and leave no daemon at all.)"""
    return [
        p.pid
        for p in psutil.process_iter(["cmdline", "status"])
        if (p.info["cmdline"] or [])[:1] == [token] and p.info["status"] != psutil.STATUS_ZOMBIE
    ]


def first_forks(token: str) -> list[int]:
    """The daemon's first fork while it lives: the service's own command line, under the
    service (on a loaded machine it may still be there when the daemon already sleeps)."""
    found = []
    for p in psutil.process_iter(["cmdline", "status", "ppid"]):
        cmdline = p.info["cmdline"] or []
        if token not in cmdline[1:] or p.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        with contextlib.suppress(psutil.Error):
            if psutil.Process(p.info["ppid"]).cmdline() == cmdline:
                found.append(p.pid)
    return found


@pytest.mark.parametrize("mode", MODES)
def test_a_double_forked_daemon_with_a_cleared_environment(
    fault_worktree: Path, tmp_path: Path, mode: str
) -> None:
    token = f"harness-fault-{uuid.uuid4().hex}"
    ctx = boot_fault(fault_worktree, tmp_path, mode, f"--daemon {token}")
    with ctx:
        deadline = time.monotonic() + 10
        while (not sleepers(token) or first_forks(token)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sleepers(token), "the daemon never started"
        assert not first_forks(token), "the daemon's first fork never exited"
    left = sleepers(token)
    for pid in left:  # the plain mode's documented hole: end it here, not in the next test
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).kill()
    assert ctx.teardown is not None and ctx.teardown.confirmed, ctx.teardown
    if mode == "bubblewrap":
        assert left == []  # ended with its PID namespace
    else:
        assert len(left) == 1  # no marker, no parent: plain isolation cannot find it


# --------------------------------------------------------------------------- harness SIGKILLed

FIRST_SEARCH_DEADLINE_S = 60.0


def uncounted_config(sandbox: Sandbox, tmp_path: Path) -> Path:
    """The fixture's config without its boot counter (a write outside the sandbox)."""
    path = tmp_path / "sandboxed.toml"
    path.write_text(config_text(gold=str(sandbox.repo / "gold" / "gold.jsonl")))
    return path


@pytest.mark.slow
@pytest.mark.skipif(sandbox_mode() != BUBBLEWRAP, reason="no usable bubblewrap")
def test_a_whole_compare_runs_sandboxed_and_says_so(sandbox: Sandbox, tmp_path: Path) -> None:
    done = sandbox.harness(
        "compare",
        "--baseline",
        "main",
        "--candidate",
        "main",
        "--repeats",
        "1",
        results=tmp_path,
        config=uncounted_config(sandbox, tmp_path),
        env={"HARNESS_SANDBOX": "auto"},
    )
    assert done.returncode == 0, done.stderr
    assert "isolation: each boot in a bubblewrap sandbox" in done.stdout
    records = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*.json")]
    assert len(records) == 2
    assert {rep["sandbox"] for r in records for rep in r["repeats"]} == {"bubblewrap"}


def wait_for_first_search(results: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + FIRST_SEARCH_DEADLINE_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the harness ended before it was killed"
        for log in (results / "logs").glob("*.log"):
            if "svc: first search" in log.read_text(errors="replace"):
                return
        time.sleep(0.05)
    raise AssertionError("no service answered a search in time")


@pytest.mark.parametrize("mode", MODES)
def test_harness_sigkilled_mid_run_leaves_nothing_after_the_next_invocation(
    sandbox: Sandbox, tmp_path: Path, mode: str
) -> None:
    env = sandbox.env({"HARNESS_SANDBOX": "off" if mode == "plain" else "auto"})
    argv = sandbox.command(
        ["compare", "--baseline", "crawl", "--candidate", "main"],
        tmp_path,
        config=uncounted_config(sandbox, tmp_path),
    )
    proc = subprocess.Popen(
        argv, cwd=sandbox.repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_for_first_search(tmp_path, proc)
        assert sandbox.worktrees() != [] and sandbox.leftovers() != []
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        killed_at = time.monotonic()
        if mode == "bubblewrap":  # the sandbox dies with the harness
            while sandbox.leftovers() and time.monotonic() < killed_at + 1.0:
                time.sleep(0.02)
            assert sandbox.leftovers() == [], "the service outlived the harness by 1 s"
        assert sandbox.worktrees() != []  # nobody removed them yet
        live = list((sandbox.cache / "live").glob("*.json"))
        assert [p.stem for p in live] == [str(proc.pid)]
        held = json.loads(live[0].read_text())["held"]
        assert len(held["worktree"]) == 2 and held["dir"] and held["run_id"]

        # Any later invocation cleans up, saying so in one line.
        done = cli_server.run(
            "-m harness.cli.main", ["gold", "stats", "gold/gold.jsonl"], cwd=sandbox.repo,
            env=env, timeout=60,
        )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert done.returncode == 0, done.stderr
    (line,) = [x for x in done.stderr.splitlines() if "cleaned up" in x]
    assert line.startswith(f"harness: cleaned up after an earlier run (pid {proc.pid})")
    # both worktrees, and the temp dirs of the boots live at the kill (a round boots both sides)
    assert re.search(r"removed 2 worktrees, \d+ temp dirs?", line), line
    assert ("process" in line) == (mode == "plain")  # plain: the orphaned service, by marker
    assert sandbox.worktrees() == []
    assert sandbox.leftovers(sandbox.run_ids(tmp_path)) == []
    assert list((sandbox.cache / "live").iterdir()) == []
    assert list(sandbox.tmp.iterdir()) == []  # the boot root is gone too


# --------------------------------------------------------------------------- harness clean


def make_cache(cache: Path) -> dict[str, Path]:
    old = time.time() - 40 * 86400
    entries = {
        "build_old": cache / "builds" / "0123456789abcdef",
        "build_new": cache / "builds" / "fedcba9876543210",
        "worktree": cache / "worktrees" / "abcdef123456-x1",
        "tmp": cache / "tmp" / "build-zz",
    }
    for path in entries.values():
        path.mkdir(parents=True)
        (path / "blob").write_bytes(b"x" * 100_000)
    for key in ("build_old", "build_new"):
        (entries[key] / "built.json").write_text("{}")
    os.utime(entries["build_old"] / "built.json", (old, old))
    return entries


def clean_cli(cache: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HARNESS_CACHE_DIR": str(cache)}
    return cli_server.run("-m harness.cli.main", ["clean", *args], cwd=tmp_path, env=env,
                          timeout=60)


def test_clean_lists_sizes_and_keeps_builds_without_builds(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    entries = make_cache(cache)
    done = clean_cli(cache, tmp_path, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "would remove" in done.stdout and "a build: pass --builds" in done.stdout
    assert all(p.exists() for p in entries.values())  # a dry run removes nothing

    done = clean_cli(cache, tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"cache: {cache}" in done.stdout
    assert "removed" in done.stdout and "KB  worktrees/abcdef123456-x1" in done.stdout
    assert not entries["worktree"].exists() and not entries["tmp"].exists()
    assert entries["build_old"].exists() and entries["build_new"].exists()
    assert done.stdout.splitlines()[-1].startswith("removed 2 entries (")


def test_clean_builds_older_than_removes_only_the_old_build(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    entries = make_cache(cache)
    done = clean_cli(cache, tmp_path, "--builds", "--older-than", "30")
    assert done.returncode == 0, done.stderr
    assert not entries["build_old"].exists()
    assert entries["build_new"].exists()
    assert "used within 30 days" in done.stdout


def test_clean_never_removes_what_a_live_run_holds(tmp_path: Path) -> None:
    import psutil as ps

    cache = tmp_path / "cache"
    entries = make_cache(cache)
    (cache / "live").mkdir()
    me = ps.Process(os.getpid())
    held = {
        "worktree": [],
        "run_id": [],
        "dir": [{"value": str(entries["worktree"]), "repo": None}],
    }
    state = {"pid": me.pid, "started": me.create_time(), "held": held}
    (cache / "live" / f"{me.pid}.json").write_text(json.dumps(state))
    done = clean_cli(cache, tmp_path)
    assert done.returncode == 0, done.stderr
    assert entries["worktree"].exists()
    assert "in use by a running harness" in done.stdout


def test_clean_older_than_must_not_be_negative(tmp_path: Path) -> None:
    done = clean_cli(tmp_path / "cache", tmp_path, "--older-than", "-1")
    assert_refused(done, "--older-than -1.0: must be 0 or more")


# --------------------------------------------------------------------------- paths


def test_a_data_path_climbing_out_of_the_repository_is_refused(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    # As many ".." as it takes to reach / from any temp dir (a pytest-xdist worker's is deeper).
    climb = "../" * 40
    config = config_with(sandbox, tmp_path, 'data = "data"', f'data = "{climb}etc"')
    done = compare(sandbox, results=tmp_path / "r", config=config)
    assert_refused(done, f"{config}:4: service.data: /etc is outside the repository")
    assert sandbox.worktrees() == []


def test_a_gold_symlink_leading_out_of_the_repository_is_refused(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text((sandbox.repo / "gold" / "gold.jsonl").read_text())
    link = sandbox.repo / "gold" / "linked.jsonl"
    link.symlink_to(outside)
    try:
        config = config_with(
            sandbox, tmp_path, f'path = "{sandbox.repo}/gold/gold.jsonl"', f'path = "{link}"'
        )
        done = compare(sandbox, results=tmp_path / "r", config=config)
    finally:
        link.unlink()
    assert_refused(done, f"gold.path: {link} is a symlink to {outside}, outside the repository")


def test_a_committed_symlink_in_the_data_leading_out_is_an_error_naming_it(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2\n")
    home = sandbox.home
    git(sandbox.repo, "checkout", "--quiet", "-b", "leaky-data", "main", home=home)
    try:
        (sandbox.repo / "data" / "leak.txt").symlink_to(secret)
        git(sandbox.repo, "add", "data/leak.txt", home=home)
        git(sandbox.repo, "commit", "--quiet", "-m", "a link out of the repository", home=home)
    finally:
        git(sandbox.repo, "checkout", "--quiet", "main", home=home)
    boots = sandbox.boots()
    done = compare(sandbox, "--candidate", "leaky-data", results=tmp_path / "r")
    assert_refused(done, "service: data: ", "/data/leak.txt is a symlink to", str(secret))
    assert sandbox.boots() == boots  # checked at checkout, before either side boots
    assert "hunter2" not in done.stderr + done.stdout
    assert sandbox.worktrees() == []


# --------------------------------------------------------------------------- secrets

TOKEN = "tok-3f9a1c77e2b4d6"  # an API token in the caller's environment


def test_the_scrubber_replaces_what_the_allowlist_removed_and_nothing_else() -> None:
    caller = {"PATH": "/usr/bin", "API_TOKEN": TOKEN, "AWS_SECRET": TOKEN + "-long", "X": "on"}
    scrub = scrubber(caller, {"PATH": "/usr/bin", "HOME": "/tmp/h"})
    text = f"PATH /usr/bin token {TOKEN} aws {TOKEN}-long on"
    assert scrub(text) == "PATH /usr/bin token [API_TOKEN scrubbed] aws [AWS_SECRET scrubbed] on"


def test_a_service_log_excerpt_and_the_log_itself_are_scrubbed(
    fault_worktree: Path, tmp_path: Path
) -> None:
    environ = {"PATH": os.environ["PATH"], "API_TOKEN": TOKEN}
    spec = ServiceConfig(start=f"echo using {TOKEN} --port {{port}}; exit 3", ready="/health")
    ctx = running_service(spec, fault_worktree, log_path=tmp_path / "svc.log", environ=environ)
    with pytest.raises(ServiceError) as caught:
        ctx.__enter__()
    details = "\n".join(caught.value.details)
    assert "using [API_TOKEN scrubbed]" in details and TOKEN not in details
    assert (
        TOKEN not in (tmp_path / "svc.log").read_text().split("--- harness:")[-1].split("\n", 1)[1]
    )


def test_a_build_log_excerpt_is_scrubbed(
    fault_worktree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("API_TOKEN", TOKEN)
    spec = ServiceConfig(start="x {port}", ready="/health", build=f"echo leaking {TOKEN}; exit 1")
    with pytest.raises(BuildError) as caught:
        build(fault_worktree, sha_key="0" * 40, service=spec, log_dir=tmp_path / "logs")
    assert "leaking [API_TOKEN scrubbed]" in "\n".join(caught.value.details)
    assert TOKEN not in "\n".join(caught.value.details)
    (log,) = (tmp_path / "logs").glob("build-*.log")
    assert "leaking [API_TOKEN scrubbed]" in log.read_text()


# --------------------------------------------------------------------------- the fallback


def test_without_bwrap_the_plain_mode_runs_with_one_warning_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.boot import sandbox

    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    sandbox._warn_once.cache_clear()
    assert sandbox.sandbox_mode({}) == sandbox.PLAIN
    assert sandbox.sandbox_mode({}) == sandbox.PLAIN  # said once per process, not per boot
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("harness: warning: no sandbox: bwrap is not installed")
    assert "plain isolation" in line
    assert sandbox.sandbox_mode({"HARNESS_SANDBOX": "off"}) == sandbox.PLAIN
    assert capsys.readouterr().err == ""  # asked for: no warning
    sandbox._warn_once.cache_clear()

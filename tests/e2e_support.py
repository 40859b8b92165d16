"""Throwaway git repositories holding a tiny retrieval service, and the CLI run against them.

    sandbox = build_sandbox(tmp / "x", {"bury12": {"bury": query_ids(1, 12)}})
    done = sandbox.harness("compare", "--baseline", "main", "--candidate", "bury12")
    assert sandbox.leftovers() == [] and sandbox.worktrees() == []

A sandbox is one directory holding everything a test touches, so nothing reaches the real home:

    repo/            the git repository (branch main plus one branch per behaviour)
      svc.py         tests/fixtures/e2e_service/svc.py, identical on every branch
      behaviour.json {} on main; each branch changes only this file (see svc.py)
      harness.toml   the configuration the CLI finds in its cwd
      data/corpus.jsonl, gold/gold.jsonl
    cache/           HARNESS_CACHE_DIR: worktrees, builds
    home/            HOME of the harness process (and of git)
    tmp/             TMPDIR of the harness process: every boot's throwaway root lands here
    results/         the default --results
    boots.log        one line per service boot, whatever data copy it got (E2E_BOOT_COUNTER)

The gold set: queries q01..q80, "tell me about topic qNN", each with the one relevant document
dNN ("this document covers topic qNN in depth"); 20 filler documents share no word with any query.
So a healthy service ranks every expected answer first, and `bury` on n query ids moves exactly
those n answers out of the top 10.

Every commit sleeps BASE_BEHAVIOUR's few milliseconds per search (a branch's behaviour is merged
over it): latency is then mostly a sleep, not the scheduler of a busy machine, so an unchanged
service cannot drift 10% slower between interleaved repeats and a latency verdict means what
the test says.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cli_server
import psutil

from harness.boot.ports import lease_port

SERVICE = Path(__file__).resolve().parent / "fixtures" / "e2e_service" / "svc.py"
GOLD_SIZE = 80
FILLERS = 20
CLI_TIMEOUT_S = 180.0  # a deadline against a hung harness, not a timing assertion
GIT_TIMEOUT_S = 60.0
BASE_BEHAVIOUR: Mapping[str, object] = {"slow_ms": 5}


def query_id(n: int) -> str:
    return f"q{n:02d}"


def query_ids(first: int, last: int) -> list[str]:
    """q{first}..q{last}, both included."""
    return [query_id(n) for n in range(first, last + 1)]


def doc_id(n: int) -> str:
    return f"d{n:02d}"


def span(n: int) -> str:
    """The answer span of query n (with `gold_lines(spans=True)`): verbatim in document n."""
    return f"covers topic {query_id(n)}"


def gold_lines(*, spans: bool = False) -> list[str]:
    header = {"format": "harness-gold", "version": 1, "description": "e2e fixture"}
    rows = [
        {
            "id": query_id(n),
            "query": f"tell me about topic {query_id(n)}",
            "relevant": {doc_id(n): 1},
            **({"spans": {doc_id(n): [span(n)]}} if spans else {}),
        }
        for n in range(1, GOLD_SIZE + 1)
    ]
    return [json.dumps(row, sort_keys=True) for row in (header, *rows)]


def corpus_lines() -> list[str]:
    docs = [
        {
            "id": doc_id(n),
            "title": f"Topic {query_id(n)}",
            "text": f"this document covers topic {query_id(n)} in depth",
        }
        for n in range(1, GOLD_SIZE + 1)
    ]
    docs += [
        {"id": f"f{n:02d}", "title": "Filler", "text": f"unrelated filler page number {n}"}
        for n in range(1, FILLERS + 1)
    ]
    return [json.dumps(doc, sort_keys=True) for doc in docs]


def config_text(
    *,
    gold: str = "gold/gold.jsonl",
    boot_counter: Path | None = None,
    ready_timeout: float = 30.0,
    build: str | None = None,
    repeats: int = 2,
    texts: bool = False,
    latency_budget: int | None = None,
) -> str:
    """A harness.toml for the fixture service. `stop_timeout` is short so that a service that
    ignores SIGTERM costs one second, not ten. Latency rounds are `repeats` (2 at the least, the
    rule's minimum) unless `latency_budget` says more: an exit status a test asserts must not
    rest on a latency verdict, whose false-call rate is small but not zero, and up to 15 rounds
    per compare would slow the suite several-fold (tests of the sequential rounds pass
    --latency-budget and check the rounds, not the verdict).  The side bias that once had an
    A/A of this service called 1.12x slower after 14 rounds (the warm-up order) is gone:
    scripts/latency_noise.py, tests/driver/test_order.py."""
    lines = [
        "[service]",
        'start = "{python} svc.py --port {port} --data {data}"',
        'ready = "/health"',
        'data = "data"',
        "venv = false",
        f"ready_timeout = {ready_timeout}",
        "stop_timeout = 1.0",
    ]
    if build is not None:
        lines.append(f"build = {json.dumps(build)}")
    if boot_counter is not None:
        # Through the caller's environment, not an env pin: a pinned path outside the checkout
        # is an input (harness.config.inputs hashes its contents), and this file changes on
        # every boot, so no run would ever be reused.
        lines.append('pass_env = ["E2E_BOOT_COUNTER"]')
    lines += [
        "",
        "[query]",
        'path = "/search"',
        'params = { q = "{query}", k = "{limit}" }',
        'ids = "results[].id"',
        'scores = "results[].score"',
        *(['texts = "results[].text"'] if texts else []),
        "limit = 10",
        "",
        "[gold]",
        f"path = {json.dumps(gold)}",
        "",
        "[compare]",
        f"repeats = {repeats}",
        "k = [5, 10]",
        # The whole gold set, unless a test asks for --sequential (the default).
        "sequential = false",
        f"latency_budget = {max(repeats, 2) if latency_budget is None else latency_budget}",
    ]
    return "\n".join(lines) + "\n"


@contextmanager
def leased_port() -> Iterator[int]:
    """A port for a server a test starts itself (not through harness), leased the way harness
    leases each boot's port (harness.boot.ports) until the block ends: no harness boot of any
    worker is handed it, nor any program binding port 0.  The server binds it beside the
    lease's socket (SO_REUSEADDR: http.server and uvicorn do).  A port picked by binding port
    0 and closing is not safe: a harness boot of another worker may lease it in between, the
    test's server then listens on that boot's port, answers its readiness probe while the
    boot's own service dies of "Address already in use", and that compare measures a stranger
    (the failure seen once under load in tests/e2e/test_error_advice.py: a crashed round, no
    "every query failed")."""
    lease = lease_port(hold=True)
    try:
        yield lease.port
    finally:
        lease.close()


def commit_all(sandbox: Sandbox, message: str) -> str:
    """Commit everything in the sandbox's repository; the new commit's sha."""
    git(sandbox.repo, "add", "--all", home=sandbox.home)
    git(sandbox.repo, "commit", "--quiet", "-m", message, home=sandbox.home)
    return git(sandbox.repo, "rev-parse", "HEAD", home=sandbox.home).strip()


def git(repo: Path, *args: str, home: Path | None = None) -> str:
    """Run git with no system or global config (the caller's setup never leaks in)."""
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home or repo),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "LC_ALL": "C",
        "GIT_AUTHOR_NAME": "e2e",
        "GIT_AUTHOR_EMAIL": "e2e@example.invalid",
        "GIT_COMMITTER_NAME": "e2e",
        "GIT_COMMITTER_EMAIL": "e2e@example.invalid",
    }
    done = subprocess.run(
        ["git", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=GIT_TIMEOUT_S,
    )
    return done.stdout


@dataclass(frozen=True)
class Sandbox:
    """One fixture repository and every directory the harness may write to (see the module)."""

    root: Path

    @property
    def repo(self) -> Path:
        return self.root / "repo"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    @property
    def results(self) -> Path:
        return self.root / "results"

    @property
    def boot_counter(self) -> Path:
        return self.root / "boots.log"

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The harness process's whole environment: nothing of the test runner's but PATH."""
        env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": str(self.home),
            "TMPDIR": str(self.tmp),
            "HARNESS_CACHE_DIR": str(self.cache),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "LC_ALL": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            # The fixture service counts its boots in boots.log, outside its own box, which a
            # sandbox forbids: these tests run plain. tests/e2e/test_fault_matrix.py runs the
            # sandbox.
            "HARNESS_SANDBOX": "off",
            "E2E_BOOT_COUNTER": str(self.boot_counter),
        }
        env.update(extra or {})
        return env

    def command(
        self, args: Sequence[str], results: Path | None = None, config: Path | None = None
    ) -> list[str]:
        """The CLI's argv: `--results` added (except for report), and with a config file,
        `--config` and `--repo` (a config outside the repository does not name it)."""
        extra = [] if args and args[0] == "report" else ["--results", str(results or self.results)]
        if config is not None:
            extra += ["--config", str(config), "--repo", str(self.repo)]
        return [sys.executable, "-m", "harness.cli.main", *args, *extra]

    def harness(
        self,
        *args: str,
        results: Path | None = None,
        config: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run the real CLI to completion with cwd = the repository (see `command`), in a
        process of its own forked from a server that has imported harness (tests/cli_server.py)."""
        return cli_server.run(
            "-m harness.cli.main",
            self.command(args, results, config)[3:],
            cwd=self.repo,
            env=self.env(env),
            timeout=CLI_TIMEOUT_S,
        )

    def start_harness(self, *args: str, results: Path | None = None) -> subprocess.Popen[str]:
        """The CLI as a running process (for signals); stdout and stderr are pipes."""
        return subprocess.Popen(
            self.command(args, results),
            cwd=self.repo,
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def write_config(
        self, name: str, *, ready_timeout: float = 30.0, build: str | None = None
    ) -> Path:
        """A config file outside the repository (so its tree stays clean), the gold set given by
        absolute path; pass it as `config=` to `harness`."""
        path = self.root / name
        text = config_text(
            gold=str(self.repo / "gold" / "gold.jsonl"),
            boot_counter=self.boot_counter,
            ready_timeout=ready_timeout,
            build=build,
        )
        path.write_text(text)
        return path

    def boots(self) -> int:
        """Services booted so far in this sandbox (any data copy, any results directory)."""
        if not self.boot_counter.exists():
            return 0
        return len(self.boot_counter.read_text().splitlines())

    def worktrees(self) -> list[str]:
        """Linked worktrees git still knows of, plus anything left in the cache's checkouts."""
        listed = git(self.repo, "worktree", "list", "--porcelain", home=self.home)
        paths = [
            line.split(" ", 1)[1] for line in listed.splitlines() if line.startswith("worktree ")
        ]
        linked = [p for p in paths if Path(p).resolve() != self.repo.resolve()]
        for kind in ("worktrees", "snapshots"):
            folder = self.cache / kind
            if folder.is_dir():
                linked += [str(p) for p in folder.iterdir()]
        return linked

    def run_ids(self, results: Path | None = None) -> set[str]:
        """The HARNESS_RUN_ID of every boot whose log is under the results directory."""
        found = set()
        for log in ((results or self.results) / "logs").glob("*.log"):
            for line in log.read_text(errors="replace").splitlines():
                if line.startswith("svc: HARNESS_RUN_ID="):
                    found.add(line.partition("=")[2])
        return found

    def leftovers(self, run_ids: Iterable[str] = ()) -> list[str]:
        """Live processes of ours that this sandbox started: cwd or an argument inside the
        sandbox, or HARNESS_RUN_ID one of `run_ids`. Other helpers' services are not looked at."""
        ids, root = set(run_ids), str(self.root)
        found = []
        for proc in psutil.process_iter(["pid", "uids", "cmdline", "cwd", "status"]):
            info = proc.info
            if proc.pid == os.getpid() or info["uids"] is None:
                continue
            if info["uids"].real != os.getuid() or info["status"] == psutil.STATUS_ZOMBIE:
                continue
            cmdline = info["cmdline"] or []
            inside = any(root in arg for arg in cmdline) or (info["cwd"] or "").startswith(root)
            try:
                marked = proc.environ().get("HARNESS_RUN_ID") in ids
            except psutil.Error:
                marked = False
            if inside or marked:
                found.append(f"{proc.pid}: {' '.join(cmdline)}")
        return found


def build_sandbox(
    root: Path,
    branches: Mapping[str, Mapping[str, object]],
    *,
    ready_timeout: float = 30.0,
    repeats: int = 2,
    texts: bool = False,
    main: Mapping[str, object] | None = None,
    latency_budget: int | None = None,
) -> Sandbox:
    """Create the sandbox directories and its repository: main (BASE_BEHAVIOUR, updated with
    `main`), then one branch per entry of `branches`, each main plus one commit writing main's
    behaviour updated with it.
    With `texts`, every commit returns each result's text, the config reads it (query.texts)
    and the gold set has one answer span per query (`span`); `latency_budget` as `config_text`'s."""
    sandbox = Sandbox(root)
    for folder in (sandbox.repo, sandbox.cache, sandbox.home, sandbox.tmp):
        folder.mkdir(parents=True)
    repo = sandbox.repo
    shutil.copyfile(SERVICE, repo / "svc.py")
    base = {**({"with_text": True} if texts else {}), **(main or {})}
    (repo / "behaviour.json").write_text(_behaviour(base))
    (repo / "data").mkdir()
    (repo / "data" / "corpus.jsonl").write_text("\n".join(corpus_lines()) + "\n")
    (repo / "gold").mkdir()
    (repo / "gold" / "gold.jsonl").write_text("\n".join(gold_lines(spans=texts)) + "\n")
    (repo / "harness.toml").write_text(
        config_text(
            boot_counter=sandbox.boot_counter,
            ready_timeout=ready_timeout,
            repeats=repeats,
            texts=texts,
            latency_budget=latency_budget,
        )
    )
    (repo / ".gitignore").write_text("results/\n")
    home = sandbox.home
    git(repo, "init", "--quiet", "--initial-branch=main", home=home)
    git(repo, "add", "--all", home=home)
    git(repo, "commit", "--quiet", "-m", "fixture service, gold set and config", home=home)
    for name, behaviour in branches.items():
        git(repo, "checkout", "--quiet", "-b", name, "main", home=home)
        (repo / "behaviour.json").write_text(_behaviour({**base, **behaviour}))
        git(repo, "commit", "--quiet", "-am", f"behaviour: {name}", home=home)
        git(repo, "checkout", "--quiet", "main", home=home)
    return sandbox


def _behaviour(overrides: Mapping[str, object]) -> str:
    return json.dumps({**BASE_BEHAVIOUR, **overrides}, sort_keys=True) + "\n"


def record_paths(results: Path) -> list[Path]:
    """Run records under results/runs/, oldest first: by when each was written (a name begins
    with its second, and two runs of one commit in the same second sort by a random suffix)."""
    return sorted((results / "runs").glob("*.json"), key=lambda p: (p.stat().st_mtime_ns, p.name))


def load_json(path: Path) -> dict[str, object]:
    document = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    return document


def record_document(path: Path) -> dict[str, Any]:
    """A run record as one JSON-like document: its header, each repeat with its answers as
    `results` (read through `load_run`, from the .npz beside it), as records of
    schema_version 1 held them inline."""
    from harness.results.records import load_run

    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    for repeat, read in zip(document["repeats"], load_run(path).repeats, strict=True):
        repeat["results"] = [
            {
                "query_id": r.query_id,
                "ids": list(r.ids),
                "scores": None if r.scores is None else list(r.scores),
                "status": r.status,
                "error": None if r.error is None else r.error.value,
                "detail": r.detail,
                "latency_ns": r.latency_ns,
                **({} if r.texts is None else {"texts": list(r.texts)}),
            }
            for r in read.results
        ]
    return document


# The CLI as `python -m harness.cli.main` runs it, but with every write of a comparison's files
# after comparison.json failing with ENOSPC: a full disk at saving, the services real.
FULL_DISK_PY = (
    "import errno, os, sys\n"
    "import harness.results.comparisons as c\n"
    "from harness.results import files\n"
    "def full(path, text):\n"
    "    raise files._write_error(path, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))\n"
    "c.write_text_new = full\n"
    "from harness.cli.main import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def harness_on_a_full_disk(
    sandbox: Sandbox, *args: str, results: Path, config: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`sandbox.harness(*args)` run to completion as FULL_DISK_PY (see Sandbox.command)."""
    argv = sandbox.command(args, results, config)
    return subprocess.run(
        [sys.executable, "-c", FULL_DISK_PY, *argv[3:]],
        cwd=sandbox.repo,
        env=sandbox.env(),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )

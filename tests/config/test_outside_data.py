"""Data that stays where it is (issue 27, item 2): `service.data` outside the repository.

An absolute `service.data` (or ~/...) is used in place: in the bubblewrap sandbox bound read-only
where it lies (never copied: a 2 GB sparse index boots with its own inode, nothing under the
boot's root), in plain isolation only when the service's user could not write it anyway; copied
per boot with `data_mode = "copy"`. Its identity in the reuse key is a manifest (sizes, mtimes,
contents of small files) or `data_version`. The service cannot write it as root nor as user
nobody (here for plain isolation; tests/boot/test_sandbox_escape.py for the sandbox, both users).
Bad input is exit 2 naming the field. The end-to-end compare is in `test_compare_reuses_...`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cli_server
import pytest
from e2e_support import Sandbox, build_sandbox, config_text, corpus_lines, query_ids
from nobody_support import NOBODY, PATH, as_nobody, nobody_unavailable, readable_harness
from nobody_support import system_python as nobody_python
from serve_support import SERVE_JSON_PY

from harness.boot import isolation, sandbox, service
from harness.config import HarnessConfig, QueryConfig, ServiceConfig, SideConfig, load_config
from harness.config.inputs import data_path, inputs_hash, referenced_paths
from harness.config.manifest import SMALL_FILE, manifest
from harness.config.values import DATA_COPY, DATA_READ_ONLY, data_mode, side_hash
from harness.errors import ConfigError

SPARSE = 2 << 30  # 2 GiB, all holes: no disk used, and copying it would write 2 GiB

# Reports where its data is, the inode of index.bin, and what became of each attempt to change
# the data (GET /report); then serves.
DATA_SVC = SERVE_JSON_PY + textwrap.dedent(
    '''
    import errno, os, sys
    port, data = int(sys.argv[1]), sys.argv[2]
    kept = os.path.join(data, "index.bin")
    report = {"data": data, "inode": os.stat(kept).st_ino, "writes": {}}

    def attempt(name, action):
        try:
            action()
            report["writes"][name] = "ok"
        except OSError as exc:
            report["writes"][name] = "denied: " + errno.errorcode.get(exc.errno or 0, "?")

    def append():
        with open(kept, "ab") as f:
            f.write(b"x")

    def create():
        with open(os.path.join(data, "new.txt"), "w") as f:
            f.write("x")

    attempt("create", create)
    attempt("append", append)
    attempt("utime", lambda: os.utime(kept, (0, 0)))
    attempt("chmod", lambda: os.chmod(kept, 0o666))
    attempt("rename", lambda: os.rename(kept, kept + ".moved"))

    serve_json(port, report)
    '''
)
WRITES = ("create", "append", "utime", "chmod", "rename")

needs_bubblewrap = pytest.mark.skipif(
    sandbox.sandbox_mode({}) != sandbox.BUBBLEWRAP, reason="no usable bubblewrap"
)


def make_data(folder: Path, *, size: int = SPARSE) -> Path:
    """An index folder: index.bin (sparse, `size` bytes) and a small segments file."""
    folder.mkdir(parents=True)
    with open(folder / "index.bin", "wb") as handle:
        handle.truncate(size)
    (folder / "segments.txt").write_text("segment_1\nsegment_2\n")
    return folder


@pytest.fixture
def big(tmp_path: Path) -> Path:
    return make_data(tmp_path / "disk" / "index")


# --------------------------------------------------------------------------- configuration


def write_config(repo: Path, service: str, query: str = "") -> Path:
    repo.mkdir(exist_ok=True)
    (repo / "data").mkdir(exist_ok=True)
    config = repo / "harness.toml"
    config.write_text(
        "[service]\n"
        'start = "svc --port {port} --index {data}"\n'
        'ready = "/health"\n'
        f"{service}\n"
        '[query]\npath = "/s"\nids = "[]"\n'
        f"{query}\n"
        '[gold]\npath = "gold.jsonl"\n'
    )
    return config


def test_an_absolute_path_outside_is_used_in_place_and_in_repo_data_is_copied(
    tmp_path: Path, big: Path
) -> None:
    repo = tmp_path / "repo"
    outside = load_config(write_config(repo, f'data = "{big}"'), repo=repo)
    assert outside.baseline.service.data == str(big)
    assert data_mode(outside.baseline.service) == DATA_READ_ONLY
    inside = load_config(write_config(repo, 'data = "data"'), repo=repo)
    assert data_mode(inside.baseline.service) == DATA_COPY  # today's behaviour, kept
    asked = load_config(write_config(repo, f'data = "{big}"\ndata_mode = "copy"'), repo=repo)
    assert data_mode(asked.baseline.service) == DATA_COPY


def test_a_tilde_is_the_home_of_whoever_runs_the_harness(
    tmp_path: Path, big: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(big.parent))
    repo = tmp_path / "repo"
    config = load_config(write_config(repo, 'data = "~/index"'), repo=repo)
    assert data_path(config.baseline, repo, None) == big.resolve()


def cli(config: Path, repo: Path) -> subprocess.CompletedProcess[str]:
    return cli_server.run(
        "-m harness.cli.main",
        ["run", "--ref", "main", "--config", str(config), "--repo", str(repo), "--results",
         str(repo.parent / "results")],
        cwd=os.getcwd(), timeout=120,
        env={"PATH": os.environ["PATH"], "HOME": str(repo.parent), "LC_ALL": "C.UTF-8"},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("service", "said"),
    [
        ('data = "../elsewhere"', "service.data: {top}/elsewhere is outside the repository "
         "{top}/repo; a relative service.data must stay inside the repository (an absolute "
         'path, e.g. data = "/mnt/index", names data kept outside it)'),
        ('data = "{top}/repo/data"', "service.data: {top}/repo/data is inside the repository "
         "{top}/repo: write it relative to the repository"),
        ('data = "{top}/elsewhere"\ndata_mode = "readonly"', "service.data_mode: must be "
         "'copy' or 'read-only', not 'readonly' (did you mean 'read-only'?)"),
        ('data = "{top}/elsewhere"\ndata_version = " "', "service.data_version: is empty: give "
         'the version of the data, e.g. "2024-06-01"'),
    ],
    ids=["relative outside", "absolute inside", "data_mode typo", "blank version"],
)  # fmt: skip
def test_bad_data_settings_are_exit_2_naming_the_line_field_and_fix(
    tmp_path: Path, service: str, said: str
) -> None:
    top = tmp_path.resolve()
    (top / "elsewhere").mkdir()
    repo = top / "repo"
    config = write_config(repo, service.replace("{top}", str(top)))
    done = cli(config, repo)
    assert done.returncode == 2, done.stderr
    key = said.partition(":")[0].removeprefix("service.")
    line = 1 + [n.partition(" =")[0] for n in config.read_text().splitlines()].index(key)
    assert f"{config}:{line}: " + said.replace("{top}", str(top)) in done.stderr
    assert "Traceback" not in done.stderr


def test_data_that_is_or_holds_a_hidden_folder_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / "index").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    for data, said in [(str(home), "is a folder the sandbox hides"), ("/", "holds ")]:
        spec = ServiceConfig("svc {port}", "/", data=data, data_mode="copy")
        with pytest.raises(ConfigError, match="the data would expose the host") as caught:
            isolation.data_source(spec, tmp_path, sandbox="plain")
        assert said in str(caught.value) and "name the folder inside it" in str(caught.value)
    spec = ServiceConfig("svc {port}", "/", data=str(home / "index"), data_mode="copy")
    assert isolation.data_source(spec, tmp_path, sandbox="plain") == (home / "index").resolve()


def test_an_outside_gold_corpus_is_read_where_it_lies(tmp_path: Path, big: Path) -> None:
    repo = tmp_path / "repo"
    corpus = big / "corpus.jsonl"
    corpus.write_text('{"id": "d1", "text": "t"}\n')
    config = write_config(repo, 'data = "data"')
    config.write_text(config.read_text() + f'corpus = "{corpus}"\n')
    assert load_config(config, repo=repo).corpus == corpus.resolve()
    config.write_text(config.read_text().replace(str(corpus), "../disk/index/corpus.jsonl"))
    with pytest.raises(ConfigError, match="or give the corpus's absolute path"):
        load_config(config, repo=repo)


# --------------------------------------------------------------------------- the manifest


def test_a_2gb_sparse_index_is_keyed_without_reading_it(big: Path) -> None:
    assert (big / "index.bin").stat().st_blocks * 512 < SPARSE // 100  # sparse indeed
    found = manifest(big)
    assert (found.files, found.bytes) == (2, SPARSE + len("segment_1\nsegment_2\n"))
    assert found.hashed_bytes == len("segment_1\nsegment_2\n")  # the small file only
    assert SMALL_FILE == 1 << 20


def _edit_keeping_mtime(path: Path, offset: int) -> None:
    before = path.stat()
    with open(path, "r+b") as handle:
        handle.seek(offset)
        handle.write(b"Z")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size


def test_the_manifest_sees_mtimes_sizes_and_small_contents(big: Path) -> None:
    first = manifest(big).digest
    index = big / "index.bin"
    stat = index.stat()
    os.utime(index, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    touched = manifest(big).digest
    assert touched != first  # a changed mtime
    os.truncate(index, SPARSE + 4096)
    grown = manifest(big).digest
    assert grown != touched  # a changed size
    _edit_keeping_mtime(big / "segments.txt", 0)
    assert manifest(big).digest != grown  # a small file by content, even with its mtime back
    edited = manifest(big).digest
    # The one thing it cannot see (the docs say so; data_version is the answer): a large file
    # rewritten in place with its size and mtime unchanged.
    _edit_keeping_mtime(index, 1 << 30)
    assert manifest(big).digest == edited
    (big / "new-segment").write_text("")
    assert manifest(big).digest != edited  # a new file


def test_a_symlink_loop_in_the_data_ends_and_a_missing_path_says_so(tmp_path: Path) -> None:
    data = make_data(tmp_path / "d", size=10)
    (data / "loop").symlink_to(data)
    assert manifest(data).files == 2
    assert manifest(tmp_path / "nothing").files == 0


def side(data: str | None, **service: object) -> SideConfig:
    spec = ServiceConfig(f"svc --port {{port}} --model {data}/model.bin", "/h", data=data,
                         **service)  # type: ignore[arg-type]  # fmt: skip
    return SideConfig(spec, QueryConfig("/s", "ids"))


def config_of(repo: Path, s: SideConfig) -> HarnessConfig:
    return HarnessConfig(repo / "harness.toml", repo, repo / "gold.jsonl", None, s, s)


def test_a_touched_index_changes_the_key_and_data_version_pins_it(
    tmp_path: Path, big: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (big / "model.bin").write_text("weights")
    plain, pinned = side(str(big)), side(str(big), data_version="2024-06-01")
    # A word of start inside the data is the data's business, not hashed again on its own.
    assert referenced_paths(plain, repo) == ()
    keys = [inputs_hash(s, config_of(repo, s)) for s in (plain, pinned)]
    os.utime(big / "index.bin", ns=(0, 1_000_000_000))
    assert inputs_hash(plain, config_of(repo, plain)) != keys[0]  # measured on other data
    assert inputs_hash(pinned, config_of(repo, pinned)) == keys[1]  # the version says same
    other = side(str(big), data_version="2024-07-01")
    assert side_hash(other) != side_hash(pinned)  # a new version is a new configuration


# --------------------------------------------------------------------------- booted


def boot_report(
    spec: ServiceConfig, work: Path, mode: str
) -> tuple[dict[str, Any], service.RunningService, int]:
    """Boot DATA_SVC with `spec` in `mode`: its report, the RunningService, and the bytes its
    boot root held while it ran."""
    worktree = work / "wt"
    worktree.mkdir(parents=True, exist_ok=True)
    (worktree / "svc.py").write_text(DATA_SVC)
    ctx = service.running_service(
        spec, worktree, log_path=work / "svc.log", temp_parent=work, sandbox=mode
    )
    with ctx as svc, svc.connect(timeout=10.0) as conn:
        conn.sendall(b"GET /report HTTP/1.0\r\n\r\n")
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
        used = sum(p.stat().st_blocks * 512 for p in svc.root.rglob("*") if p.is_file())
    assert ctx.teardown is not None and ctx.teardown.confirmed
    return json.loads(answer.partition(b"\r\n\r\n")[2]), svc, used


START = "{python} svc.py {port} {data}"


@needs_bubblewrap
def test_a_2gb_index_outside_boots_bound_read_only_without_a_copy(
    tmp_path: Path, big: Path
) -> None:
    before = manifest(big)
    spec = ServiceConfig(START, "/health", data=str(big), ready_timeout=30.0)
    report, svc, used = boot_report(spec, tmp_path / "work", "bubblewrap")
    assert svc.data == big.resolve() and report["data"] == str(big.resolve())
    assert not svc.data.is_relative_to(svc.root)
    assert report["inode"] == (big / "index.bin").stat().st_ino  # the file itself, not a copy
    assert used < 1 << 20  # the boot's root held no copy of 2 GiB
    # Read-only for its owner (the invoker's service meets the read-only mount); root's service
    # runs as a uid of its own, which the kernel may stop at the file's permissions first.
    refused = ("denied: EROFS",) if os.geteuid() else ("denied: EROFS", "denied: EACCES",
                                                        "denied: EPERM")  # fmt: skip
    assert set(report["writes"]) == set(WRITES), report
    assert all(said in refused for said in report["writes"].values()), report
    assert manifest(big) == before


def test_read_only_data_this_user_can_write_is_refused_without_the_sandbox(
    tmp_path: Path, big: Path
) -> None:
    spec = ServiceConfig(START, "/health", data=str(big))
    with pytest.raises(ConfigError) as caught:
        boot_report(spec, tmp_path / "work", "plain")
    said = str(caught.value)
    assert "service: read-only data needs the sandbox here" in said
    assert f"service: data: {big.resolve()} is writable by this user" in said
    assert 'or set service.data_mode = "copy"' in said and "run with bubblewrap" in said


def test_data_on_a_read_only_filesystem_is_read_only_without_the_sandbox(
    big: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert isolation.writable_part(big) == big.resolve() or isolation.writable_part(big) == big
    real = os.statvfs

    class ReadOnly:
        def __init__(self, path: Any) -> None:
            self.f_flag = real(path).f_flag | os.ST_RDONLY

    monkeypatch.setattr(os, "statvfs", ReadOnly)
    assert isolation.writable_part(big) is None


def test_data_copy_gives_each_boot_its_own_writable_copy(tmp_path: Path) -> None:
    small = make_data(tmp_path / "disk" / "small", size=4096)
    before = manifest(small)
    spec = ServiceConfig(START, "/health", data=str(small), data_mode="copy")
    mode = sandbox.sandbox_mode({})
    report, svc, _ = boot_report(spec, tmp_path / "work", mode)
    assert svc.data is not None and svc.data.is_relative_to(svc.root)
    assert report["inode"] != (small / "index.bin").stat().st_ino
    assert report["writes"] == dict.fromkeys(WRITES, "ok")
    assert manifest(small) == before


# --------------------------------------------------------------------------- as nobody

DRIVER = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    from harness.boot import service
    from harness.config import ServiceConfig
    from harness.errors import ConfigError

    work, data = Path(sys.argv[1]), sys.argv[2]
    spec = ServiceConfig("{python} svc.py {port} {data}", "/health", data=data)
    try:
        ctx = service.running_service(spec, work / "wt", log_path=work / "svc.log",
                                      temp_parent=work, sandbox="plain")
        with ctx as svc, svc.connect(timeout=10.0) as conn:
            conn.sendall(b"GET /report HTTP/1.0\\r\\n\\r\\n")
            answer = b""
            while chunk := conn.recv(65536):
                answer += chunk
        print(json.dumps({"report": json.loads(answer.partition(b"\\r\\n\\r\\n")[2]),
                          "uid": os.getuid()}))
    except ConfigError as error:
        print(json.dumps({"refused": str(error), "uid": os.getuid()}))
    """
)


@pytest.fixture(scope="module")
def nobody_top() -> Iterator[Path]:
    reason = nobody_unavailable()
    if reason is not None:
        pytest.skip(reason)
    top = Path(tempfile.mkdtemp(prefix="harness-data-"))
    try:
        lib = readable_harness(top)
        (lib / "driver.py").write_text(DRIVER)
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


def run_as_nobody(top: Path, name: str, data_owner: int) -> dict[str, Any]:
    work = top / name
    (work / "wt").mkdir(parents=True)
    (work / "wt" / "svc.py").write_text(DATA_SVC)
    os.chown(work, NOBODY, NOBODY)
    data = make_data(top / f"{name}-data", size=1 << 20)
    for path in (data, *data.iterdir()):
        os.chown(path, data_owner, data_owner)
        path.chmod(0o755 if path.is_dir() else 0o644)
    before = manifest(data)
    python = nobody_python()
    assert python is not None
    env = {"PATH": PATH, "HOME": str(work), "LANG": "C.UTF-8", "PYTHONPATH": str(top / "lib"),
           "HARNESS_CACHE_DIR": str(work / "cache")}  # fmt: skip
    done = as_nobody([python, str(top / "lib" / "driver.py"), str(work), str(data)], env=env,
                     cwd=top)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    told: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    assert told["uid"] == NOBODY
    told["unchanged"] = manifest(data) == before
    return told


def test_as_nobody_without_the_sandbox_data_it_cannot_write_stays_unwritten(
    nobody_top: Path,
) -> None:
    told = run_as_nobody(nobody_top, "roots-data", 0)  # root's, mode 644: not nobody's to write
    assert told["report"]["writes"] == dict.fromkeys(WRITES, "denied: EACCES") | {
        "utime": "denied: EPERM", "chmod": "denied: EPERM"}  # fmt: skip
    assert told["unchanged"]


def test_as_nobody_without_the_sandbox_its_own_data_is_refused(nobody_top: Path) -> None:
    told = run_as_nobody(nobody_top, "own-data", NOBODY)
    assert "service: read-only data needs the sandbox here" in told["refused"]
    assert "is writable by this user (nobody)" in told["refused"]


# --------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def e2e(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    return build_sandbox(
        tmp_path_factory.mktemp("outside") / "s", {"bury12": {"bury": query_ids(1, 12)}}
    )


def compare(e2e: Sandbox, config: Path, results: Path) -> subprocess.CompletedProcess[str]:
    return e2e.harness(
        "compare", "--baseline", "main", "--candidate", "bury12", "--reuse-runs",
        results=results, config=config, env={"HARNESS_SANDBOX": "on"},
    )  # fmt: skip


def test_missing_outside_data_is_exit_2_before_anything_is_built(
    e2e: Sandbox, tmp_path: Path
) -> None:
    gone = tmp_path / "unmounted" / "index"
    text = config_text(gold=str(e2e.repo / "gold" / "gold.jsonl"), build="echo built")
    config = tmp_path / "harness.toml"
    config.write_text(text.replace('data = "data"', f'data = "{gone}"'))
    done = e2e.harness("run", "--ref", "main", results=tmp_path / "r", config=config)
    assert done.returncode == 2, done.stderr
    assert "harness: error: service: no data at the path given\n" in done.stderr
    assert "harness: build:" not in done.stderr  # after the checkout, before the build
    assert (
        f"service: data: {gone} does not exist: give the absolute path of the folder or file "
        "that holds the data (is its disk mounted?)"
    ) in done.stderr
    assert "Traceback" not in done.stderr and e2e.worktrees() == []


@pytest.mark.slow
@needs_bubblewrap
def test_compare_uses_outside_data_in_place_and_reuses_only_what_it_still_matches(
    e2e: Sandbox, tmp_path: Path
) -> None:
    disk = make_data(tmp_path / "disk" / "index")
    (disk / "corpus.jsonl").write_text("\n".join(corpus_lines()) + "\n")
    text = config_text(gold=str(e2e.repo / "gold" / "gold.jsonl"), repeats=1)
    text = text.replace('data = "data"', f'data = "{disk}"')
    text = text.replace("[gold]\n", f'[gold]\ncorpus = "{disk / "corpus.jsonl"}"\n')
    config = tmp_path / "harness.toml"
    config.write_text(text)
    results = tmp_path / "results"

    first = compare(e2e, config, results)
    assert first.returncode == 1, first.stderr  # bury12 regresses hit@5
    logs = "".join(p.read_text() for p in (results / "logs").glob("*.log"))
    inode = (disk / "corpus.jsonl").stat().st_ino
    assert f"svc: data {disk.resolve()} inode {inode}" in logs  # the data itself: no copy, any boot
    assert re.search(r"svc: data boots seen read-only: (EROFS|EACCES)", logs)  # never written
    assert "svc: data boots seen 1" not in logs

    again = compare(e2e, config, results)
    assert "baseline reused from" in again.stdout and "candidate reused from" in again.stdout
    os.utime(disk / "index.bin", ns=(0, 1_000_000_000))  # the index was rebuilt
    touched = compare(e2e, config, results)
    assert touched.returncode == 1, touched.stderr
    assert "reused from" not in touched.stdout

    config.write_text(
        text.replace('ready = "/health"\n', 'ready = "/health"\ndata_version = "index-v7"\n')
    )
    assert compare(e2e, config, results).returncode == 1  # a new configuration: measured
    os.utime(disk / "index.bin", ns=(0, 2_000_000_000))
    pinned = compare(e2e, config, results)
    assert "baseline reused from" in pinned.stdout  # the version, not the mtime, says same


def test_an_unknown_users_home_is_a_located_error_not_a_traceback(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    config = write_config(repo, 'data = "~no-such-user-here/index"')
    done = cli(config, repo)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"{config}:4: service.data: ~no-such-user-here/index cannot be expanded" in done.stderr

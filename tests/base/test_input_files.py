"""No input can hang or exhaust the harness (issue 37), each promise through the console script
as a user runs it: a subprocess under a time limit (a hang fails the test as TimeoutExpired) and
an address-space cap (a read of /dev/zero fails as a MemoryError traceback, not by filling the
machine), asserting exit 2, one `harness: error:` line naming the option, key or file, and no
traceback.

- every file a user names is a regular file: a FIFO, a device, a folder is refused before it is
  read (`harness.process.inputs`);
- every such file has a size cap, said in the error; a streamed corpus stops at its line cap;
- service.data is never /, /proc, /sys, /dev or inside them, and its walk neither leaves the
  tree nor enters a kernel filesystem, and stops past MAX_FILES (`harness.config.manifest`);
- --baseline-url/--candidate-url are parsed up front (`harness.values.urls`);
- a Git LFS pointer is named, with `git lfs pull`.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import cli_server
import pytest
from fuzz_support import CONFIG, NO_REF, Workspace, toml_text

from harness.errors import ConfigError, GoldError
from harness.process import inputs

LIMIT = 60.0  # seconds: each case answers in about one on a busy machine; past this it hung
MEMORY = 4 << 30  # bytes of address space: harness needs ~1.5 GiB of it
LFS = b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"0" * 64 + b"\nsize 123\n"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path / "ws").create()
    (workspace.root / "good-answers.tsv").write_text("q1\t1\nq2\t0\n")
    return workspace


def run_harness(ws: Workspace, *argv: str) -> subprocess.CompletedProcess[str]:
    """The console script on `argv` ({ws}: the workspace) in the workspace, within LIMIT."""
    # RLIMIT_AS in the command's process: /dev/zero read whole ends as a MemoryError there.
    args = [a.replace("{ws}", str(ws.root)) for a in argv]
    return cli_server.run("harness", args, cwd=ws.root, env=os.environ, timeout=LIMIT,
                          limits={"RLIMIT_AS": MEMORY})


def refused(done: subprocess.CompletedProcess[str], *fragments: str, lines: int = 1) -> str:
    """Exit 2, `lines` lines on stderr (the first `harness: error: ...`; 0: a config's header
    and its problems), each fragment in them, no traceback; the error text."""
    err = done.stderr
    assert "Traceback" not in err, err
    assert done.returncode == 2, err
    said = [line for line in err.splitlines() if line.strip()]
    assert said and said[0].startswith("harness: error: "), err
    assert len(said) == lines or (lines == 0 and len(said) > 1), err
    for fragment in fragments:
        assert fragment in err, err
    return err


def make(path: Path, what: str) -> None:
    """`what` in the place of the file at `path`: a FIFO nobody writes to, a symlink to
    /dev/zero, or a folder."""
    path.unlink()
    if what == "fifo":
        os.mkfifo(path)
    elif what == "/dev/zero":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
        (path / "inside.txt").write_text("x\n")


RUN_OPTS = ("--config", "{ws}/harness.toml", "--results", "{ws}/results", "-q")
COMPARE = ("compare", "--baseline", NO_REF, "--candidate", "main", *RUN_OPTS)
ANSWERS = ("--baseline-answers", "{ws}/answers.tsv", "--candidate-answers",
           "{ws}/good-answers.tsv")
WHAT = {"fifo": "is a named pipe (FIFO), not a regular file",
        "/dev/zero": "is a character device, not a regular file"}

# (the file broken, argv, what the error names): every reader of a file a user names
TARGETS = {
    "--config": ("harness.toml", COMPARE, "(--config): the config file"),
    "gold-check-FILE": ("gold.jsonl", ("gold", "check", "{ws}/gold.jsonl"), "the gold set"),
    "gold-stats-FILE": ("gold.jsonl", ("gold", "stats", "{ws}/gold.jsonl"), "the gold set"),
    "gold.path": ("gold.jsonl", COMPARE, "gold.path: "),
    "gold.corpus": ("corpus.jsonl", COMPARE, "gold.corpus: "),
    "--corpus": ("corpus.jsonl", ("gold", "check", "{ws}/gold.jsonl", "--corpus",
                                  "{ws}/corpus.jsonl"), "the corpus"),
    "qrels": ("qrels.txt", ("gold", "check", "{ws}/qrels.txt", "--queries", "{ws}/topics.tsv"),
              "the gold set"),
    "--queries": ("topics.tsv", ("gold", "check", "{ws}/qrels.txt", "--queries",
                                 "{ws}/topics.tsv"), "the queries file"),
    "--baseline-answers": ("answers.tsv", (*COMPARE, *ANSWERS),
                           "(--baseline-answers): the answers file"),
    "--run": ("run.trec", ("metrics", "--gold", "{ws}/gold.jsonl", "--run", "{ws}/run.trec"),
              "the run file"),
    "report-FILE": ("record.json", ("report", "{ws}/record.json"), "the results file"),
    "--baseline-file": ("baseline.json", ("gate", "--ref", NO_REF, "--baseline-file",
                                          "{ws}/baseline.json", *RUN_OPTS[:4]),
                        "(--baseline-file): the gate baseline"),
    "--matrix": ("matrix.toml", ("matrix", "--ref", NO_REF, "--matrix", "{ws}/matrix.toml",
                                 *RUN_OPTS), "(--matrix): the matrix file"),
}


def _lines(target: str) -> int:
    return 0 if target.startswith("gold.") else 1  # the config's header, then its problems


# --------------------------------------------------------------------------- only regular files

@pytest.mark.parametrize("what", ["fifo", "/dev/zero"])
@pytest.mark.parametrize("target", list(TARGETS))
def test_a_fifo_or_a_device_where_a_file_is_expected_is_refused_at_once(
        ws: Workspace, target: str, what: str) -> None:
    name, argv, named = TARGETS[target]
    make(ws.root / name, what)
    refused(run_harness(ws, *argv), named, WHAT[what], lines=_lines(target))


@pytest.mark.parametrize("target", ["--config", "--baseline-answers", "--run", "report-FILE",
                                    "--baseline-file", "--matrix", "--queries"])
def test_a_folder_where_a_file_is_expected_is_refused_naming_it(
        ws: Workspace, target: str) -> None:
    name, argv, named = TARGETS[target]
    make(ws.root / name, "folder")
    refused(run_harness(ws, *argv), named, "is a folder, not a file; give the path of the file")


@pytest.mark.parametrize("argv", [
    ("compare", "--baseline", NO_REF, "--candidate", "main", "--config", "/dev/zero", "-q"),
    ("gold", "check", "/dev/zero"),
    ("gold", "stats", "/dev/zero"),
    ("gold", "check", "/dev/null"),
    ("gold", "check", "{ws}/gold.jsonl", "--corpus", "/dev/zero"),
    (*COMPARE, "--baseline-answers", "/dev/zero", "--candidate-answers", "{ws}/answers.tsv"),
    (*COMPARE, "--baseline-answers", "{ws}/answers.tsv", "--candidate-answers", "/dev/urandom"),
    ("metrics", "--gold", "{ws}/gold.jsonl", "--run", "/dev/zero"),
    ("metrics", "--gold", "{ws}/qrels.txt", "--run", "/dev/zero"),
], ids=["config", "gold-check", "gold-stats", "dev-null", "corpus", "baseline-answers",
        "candidate-answers", "metrics-run", "metrics-qrels-run"])
def test_the_audits_devices_on_the_command_line_are_refused(
        ws: Workspace, argv: tuple[str, ...]) -> None:
    err = refused(run_harness(ws, *argv), "is a character device, not a regular file",
                  "save it to a file on disk")
    option = next((a for a, b in itertools.pairwise(argv) if b.startswith("/dev/")), None)
    if option in ("--config", "--baseline-answers", "--candidate-answers"):
        assert f"({option})" in err


def test_a_file_of_the_proc_filesystem_is_refused(ws: Workspace) -> None:
    # Regular by its mode, 0 bytes by its size, and 256 GiB long: read whole, it fills memory.
    refused(run_harness(ws, "gold", "check", "/proc/self/pagemap"),
            "the gold set is a file of the kernel's proc filesystem, not a file on disk")


# --------------------------------------------------------------------------- size caps

@pytest.mark.parametrize(("target", "cap"), [
    ("--config", "4 MiB"), ("gold-check-FILE", "4 GiB"), ("--corpus", "1 TiB"),
    ("--queries", "4 GiB"), ("--baseline-answers", "4 GiB"), ("--run", "32 GiB"),
    ("report-FILE", "32 GiB"), ("--baseline-file", "1 GiB"), ("--matrix", "4 MiB"),
])
def test_a_file_one_byte_past_its_cap_is_refused_saying_the_cap(
        ws: Workspace, target: str, cap: str) -> None:
    name, argv, named = TARGETS[target]
    path = ws.root / name
    size = {"4 MiB": 4 << 20, "4 GiB": 4 << 30, "1 TiB": 1 << 40, "32 GiB": 32 << 30,
            "1 GiB": 1 << 30}[cap] + 1
    os.truncate(path, size)  # sparse: no disk used
    refused(run_harness(ws, *argv), named, f"{size:,} bytes", f"over harness's limit of {cap}")


def test_a_corpus_line_past_its_cap_stops_the_streamed_read(ws: Workspace) -> None:
    # Under the corpus's file cap, but one line of 300 MiB: a line loop would hold it all.
    os.truncate(ws.root / "corpus.jsonl", 300 << 20)
    refused(run_harness(ws, "gold", "check", "{ws}/gold.jsonl", "--corpus", "{ws}/corpus.jsonl"),
            "the corpus has a line longer than 256 MiB")


def test_a_streamed_file_growing_past_its_cap_as_it_is_read_is_stopped(tmp_path: Path) -> None:
    path = tmp_path / "growing"
    path.write_bytes(b"x\n" * 10)
    kind = inputs.Kind("test file", 100, GoldError)
    with inputs.open_input(path, kind) as handle:
        assert handle.read(4) == b"x\nx\n"
        with path.open("ab") as more:  # a writer still at it
            more.write(b"y\n" * 100)
        with pytest.raises(GoldError, match="goes on past 100 bytes"):
            handle.read()


def test_a_file_whose_size_says_0_is_read_only_up_to_its_cap(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A file that fstat calls empty (a kernel file, one still being written) is read in chunks
    # that stop one byte past the cap, not whole: here what fstat said is made to say 0.
    path = tmp_path / "says-empty"
    path.write_bytes(b"z" * 1000)
    real_open = inputs._open

    def says_empty(path: Path, kind: inputs.Kind, named: str) -> tuple[int, os.stat_result]:
        fd, info = real_open(path, inputs.CORPUS, named)  # the stat's size is let through
        fields = list(info)
        fields[6] = 0  # st_size
        return fd, os.stat_result(fields)

    monkeypatch.setattr(inputs, "_open", says_empty)
    with pytest.raises(GoldError, match="goes on past 100 bytes"):
        inputs.read_input(path, inputs.Kind("test file", 100, GoldError))
    assert inputs.read_input(path, inputs.Kind("test file", 1000, GoldError)) == b"z" * 1000


# --------------------------------------------------------------------------- service.data

def _with_data(ws: Workspace, data: str) -> None:
    service = {**CONFIG["service"], "data": data}
    (ws.root / "harness.toml").write_text(toml_text({**CONFIG, "service": service}))


@pytest.mark.parametrize("data", ["/", "/proc/self", "/proc", "/sys", "/dev", "/dev/shm",
                                  "/tmp/..", "/sys/kernel"])
def test_service_data_is_never_the_root_nor_a_kernel_folder(ws: Workspace, data: str) -> None:
    _with_data(ws, data)
    err = refused(run_harness(ws, *COMPARE), "service.data: ", "name the folder your service reads",
                  lines=2)
    assert "/proc" in err or "/sys" in err or "/dev" in err or "root folder" in err


def _prompt(call: Callable[[], object], seconds: float = 30.0) -> object:
    """`call()` in a thread, which must end within `seconds` (a hang fails the test)."""
    found: list[object] = []
    thread = threading.Thread(target=lambda: found.append(call()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    assert found, "it raised (see the thread's exception above)"
    return found[0]


def test_the_data_walk_never_follows_a_link_out_nor_reads_what_is_no_file(tmp_path: Path) -> None:
    from harness.config.manifest import manifest, walk

    data = tmp_path / "data"
    (data / "index").mkdir(parents=True)
    (data / "index" / "segments").write_text("1\n")
    (data / "root").symlink_to("/")  # followed, the walk would go through the whole disk
    (data / "zero").symlink_to("/dev/zero")  # read, it never ends
    (data / "pagemap").symlink_to("/proc/self/pagemap")  # read, 256 GiB
    os.mkfifo(data / "pipe")  # opened, it blocks
    (data / "again").symlink_to("index")  # inside: followed (the real folder once)
    found = _prompt(lambda: [name for name, _ in walk(data)])
    assert found == ["pagemap", "pipe", "root", "zero", "again/segments"]
    made = _prompt(lambda: manifest(data))
    assert getattr(made, "hashed_bytes", None) == 2  # the segments file alone was read
    with_link = getattr(made, "digest", "")
    (data / "root").unlink()
    (data / "root").symlink_to("/usr")
    assert getattr(_prompt(lambda: manifest(data)), "digest", "") != with_link  # still keyed


def test_the_data_walk_stops_past_its_bound_naming_data_version(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.config import manifest

    monkeypatch.setattr(manifest, "MAX_FILES", 10)
    data = tmp_path / "data"
    data.mkdir()
    for i in range(11):
        (data / f"f{i:02}").write_text("x")
    with pytest.raises(ConfigError, match="more than 10 files and folders") as raised:
        list(manifest.walk(data))
    assert "service.data_version" in str(raised.value)
    assert len(list(manifest.walk(data / "f00"))) == 1  # a file is one entry, not walked


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="mounting proc inside a folder needs root and unshare(1)")
def test_the_data_walk_does_not_enter_a_proc_mount_inside_the_data(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "proc").mkdir(parents=True)
    (data / "index").write_text("x")
    code = ("import sys; from pathlib import Path; from harness.config.manifest import walk; "
            "print([n for n, _ in walk(Path(sys.argv[1]), folders=True)])")
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", f'mount -t proc proc "$1/proc" && "{sys.executable}" -c '
         f'"{code}" "$1"', "sh", str(data)],
        capture_output=True, text=True, timeout=LIMIT, check=False)
    if "mount" in done.stderr and done.returncode:
        pytest.skip(f"cannot mount proc here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['.', 'index']", done.stdout  # proc: not entered


def test_a_folder_a_command_names_is_hashed_without_reading_a_fifo_or_a_device(
        ws: Workspace, tmp_path: Path) -> None:
    from harness.config import load_config
    from harness.config.inputs import inputs_hash

    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "load.py").write_text("print('load')\n")
    os.mkfifo(tools / "pipe")
    (tools / "zero").symlink_to("/dev/zero")
    start = f"python3 {tools}/load.py --in {tools} --port {{port}}"
    service = {**CONFIG["service"], "start": start}
    (ws.root / "harness.toml").write_text(toml_text({**CONFIG, "service": service}))
    config = load_config(ws.root / "harness.toml")
    first = _prompt(lambda: inputs_hash(config.baseline, config))
    (tools / "load.py").write_text("print('changed')\n")
    assert _prompt(lambda: inputs_hash(config.baseline, config)) != first


# --------------------------------------------------------------------------- URLs

@pytest.mark.parametrize(("url", "fragment"), [
    ("http://127.0.0.1:notaport", "the port 'notaport' is not a number"),
    ("http://[::1", "has no closing ']'"),
    ("http://127.0.0.1:99999", "the port 99999 is out of range"),
    ("http://127.0.0.1:0", "the port 0 is out of range"),
    ("http://127.0.0.1:", "has a ':' but no port"),
    ("http://127.0.0.1:+80", "is not a number"),
    ("http://127.0.0.1:٨٠", "is not a number"),  # Arabic-Indic digits: int() reads them
    ("http://[zz]:80", "is not an IPv6 address"),
    ("http://::1:80", "an IPv6 address goes in brackets"),
    ("http://:80", "has no host"),
    ("ftp://127.0.0.1", "not an http(s) URL"),
    ("127.0.0.1:8080", "not an http(s) URL"),
    ("http://h x", "holds a space or control character"),
    ("http://h:80/x?q=1", "has a query string or fragment"),
    ("http://user:s3cret@[::1", "has no closing ']'"),
])
@pytest.mark.parametrize("option", ["--baseline-url", "--candidate-url"])
def test_a_malformed_deployment_url_is_refused_naming_the_option(
        ws: Workspace, option: str, url: str, fragment: str) -> None:
    other = "--candidate-url" if option == "--baseline-url" else "--baseline-url"
    done = run_harness(ws, "compare", option, url, other, "http://127.0.0.1:9", *RUN_OPTS)
    err = refused(done, f"harness: error: {option}", fragment)
    assert "s3cret" not in err  # a password is never shown, not even in this error


def test_a_well_formed_url_passes_the_check(ws: Workspace) -> None:
    from harness.values.urls import check_url

    for url in ("http://127.0.0.1:8080", "https://[::1]:443/api/", "http://u:p@search.internal",
                "http://[fe80::1%eth0]:80", "http://xn--caf-dma.example:1/", "HTTP://h"):
        parsed = check_url(url, "--baseline-url")
        assert parsed.scheme in ("http", "https")
    assert check_url("http://[::1]:65535/v1", "--x").port == 65535
    assert check_url("http://[::1]:65535/v1", "--x").host == "::1"


# --------------------------------------------------------------------------- Git LFS

@pytest.mark.parametrize(("name", "argv", "what"), [
    ("corpus.jsonl", ("gold", "check", "{ws}/gold.jsonl", "--corpus", "{ws}/corpus.jsonl"),
     "the corpus"),
    ("gold.jsonl", ("gold", "check", "{ws}/gold.jsonl"), "the gold set"),
    ("gold.jsonl", COMPARE, "the gold set"),
    ("qrels.txt", ("gold", "check", "{ws}/qrels.txt", "--queries", "{ws}/topics.tsv"),
     "the gold set"),
    ("run.trec", ("metrics", "--gold", "{ws}/gold.jsonl", "--run", "{ws}/run.trec"),
     "the run file"),
], ids=["corpus", "gold", "gold-in-compare", "qrels", "run"])
def test_a_git_lfs_pointer_is_named_with_git_lfs_pull(
        ws: Workspace, name: str, argv: tuple[str, ...], what: str) -> None:
    (ws.root / name).write_bytes(LFS)
    start = time.monotonic()
    refused(run_harness(ws, *argv), f"{what} is a Git LFS pointer", "run `git lfs pull`")
    assert time.monotonic() - start < LIMIT

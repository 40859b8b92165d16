"""Random inputs for every command that reads a user's file, run through the real CLI entry point.

    Workspace(root)                       a git repository with a valid config, gold set, corpus,
                                          qrels, topics, run file and run record to start from
    case_strategy(workspace)              a Hypothesis strategy of Case: the files to overwrite
                                          (random bytes, random TOML, mutated JSON lines), or
                                          one to replace by a special file (a FIFO, /dev/zero,
                                          /dev/null, a folder, a sparse file past its cap, a
                                          corpus line past its cap), or a deployment URL; argv
    run_case(case, workspace) -> Outcome  the CLI on it under a time limit (CASE_SECONDS): exit
                                          status, stderr, the traceback when anything escaped,
                                          and whether it hung

A case of random content runs `harness.cli.main.main(argv)` in this process, stopped by SIGALRM
past the limit; a case of a special file runs the console script in a subprocess, killed past
the limit and with its address space capped (MEMORY_CAP), since a FIFO can block in a thread no
signal reaches and /dev/zero can fill the machine's memory before any limit is noticed.

No case ever boots a service: compare, run, sweep, gate and matrix are given a ref that does not
exist, so a config or gold set that passes validation ends as an unknown ref (exit 2) at the
first step that would check anything out, after every input has been read and validated.
Shared by tests/e2e/test_fuzz_inputs.py (a fixed number of examples) and scripts/fuzz_inputs.py (a
fixed time).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import shutil
import signal
import subprocess
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cli_server
from hypothesis import strategies as st

ALLOWED = frozenset({0, 1, 2, 3, 4})
NO_REF = "no-such-ref-fuzz"
CASE_SECONDS = 30.0  # past this a case hung: the slowest honest case takes ~2 s on a busy box
MEMORY_CAP = 4 << 30  # a special-file case's address space: harness needs ~1.5 GiB of it

CORPUS = [
    {"id": "d1", "title": "Rolling back", "text": "shipit rollback redeploys the previous image"},
    {"id": "d2", "title": "Restore", "text": "restore the database to a point in time quickly"},
    {"id": "d3", "title": "Certificates", "text": "rotate the TLS certificate before it expires"},
]
GOLD = [
    {"format": "harness-gold", "version": 1},
    {"id": "q1", "query": "how do I roll back a deploy", "relevant": {"d1": 1}},
    {"id": "q2", "query": "restore the database", "relevant": {"d2": 2, "d1": 0}, "slice": "s"},
    {"id": "q3", "query": "rotate a certificate", "relevant": ["d3"], "outranks": [["d3", "d1"]]},
]
CONFIG: dict[str, dict[str, Any]] = {
    "service": {"start": "python3 svc.py --port {port}", "ready": "/health"},
    "query": {"path": "/search", "ids": "results[].id"},
    "gold": {"path": "gold.jsonl", "corpus": "corpus.jsonl"},
}
RUN_RECORD = {"schema": "harness-run", "schema_version": 1, "rounds": []}
ANSWERS = "q1\t1\nq2\t0\n"
QRELS = "q1 0 d1 1\nq2 0 d2 2\n"
TOPICS = "q1\troll back a deploy\nq2\trestore the database\n"
TREC_RUN = "q1 Q0 d1 1 1.0 fuzz\nq2 Q0 d2 1 1.0 fuzz\n"


def _jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


# --------------------------------------------------------------------------- TOML out

def toml_value(value: object) -> str:
    """`value` as a TOML value (inline tables for dicts; JSON's string escapes are TOML's, and a
    surrogate comes out as a \\ud800 escape that TOML must refuse)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}"
                                for k, v in value.items()) + " }"
    raise TypeError(type(value))


def toml_text(doc: dict[str, Any]) -> str:
    """A TOML document: top-level scalars first, then one [section] per table."""
    lines = [f"{json.dumps(k)} = {toml_value(v)}" for k, v in doc.items()
             if not isinstance(v, dict)]
    for name, table in doc.items():
        if isinstance(table, dict):
            lines.append(f"[{json.dumps(name)}]")
            lines += [f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- strategies

SPECIAL_STRINGS = ["", "   ", "\x00", "a\x00b", "\ud800", "x\udfff", "{port}", "{nosuch}", "{",
                   "/", "..", "~", "\u2028", "é", "\ufeff", "0" * 300]
SPECIAL_NUMBERS: list[object] = [0, -1, 1, 10**11, 2**63, 2**64, -(2**63), 10**400, 1e308,
                                 -1e308, 1e20, 5e-324, -0.0, math.nan, math.inf, -math.inf]

scalars = st.one_of(
    st.sampled_from(SPECIAL_NUMBERS),
    st.sampled_from(SPECIAL_STRINGS),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(st.characters(exclude_categories=()), max_size=12),  # surrogates included
    st.booleans(),
)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(max_size=8) | st.sampled_from(SPECIAL_STRINGS), children,
                        max_size=4),
    ),
    max_leaves=8,
)


def _known_keys() -> list[tuple[str, str]]:
    from harness.config.schema import SECTIONS

    return [(section, key) for section, keys in SECTIONS.items() for key in keys]


@st.composite
def toml_documents(draw: st.DrawFn) -> str:
    """The valid config with a few keys (known or not, in known sections or not) set to random
    values, now and then a section replaced by a scalar or a nested table."""
    doc: dict[str, Any] = {name: dict(table) for name, table in CONFIG.items()}
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.integers(0, 4)):
            section, key = draw(st.sampled_from(_known_keys()))
        else:
            section = draw(st.sampled_from([*CONFIG, "compare", "baseline", "candidate", "ref",
                                            "gate", "x"]))
            key = draw(st.text(max_size=10))
        table = doc.setdefault(section, {})
        if isinstance(table, dict):
            table[key] = draw(values)
    if draw(st.integers(0, 9)) == 0:
        doc[draw(st.sampled_from(list(doc)))] = draw(values)
    return toml_text(doc)


def encodings(text: str) -> st.SearchStrategy[bytes]:
    """`text` as UTF-8 mostly, else UTF-16/32 (with and without a mark), or with its lone
    surrogates written raw (invalid UTF-8)."""
    return st.sampled_from(["utf-8", "utf-8", "utf-8", "utf-8-sig", "utf-16", "utf-16-le",
                            "utf-16-be", "utf-32", "utf-32-le", "raw"]).map(
        lambda enc: text.encode("utf-8", "surrogatepass") if enc == "raw"
        else text.encode(enc, "surrogatepass"))


@st.composite
def json_lines(draw: st.DrawFn, rows: list[dict[str, Any]]) -> str:
    """`rows` as JSON Lines with one to three lines broken: a row's field set to a random value,
    a line replaced by a random JSON value, deep nesting, or a truncated line."""
    lines = [json.dumps(row) for row in rows]
    for _ in range(draw(st.integers(1, 3))):
        index = draw(st.integers(0, len(lines) - 1))
        how = draw(st.integers(-2, 4))
        if how < 0 and index < len(rows):  # one value of a valid row made nasty, the rest kept
            row = dict(rows[index])
            key = draw(st.sampled_from(sorted(row)))
            nasty = draw(st.sampled_from([*SPECIAL_STRINGS, "\udc00", "x\ud83d"]))
            item = row[key]
            if isinstance(item, dict) and item:  # a judged document's id
                item = {nasty if k == next(iter(item)) else k: v for k, v in item.items()}
            row[key] = item if isinstance(item, dict) else nasty
            lines[index] = json.dumps(row)
        elif how == 0:
            row = dict(rows[index]) if index < len(rows) else {}
            row[draw(st.sampled_from([*row, "id", "_id", "query", "text", "relevant", "x"]))] = \
                draw(values)
            lines[index] = json.dumps(row, ensure_ascii=draw(st.booleans()))
        elif how == 1:
            lines[index] = json.dumps(draw(values), ensure_ascii=draw(st.booleans()))
        elif how == 2:
            depth = draw(st.sampled_from([50, 1000, 100_000]))
            lines[index] = draw(st.sampled_from(["[", "{\"a\":"])) * depth
        elif how == 3:
            lines[index] = lines[index][: draw(st.integers(0, len(lines[index])))]
        else:
            lines.insert(index, draw(st.text(max_size=30)))
    return "\n".join(lines) + "\n"


@st.composite
def contents(draw: st.DrawFn, good: str, mutated: st.SearchStrategy[str]) -> bytes:
    """A file: random bytes, or `mutated` text in a random encoding."""
    if draw(st.integers(0, 5)) == 0:
        return draw(st.binary(max_size=200))
    text = draw(mutated) if draw(st.integers(0, 4)) else good
    return draw(encodings(text))


# --------------------------------------------------------------------------- workspace and cases

SPECIALS = ("fifo", "/dev/zero", "/dev/null", "folder", "oversized", "long line")
"""What a special case puts where a file is expected: a named pipe nobody writes to, a symlink
to a device, a folder, a sparse file one byte past its kind's cap (`harness.process.inputs`), a
sparse file of zeros with no newline, past a streamed line's cap."""


@dataclass(frozen=True)
class Case:
    files: tuple[tuple[str, bytes], ...]  # (name in the workspace, content)
    argv: tuple[str, ...]  # with {ws} for the workspace
    special: tuple[tuple[str, str], ...] = ()  # (name in the workspace, one of SPECIALS)

    def describe(self) -> str:
        shown = [f"  {name}: {content[:300]!r}{'...' if len(content) > 300 else ''}"
                 for name, content in self.files]
        shown += [f"  {name}: {what}" for name, what in self.special]
        return "harness " + " ".join(self.argv) + "\n" + "\n".join(shown)


@dataclass
class Outcome:
    status: int | None
    stderr: str
    traceback: str | None = None

    left_results: bool = False  # a refused run (exit 2) made its results directory
    hung: bool = False  # still running after CASE_SECONDS

    @property
    def bad(self) -> bool:
        return (self.hung or self.traceback is not None or self.status not in ALLOWED
                or "Traceback" in self.stderr or self.left_results)


def _cap(name: str) -> int:
    """The size cap (bytes) of the kind of input `name` is (`harness.process.inputs`)."""
    from harness.process import inputs

    kinds = {"harness.toml": inputs.CONFIG, "matrix.toml": inputs.MATRIX,
             "gold.jsonl": inputs.GOLD, "qrels.txt": inputs.GOLD, "topics.tsv": inputs.QUERIES,
             "corpus.jsonl": inputs.CORPUS, "run.trec": inputs.RUN, "record.json": inputs.RESULTS,
             "baseline.json": inputs.BASELINE, "answers.tsv": inputs.ANSWERS}
    return kinds[name].cap


@dataclass
class Workspace:
    """A throwaway git repository holding a valid copy of every input file."""

    root: Path
    originals: dict[str, bytes] = field(default_factory=dict)

    def create(self) -> Workspace:
        self.root.mkdir(parents=True, exist_ok=True)
        files = {
            "harness.toml": toml_text(CONFIG),
            "gold.jsonl": _jsonl(GOLD),
            "corpus.jsonl": _jsonl(CORPUS),
            "qrels.txt": QRELS,
            "topics.tsv": TOPICS,
            "run.trec": TREC_RUN,
            "record.json": json.dumps(RUN_RECORD),
            "baseline.json": json.dumps({"schema": "harness-gate-baseline"}),
            "matrix.toml": '[config.a]\nenv = { A = "1" }\n',
            "answers.tsv": ANSWERS,
        }
        for name, text in files.items():
            self.originals[name] = text.encode()
            (self.root / name).write_bytes(text.encode())
        env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
        for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                     ["-c", "user.email=f@z", "-c", "user.name=fuzz", "commit", "-qm", "fuzz"]):
            subprocess.run(["git", *args], cwd=self.root, env=env, check=True,
                           capture_output=True, timeout=60)
        return self

    def reset(self) -> None:
        for name, data in self.originals.items():
            path = self.root / name
            # Never written through: a FIFO there would block the write, a link reach /dev.
            if path.is_symlink() or not path.is_file():
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink(missing_ok=True)
            path.write_bytes(data)
        for extra in ("out", "results"):
            shutil.rmtree(self.root / extra, ignore_errors=True)

    def make_special(self, name: str, what: str) -> None:
        """Put `what` (one of SPECIALS) at `name` in place of the file."""
        path = self.root / name
        path.unlink()
        if what == "fifo":
            os.mkfifo(path)
        elif what in ("/dev/zero", "/dev/null"):
            path.symlink_to(what)
        elif what == "folder":
            path.mkdir()
            (path / "inside.txt").write_text("a folder where a file was expected\n")
        else:
            path.touch()
            # Sparse: no disk used. A "long line" is zeros with no newline, under the file cap
            # of a streamed kind but past its line cap (a corpus); else one byte past the cap.
            os.truncate(path, 300 << 20 if what == "long line" else _cap(name) + 1)


def _commands() -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """(files a command reads that a case may break, argv): every command that reads one."""
    ws = "{ws}"
    run_opts = ("--config", f"{ws}/harness.toml", "--results", f"{ws}/results", "-q")
    return [
        (("gold.jsonl",), ("gold", "check", f"{ws}/gold.jsonl")),
        (("gold.jsonl", "corpus.jsonl"),
         ("gold", "check", f"{ws}/gold.jsonl", "--corpus", f"{ws}/corpus.jsonl")),
        (("qrels.txt", "topics.tsv"),
         ("gold", "check", f"{ws}/qrels.txt", "--queries", f"{ws}/topics.tsv")),
        (("gold.jsonl",), ("gold", "stats", f"{ws}/gold.jsonl")),
        (("gold.jsonl",), ("gold", "stats", f"{ws}/gold.jsonl", "--format", "json")),
        (("gold.jsonl",), ("gold", "convert", f"{ws}/gold.jsonl", "--to", "trec", "--out",
                           f"{ws}/out", "--force")),
        (("qrels.txt", "topics.tsv"),
         ("gold", "convert", f"{ws}/qrels.txt", "--queries", f"{ws}/topics.tsv", "--to",
          "native", "--out", f"{ws}/out/gold.jsonl", "--force")),
        (("gold.jsonl", "run.trec"), ("metrics", "--gold", f"{ws}/gold.jsonl", "--run",
                                      f"{ws}/run.trec")),
        (("qrels.txt", "run.trec"), ("metrics", "--gold", f"{ws}/qrels.txt", "--run",
                                     f"{ws}/run.trec")),
        (("record.json",), ("report", f"{ws}/record.json")),
        (("record.json",), ("export", f"{ws}/record.json")),
        (("record.json",), ("export", f"{ws}/record.json", "--format", "trec")),
        (("harness.toml", "gold.jsonl", "corpus.jsonl"),
         ("compare", "--baseline", NO_REF, "--candidate", "main", *run_opts)),
        (("harness.toml", "gold.jsonl", "answers.tsv"),
         ("compare", "--baseline", NO_REF, "--candidate", "main", *run_opts,
          "--baseline-answers", f"{ws}/answers.tsv", "--candidate-answers",
          f"{ws}/answers.tsv")),
        (("harness.toml", "gold.jsonl"), ("run", "--ref", NO_REF, *run_opts)),
        (("harness.toml", "matrix.toml"),
         ("matrix", "--ref", NO_REF, "--matrix", f"{ws}/matrix.toml", *run_opts)),
        (("harness.toml", "baseline.json"),
         ("gate", "--ref", NO_REF, "--baseline-file", f"{ws}/baseline.json", "--config",
          f"{ws}/harness.toml", "--results", f"{ws}/results")),
        (("harness.toml",), ("history", "--config", f"{ws}/harness.toml", "--results",
                             f"{ws}/results")),
        (("harness.toml",), ("schema", "config")),
    ]


def _mutation(name: str) -> st.SearchStrategy[str]:
    if name.endswith(".toml"):
        return toml_documents() if name == "harness.toml" else values.map(
            lambda v: toml_text(v if isinstance(v, dict) else {"config": v}))
    if name == "gold.jsonl":
        return json_lines(GOLD)
    if name == "corpus.jsonl":
        return json_lines(CORPUS)
    if name.endswith(".json"):
        return json_lines([RUN_RECORD]).map(str.strip)
    return st.text(max_size=80)  # qrels, topics, run file, answers: random text


SPECIAL_URLS = [
    "http://127.0.0.1:notaport", "http://[::1", "http://127.0.0.1:99999", "http://127.0.0.1:0",
    "http://127.0.0.1:-1", "http://127.0.0.1:", "http://[zz]:80", "http://::1:80", "http://",
    "http://:80", "ftp://127.0.0.1", "127.0.0.1:8080", "", "http://h\x00x", "http://h x",
    "http://u:p@[::1", "http://a..b:80", "http://h:८०८०", "http://h:1e3", "https://[::1]:65536",
    "http://[::1]x", "http://h/?q#f", "http://\ud800", "http://%zz", "http://h@",
]


@st.composite
def url_case(draw: st.DrawFn) -> Case:
    """compare against deployments at a malformed (or valid) URL, with a config that does not
    exist: a URL that passes stops there (exit 2), none waits for a service to get ready."""
    pieces = st.sampled_from(["http", "https", "ftp", "", "HTTP"]), st.sampled_from(
        ["127.0.0.1", "[::1]", "[::1", "::1", "", "localhost", "h_x", "a b", "\u00e9.com"]), \
        st.sampled_from(["", ":", ":80", ":99999", ":0", ":x", ":8080:9"]) | st.integers(
            -5, 70_000).map(lambda p: f":{p}"), st.sampled_from(["", "/", "/api", "?x", "#y"])
    built = st.tuples(*pieces).map(lambda p: f"{p[0]}://{p[1]}{p[2]}{p[3]}")
    url = draw(st.one_of(st.sampled_from(SPECIAL_URLS), built, st.text(max_size=40)))
    side = draw(st.sampled_from(["--baseline-url", "--candidate-url"]))
    other = "--candidate-url" if side == "--baseline-url" else "--baseline-url"
    return Case((), ("compare", side, url, other, "http://127.0.0.1:9", "--config",
                     "{ws}/no-such-config.toml", "--results", "{ws}/results", "-q"))


@st.composite
def special_case(draw: st.DrawFn) -> Case:
    """One file a command reads replaced by a special file (SPECIALS)."""
    readable, argv = draw(st.sampled_from(_commands()))
    name = draw(st.sampled_from(readable))
    kinds = [k for k in SPECIALS if k != "long line" or name == "corpus.jsonl"]
    return Case((), argv, ((name, draw(st.sampled_from(kinds))),))


@st.composite
def case_strategy(draw: st.DrawFn, workspace: Workspace) -> Case:
    which = draw(st.integers(0, 9))
    if which == 0:
        return draw(special_case())
    if which == 1:
        return draw(url_case())
    readable, argv = draw(st.sampled_from(_commands()))
    broken = draw(st.lists(st.sampled_from(readable), min_size=1, max_size=len(readable),
                           unique=True))
    files = tuple(
        (name, draw(contents(workspace.originals[name].decode(), _mutation(name))))
        for name in broken
    )
    return Case(files, argv)


class _TimeUp(BaseException):
    """Raised by SIGALRM in a case past CASE_SECONDS (a BaseException: no `except Exception`
    in the harness turns it into an answer)."""


def run_case(case: Case, workspace: Workspace, seconds: float = CASE_SECONDS) -> Outcome:
    """The case through the CLI, in the workspace, under a time limit (module docstring)."""
    workspace.reset()
    for name, data in case.files:
        (workspace.root / name).write_bytes(data)
    for name, what in case.special:
        workspace.make_special(name, what)
    argv = [arg.replace("{ws}", str(workspace.root)) for arg in case.argv]
    try:
        outcome = (_in_subprocess(argv, workspace, seconds) if case.special
                   else _in_process(argv, workspace, seconds))
    finally:
        workspace.reset()
    return outcome


def _in_subprocess(argv: list[str], workspace: Workspace, seconds: float) -> Outcome:
    try:  # the command's address space capped, in its own process (tests/cli_server.py)
        done = cli_server.run("harness", argv, cwd=workspace.root, env=os.environ,
                              timeout=seconds, limits={"RLIMIT_AS": MEMORY_CAP})
    except subprocess.TimeoutExpired as expired:
        err = expired.stderr.decode(errors="replace") if isinstance(expired.stderr, bytes) \
            else (expired.stderr or "")
        return Outcome(None, err + f"\nstill running after {seconds:g} s: killed", hung=True)
    left = done.returncode == 2 and (workspace.root / "results").exists()
    caught = done.stderr if "Traceback" in done.stderr else None
    return Outcome(done.returncode, done.stderr + ("\nresults/ made by a refused run" if left
                                                   else ""), caught, left)


def _in_process(argv: list[str], workspace: Workspace, seconds: float) -> Outcome:
    from harness.cli.main import main

    def time_up(signum: int, frame: object) -> None:
        raise _TimeUp

    out, err = io.StringIO(), io.StringIO()
    status: int | None
    caught, hung = None, False
    cwd = Path.cwd()
    previous = signal.signal(signal.SIGALRM, time_up)
    try:
        os.chdir(workspace.root)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(argv)
    except SystemExit as exit_:  # argparse's usage errors, --help
        code = exit_.code
        status = code if isinstance(code, int) else (0 if code is None else 2)
    except _TimeUp:
        status, hung = None, True
    except Exception:  # a traceback is what this looks for
        status, caught = None, traceback.format_exc()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        os.chdir(cwd)
    left = status == 2 and (workspace.root / "results").exists()
    said = err.getvalue() + ("\nresults/ made by a refused run" if left else "")
    return Outcome(status, said + (f"\nstill running after {seconds:g} s" if hung else ""),
                   caught, left, hung)

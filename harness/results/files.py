"""Files in a results directory, written the one safe way: atomically (temp file, fsync, link),
never over an existing file, and directories claimed by mkdir so two runs never share one.

    check_writable(results)            # before anything runs: ResultsError if it cannot be written
    with new_directory_atomic(results, stem) as tmp:   # write into tmp ...
        ...
    tmp_ctx.path                       # ... renamed to results/stem[-N] only when all is written

Every OSError of a write (a full disk, a read-only mount) is a ResultsError naming the path.

Temp names carry the pid of the process writing them (`.tmp-<pid>-...`), and a temp directory is
in that process's leftovers state from before it exists (`harness.process.leftovers.make_dir`):
what a SIGKILL mid-save leaves is removed by the next invocation's `recover()` (any command,
`harness clean` too), and `check_writable` removes the `.tmp-<pid>-*` of dead pids it finds in the
results directory (and its runs/) even without that state.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.errors import ResultsError
from harness.process.inputs import RESULTS, read_input
from harness.text.encodings import SAMPLE, encoding_problem
from harness.text.scrub import scrub_bytes, scrub_text


def utc_stamp(now: datetime | None = None) -> str:
    """A sortable, filename-safe UTC timestamp: 20261129T184501Z."""
    return (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_new(path: Path, text: str) -> Path:
    """Write `text` to `path` atomically, refusing to overwrite an existing file (see
    write_bytes_new)."""
    return write_bytes_new(path, text.encode("utf-8"))


def write_bytes_new(path: Path, data: bytes) -> Path:
    """Write `data` to `path` atomically, refusing to overwrite an existing file.

    The bytes go to a temp file in the same directory, are fsynced, then hard-linked into place
    (link fails if the target exists, unlike rename), so a reader never sees half a file and a
    crash never leaves one.  A registered credential (`harness.text.scrub`) is replaced by
    [scrubbed] in the bytes and in the file's name.
    """
    data, path = scrub_bytes(data), path.with_name(scrub_text(path.name))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_tmp_prefix(), suffix=path.suffix)
    except OSError as exc:
        raise _write_error(path, exc) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            # mkstemp makes 0600: results are shared (a report.html sent round), so the mode an
            # ordinary file would get, 0666 less the umask.
            os.fchmod(f.fileno(), 0o666 & ~_umask())
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise ResultsError(
                f"{path}: already exists; results are never overwritten",
                ["remove it, or write to another results directory"],
            ) from None
    except OSError as exc:
        raise _write_error(path, exc) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return path


_TMP_NAME = re.compile(r"\.tmp-(\d+)-")
_TMP_STALE_S = 3600.0
"""A save takes seconds: a temp untouched this long whose pid is gone is nobody's, even when the
results directory is shared with another machine or container (whose pids mean nothing here)."""


def _tmp_prefix(stem: str = "") -> str:
    """`.tmp-<pid>-[<stem>-]`: whose temp it is, for `remove_dead_temps`."""
    return f".tmp-{os.getpid()}-" + (f"{stem}-" if stem else "")


def remove_dead_temps(results: Path) -> list[Path]:
    """Remove every `.tmp-<pid>-*` file or directory in `results` and `results/runs` whose pid
    is no running process and which was last changed an hour ago or more (a save cut short by
    SIGKILL, its leftovers state lost); return what was removed. One whose pid is running is left
    alone, whoever runs it: never what a live harness is writing. (The leftovers state removes
    the same at once, at the next invocation: this is for a temp no state file names.)"""
    import time

    import psutil

    removed = []
    now = time.time()
    for folder in (results, results / "runs"):
        try:
            entries = list(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            match = _TMP_NAME.match(entry.name)
            if match is None or psutil.pid_exists(int(match.group(1))):
                continue
            try:
                if now - entry.lstat().st_mtime < _TMP_STALE_S:
                    continue
            except OSError:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    entry.unlink()
            if not os.path.lexists(entry):
                removed.append(entry)
    return removed


def _write_error(path: Path, exc: OSError) -> ResultsError:
    why = exc.strerror or str(exc)
    hint = "free some space" if exc.errno == errno.ENOSPC else "check its permissions and mount"
    error = ResultsError(f"{path}: cannot be written ({why})", [f"{hint}, or pass --results DIR"])
    error.reason = why
    return error


def check_writable(results: Path) -> Path:
    """`results` (not created: its writers make it), once a file could be written into it, or
    into its nearest existing parent, and removed again;
    ResultsError otherwise (a file in its place, a read-only mount, no permission). Checked
    before anything is built or booted: a run that cannot save what it measured must not run."""
    if results.exists() and not results.is_dir():
        raise ResultsError(
            f"--results {results}: is a file, not a directory", ["pass --results DIR"]
        )
    # Probed where it, or its nearest existing parent, is: the directory itself is made by the
    # first file saved into it, so a run refused later (an unknown ref) leaves none behind.
    probe = results
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    try:
        if not probe.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, f"{probe} is not a directory")
        with tempfile.NamedTemporaryFile(dir=probe, prefix=".harness-probe-"):
            pass
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise ResultsError(
            f"--results {results}: cannot be written ({why})",
            ["pass --results DIR naming a directory you can write, or fix its permissions"],
        ) from None
    removed = remove_dead_temps(results)
    if removed:
        import sys

        names = ", ".join(p.name for p in removed[:3]) + (", ..." if len(removed) > 3 else "")
        print(
            f"harness: removed {len(removed)} leftover{'s' * (len(removed) != 1)} of results "
            f"saves cut short in {results} ({names})",
            file=sys.stderr,
        )
    return results


def write_json_new(path: Path, document: Mapping[str, Any]) -> Path:
    """`write_text_new` of `document` as JSON with sorted keys (`json_text`)."""
    return write_text_new(path, json_text(document))


NESTED = 4
"""Levels of a results file indented one space each; what is nested deeper is written on one
line: in a run record, one line per answer (its ids, scores, error), not one per id."""

_ONE_LINE = json.JSONEncoder(sort_keys=True, ensure_ascii=False)  # the C encoder: no indent


def json_text(document: Any, levels: int = NESTED) -> str:
    """`document` as UTF-8 JSON text with sorted keys and a final newline: objects and arrays
    indented one space a level down to `levels` levels, each deeper one on a single line.

    Indenting every level takes Python's pure-Python encoder, about three times the CPU of the
    C encoder that writes the deeper levels here (a run record holds one object per answer)."""
    out: list[str] = []
    _layered(document, 0, levels, out)
    out.append("\n")
    return "".join(out)


def _layered(value: Any, depth: int, levels: int, out: list[str]) -> None:
    is_object = isinstance(value, dict) and all(isinstance(key, str) for key in value)
    if depth >= levels or not value or not (is_object or isinstance(value, list | tuple)):
        out.append(_ONE_LINE.encode(value))
        return
    pad = "\n" + " " * (depth + 1)
    if is_object:
        out.append("{")
        for index, key in enumerate(sorted(value)):
            out.append(("," if index else "") + pad + _ONE_LINE.encode(key) + ": ")
            _layered(value[key], depth + 1, levels, out)
        out.append("\n" + " " * depth + "}")
        return
    out.append("[")
    for index, item in enumerate(value):
        out.append(("," if index else "") + pad)
        _layered(item, depth + 1, levels, out)
    out.append("\n" + " " * depth + "]")


def read_json(path: Path) -> dict[str, Any]:
    """The JSON object in `path`; ResultsError naming the file for anything else: missing,
    unreadable, not UTF-8 (a run record is written as UTF-8), not JSON, nested too deeply; a
    FIFO, a device or a file past 32 GiB (`harness.process.inputs`)."""
    return read_json_bytes(path)[0]


def read_json_bytes(path: Path) -> tuple[dict[str, Any], bytes]:
    """`read_json`, with the bytes it was read from."""
    try:
        data = read_input(path, RESULTS)
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such file") from None
    except OSError as exc:
        raise ResultsError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        document = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        wide = encoding_problem(data[:SAMPLE], path)
        why = wide or f"is not UTF-8 text (byte {exc.start}); harness writes its records as UTF-8"
        raise ResultsError(f"{path}: {why}", ["pass a run record or a comparison directory"]) \
            from None
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}: cannot be read as JSON ({exc})") from None
    except RecursionError:
        raise ResultsError(f"{path}: cannot be read as JSON (nested too deeply)") from None
    if not isinstance(document, dict):
        raise ResultsError(f"{path}: expected a JSON object at the top level")
    return document, data


class AtomicDirectory(contextlib.AbstractContextManager[Path]):
    """`with new_directory_atomic(parent, stem) as tmp:` yields a hidden temporary directory in
    `parent`; when the block ends without an exception it is renamed to parent/stem (or stem-2,
    stem-3, ... when taken) and `path` says where. On any exception it is removed: a failure
    never leaves an empty or partial directory behind. An OSError becomes a ResultsError."""

    def __init__(self, parent: Path, stem: str) -> None:
        self.parent, self.stem = parent, stem
        self.path: Path | None = None
        self._tmp: Path | None = None

    def __enter__(self) -> Path:
        from harness.process import leftovers

        try:
            self.parent.mkdir(parents=True, exist_ok=True)
            # In the leftovers state before it exists: a SIGKILL mid-save leaves it to recover().
            self._tmp = leftovers.make_dir(
                "dir", self.parent, _tmp_prefix(self.stem), shared=True
            )
        except OSError as exc:
            raise _write_error(self.parent / self.stem, exc) from None
        return self._tmp

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        from harness.process import leftovers
        from harness.process.signals import signals_deferred

        tmp, self._tmp = self._tmp, None
        assert tmp is not None  # entered
        with signals_deferred():  # a Ctrl-C here must not leave it renamed but still recorded
            try:
                if exc is None:
                    try:
                        self.path = _rename_new(tmp, self.parent, self.stem)
                        return
                    except OSError as error:
                        raise _write_error(self.parent / self.stem, error) from None
            finally:
                if self.path is None:
                    shutil.rmtree(tmp, ignore_errors=True)
                if not os.path.lexists(tmp):
                    leftovers.untrack("dir", tmp)


def new_directory_atomic(parent: Path, stem: str) -> AtomicDirectory:
    """See `AtomicDirectory`."""
    return AtomicDirectory(parent, stem)


def _rename_new(tmp: Path, parent: Path, stem: str) -> Path:
    directory, n = parent / stem, 1
    while True:
        if not os.path.lexists(directory):
            try:
                os.rename(tmp, directory)  # a non-empty directory there makes it fail: next name
                return directory
            except OSError as exc:
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
        n += 1
        directory = parent / f"{stem}-{n}"


def new_directory(parent: Path, stem: str) -> Path:
    """Create and return parent/stem, or the first of parent/stem-2, stem-3, ... not yet taken.

    mkdir itself decides (it fails on an existing directory), so two runs started in the same
    second never share a directory, and nothing already saved is ever written into.
    """
    directory, n = parent / stem, 1
    while True:
        try:
            directory.mkdir(parents=True)
            return directory
        except FileExistsError:
            n += 1
            directory = parent / f"{stem}-{n}"

"""Every file a user names is read through here: a regular file on disk, at most a size per kind.

    read_input(path, kind, named="") -> bytes          the whole file
    open_input(path, kind, named="") -> BufferedReader  streamed, stopped past the kind's cap
    is_input_file(path, kind, named="") -> bool        Path.is_file, refusing a FIFO or device
    not_regular(mode) -> str | None                    "a named pipe (FIFO)", "a folder", ...
    pseudo_filesystem(st_dev) -> str | None            "proc", "sysfs", ... of a kernel filesystem
    CONFIG, MATRIX, HOOK, GOLD, QUERIES, ANSWERS, CORPUS, RUN, RESULTS, BASELINE   the kinds

Why each rule (issue 37: no input can hang or exhaust the harness):

- Only a regular file. open(2) of a FIFO for reading blocks until a writer comes, forever from a
  shell; a device (/dev/zero, /dev/urandom) never ends; a socket cannot be opened; a folder
  cannot be read. The path is stat'ed before it is opened, and, since it may be swapped in
  between, opened with O_NONBLOCK (a FIFO's open then returns at once) and the open descriptor
  fstat'ed too.
- Not a file of a kernel filesystem (/proc, /sys): regular by its mode and 0 bytes by its size,
  yet /proc/self/pagemap reads on for 256 GiB.
- At most `kind.cap` bytes: the size fstat gives is checked before reading, and a streamed read,
  or a whole read of a file whose size says 0, stops one byte past the cap (a file still being
  written). The caps are far past any real input (a TREC run of 100,000 queries x 1,000
  documents is about 5 GB), so a file over one is a wrong path, not a big input.
- A Git LFS pointer (a clone made without `git lfs`) is named as one, with `git lfs pull`: read
  as data it is a gold set of one malformed line, or a corpus with no document.

A missing or unreadable file is the OSError it always was, for each reader to word in its own
terms; anything else here is `kind.error` (exit 2): one line naming the file, the option or key
when the caller knows it, what it is and what to do. Types layer: imports only harness.errors.
"""

from __future__ import annotations

import functools
import io
import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import ConfigError, GoldError, HarnessError, ResultsError

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

MiB = 1 << 20
GiB = 1 << 30
TiB = 1 << 40


@dataclass(frozen=True)
class Kind:
    """What a file is to the harness: its name in messages, its size cap, the error it raises."""

    noun: str  # "config file": said as "the config file"
    cap: int  # bytes
    error: type[HarnessError]
    line_cap: int | None = None  # bytes in one line, for a streamed file read line by line


# Each cap is far past the largest real input of its kind (in brackets), so that only a wrong
# path meets it. A file read whole is held in memory: one under its cap can still be more than a
# small machine holds, as it always could; the cap keeps /dev/zero-like inputs out.
CONFIG = Kind("config file", 4 * MiB, ConfigError)  # harness.toml, pyproject.toml [~10 KB]
MATRIX = Kind("matrix file", 4 * MiB, ConfigError)  # [~10 KB]
HOOK = Kind("rewrite hook", 4 * MiB, ConfigError)  # query.rewrite's Python source [~10 KB]
GOLD = Kind("gold set", 4 * GiB, GoldError)  # native JSONL, TREC or BEIR qrels [~100 MB]
QUERIES = Kind("queries file", 4 * GiB, GoldError)  # TREC topics, BEIR queries.jsonl
ANSWERS = Kind("answers file", 4 * GiB, GoldError)  # answer grades: a line per query
CORPUS = Kind("corpus", TiB, GoldError, line_cap=256 * MiB)  # streamed [web corpora: ~100 GB]
RUN = Kind("run file", 32 * GiB, ResultsError)  # [100,000 queries x 1,000 documents: ~5 GB]
RESULTS = Kind("results file", 32 * GiB, ResultsError)  # run records, comparisons, answers
BASELINE = Kind("gate baseline", GiB, ResultsError)  # [~1 MB]

PSEUDO_FILESYSTEMS = frozenset({
    "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "debugfs", "tracefs",
    "securityfs", "configfs", "bpf", "fusectl", "pstore", "efivarfs", "mqueue", "binfmt_misc",
    "nsfs", "rpc_pipefs",
})
"""Kernel filesystems: their files are views of the kernel, never data a user prepared."""

LFS_POINTERS = (b"version https://git-lfs.github.com/spec/",
                b"version https://hawser.github.com/spec/")  # the first line of every pointer
_CHUNK = MiB
_STREAM_BUFFER = MiB  # a corpus line loop refills this much per Python-level call


def shown_size(size: int) -> str:
    """A byte count for a person: "4 MiB", "16 GiB", "21,798,352,896 bytes (20.3 GiB)" (the
    bytes too, so that a file one byte past a cap does not read as the cap itself)."""
    for unit, name in ((TiB, "TiB"), (GiB, "GiB"), (MiB, "MiB"), (1 << 10, "KiB")):
        if size >= unit:
            if size % unit == 0:
                return f"{size // unit} {name}"
            return f"{size:,} bytes ({size / unit:.1f} {name})"
    return f"{size} bytes"


def _a(noun: str) -> str:
    return f"an {noun}" if noun[0] in "aeiou" else f"a {noun}"


def not_regular(mode: int) -> str | None:
    """What a file that is not a regular file is, in words (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def pseudo_filesystem(st_dev: int) -> str | None:
    """The kind of kernel filesystem ("proc", "sysfs", ...) device `st_dev` is, else None."""
    return _pseudo_devices().get(st_dev)


@functools.cache
def _pseudo_devices() -> Mapping[int, str]:
    """Device number -> kind of each kernel filesystem mounted, from /proc/self/mountinfo (read
    once: mounts do not come and go under a run); empty when it cannot be read."""
    try:
        fd = os.open("/proc/self/mountinfo", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return {}
    with io.FileIO(fd, "rb", closefd=True) as handle:
        try:
            text = _bounded(handle, 16 * MiB, lambda: OSError("too many mounts")).decode(
                "utf-8", "replace")
        except OSError:
            return {}
    found: dict[int, str] = {}
    for line in text.splitlines():
        # "36 35 98:0 /root /mount options... - ext4 /dev/sda1 rw": the kind follows " - "
        left, dash, right = line.partition(" - ")
        fields = left.split()
        kind = right.split(" ", 1)[0]
        if not dash or len(fields) < 3 or kind not in PSEUDO_FILESYSTEMS:
            continue
        major, _, minor = fields[2].partition(":")
        if major.isdigit() and minor.isdigit():
            found[os.makedev(int(major), int(minor))] = kind
    return found


def _where(path: Path, named: str) -> str:
    return f"{path} ({named})" if named else str(path)


def _refuse(info: os.stat_result, path: Path, kind: Kind, named: str) -> None:
    """kind.error when `info` is not a regular file on disk of at most kind.cap bytes."""
    where, noun = _where(path, named), kind.noun
    what = not_regular(info.st_mode)
    if what == "a folder":
        raise kind.error(f"{where}: the {noun} is a folder, not a file; give the path of the "
                         "file itself")
    if what is not None:
        raise kind.error(
            f"{where}: the {noun} is {what}, not a regular file; save it to a file on disk and "
            "give that path (harness reads only regular files: reading a pipe can wait forever, "
            "a device never ends)"
        )
    fs = pseudo_filesystem(info.st_dev)
    if fs is not None:
        raise kind.error(f"{where}: the {noun} is a file of the kernel's {fs} filesystem, not a "
                         "file on disk; give a file on disk")
    if info.st_size > kind.cap:
        raise kind.error(
            f"{where}: the {noun} is {shown_size(info.st_size)}, over harness's limit of "
            f"{shown_size(kind.cap)} for {_a(noun)}; check that this is the file you meant"
        )


def _over(path: Path, kind: Kind, named: str) -> Callable[[], HarnessError]:
    return lambda: kind.error(
        f"{_where(path, named)}: the {kind.noun} goes on past {shown_size(kind.cap)}, harness's "
        f"limit for {_a(kind.noun)} (a file still being written?); check that this is the file "
        "you meant"
    )


def _lfs(data: bytes, path: Path, kind: Kind, named: str) -> None:
    if data.startswith(LFS_POINTERS):
        raise kind.error(
            f"{_where(path, named)}: the {kind.noun} is a Git LFS pointer, not its content (the "
            "repository was cloned or checked out without Git LFS); run `git lfs pull` in the "
            "repository, then run harness again"
        )


def is_input_file(path: Path | str, kind: Kind, named: str = "") -> bool:
    """Whether a file `read_input` would read is at `path`: False when nothing is there (or it
    cannot be reached: the reader says why), kind.error when something else is (a FIFO, a
    device, a folder), in `read_input`'s words. What `Path.is_file` is to a reader that must
    not call a FIFO "not found"."""
    path = Path(path)
    try:
        info = os.stat(path)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return False
    _refuse(info, path, kind, named)
    return True


def _open(path: Path, kind: Kind, named: str) -> tuple[int, os.stat_result]:
    """A descriptor of `path` open for reading, and its fstat, once both say it may be read."""
    _refuse(os.stat(path), path, kind, named)  # before open(2): a FIFO's open would block
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)  # what was opened, should the path have been swapped since the stat
        _refuse(info, path, kind, named)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def _bounded(handle: io.FileIO, cap: int, over: Callable[[], BaseException]) -> bytes:
    """Everything `handle` gives, read in chunks, `over()` raised one byte past `cap`."""
    parts: list[bytes] = []
    total = 0
    while chunk := handle.read(min(_CHUNK, cap + 1 - total)):
        parts.append(chunk)
        total += len(chunk)
        if total > cap:
            raise over()
    return b"".join(parts)


def read_input(path: Path | str, kind: Kind, named: str = "") -> bytes:
    """The bytes of the file a user named (module docstring); `named` is the option or config
    key it came from ("--baseline-answers", "gold.path"), said in the error when given."""
    path = Path(path)
    fd, info = _open(path, kind, named)
    with io.FileIO(fd, "rb", closefd=True) as handle:
        if info.st_size > 0:
            # One buffer of the size fstat said (CPython's readall), not a copy per chunk: a
            # 5 GB run file is held once. A file on a disk ends, so this ends; past the cap it is
            # refused all the same.
            data = handle.readall()
            if len(data) > kind.cap:
                raise _over(path, kind, named)()
        else:  # 0 bytes by its size: empty, or written as it is read
            data = _bounded(handle, kind.cap, _over(path, kind, named))
    _lfs(data, path, kind, named)
    return data


class _Capped(io.RawIOBase):
    """A file read through a buffer, raising once its position passes the cap or, with a line
    cap, once that many bytes come without a newline (a line loop would hold them all)."""

    def __init__(
        self, fd: int, cap: int, over: Callable[[], HarnessError],
        line_cap: int | None = None, long_line: Callable[[], HarnessError] | None = None,
    ) -> None:
        super().__init__()
        self._file = io.FileIO(fd, "rb", closefd=True)
        self._cap, self._over = cap, over
        self._line_cap, self._long_line = line_cap, long_line
        self._run = 0  # bytes read since the last newline

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        return self._file.tell()

    def fileno(self) -> int:
        return self._file.fileno()

    def readinto(self, buffer: WriteableBuffer) -> int | None:
        count = self._file.readinto(buffer)
        if not count:
            return count
        if self._file.tell() > self._cap:
            raise self._over()
        if self._line_cap is not None and self._long_line is not None:
            # A copy of the chunk to search it (memoryview has no rfind): a memcpy per MiB.
            last = bytes(memoryview(buffer)[:count]).rfind(b"\n")
            self._run = count - 1 - last if last >= 0 else self._run + count
            if self._run > self._line_cap:
                raise self._long_line()
        return count

    def close(self) -> None:
        if not self.closed:
            self._file.close()
        super().close()


def open_input(path: Path | str, kind: Kind, named: str = "") -> io.BufferedReader[_Capped]:
    """The file a user named open for reading as it streams (a corpus), under the module's
    rules; reading raises kind.error once it passes kind.cap bytes."""
    path = Path(path)
    fd, _ = _open(path, kind, named)
    line_cap = kind.line_cap
    long_line = None if line_cap is None else (lambda: kind.error(
        f"{_where(path, named)}: the {kind.noun} has a line longer than {shown_size(line_cap)} "
        f"(harness's limit for a line of {_a(kind.noun)}); check that this is the file you meant"
    ))
    raw = _Capped(fd, kind.cap, _over(path, kind, named), line_cap, long_line)
    handle = io.BufferedReader(raw, _STREAM_BUFFER)
    try:
        _lfs(handle.peek(len(LFS_POINTERS[0])), path, kind, named)
    except BaseException:
        handle.close()
        raise
    return handle

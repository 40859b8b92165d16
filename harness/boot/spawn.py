"""Starting one command of a boot: `/bin/sh -c` in a new session with its output
appended to the boot's log, and the log's tail for error messages."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

LOG_TAIL_LINES = 20
SHELL = "/bin/sh"


def log_text(path: Path, start: int) -> str:
    with open(path, "rb") as log:
        log.seek(max(start, log.seek(0, os.SEEK_END) - 65536))
        return log.read().decode("utf-8", "replace")


def log_header(path: Path, header: str, command: str) -> int:
    """Write the `--- harness:` line before a command's output; the offset after it."""
    with open(path, "ab") as log:
        log.write(f"--- harness: {header}: {command}\n".encode())
        return log.tell()


def log_tail(path: Path, start: int = 0, lines: int = LOG_TAIL_LINES) -> tuple[str, ...]:
    """The last `lines` lines written to `path` after byte offset `start`, indented."""
    return tuple(f"  | {line}" for line in log_text(path, start).splitlines()[-lines:])


def spawn(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    log_path: Path,
    header: str,
    prefix: Sequence[str] = (),
    pass_fds: Sequence[int] = (),
) -> tuple[subprocess.Popen[bytes], int]:
    """Start `/bin/sh -c command` in a new session; return it and the log offset of its output.

    `prefix` goes before `/bin/sh` (the sandbox: bwrap and its helper), `pass_fds` stay open in
    the child (the sandbox's end of its link)."""
    with open(log_path, "ab") as log:
        log.write(f"--- harness: {header}: {command}\n".encode())
        log.flush()
        start = log.tell()
        proc = subprocess.Popen(
            [*prefix, SHELL, "-c", command],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )
    return proc, start

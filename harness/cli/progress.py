"""Progress on stderr while services are queried: one live line on a terminal, plain log lines
otherwise (CI logs, pipes), so nothing a script parses from stdout is ever mixed with it."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from harness.types import QueryResult


class Progress:
    """Callable as runner.Progress: (label, done, total, errors, last_result)."""

    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self._label = ""
        self._started = 0.0
        self._last_draw = 0.0

    def __call__(
        self, label: str, done: int, total: int, errors: int, last: QueryResult | None
    ) -> None:
        now = time.monotonic()
        if label != self._label:
            self._finish_line()
            self._label, self._started = label, now
            if not self.live:
                print(f"harness: {label}: booting, then {total} queries", file=self.stream)
        if self.live and (now - self._last_draw > 0.1 or done == total):
            self._last_draw = now
            rate = done / max(now - self._started, 1e-9)
            eta = (total - done) / rate if rate > 0 else 0.0
            line = f"{label}: {done}/{total} queries, {errors} errors, ETA {eta:4.1f}s"
            self.stream.write("\r\x1b[2K" + line)
            self.stream.flush()
        if done == total:
            if self.live:
                self.stream.write("\n")
            else:
                elapsed = now - self._started
                print(f"harness: {label}: done, {errors} errors, {elapsed:.1f}s", file=self.stream)
            self._label = ""

    def note(self, message: str) -> None:
        self._finish_line()
        print(f"harness: {message}", file=self.stream)

    def _finish_line(self) -> None:
        if self.live and self._label:
            self.stream.write("\n")
            self._label = ""

"""Progress on stderr, never stdout (what a script parses from stdout is never mixed with it).

On a terminal: one live display (rich), redrawn in place: the phase (checkout, build, boot,
replay, analysis) and what it is working on, a bar of boots done of the total planned, the
queries of the current boot, the time elapsed and the time left (rich's estimate from the boots
done so far); at 80 columns every field but the detail is whole (the detail ends in an ellipsis).
Off a terminal (CI logs, pipes): plain lines, one per phase change and per boot; while a
round's queries are asked, a line at least every `_EVERY`-ish queries (every block when asked
block by block) and, from a clock of its own, whenever `interval` seconds passed without one
(30 s; HARNESS_PROGRESS_INTERVAL sets it, for tests), so a long round is never silent; the
round's first such line says how long the round takes at the pace measured so far, and later
ones how long is left.  `--quiet` passes no Progress at all: nothing is printed.

A Progress is both the runner's per-query callback, `(label, done, total, errors, last)`, and
its `Observer` (`phase`, `planned`, `asking`); `close()` ends the live display (and the plain
lines' clock) before a report is printed.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from typing import TYPE_CHECKING, TextIO

from harness.values.types import QueryResult

if TYPE_CHECKING:  # rich is imported for a terminal only: off one, plain lines need none of it
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID

_OPEN: list[Progress] = []  # live displays not yet closed: main() closes them on any exit

INTERVAL_ENV = "HARNESS_PROGRESS_INTERVAL"
INTERVAL_S = 30.0  # off a terminal, never longer than this without a line
# Queries between plain lines, at least: harness.replay.client.READ_BATCH, the runner's batch
# (it reports a batch's queries together when it reads them, so only a count at a batch's end
# has its own time; a test checks the two agree).
_EVERY = 32
_LINES = 30  # a round of many queries: about this many count-driven lines, not one per batch


def _interval() -> float:
    """HARNESS_PROGRESS_INTERVAL seconds when it is a positive number, else INTERVAL_S."""
    try:
        value = float(os.environ.get(INTERVAL_ENV, ""))
    except ValueError:
        return INTERVAL_S
    return value if math.isfinite(value) and value > 0 else INTERVAL_S


def _took(seconds: float) -> str:
    """0.4s, 45s, 4m10s, 1h02m."""
    if seconds < 9.95:
        return f"{max(0.0, seconds):.1f}s"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def close_all() -> None:
    """Close every live display (restoring the cursor), also after an error or Ctrl-C."""
    while _OPEN:
        _OPEN[-1].close()


class Progress:
    """Callable as runner.Progress: (label, done, total, errors, last_result); an Observer."""

    def __init__(
        self, stream: TextIO | None = None, *, live: bool | None = None, deployed: bool = False
    ) -> None:
        self.stream = stream or sys.stderr
        # Deployments by URL (--baseline-url) are asked, never booted: no word says they boot.
        self._boot, self._boots = ("ready", "replays") if deployed else ("boot", "boots")
        self.live = self.stream.isatty() if live is None else live
        self._label = ""
        self._started = 0.0
        self._boots_total = 0
        self._boots_done = 0.0
        self._last_draw = 0.0
        self._in_label = 0  # boots started under the current label (a paired round: 2)
        # Off a terminal: what the plain lines say between events, and their clock.
        self._phase = ""  # "build: baseline main (abc12345)", until a round begins
        self._phase_at = 0.0
        self._asking_at: float | None = None  # when the label's queries began (all booted)
        self._done = self._total = self._errors = 0
        self._line_at = 0.0  # the last plain line, any kind
        self._line_done = 0  # the queries done at the last count-driven line
        self._pace: float | None = None  # seconds per query of the label, once measured
        self._interval = _interval()
        self._lock = threading.Lock()  # the clock's thread prints too
        self._stop = threading.Event()
        self._clock: threading.Thread | None = None
        self._bar: RichProgress | None = None
        self._task: TaskID | None = None
        if self.live:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as RichProgress
            from rich.table import Column

            def fixed() -> Column:  # never squeezed: rich shrinks the widest column first
                return Column(no_wrap=True, overflow="crop")

            console = Console(file=self.stream, force_terminal=True, highlight=False)
            # 80 columns hold everything but the detail, which takes what is left and ends in
            # an ellipsis: the elapsed time and the estimate are never cut (issue 27).
            self._bar = RichProgress(
                TextColumn("[bold]{task.fields[phase]:<8}[/]", table_column=fixed()),
                BarColumn(bar_width=10, table_column=fixed()),
                MofNCompleteColumn(table_column=fixed()),
                TextColumn(self._boots, table_column=fixed()),
                TimeElapsedColumn(table_column=fixed()),
                TextColumn("elapsed,", table_column=fixed()),
                TimeRemainingColumn(table_column=fixed()),
                TextColumn("left", table_column=fixed()),
                TextColumn(
                    "{task.fields[detail]}",
                    table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1, min_width=8),
                ),
                console=console,
                expand=True,  # the detail column (ratio 1) takes the width left, no more
                auto_refresh=False,  # redrawn on each event: no thread to stop
                transient=True,
                redirect_stdout=False,  # stdout is the report's, never the display's
                redirect_stderr=True,  # warnings printed meanwhile go above the display
            )
            self._bar.start()
            _OPEN.append(self)
            self._task = self._bar.add_task("harness", total=None, phase="start", detail="")

    # ------------------------------------------------------------------ the runner's Observer

    def planned(self, boots: int) -> None:
        """`boots` boots will run in all (every side, every repeat)."""
        self._boots_total += boots
        self._draw(total=self._boots_total or None)

    def phase(self, name: str, detail: str) -> None:
        """A new phase begins: checkout or build of a ref, or the analysis."""
        if self.live:
            self._draw(phase=name, detail=detail)
        else:
            with self._lock:
                self._phase, self._phase_at = f"{name}: {detail}", time.monotonic()
                self._say(f"harness: {name}: {detail}")
                self._start_clock()

    def asking(self, label: str) -> None:
        """The services of `label` are up (booted, warmed): its timed queries begin now."""
        if not self.live and label == self._label:
            with self._lock:
                self._asking_at = time.monotonic()

    # ------------------------------------------------------------------ per query

    def __call__(
        self, label: str, done: int, total: int, errors: int, last: QueryResult | None
    ) -> None:
        now = time.monotonic()
        if done == 0:  # a boot begins (a paired round boots each side under one label)
            first = label != self._label
            if first:
                self._label, self._started, self._in_label = label, now, 0
            self._in_label += 1
            if self.live:
                self._draw(phase=self._boot, detail=label)
            else:
                with self._lock:
                    if first:
                        self._asking_at, self._pace, self._phase = None, None, ""
                        self._done, self._total, self._errors, self._line_done = 0, total, 0, 0
                        then = "" if self._boot == "ready" else "booting, then "
                        # Asked block by block (harness.driver.blocks' label), it may stop
                        # before all.
                        most = "up to " if "block by block" in label else ""
                        self._say(f"harness: {label}: {then}{most}{total} queries")
                    self._start_clock()
            if total:
                return
        if not self.live and done < total:
            with self._lock:
                self._done, self._total, self._errors = done, total, errors
                self._counted(label, done, total, errors, now)
        # Drawn at most 10 times a second: this runs between timed queries.
        if self.live and (now - self._last_draw >= 0.1 or done == total):
            self._last_draw = now
            fraction = done / total if total else 1.0
            self._draw(
                phase="replay",
                detail=f"{label}: {done}/{total} queries, {errors} errors",
                completed=self._boots_done + fraction * self._in_label,
            )
        if done == total:
            self._boots_done += self._in_label
            if self.live:
                self._draw(completed=self._boots_done)
            else:
                elapsed = now - self._started
                boots = (
                    f", {self._boots} {int(self._boots_done)}/{self._boots_total}"
                    if self._boots_total
                    else ""
                )
                with self._lock:
                    self._say(f"harness: {label}: done, {errors} errors, {elapsed:.1f}s{boots}")
                    self._asking_at = None
            self._label, self._in_label = "", 0

    # ------------------------------------------------------------------ plain lines

    def _counted(self, label: str, done: int, total: int, errors: int, now: float) -> None:
        """A count-driven line: every block when asked block by block (the runner reports at
        each block's end), else every `_EVERY` * n queries (a batch's end: its time is its
        own), about `_LINES` in a round; the first says how long the round takes."""
        blocks = "block by block" in label
        every = 1 if blocks else _EVERY * max(1, total // (_LINES * _EVERY))
        if done - self._line_done < every:
            return
        self._line_done = done
        began = self._asking_at if self._asking_at is not None else self._started
        elapsed = now - began
        said = f"harness: {label}: {done}/{total} queries, {errors} errors, {_took(elapsed)}"
        first = self._pace is None
        self._pace = elapsed / done
        left = self._pace * (total - done)
        if first:
            whole = f"all {total} take" if blocks else "the round takes"
            stop = "; the rule may stop sooner" if blocks else ""
            said += (
                f"; at this pace {whole} about {_took(self._pace * total)} "
                f"({_took(left)} left{stop})"
            )
        else:
            said += f", about {_took(left)} left"
        self._say(said)

    def _beat(self) -> None:
        """The clock's line when `interval` passed without one: what is going on, how long."""
        with self._lock:
            now = time.monotonic()
            if now - self._line_at < self._interval:
                return
            if self._label and self._asking_at is not None:
                said = (
                    f"harness: {self._label}: {self._done}/{self._total} queries, "
                    f"{self._errors} errors, {_took(now - self._asking_at)}"
                )
                if self._pace is not None:  # the estimate of the last count, run down since
                    left = self._pace * self._total - (now - self._asking_at)
                    said += f", about {_took(max(0.0, left))} left"
            elif self._label:
                doing = "booting" if self._boot == "boot" else "checking it is ready"
                said = f"harness: {self._label}: {doing}, {_took(now - self._started)}"
            elif self._phase:
                said = f"harness: {self._phase}: still going, {_took(now - self._phase_at)}"
            else:
                return
            self._say(said)

    def _say(self, line: str) -> None:
        """One plain line (the caller holds the lock)."""
        print(line, file=self.stream, flush=True)
        self._line_at = time.monotonic()

    def _start_clock(self) -> None:
        """The thread that writes a line when nothing did for `interval` (started once)."""
        if self._clock is not None or self._stop.is_set():
            return

        def tick() -> None:  # wakes when the next line is due, no oftener
            while not self._stop.wait(max(0.05, self._line_at + self._interval - time.monotonic())):
                self._beat()

        self._clock = threading.Thread(target=tick, name="harness-progress", daemon=True)
        self._clock.start()
        _OPEN.append(self)

    def note(self, message: str) -> None:
        from harness.text.control_chars import shown

        message = shown(message, lines=True)  # a stopped round's note quotes the service
        if self._bar is not None:
            self._bar.console.print(f"harness: {message}", markup=False, highlight=False)
        else:
            with self._lock:
                self._say(f"harness: {message}")

    def close(self) -> None:
        """End the live display (it clears itself), or the plain lines' clock."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        self._stop.set()
        if self._clock is not None:
            self._clock.join()
            self._clock = None
        if self in _OPEN:
            _OPEN.remove(self)

    def _draw(self, **fields: object) -> None:
        if self._bar is None or self._task is None:
            return
        known = {k: fields.pop(k) for k in ("total", "completed") if k in fields}
        self._bar.update(self._task, **known, **fields)  # type: ignore[arg-type]
        self._bar.refresh()

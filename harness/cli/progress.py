"""Progress on stderr, never stdout (what a script parses from stdout is never mixed with it).

On a terminal: one live display (rich), redrawn in place: the phase (checkout, build, boot,
replay, analysis) and what it is working on, a bar of boots done of the total planned, the
queries of the current boot, the time elapsed and the time left (rich's estimate from the boots
done so far); at 80 columns every field but the detail is whole (the detail ends in an ellipsis).
Off a terminal (CI logs, pipes): plain lines, one per phase change and per boot, as before.
`--quiet` passes no Progress at all: nothing is printed.

A Progress is both the runner's per-query callback, `(label, done, total, errors, last)`, and
its `Observer` (`phase`, `planned`); `close()` ends the live display before a report is printed.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, TextIO

from harness.types import QueryResult

if TYPE_CHECKING:  # rich is imported for a terminal only: off one, plain lines need none of it
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID

_OPEN: list[Progress] = []  # live displays not yet closed: main() closes them on any exit


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
            print(f"harness: {name}: {detail}", file=self.stream, flush=True)

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
            elif first:
                then = "" if self._boot == "ready" else "booting, then "
                # Asked block by block (harness.replay.blocks' label), it may stop before all.
                most = "up to " if "block by block" in label else ""
                print(f"harness: {label}: {then}{most}{total} queries", file=self.stream)
            if total:
                return
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
                print(
                    f"harness: {label}: done, {errors} errors, {elapsed:.1f}s{boots}",
                    file=self.stream,
                    flush=True,
                )
            self._label, self._in_label = "", 0

    def note(self, message: str) -> None:
        from harness.control_chars import shown

        message = shown(message, lines=True)  # a stopped round's note quotes the service
        if self._bar is not None:
            self._bar.console.print(f"harness: {message}", markup=False, highlight=False)
        else:
            print(f"harness: {message}", file=self.stream)

    def close(self) -> None:
        """End the live display (it clears itself); plain output needs nothing."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        if self in _OPEN:
            _OPEN.remove(self)

    def _draw(self, **fields: object) -> None:
        if self._bar is None or self._task is None:
            return
        known = {k: fields.pop(k) for k in ("total", "completed") if k in fields}
        self._bar.update(self._task, **known, **fields)  # type: ignore[arg-type]
        self._bar.refresh()

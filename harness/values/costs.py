"""What one boot of a service cost: a frozen value the boot stage makes (`harness.boot.usage`)
and a run record keeps (`harness.values.types.Repeat.usage`, re-exported there). Its own module,
importing nothing, so the boot stage, which never loads numpy, can make one without
`harness.values.types`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Usage:
    """What one boot of a service cost (`harness.boot.usage` measures it), its whole process
    tree counted: the processes found under the one the harness started (and, without a
    sandbox, those carrying its run marker).

    `ready_s`: from the start command's spawn to the first 2xx readiness answer.
    `peak_rss_bytes`: the largest resident set seen, the larger of the tree's summed RSS at
    any sample and any one process's own kernel peak (/proc/PID/status VmHWM): a lower bound,
    since a spike between samples shared by several processes can be missed.
    `cpu_s`: user + system CPU seconds of the tree, reaped children included, from the end of
    the prepare steps to the start of teardown (the replay, its warm-up queries included).
    `queries`: the answers of that replay; `samples`: how many times the tree was read.
    """

    ready_s: float
    peak_rss_bytes: int
    cpu_s: float
    queries: int = 0
    samples: int = 0

    @property
    def cpu_ms_per_query(self) -> float | None:
        return 1000 * self.cpu_s / self.queries if self.queries else None

"""Per-request cost of the bubblewrap sandbox next to plain isolation, measured side by side.

    python scripts/sandbox_overhead.py [N]

Boots the fault-matrix service twice at once, one plain and one in a bubblewrap sandbox, and
sends N GETs to each, alternating request by request (plain, sandboxed, plain, ...), so that the
load of a shared machine hits both alike; the paired difference is the sandbox's cost. Twice:
over one kept-alive connection each (HTTP/1.1, the replay client's case), and with the service
closing every connection (HTTP/1.0: each GET pays a new connection, in the sandbox a socket from
its helper, then connect; the sandbox's worst case). Prints medians in microseconds.
"""

from __future__ import annotations

import contextlib
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from harness.boot.sandbox import BUBBLEWRAP, PLAIN, sandbox_mode
from harness.boot.service import running_service
from harness.config import ServiceConfig

SERVICE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "fault_service" / "svc.py"


def paired(n: int, work: Path, keep_alive: bool) -> tuple[float, float, float]:
    start = "{python} svc.py --port {port}" + (" --keep-alive" if keep_alive else "")
    spec = ServiceConfig(start=start, ready="/health")
    times: dict[str, list[int]] = {PLAIN: [], BUBBLEWRAP: []}
    with contextlib.ExitStack() as stack:
        clients = {}
        for mode in (PLAIN, BUBBLEWRAP):
            log = work / f"{mode}-{keep_alive}.log"
            svc = stack.enter_context(running_service(spec, work, log_path=log, sandbox=mode))
            client = httpx.Client(trust_env=False, transport=svc.transport())
            clients[mode] = (stack.enter_context(client), svc.url + "/health")
        for _ in range(50):  # warm-up
            for client, url in clients.values():
                client.get(url)
        for _ in range(n):
            for mode, (client, url) in clients.items():
                t0 = time.perf_counter_ns()
                client.get(url)
                times[mode].append(time.perf_counter_ns() - t0)
    diffs = [b - p for p, b in zip(times[PLAIN], times[BUBBLEWRAP], strict=True)]
    return (
        statistics.median(times[PLAIN]) / 1000,
        statistics.median(times[BUBBLEWRAP]) / 1000,
        statistics.median(diffs) / 1000,
    )


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    if sandbox_mode() != BUBBLEWRAP:
        print("no usable bubblewrap here", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copyfile(SERVICE, work / "svc.py")
        rows = {
            "kept-alive connection": paired(n, work, keep_alive=True),
            "new connection per GET": paired(n, work, keep_alive=False),
        }
    print(f"{n} GETs to each, alternating; medians in microseconds")
    print(f"{'':<24}{'plain':>10}{'bubblewrap':>12}{'paired diff':>13}")
    for name, (plain, boxed, diff) in rows.items():
        print(f"{name:<24}{plain:>10.1f}{boxed:>12.1f}{diff:>+13.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Per-query cost of the bubblewrap sandbox next to plain isolation, measured in one run.

    python scripts/sandbox_overhead.py [N]

Boots the fault-matrix service once per mode (alternating, 3 rounds) and times N sequential GETs
through one httpx client, as the replay client sends them: once with HTTP/1.1 keep-alive (one
connection for all), once with HTTP/1.0 (the service closes every connection, so each GET pays a
new one: in the sandbox a socket from its helper, then connect; the worst case for the sandbox).
Then N/4 first GETs of a fresh client. Prints medians in microseconds.
"""

from __future__ import annotations

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


def measure(mode: str, n: int, work: Path, keep_alive: bool) -> tuple[float, float]:
    start = "{python} svc.py --port {port}" + (" --keep-alive" if keep_alive else "")
    spec = ServiceConfig(start=start, ready="/health")
    with running_service(spec, work, log_path=work / f"{mode}.log", sandbox=mode) as svc:
        kept: list[int] = []
        with httpx.Client(trust_env=False, transport=svc.transport()) as client:
            for _ in range(50):
                client.get(svc.url + "/health")
            for _ in range(n):
                t0 = time.perf_counter_ns()
                client.get(svc.url + "/health")
                kept.append(time.perf_counter_ns() - t0)
        fresh: list[int] = []
        for _ in range(n // 4):
            with httpx.Client(trust_env=False, transport=svc.transport()) as client:
                t0 = time.perf_counter_ns()
                client.get(svc.url + "/health")
                fresh.append(time.perf_counter_ns() - t0)
    return statistics.median(kept) / 1000, statistics.median(fresh) / 1000


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    if sandbox_mode() != BUBBLEWRAP:
        print("no usable bubblewrap here", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copyfile(SERVICE, work / "svc.py")
        rows: dict[str, list[tuple[float, float, float]]] = {PLAIN: [], BUBBLEWRAP: []}
        for _ in range(3):
            for mode in (PLAIN, BUBBLEWRAP):
                closed, first = measure(mode, n, work, keep_alive=False)
                kept, _ = measure(mode, n, work, keep_alive=True)
                rows[mode].append((kept, closed, first))
    print(f"median of per-round medians, {n} GETs per round, 3 rounds (microseconds)")
    print(f"{'mode':<12}{'kept-alive GET':>16}{'GET, new connection':>22}{'first GET':>12}")
    for mode, values in rows.items():
        kept, closed, first = (statistics.median(v[i] for v in values) for i in range(3))
        print(f"{mode:<12}{kept:>16.1f}{closed:>22.1f}{first:>12.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

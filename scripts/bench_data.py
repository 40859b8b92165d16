#!/usr/bin/env python
"""Data kept outside the repository: what its reuse key costs per run, and a boot in place
against a boot on a copy.

    python scripts/bench_data.py [--index-gib 20] [--small 2000] [--copy-mib 256] [--runs 5]

1. The key. A 20 GiB index (one sparse file: no disk used) with `--small` 1 KiB files beside it
   (segment lists, settings) is keyed the way `harness.config.inputs` keys service.data: its
   manifest (`harness.config.manifest`: sizes, mtimes, contents of files up to 1 MiB). Printed:
   the median seconds over `--runs`, and the bytes read; beside it, what reading every byte
   would cost (sha256 measured on 256 MiB of real data, scaled to the index), which is what
   keying by content would pay on every run.
2. The boot. A service that only stats its data, booted through the real boot path (sandbox
   when bubblewrap works) on a folder holding `--copy-mib` MiB of real bytes: with
   data_mode "read-only" (bound where it lies) and "copy" (a fresh copy per boot). Median boot
   seconds (spawn to first ready answer plus the root and copy made before it) over `--runs`.
   The copy grows with the data; the bind does not.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from harness.boot import sandbox, service
from harness.config import ServiceConfig
from harness.config.manifest import manifest

SERVICE = textwrap.dedent(
    """
    import http.server, os, sys
    os.stat(os.path.join(sys.argv[2], "index.bin"))

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *a):
            pass

    http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
    """
)


def key_costs(top: Path, index_gib: int, small: int, runs: int) -> None:
    index = top / "index"
    index.mkdir()
    with open(index / "index.bin", "wb") as handle:
        handle.truncate(index_gib << 30)
    for n in range(small):
        (index / f"segment_{n:05d}.meta").write_bytes(os.urandom(1024))
    seconds = []
    for _ in range(runs):
        t0 = time.perf_counter()
        found = manifest(index)
        seconds.append(time.perf_counter() - t0)
    sample = top / "sample.bin"
    with open(sample, "wb") as handle:
        for _ in range(256):
            handle.write(os.urandom(1 << 20))
    t0 = time.perf_counter()
    digest = hashlib.sha256()
    with open(sample, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    rate = (256 << 20) / (time.perf_counter() - t0)
    sample.unlink()
    print(f"key of a {index_gib} GiB index + {small} small files ({found.files} files, "
          f"{found.bytes / 2**30:.1f} GiB):")
    print(f"  manifest: {statistics.median(seconds):.3f} s (median of {runs}), "
          f"{found.hashed_bytes / 2**20:.1f} MiB read")
    print(f"  reading every byte instead: {found.bytes / rate:.0f} s at {rate / 2**20:.0f} MiB/s "
          "(sha256 of 256 MiB, measured)")


def boot_costs(top: Path, copy_mib: int, runs: int) -> None:
    data = top / "data"
    data.mkdir()
    with open(data / "index.bin", "wb") as handle:
        for _ in range(copy_mib):
            handle.write(os.urandom(1 << 20))
    worktree = top / "wt"
    worktree.mkdir()
    (worktree / "svc.py").write_text(SERVICE)
    mode = sandbox.sandbox_mode()
    times: dict[str, list[float]] = {"read-only": [], "copy": []}
    for _ in range(runs):
        for data_mode in times:
            spec = ServiceConfig(
                "{python} svc.py {port} {data}", "/", data=str(data), data_mode=data_mode
            )
            t0 = time.perf_counter()
            ctx = service.running_service(
                spec, worktree, log_path=top / "svc.log", temp_parent=top, sandbox=mode
            )
            with ctx:
                times[data_mode].append(time.perf_counter() - t0)
    print(f"boot on {copy_mib} MiB of data ({mode}), spawn to ready, median of {runs}:")
    for data_mode, seconds in times.items():
        print(f"  data_mode = {data_mode!r}: {statistics.median(seconds):.3f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--index-gib", type=int, default=20)
    parser.add_argument("--small", type=int, default=2000)
    parser.add_argument("--copy-mib", type=int, default=256)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-data-") as folder:
        key_costs(Path(folder), args.index_gib, args.small, args.runs)
    with tempfile.TemporaryDirectory(prefix="bench-data-") as folder:
        boot_costs(Path(folder), args.copy_mib, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())

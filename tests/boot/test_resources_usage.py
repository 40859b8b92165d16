"""What one boot costs, measured on real subprocess services (`harness.boot.usage`), in both
isolation modes: the bubblewrap sandbox (the tree's pids as seen from outside its PID namespace)
and plain. The service holds a known amount of memory, in a child process too, and burns a known
amount of CPU per request; the figures must reach them (they are lower bounds of the truth)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import httpx
import pytest

from harness.boot import service
from harness.boot.sandbox import BUBBLEWRAP, PLAIN, sandbox_mode
from harness.boot.usage import UsageMeter, own_peak
from harness.config import ServiceConfig

MIB = 1 << 20

SERVICE_PY = textwrap.dedent(
    '''
    """Holds --mb MiB (and a child holding --child-mb), answers /burn by spinning --burn-ms."""
    import argparse, http.server, os, subprocess, sys, time
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--mb", type=int, default=0)
    ap.add_argument("--child-mb", type=int, default=0)
    ap.add_argument("--burn-ms", type=int, default=0)
    args = ap.parse_args()
    held = bytearray(args.mb << 20)
    for i in range(0, len(held), 4096):
        held[i] = 1
    if args.child_mb:
        code = f"b = bytearray({args.child_mb} << 20)\\n"
        code += "for i in range(0, len(b), 4096): b[i] = 1\\nimport time\\ntime.sleep(600)"
        subprocess.Popen([sys.executable, "-c", code])
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/burn":
                end = time.process_time() + args.burn_ms / 1000
                while time.process_time() < end:
                    pass
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
        def log_message(self, *a):
            pass
    http.server.HTTPServer(("127.0.0.1", args.port), Handler).serve_forever()
    '''
)


def _modes() -> list[str]:
    return [PLAIN, BUBBLEWRAP] if sandbox_mode({}) == BUBBLEWRAP else [PLAIN]


@pytest.mark.parametrize("mode", _modes())
def test_a_boot_records_its_tree_peak_memory_cpu_and_time_to_ready(
    mode: str, tmp_path: Path
) -> None:
    tree = tmp_path / "worktree"
    tree.mkdir()
    (tree / "svc.py").write_text(SERVICE_PY)
    start = "{python} svc.py --port {port} --mb 120 --child-mb 60 --burn-ms 50"
    spec = ServiceConfig(start=start, ready="/", ready_timeout=20.0)
    ctx = service.running_service(
        spec, tree, log_path=tmp_path / "svc.log", temp_parent=tmp_path, sandbox=mode
    )
    with ctx as svc, httpx.Client(transport=svc.transport(), base_url=svc.url) as client:
        for _ in range(6):  # 6 x 50 ms of CPU in the service
            assert client.get("/burn").status_code == 200
        ready = svc.boot_seconds
    assert ctx.teardown is not None and ctx.teardown.confirmed  # the child too: nothing left
    usage = ctx.usage
    assert usage is not None and usage.samples >= 2
    assert usage.ready_s == ready
    # 120 MiB in the service and 60 MiB in its child, both resident: the tree's sum sees both.
    assert usage.peak_rss_bytes >= 175 * MIB
    assert 0.25 <= usage.cpu_s < 5.0  # 0.3 s burnt, and the interpreter's own work beside it


def test_a_process_own_kernel_peak_is_read_and_a_gone_one_is_none() -> None:
    import os

    peak = own_peak(os.getpid())
    assert peak is not None and peak > MIB
    assert own_peak(2**22 + 12345) is None  # above pid_max's default: no such process


def test_a_meter_stopped_before_ready_gives_no_usage() -> None:
    import os

    meter = UsageMeter(os.getpid(), interval=0.01)
    assert meter.stop() is None
    assert meter.stop() is None  # idempotent

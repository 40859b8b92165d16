"""Run a command on a machine kept busy in bursts, as a shared CI runner is.

    python scripts/busy.py [--processes 4] [--on 4] [--off 4] [--seed 1] -- COMMAND [ARG ...]

Each burst starts between 1 and --processes busy loops (each a Python process spinning on one
core) for 0.5-2x --on seconds, then idles for 0.3-1.5x --off seconds, from a seeded draw; the
bursts go on until COMMAND ends.  Then every busy loop is ended (also on Ctrl-C or an error; a
loop whose busy.py was killed ends itself) and COMMAND's exit status is this script's.  Prints,
on stderr, the bursts run and the load average before and after.  A test that depends on the
machine being quiet fails here as it would on a loaded CI machine, e.g.

    python scripts/busy.py -- python -m pytest -n 0 -m slow tests/watch/test_watch_e2e.py
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys

# A busy loop that ends itself when busy.py is gone (killed, even by SIGKILL): its parent is no
# longer the busy.py its last argument names (`busy.py:PID`).  The PID is busy.py's own, passed
# in: a loop that read its parent at start would, were busy.py killed before the loop's Python
# started, watch the process it was handed to and spin on forever (seen under load).
SPIN = "import os, sys\nmine = int(sys.argv[1].split(':')[1])\nwhile os.getppid() == mine: pass"


def _end(spinners: list[subprocess.Popen[bytes]]) -> None:
    for proc in spinners:
        proc.kill()
    for proc in spinners:
        proc.wait()
    spinners.clear()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=4, help="the most busy loops at once")
    parser.add_argument("--on", type=float, default=4.0, help="a burst's seconds (about)")
    parser.add_argument("--off", type=float, default=4.0, help="the seconds between (about)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARG ...]")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or args.processes < 1 or args.on <= 0 or args.off < 0:
        parser.error("give a COMMAND after --, --processes >= 1, --on > 0 and --off >= 0")
    draw = random.Random(args.seed)
    print(f"busy: load average {os.getloadavg()[0]:.1f} before", file=sys.stderr)
    spinners: list[subprocess.Popen[bytes]] = []
    bursts = 0
    spin = [sys.executable, "-c", SPIN, f"busy.py:{os.getpid()}"]  # whose loop it is, by name
    child = subprocess.Popen(command)
    try:
        while True:
            count = draw.randint(1, args.processes)
            spinners += [subprocess.Popen(spin) for _ in range(count)]
            bursts += 1
            try:
                status = child.wait(timeout=args.on * draw.uniform(0.5, 2.0))
            except subprocess.TimeoutExpired:
                _end(spinners)
                try:
                    status = child.wait(timeout=args.off * draw.uniform(0.3, 1.5))
                except subprocess.TimeoutExpired:
                    continue
            break
    except KeyboardInterrupt:  # the command had the signal too (one process group): let it end
        status = child.wait()
    finally:
        _end(spinners)
    print(
        f"busy: {bursts} bursts of 1-{args.processes} busy loops; load average "
        f"{os.getloadavg()[0]:.1f} after; {command[0]} exited {status}",
        file=sys.stderr,
    )
    return status if status >= 0 else 128 - status  # killed by a signal: as a shell says


if __name__ == "__main__":
    sys.exit(main())

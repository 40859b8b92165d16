"""The program: parse, run the named command, map what happened to an exit status.

    main(argv) -> int: parse (`harness.cli.parser`), run the named command (`command(name)`:
    harness.cli.NAME's `run`), and turn a HarnessError into `harness: error: ...` and its exit
    status, a signal into 128 + N

Each command's module is the same four steps: load (config, gold, records), call the stages and
tools, render to stdout (notes to stderr), and return the exit status that `harness.cli.exits`
maps its outcome to.  Anything that decides or computes lives in the stage or tool it belongs
to.  Only the named command's module is imported, and it imports its stages inside `run`, so
that `harness --help` loads none of them.
"""

from __future__ import annotations

import argparse
import errno
import sys
from collections.abc import Callable, Sequence

from harness.cli.exits import signal_status
from harness.cli.parser import parse_args


def main(argv: Sequence[str] | None = None) -> int:
    return _main(argv, exiting=argv is None)


def _main(argv: Sequence[str] | None, *, exiting: bool) -> int:
    """`main`; `exiting`: called as the program (the process ends when this returns)."""
    args = parse_args(argv)  # --help, --version and usage errors exit here, having loaded no stage
    import os

    from harness.text.scrub import guard_output, register_environment, register_url, release_output

    register_environment(os.environ)  # API_TOKEN and the like: never printed or written
    refused = _check_urls(args)  # before register_url, whose urlsplit raises on `http://[::1`
    if refused is not None:
        return refused
    for url in (getattr(args, "baseline_url", None), getattr(args, "candidate_url", None)):
        if url:
            register_url(url)  # before anything can quote it, a usage error included
    guard_output()  # a URL's password, an Authorization header: never printed (harness.text.scrub)
    from harness.process.signals import interrupts_redelivered

    try:
        with interrupts_redelivered():  # a Ctrl-C in a GC callback: raised, not a traceback
            return _run(args, exiting=exiting)
    finally:
        release_output()


def _check_urls(args: argparse.Namespace) -> int | None:
    """Exit status 2, said, when --baseline-url or --candidate-url is no base URL (a bad port,
    an unclosed IPv6 bracket: `harness.values.urls`); None when both are fine or not given."""
    given = [(option, getattr(args, option[2:].replace("-", "_"), None))
             for option in ("--baseline-url", "--candidate-url")]
    if not any(url for _, url in given):
        return None  # every command but compare against deployments: nothing more imported
    from harness.errors import HarnessError
    from harness.values.urls import check_url

    try:
        for option, url in given:
            if url:
                check_url(url, option)
    except HarnessError as exc:  # its message shows no userinfo: nothing to scrub yet
        print(f"harness: error: {exc}", file=sys.stderr)
        return exc.exit_status
    return None


def _run(args: argparse.Namespace, *, exiting: bool) -> int:
    from harness.cli.checks import check_args
    from harness.errors import HarnessError
    from harness.process.leftovers import anything_left
    from harness.process.signals import Terminated

    sub = {"gold": "gold_command", "judge": "judge_command"}.get(args.command)
    name = f"{args.command} {getattr(args, sub)}" if sub else args.command
    if name not in WITHOUT_NUMPY:
        _import_numpy()
    run = command(name)
    try:
        check_args(args)
        dry_run = name == "clean" and getattr(args, "dry_run", False)  # it says, removes nothing
        if anything_left() and not dry_run:
            from harness.driver.recovery import recover

            recover()  # what an earlier run killed with SIGKILL left: its worktrees and temp dirs
        try:
            return run(args)
        finally:
            live = sys.modules.get("harness.cli.progress")  # loaded only by commands that run
            if live is not None:
                live.close_all()
    except HarnessError as exc:
        from harness.text.control_chars import shown

        # An error may quote a service (its log's last lines, its answer) or an input file: no
        # control character of theirs reaches the terminal raw.
        print(f"harness: error: {shown(exc.message, lines=True)}", file=sys.stderr)
        for line in exc.details:
            print(shown(line, lines=True), file=sys.stderr)
        return exc.exit_status
    except OSError as exc:
        # A path the user gave that cannot be reached (a folder above it closed to this user,
        # a read-only mount) where no reader turned it into a HarnessError: said, not a trace.
        if exc.errno not in _PATH_ERRNOS or not exc.filename:
            raise
        print(f"harness: error: {exc.filename}: {exc.strerror}", file=sys.stderr)
        print(
            "check the path, and that this user may read it (write it, for an output) and "
            "enter every folder above it",
            file=sys.stderr,
        )
        return 2
    except Terminated as exc:
        _say_torn_down("terminated", exiting=exiting)
        return signal_status(exc.signum)
    except KeyboardInterrupt:
        import signal

        _say_torn_down("interrupted", exiting=exiting)
        return signal_status(signal.SIGINT)


_PATH_ERRNOS = frozenset(
    {
        errno.EACCES,
        errno.EPERM,
        errno.EROFS,
        errno.EISDIR,
        errno.ENOTDIR,
        errno.ENOENT,
        errno.ENAMETOOLONG,
        errno.ELOOP,
    }
)


def _say_torn_down(what: str, *, exiting: bool) -> None:
    """The last line of a run a signal ended: "torn down" only when it is true, checked against
    the disk, git's worktree list and the process table (`recovery.remaining`); else what is
    left, which stays in the leftovers state for the next run or `harness clean` to remove.
    `exiting` (main called as the program, argv None): signals stay ignored to the exit."""
    from harness.process.signals import signals_ignored

    # The teardown is over: one more Ctrl-C must not cut this short (nor the exit, as the program),
    # nor the import of the recovery, not loaded at the start when nothing was left to recover.
    with signals_ignored(restore=not exiting):
        from harness.driver.recovery import remaining

        left = remaining()
        if not left:
            print(f"harness: {what}; every service and worktree was torn down", file=sys.stderr)
            return
        print(
            f"harness: {what}; not everything was torn down: {'; '.join(left)} "
            f"{'is' if len(left) == 1 else 'are'} left, and the next run (or `harness clean`) "
            "will remove "
            + ("it" if len(left) == 1 else "them"),
            file=sys.stderr,
        )


def _import_numpy() -> None:
    """Import numpy (every command but WITHOUT_NUMPY's will) with OpenBLAS on one thread.

    OpenBLAS starts a thread per CPU when numpy loads, and they spin: about 0.1 CPU-second of a
    command's own, for matrix products too small to gain from threads (`bench_scale.py` at 50k
    queries takes the same time either way). OPENBLAS_NUM_THREADS is read only as the library
    loads: it is set for the import and removed again, so no build or service the harness starts
    ever sees it. A value the user set is left alone."""
    import os

    if "numpy" in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ:
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]


def compare_main(argv: Sequence[str] | None = None) -> int:
    """The `compare` console script: the same as `harness compare`."""
    return _main(["compare", *(sys.argv[1:] if argv is None else argv)], exiting=argv is None)


# --------------------------------------------------------------------------- the commands


def command(name: str) -> Callable[[argparse.Namespace], int]:
    """What runs command `name` ("compare", "gold check"): `run` of the module harness.cli.NAME
    (dashes as underscores: compare-runs is harness.cli.compare_runs), or for a subcommand the
    function of that name (harness.cli.gold's `check`). Imported only when it runs."""
    import importlib

    top, _, sub = name.partition(" ")
    module = importlib.import_module(f"harness.cli.{top.replace('-', '_')}")
    run: Callable[[argparse.Namespace], int] = getattr(module, sub or "run")
    return run


# The commands that never import numpy (tests/cli/test_cli_startup.py checks the list).
WITHOUT_NUMPY = frozenset({"schema", "clean", "demo"})

if __name__ == "__main__":
    sys.exit(main())

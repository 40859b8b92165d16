"""The build stage: a ref's build command and (optionally) its virtualenv, once per commit, cached.

    result = build(worktree, sha_key=resolved.key, service=side.service, log_dir=run_dir)
    env = with_venv(service_env, result.venv)     # the service stage starts in that venv

Layout under `harness.process.leftovers.cache_dir()`:

    builds/<key>/venv/         the per-commit virtualenv (when service.venv is true; `venv_command`)
    builds/<key>/delta/        what the build wrote into its checkout (`harness.checkout.delta`)
    builds/<key>/built.json    the marker, written last and only on success: the build's inputs
    builds/<key>/build.log     a copy of the successful build's log (the cached result points here)
    builds/<key>.lock          held while building, so two harness runs never build one key at once
    tmp/build-<random>/        throwaway HOME and TMPDIR for one build, removed afterwards
    virtualenv/                virtualenv's unpacked pip and setuptools wheels, shared by builds

`key = sha256(sha_key, build command, venv flag, interpreter, platform.platform())[:16]`, the
fields joined by NUL, where the interpreter is the harness's own `sys.version`, or, with
`service.python`, that interpreter's resolved path and version (`harness.boot.interpreter`);
`service.build_outputs`, when set, is a field too. A later build with the same key and the marker
present (and, for a venv, its interpreter still there) runs nothing and returns `cached=True`.

Builds that stay built: whatever the build command wrote into the checkout (an index, compiled
extensions, generated files; untracked and git-ignored ones too; or only the declared
`service.build_outputs`) is captured after a successful build and restored into the fresh
checkout each time the cached build is reused, deleted files deleted again, modes and symlinks
kept, so a cached build boots like a fresh one. A cache entry whose stored delta is incomplete or
fails its checksums is rebuilt, and `BuildResult.note` says so.

A build that fails (non-zero exit, or running past `service.build_timeout`, which covers venv
creation and the command together) leaves no marker and removes `builds/<key>/`, so a half-made
venv is never reused and the next run retries; its BuildError names the command, how it ended,
the log file and its last 20 lines, and adds a hint to set service.python when pip said the
package needs another Python. The command's whole process group is killed on timeout or
interrupt (SIGTERM, then SIGKILL after `service.stop_timeout`), and anything it left running in
the background is killed even after a success.

The build never sees the caller's whole environment, so it cannot read tokens: it gets the
service stage's allowlist (`harness.boot.isolation.allowlisted_env`: PATH, LANG, LC_*, TZ and the
names in `service.pass_env`) plus pip's PIP_* variables; HOME and TMPDIR are throwaway directories
under the cache; `service.env` pins override all of it. Unlike a service it gets no XDG_*
directories, no PYTHON* settings and no HARNESS_RUN_ID marker, and a default PATH when the caller
has none.

POSIX only: process groups, `/bin/sh -c`, and the venv's `bin/`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.boot.interpreter import Interpreter, interpreter
from harness.boot.isolation import allowlisted_env, scrub_file, scrubber
from harness.boot.processes import kill_group
from harness.checkout.delta import Delta, MissingOutputs, capture, restore, tree_state, verify
from harness.config import ServiceConfig
from harness.errors import BuildError, clip
from harness.process import leftovers
from harness.process.leftovers import cache_dir

MARKER = "built.json"
MARKER_SCHEMA_VERSION = 2  # 2: the build's delta is stored with it (1: rebuilt, it has none)
TAIL_LINES = 20
DELTA = "delta"

# The oldest Python virtualenv's bundled wheels seed (21.x: 3.9); older ones get `python -m venv`.
VIRTUALENV_OLDEST = (3, 9)
# What pip says when the package wants another Python than the venv's.
_OTHER_PYTHON = ("requires a different python", "requires-python")


@dataclass(frozen=True)
class BuildResult:
    """What the build stage gives the service stage: the venv to start in, and how it went."""

    venv: Path | None  # the per-commit virtualenv, or None when service.venv is false
    cached: bool  # True when nothing ran because an identical build had succeeded before
    seconds: float  # wall time of this call's work (0.0 when cached or nothing to do)
    log_path: Path | None  # this build's log; the cached copy when cached; None: nothing to do
    key: str | None = None  # the build key, None when there was nothing to build
    restored: Delta | None = None  # what a cached build put back into the checkout
    note: str | None = None  # e.g. why a cached build could not be used and was rebuilt
    # What the build costs, also when cached (as its marker recorded them when it ran): its
    # wall time, and the bytes it wrote (the venv, and what it added to or changed in the
    # checkout: the captured delta). None: nothing to build, or a marker from before them.
    build_seconds: float | None = None
    output_bytes: int | None = None


def build_key(sha_key: str, service: ServiceConfig) -> str:
    """The 16-hex key a build is cached under (see the module docstring for its inputs)."""
    python = interpreter(service.python).identity if service.python else sys.version
    fields = [
        sha_key,
        service.build or "",
        "venv" if service.venv else "no-venv",
        python,
        platform.platform(),
    ]
    if service.build_outputs is not None:
        fields.append("outputs:" + "\0".join(service.build_outputs))
    return hashlib.sha256("\0".join(fields).encode()).hexdigest()[:16]


def venv_env(venv: Path | None) -> dict[str, str]:
    """The entries a process needs to run inside `venv`: `{}` for None.

    `VIRTUAL_ENV` is the venv itself; `PATH` holds only the venv's `bin` directory, to be put
    *first* on the existing PATH (`with_venv` does exactly that).
    """
    if venv is None:
        return {}
    return {"VIRTUAL_ENV": str(venv), "PATH": str(venv / "bin")}


def venv_command(python: Interpreter, venv: Path) -> list[str]:
    """The command that makes the commit's venv with `python`, with pip in it (and setuptools
    where the standard library's venv would put it, Python < 3.12).

    virtualenv for a Python it seeds (3.9 and later): it copies pip from wheels it ships, kept
    unpacked under the harness cache (`virtualenv/`), in about half a second, where the
    standard library's `python -m venv` runs ensurepip, about five CPU-seconds a venv; older
    Pythons get `python -m venv`.  Either way the venv is based on the real interpreter (also
    when `python` is itself a venv's), without --system-site-packages, so nothing of the
    harness's leaks in; virtualenv's background update check is off.
    """
    if python.major_minor < VIRTUALENV_OLDEST:
        return [str(python.path), "-m", "venv", str(venv)]
    return [
        sys.executable, "-m", "virtualenv", "--quiet", "--no-periodic-update",
        "--app-data", str(cache_dir() / "virtualenv"), "--python", str(python.path), str(venv),
    ]  # fmt: skip


def with_venv(env: Mapping[str, str], venv: Path | None) -> dict[str, str]:
    """A copy of `env` inside `venv`: its bin first on PATH, VIRTUAL_ENV set, PYTHONHOME unset."""
    out = dict(env)
    extra = venv_env(venv)
    if extra:
        rest = out.get("PATH")
        out["PATH"] = extra["PATH"] + (os.pathsep + rest if rest else "")
        out["VIRTUAL_ENV"] = extra["VIRTUAL_ENV"]
        out.pop("PYTHONHOME", None)
    return out


def build(worktree: Path, *, sha_key: str, service: ServiceConfig, log_dir: Path) -> BuildResult:
    """Make `worktree`'s commit ready to start: create its venv and run `service.build`, cached;
    a cached build's delta is restored into `worktree`.

    With neither `service.venv` nor `service.build` there is nothing to do: BuildResult(None,
    cached=False, seconds=0.0, log_path=None). Otherwise the log is `log_dir/build-<key>.log`.
    Raises BuildError naming the command, its exit status (or the timeout), the log and its last
    20 lines; nothing is cached then. Raises ConfigError when service.python cannot be found.
    """
    if not service.venv and not service.build:
        return BuildResult(venv=None, cached=False, seconds=0.0, log_path=None)
    python = interpreter(service.python)
    key = build_key(sha_key, service)
    builds = cache_dir() / "builds"
    slot = builds / key
    venv = slot / "venv" if service.venv else None
    builds.mkdir(parents=True, exist_ok=True)
    note = None
    with _locked(builds / f"{key}.lock"):
        if _is_built(slot, key, venv):
            problem = verify(slot / DELTA) if service.build else None
            if problem is None:
                restored = restore(slot / DELTA, worktree) if service.build else None
                with contextlib.suppress(OSError):  # last used: for `harness clean --older-than`
                    os.utime(slot / MARKER)
                took, wrote = _recorded_cost(slot)
                return BuildResult(
                    venv,
                    cached=True,
                    seconds=0.0,
                    log_path=slot / "build.log",
                    key=key,
                    restored=restored,
                    build_seconds=took,
                    output_bytes=wrote,
                )
            note = f"the cached build {key} was incomplete ({problem}), so it was built again"
        shutil.rmtree(slot, ignore_errors=True)  # whatever a crashed earlier attempt left
        slot.mkdir(parents=True)
        log_dir.mkdir(parents=True, exist_ok=True)
        log_path = log_dir / f"build-{key}.log"
        started = time.monotonic()
        try:
            before = tree_state(worktree)
            _run_build(
                worktree, service, venv, python, log_path, deadline=started + service.build_timeout
            )
            delta: Delta | None = None
            if service.build:
                delta = _capture(worktree, before, slot / DELTA, service, log_path)
        except BaseException:
            shutil.rmtree(slot, ignore_errors=True)
            raise
        seconds = time.monotonic() - started
        shutil.copyfile(log_path, slot / "build.log")
        wrote = (0 if delta is None else delta.bytes) + (0 if venv is None else tree_bytes(venv))
        _write_marker(slot, key, sha_key, service, seconds, python, wrote)
        return BuildResult(
            venv, cached=False, seconds=seconds, log_path=log_path, key=key, note=note,
            build_seconds=seconds, output_bytes=wrote,
        )  # fmt: skip


def _capture(
    worktree: Path, before: dict[str, Any], store: Path, service: ServiceConfig, log_path: Path
) -> Delta:
    try:
        return capture(worktree, before, store, outputs=service.build_outputs)
    except MissingOutputs as missing:
        raise BuildError(
            f"build failed: `{service.build}` succeeded but did not write "
            f"{', '.join(missing.missing)}, named in service.build_outputs (log: {log_path})",
            ["fix service.build_outputs (paths relative to the checkout), or the build"],
        ) from None


def _run_build(
    worktree: Path,
    service: ServiceConfig,
    venv: Path | None,
    python: Interpreter,
    log_path: Path,
    deadline: float,
) -> None:
    scratch = cache_dir() / "tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    log_path.write_bytes(b"")
    with leftovers.temp_dir(scratch, "build-") as throwaway:  # recorded before it exists
        home, tmp = throwaway / "home", throwaway / "tmp"
        home.mkdir()
        tmp.mkdir()
        # A caller without PATH still gets the default one (service processes get none then).
        caller = {"PATH": os.defpath, **os.environ}
        env = allowlisted_env(
            caller,
            isolation={"HOME": str(home), "TMPDIR": str(tmp)},
            pass_env=service.pass_env,
            pins=service.env,
            also_prefixes=("PIP_",),
        )
        scrub = scrubber(caller, env)
        step = _Step(
            cwd=worktree, log_path=log_path, service=service, deadline=deadline, scrub=scrub
        )
        try:
            if venv is not None:
                step.run(venv_command(python, venv), env)
            if service.build:
                shown = service.build
                step.run(["/bin/sh", "-c", service.build], with_venv(env, venv), shown=shown)
        finally:
            # The log stays under results/logs: scrubbed, and cut to service.max_log_bytes.
            scrub_file(log_path, scrub, limit=service.max_log_bytes)


@dataclass(frozen=True)
class _Step:
    """Where and under what limits the commands of one build run."""

    cwd: Path
    log_path: Path
    service: ServiceConfig
    deadline: float  # time.monotonic() by which the whole build must be done
    scrub: Callable[[str], str] = str  # the allowlist's removed values out of excerpts

    def run(self, argv: list[str], env: Mapping[str, str], shown: str | None = None) -> None:
        """Run `argv` in its own process group, output appended to the log; raise BuildError."""
        shown = shown or " ".join(argv)
        with self.log_path.open("ab") as log:
            log.write(f"# harness build in {self.cwd}\n$ {shown}\n".encode())
            log.flush()
            proc = subprocess.Popen(
                argv,
                cwd=self.cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, so the whole tree can be killed
            )
        grace = self.service.stop_timeout
        try:
            status = proc.wait(timeout=max(0.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            kill_group(proc, grace)
            raise _failure(
                shown,
                f"timed out after {self.service.build_timeout:g}s",
                self.log_path,
                "raise service.build_timeout if the build is only slow",
                self.scrub,
            ) from None
        except BaseException:
            kill_group(proc, grace)
            raise
        kill_group(proc, 0.0)  # a success may still have left something in the background
        if status != 0:
            how = (
                f"exited with status {status}" if status > 0 else f"was killed by signal {-status}"
            )
            hint = "fix the build command (service.build) and rerun"
            raise _failure(shown, how, self.log_path, hint, self.scrub)


def _failure(
    command: str, how: str, log_path: Path, hint: str, scrub: Callable[[str], str] = str
) -> BuildError:
    with log_path.open("rb") as f:
        text = scrub(f.read().decode(errors="replace"))
    lines = [clip(line) for line in text.splitlines()[-TAIL_LINES:]]
    hints = [hint]
    # pip: "Package 'x' requires a different Python: 3.11.2 not in '>=3.12'", or, before
    # "No matching distribution found", "Ignored the following versions that require a
    # different python version".
    if any(s in text.lower() for s in _OTHER_PYTHON):
        hints.insert(
            0,
            "pip says the package needs another Python than the venv's: set service.python "
            'to an interpreter it supports (e.g. python = "python3.12", or a path)',
        )
    return BuildError(
        f"build failed: `{clip(command)}` {how} (log: {log_path})",
        [f"last {len(lines)} lines of {log_path}:", *(f"  | {line}" for line in lines), *hints],
    )


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _is_built(slot: Path, key: str, venv: Path | None) -> bool:
    try:
        marker = json.loads((slot / MARKER).read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(marker, dict) or marker.get("key") != key:
        return False
    if marker.get("schema_version") != MARKER_SCHEMA_VERSION:
        return False
    return venv is None or (venv / "bin" / "python").exists()


def tree_bytes(top: Path) -> int:
    """The bytes of every file under `top` (symlinks not followed, each counted once)."""
    total = 0
    for folder, _, files in os.walk(top):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size
    return total


def _recorded_cost(slot: Path) -> tuple[float | None, int | None]:
    """(seconds, output bytes) of the build as its marker recorded them; None where absent."""
    try:
        marker = json.loads((slot / MARKER).read_text())
    except (OSError, ValueError):
        return None, None
    took, wrote = marker.get("seconds"), marker.get("output_bytes")
    return (
        float(took) if isinstance(took, int | float) else None,
        wrote if isinstance(wrote, int) else None,
    )


def _write_marker(
    slot: Path,
    key: str,
    sha_key: str,
    service: ServiceConfig,
    seconds: float,
    python: Interpreter,
    output_bytes: int | None = None,
) -> None:
    record = {
        "schema_version": MARKER_SCHEMA_VERSION,
        "key": key,
        "sha_key": sha_key,
        "command": service.build,
        "venv": service.venv,
        "python": python.version,
        "executable": str(python.path),
        "build_outputs": None if service.build_outputs is None else list(service.build_outputs),
        "platform": platform.platform(),
        "seconds": round(seconds, 3),
        "output_bytes": output_bytes,
    }
    partial = slot / f"{MARKER}.partial"
    partial.write_text(json.dumps(record, sort_keys=True, indent=2) + "\n")
    partial.replace(slot / MARKER)

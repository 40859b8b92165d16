"""The Python a ref's venv is made with: `service.python`, found and identified once.

    found = interpreter("python3.12")   # Interpreter(path=/usr/bin/python3.12, version=...)
    found = interpreter(None)           # the harness's own (sys.executable, sys.version)

`service.python` is a command looked up on the caller's PATH (`python3.12`) or a path to an
interpreter (`/opt/py312/bin/python3`, `~/.pyenv/versions/3.12.3/bin/python`,
`{config_dir}/.venv312/bin/python`); it is run once,
`-c` printing its version and real executable, so its identity (resolved path and full version)
can go into the build key: a venv made with 3.11 is never reused for 3.12, nor after the
interpreter was upgraded in place. An interpreter that cannot be found or does not run is a
ConfigError naming service.python (exit 2), raised before anything is checked out.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from harness.config.values import CONFIG_DIR
from harness.errors import ConfigError

_PROBE = "import sys; print(sys.executable); print(sys.version.replace(chr(10), ' '))"
_PROBE_TIMEOUT = 30.0  # seconds: a first run of an interpreter may compile its site modules


@dataclass(frozen=True)
class Interpreter:
    path: Path  # the command as found (a venv is made with it), absolute
    executable: str  # what it reports as sys.executable
    version: str  # its sys.version, on one line

    @property
    def major_minor(self) -> tuple[int, int]:
        """(3, 11) of a version such as '3.11.7 (main, ...)'; (0, 0) when it does not parse."""
        try:
            major, minor = self.version.split()[0].split(".")[:2]
            return int(major), int(minor)
        except (IndexError, ValueError):
            return (0, 0)

    @property
    def identity(self) -> str:
        """What the build key holds of it."""
        return f"{Path(self.executable).resolve()}\0{self.version}"


def _error(value: str, why: str, hint: str) -> ConfigError:
    return ConfigError(f"service.python = {value!r}: {why}", hint=hint)


@functools.lru_cache(maxsize=32)
def _probe(value: str, path_env: str) -> Interpreter:
    if "/" in value or value.startswith("~"):
        path = Path(value).expanduser()
        if not path.is_absolute():
            raise _error(
                value,
                "a relative path",
                "give a command on PATH (python3.12) or an absolute path to the interpreter",
            )
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise _error(value, f"{path} is not an executable file", "point it at an interpreter")
    else:
        which = shutil.which(value, path=path_env)
        if which is None:
            raise _error(
                value,
                "not found on PATH",
                f"install it, or set service.python to its absolute path (PATH is {path_env})",
            )
        path = Path(which)
    try:
        proc = subprocess.run(
            [str(path), "-c", _PROBE],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=_PROBE_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        why = f"{path} does not run ({exc})"
        raise _error(value, why, "point it at a Python interpreter") from None
    lines = proc.stdout.decode(errors="replace").splitlines()
    if proc.returncode != 0 or len(lines) < 2:
        said = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise _error(
            value,
            f"{path} is not a Python interpreter (`-c` exited {proc.returncode}: {said[0]})",
            "point it at a Python interpreter",
        )
    return Interpreter(path=path.absolute(), executable=lines[0], version=lines[1])


def interpreter(value: str | None, config_dir: Path | None = None) -> Interpreter:
    """`service.python` found and identified (cached per value and PATH); None: the harness's.
    A leading {config_dir} is the configuration file's folder (an interpreter in your tree)."""
    if value is None:
        return Interpreter(Path(sys.executable), sys.executable, sys.version.replace("\n", " "))
    if config_dir is not None and value.startswith(CONFIG_DIR):
        value = str(config_dir.resolve()) + value[len(CONFIG_DIR) :]
    return _probe(value, os.environ.get("PATH", os.defpath))

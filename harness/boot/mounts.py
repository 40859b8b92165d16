"""What a boot's sandbox shows of the host's files, and why a path a command names is not there.

    mounts = plan(root=root, worktree=wt, readable=[venv, *python_paths(python)], bound=[data])
    mounts.argv()                 # the bwrap mount options, in the order they must be applied
    mounts.hiding(path)           # the hidden folder `path` lies in (inside: absent), or None
    hidden_names(command, cwd=wt, path_env=PATH, mounts=mounts)   # [(word, path, folder)]
    hidden_within(path)           # the hidden folder `path` is or holds (data must not), or None

Inside, the host's filesystem is read-only, and these are empty read-only tmpfs: every place
a host process keeps its sockets or its secrets (`HOST_HIDDEN`: /tmp, /var (with /var/tmp,
/var/run, /var/lib), /run, each real home, $XDG_RUNTIME_DIR); /dev is bubblewrap's own (its
/dev/shm empty, and the sandbox's own to write). Then what the service must see is mounted
back read-only where it lies: the worktree, the build's venv, the folders of the service's
interpreter (`python_paths`, asked of the interpreter itself: its prefixes, the links to its
executable, its sys.path and the shared objects it maps), the Python running the harness; and
`bound`, bound read-only where it lies wherever that is (service.data used in place: no copy).
Last, the boot's root writable, and /dev/null over every listening Unix socket of the host
still visible (read from /proc/net/unix), so a socket a host process binds in the repository
or in /opt cannot be reached either.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import pwd
import shlex
import stat
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

HOST_HIDDEN = ("/tmp", "/var", "/run")
"""Host folders that are an empty tmpfs inside, whoever runs the harness."""

_MAX_HOPS = 40  # symlinks followed in one chain, as the kernel's own limit
_PROBE_TIMEOUT_S = 30.0  # the service's interpreter asked where it lives, once per process

# Printed by the service's interpreter, outside the sandbox: every folder it reads at start.
_PYTHON_PROBE = """
import json, sys
maps = []
try:
    with open("/proc/self/maps") as f:
        maps = sorted({l.split(None, 5)[5].strip() for l in f if len(l.split(None, 5)) == 6})
except OSError:
    pass
print(json.dumps({"prefixes": [sys.prefix, sys.base_prefix, sys.exec_prefix,
                               sys.base_exec_prefix], "executable": sys.executable,
                  "path": sys.path, "maps": [m for m in maps if m.startswith("/")]}))
"""


def homes() -> list[Path]:
    """The real home directories to hide: $HOME and the password database's, when they exist."""
    found = []
    with_home = os.environ.get("HOME")
    if with_home:
        found.append(Path(with_home))
    with contextlib.suppress(KeyError):  # a uid with no passwd entry
        found.append(Path(pwd.getpwuid(os.getuid()).pw_dir))
    resolved = [p.resolve() for p in found if p.is_dir()]
    return [p for p in dict.fromkeys(resolved) if p != Path("/")]


def _outermost(paths: Iterable[Path]) -> tuple[Path, ...]:
    """`paths` without those inside another of them, shortest first (parents mount first)."""
    kept: list[Path] = []
    for path in sorted(dict.fromkeys(paths), key=lambda p: (len(p.parts), str(p))):
        if not any(path.is_relative_to(k) for k in kept):
            kept.append(path)
    return tuple(kept)


@dataclass(frozen=True)
class Mounts:
    """The filesystem of one sandbox (see the module docstring for the order)."""

    hidden: tuple[Path, ...]  # empty tmpfs inside
    links: tuple[tuple[str, Path], ...]  # (target, link): symlinks recreated in a hidden folder
    back: tuple[Path, ...]  # inside a hidden folder, mounted back read-only
    writable: Path  # the boot's root
    sockets: tuple[Path, ...]  # listening host sockets left visible: /dev/null over each
    bound: tuple[Path, ...] = ()  # bound read-only where they lie, hidden folder or not
    # Inside the boot's root, fresh tmpfs of at most `scratch_bytes` each (HOME, TMPDIR, XDG_*),
    # and so is /dev/shm; None: no tmpfs (the root's folders on disk, /dev/shm unbounded).
    scratch: tuple[Path, ...] = ()
    scratch_bytes: int | None = None
    files: tuple[tuple[Path, Path], ...] = ()  # (source, where): files bound read-only over

    def argv(self) -> list[str]:
        argv = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        # The kernel's settings read-only, whatever uid the service has (a uid 0 that could
        # not be left behind writes them: their check is the uid alone).
        argv += ["--ro-bind", "/proc/sys", "/proc/sys"]
        argv += ["--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger"]
        if self.scratch_bytes is not None:
            argv += ["--size", str(self.scratch_bytes), "--perms", "1777", "--tmpfs", "/dev/shm"]
        for path in self.hidden:
            argv += ["--tmpfs", str(path)]
        for target, link in self.links:
            argv += ["--symlink", target, str(link)]
        # The folders leading to what is mounted back into a hidden one are made here, open to
        # all (bwrap would make them 0700, its own: a service that is not uid 0 could not pass).
        for folder in self._leading():
            argv += ["--perms", "0755", "--dir", str(folder)]
        for path in (*self.back, *self.bound):
            argv += ["--ro-bind", str(path), str(path)]
        argv += ["--bind", str(self.writable), str(self.writable)]
        for path in self.scratch if self.scratch_bytes is not None else ():
            argv += ["--size", str(self.scratch_bytes), "--perms", "0700", "--tmpfs", str(path)]
        for source, where in self.files:
            argv += ["--ro-bind", str(source), str(where)]
        for sock in self.sockets:
            argv += ["--ro-bind", "/dev/null", str(sock)]
        for path in self.hidden:  # read-only once what lies in it is mounted (not recursive)
            argv += ["--remount-ro", str(path)]
        return argv

    def _leading(self) -> list[Path]:
        """The folders between a hidden folder and each path mounted into it, parents first."""
        found: dict[Path, None] = {}
        for path in (*self.back, *self.bound, self.writable):
            hidden = next((h for h in self.hidden if path.is_relative_to(h) and path != h), None)
            if hidden is None:
                continue
            for parent in reversed(path.parents):
                if parent.is_relative_to(hidden) and parent != hidden:
                    found[parent] = None
        return list(found)

    def hiding(self, path: Path) -> Path | None:
        """The hidden folder that makes `path` (absolute, its folder resolved) absent inside."""
        shown = (self.writable, *self.back, *self.bound)
        if any(path.is_relative_to(b) for b in shown):
            return None
        return next((h for h in self.hidden if path.is_relative_to(h)), None)


def plan(
    *,
    root: Path,
    worktree: Path,
    readable: Iterable[Path] = (),
    hide: Iterable[Path] | None = None,
    bound: Iterable[Path] = (),
    scratch: Iterable[Path] = (),
    scratch_bytes: int | None = None,
    files: Iterable[tuple[Path, Path]] = (),
) -> Mounts:
    """The mounts of one boot: `HOST_HIDDEN`, $XDG_RUNTIME_DIR and `hide` (default `homes()`)
    hidden; the worktree and `readable` mounted back where they lie in a hidden folder;
    `bound` (resolved, existing; never a hidden folder or one holding one: `hidden_within`)
    bound read-only where it lies; each of `scratch` (folders of `root`) and /dev/shm a tmpfs
    of `scratch_bytes`, when given; `files`, (source, where) pairs, bound read-only."""
    asked = _hidden_asked(hide)
    hidden = _outermost(asked)
    links = []
    for folder in hidden:  # /var/run -> /run: the links of a hidden folder still lead somewhere
        with contextlib.suppress(OSError):
            for entry in os.scandir(folder):
                if entry.is_symlink():
                    links.append((os.readlink(entry.path), Path(entry.path)))
    wanted = [Path(p).resolve() for p in (worktree, *readable)]
    # Never a hidden folder itself or one holding it (a home given as config_dir, /tmp as
    # the folder of a deleted file the interpreter maps): mounted back, it would hide nothing.
    wanted = [
        p
        for p in wanted
        if p.exists()
        and any(p.is_relative_to(h) for h in hidden)
        and not any(h.is_relative_to(p) for h in asked)
    ]
    binds = tuple(dict.fromkeys(Path(p).resolve() for p in bound))
    mounts = Mounts(hidden, tuple(links), _outermost(wanted), Path(root).resolve(), (), binds)
    sockets = [s for s in _host_sockets() if _visible(s, mounts)]
    return dataclasses.replace(
        mounts,
        sockets=tuple(sockets),
        scratch=tuple(mounts.writable / Path(p).name for p in scratch),
        scratch_bytes=scratch_bytes,
        files=tuple(files),
    )


def _hidden_asked(hide: Iterable[Path] | None) -> list[Path]:
    """The folders a sandbox hides: `HOST_HIDDEN`, $XDG_RUNTIME_DIR, `hide` (default: `homes()`),
    resolved, existing, never /."""
    extra = homes() if hide is None else [Path(p).resolve() for p in hide]
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    named = [Path(p) for p in HOST_HIDDEN] + ([Path(runtime)] if runtime else [])
    system = [p.resolve() for p in named if p.is_dir()]
    return [p for p in [*system, *extra] if p != Path("/")]


def hidden_within(path: Path) -> Path | None:
    """The folder a sandbox hides (`_hidden_asked`) that `path` (resolved) is or holds, or
    None: data handed to a service whole must not be a home, /tmp or /run, nor /."""
    return next((h for h in _hidden_asked(None) if h.is_relative_to(path)), None)


def _visible(path: Path, mounts: Mounts) -> bool:
    if any(path.is_relative_to(p) for p in (mounts.writable, Path("/dev"), Path("/proc"))):
        return False  # the boot's own root, /dev and /proc: nothing of the host's is there
    return mounts.hiding(path) is None


def _host_sockets() -> list[Path]:
    """The filesystem paths of the Unix sockets this network namespace's processes bound (a
    socket bound in another namespace is not listed: see the README)."""
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="replace") as table:
            rows = table.read().splitlines()[1:]
    except OSError:
        return []
    found = []
    for row in rows:
        fields = row.split(None, 7)
        if len(fields) == 8 and fields[7].startswith("/"):
            path = Path(fields[7])
            with contextlib.suppress(OSError, ValueError):
                if stat.S_ISSOCK(path.lstat().st_mode):
                    found.append(path.parent.resolve() / path.name)
    return sorted(set(found))


@functools.lru_cache(maxsize=32)
def python_paths(python: str) -> tuple[Path, ...]:
    """The folders `python` needs at start, asked of it (run once, outside the sandbox): its
    sys.prefix and base prefixes (a venv's base from pyvenv.cfg: pyenv, uv, conda alike), the
    folder of each link to its executable, its sys.path and every shared object it maps.
    Empty when it does not run here either (the boot's error then says why)."""
    paths = [p.parent for p in chain(Path(python))]
    try:
        done = subprocess.run(
            [python, "-I", "-c", _PYTHON_PROBE],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            cwd="/",
            timeout=_PROBE_TIMEOUT_S,
            check=False,
        )
        told = json.loads(done.stdout) if done.returncode == 0 else {}
    except (OSError, subprocess.TimeoutExpired, ValueError):
        told = {}
    if not isinstance(told, dict) or not told:
        return ()
    named = [*_absolute(told.get("prefixes")), *_absolute(told.get("path"))]
    named += [m.parent for m in _absolute(told.get("maps")) if not m.name.endswith(")")]
    for executable in _absolute([told.get("executable")]):
        paths += [p.parent for p in chain(executable)]
    return tuple(dict.fromkeys(p.resolve() for p in [*paths, *named] if p.is_dir()))


def _absolute(told: object) -> list[Path]:
    """The absolute paths in a list the interpreter printed (anything else ignored)."""
    items = told if isinstance(told, list) else []
    return [Path(p) for p in items if isinstance(p, str) and p.startswith("/")]


def own_paths(helper: Path) -> tuple[Path, ...]:
    """The Python running the harness and the helper's folder, as `python_paths` would say."""
    paths = [Path(sys.prefix), Path(sys.base_prefix), helper.parent]
    paths += [p.parent for p in chain(Path(sys.executable))]
    return tuple(dict.fromkeys(p.resolve() for p in paths))


def chain(path: Path) -> list[Path]:
    """`path` and each symlink it leads through, every one with its folder resolved."""
    hops: list[Path] = []
    current = Path(os.path.abspath(path))
    for _ in range(_MAX_HOPS):
        current = current.parent.resolve() / current.name
        hops.append(current)
        if not current.is_symlink():
            break
        target = os.readlink(current)
        current = Path(os.path.normpath(current.parent / target))
    return hops


def _shebang(path: Path) -> Path | None:
    with contextlib.suppress(OSError):
        with open(path, "rb") as script:
            first = script.readline(512)
        if first.startswith(b"#!") and first[2:].split():
            return Path(os.fsdecode(first[2:].split()[0]))
    return None


def _hidden_hop(path: Path, mounts: Mounts) -> tuple[Path, Path] | None:
    """(the first hop of `path`'s links, or of its `#!` interpreter's, that is hidden inside,
    the folder hiding it), or None when every hop is there."""
    hops = chain(path)
    interpreter = _shebang(hops[-1])
    if interpreter is not None and interpreter.is_absolute():
        hops += chain(interpreter)
    for hop in hops:
        folder = mounts.hiding(hop)
        if folder is not None:
            return hop, folder
    return None


def hidden_names(
    command: str, *, cwd: Path, path_env: str, mounts: Mounts
) -> list[tuple[str, Path, Path]]:
    """(word, path, hidden folder) for each word of `command` naming a path that exists here
    (a file, a link to follow, a script's `#!` interpreter, a command found on `path_env` as
    the sandbox's shell would look it up: only when no entry of PATH has it inside) but is
    hidden inside the sandbox."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    found = []
    for word in words:
        if word.startswith("-") or "=" in word.split("/")[0]:
            continue  # an option or an assignment: its value is not looked up
        if "/" in word:
            where = cwd / word
            hidden = _hidden_hop(where, mounts) if os.path.lexists(where) else None
        else:
            hidden = _on_path(word, path_env, mounts)
        if hidden is not None:
            found.append((word, *hidden))
    return found


def _on_path(word: str, path_env: str, mounts: Mounts) -> tuple[Path, Path] | None:
    first = None
    for folder in path_env.split(os.pathsep):
        candidate = Path(folder or ".") / word
        if not (candidate.is_file() and os.access(candidate, os.X_OK)):
            continue
        hidden = _hidden_hop(candidate, mounts)
        if hidden is None:
            return None  # the shell inside finds this one
        first = first or hidden
    return first


def not_inside(
    command: str, status: int, log: str, where: tuple[Path, str, Mounts] | None
) -> tuple[str, list[str]]:
    """For a command that failed in a sandbox (`where`: its cwd, PATH and mounts; None: no
    sandbox) with `status` and `log`: what to add to its error message and the hints. The
    message says a hidden path is why only when the command could not start (status 126 or
    127, or "No such file" in its log); otherwise the hidden path is one hint among others."""
    if where is None:
        return "", []
    cwd, path_env, mounts = where
    found = hidden_names(command, cwd=cwd, path_env=path_env, mounts=mounts)
    if not found:
        return "", []
    word, path, folder = found[0]
    why = f"{path} exists outside the sandbox but not inside it"
    why += f" (`{word}` leads there, and the sandbox hides {folder})"
    hints = [
        f"inside the sandbox {', '.join(str(h) for h in mounts.hidden)} are empty but for "
        "the worktree, the build's venv, the service's interpreter and {config_dir}; start "
        "it with {python}, put what it runs outside them, or run without the sandbox "
        "(HARNESS_SANDBOX=off)",
        *(f"{w} leads to {p}, hidden too" for w, p, _ in found[1:]),
    ]
    if status in (126, 127) or "no such file" in log.lower():
        return f"; {why}", hints
    return "", [f"maybe: {why}", *hints]

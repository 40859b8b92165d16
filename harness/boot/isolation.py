"""What a service or a build runs in: an allowlisted environment, a throwaway root, placeholders.

    root = new_root(parent, run_id)            # one per boot, recorded before it exists
    root_env, data = fill_root(root, data_source(spec, worktree))
    env = allowlisted_env(os.environ, isolation=root_env, pass_env=spec.pass_env,
                          pins=pins, run_id=run_id)    # the one allowlist: service and build
    command = expand_placeholders(spec.start, values, key="start")
    leftovers.remove_tree(root)                        # at teardown

The environment. Nothing of the caller's comes through but PATH, LANG, TZ and LC_* (the build
adds PIP_*, so pip's index and certificate settings reach it) and the names the user lists in
`service.pass_env`: no tokens, no AWS_*, not even HOME. HOME, TMPDIR and XDG_* point into a
throwaway root, `service.env` pins override everything, and MARKER_ENV=run_id, which nothing can
override, is how a service's orphans are found at teardown (`harness.boot.processes.find_marked`).

The throwaway root (one per boot) holds home, tmp, xdg/{config,cache,data,state,runtime} and a
fresh copy of `service.data` (data_mode "copy"); it is removed at teardown. Data used in place
(data_mode "read-only", the default for an absolute path outside the repository) is not copied:
the sandbox binds it read-only where it lies, and plain isolation, which cannot, takes it only
when the service's user could not write it anyway (`writable_part`). The build makes its own,
smaller one (HOME and TMPDIR only) under the cache dir.

Placeholders, in `start`, `prepare` and `env` values: the names of
`harness.config.COMMAND_PLACEHOLDERS`, with str.format syntax; `{{` and `}}` are literal braces.
`start` and `prepare` may also name a `service.env` pin, {RRF_K}, which expands to the pin's value
(its own placeholders expanded first); the harness's names win a clash. Anything else is a
ConfigError naming the placeholder and the key, raised before anything starts.
"""

from __future__ import annotations

import os
import shlex
import shutil
import string
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType

from harness.config import COMMAND_PLACEHOLDERS, ServiceConfig
from harness.config.templates import no_format_spec
from harness.errors import ConfigError, Problem
from harness.process import leftovers
from harness.text.scrub import Scrubber, registered, scrub_log

MARKER_ENV = "HARNESS_RUN_ID"
"""Set in every service's environment to the boot's run id; how orphans are found at teardown."""

ALLOWED_ENV = frozenset({"PATH", "LANG", "TZ"})  # and every name with an ALLOWED_PREFIXES prefix
ALLOWED_PREFIXES = ("LC_",)
NO_ENV: Mapping[str, str] = MappingProxyType({})
DEFAULT_MAX_LOG_BYTES = 16 << 20  # service.max_log_bytes's default


def allowlisted_env(
    caller: Mapping[str, str],
    *,
    isolation: Mapping[str, str],
    pass_env: Iterable[str] = (),
    extra: Mapping[str, str] = NO_ENV,
    pins: Mapping[str, str] = NO_ENV,
    run_id: str | None = None,
    also_prefixes: tuple[str, ...] = (),
) -> dict[str, str]:
    """A whole environment for a child process, later layers overriding earlier ones:

    1. from `caller`, only PATH, LANG, TZ and names starting with LC_ or one of `also_prefixes`;
    2. `isolation` (HOME, TMPDIR, XDG_*, PYTHON* set by the harness);
    3. each name in `pass_env` that is set in `caller` (an explicit user choice, so it may
       override 2); a name not set there is simply absent;
    4. `extra` (the build stage's venv PATH and VIRTUAL_ENV);
    5. `pins` (service.env, placeholders already expanded): override anything;
    6. MARKER_ENV=run_id when a run id is given, which cannot be overridden.
    """
    prefixes = (*ALLOWED_PREFIXES, *also_prefixes)
    env = {k: v for k, v in caller.items() if k in ALLOWED_ENV or k.startswith(prefixes)}
    env.update(isolation)
    env.update({name: caller[name] for name in pass_env if name in caller})
    env.update(extra)
    env.update(pins)
    if run_id is not None:
        env[MARKER_ENV] = run_id
    return env


# --------------------------------------------------------------------------- secrets

SCRUB_MIN_CHARS = 4  # shorter values ("1", "on", "C") would mangle every excerpt
_NOT_SECRETS = frozenset({"PWD", "OLDPWD", "_", "SHLVL"})  # paths of the caller's shell


def removed_values(caller: Mapping[str, str], env: Mapping[str, str]) -> dict[str, str]:
    """The value of every variable of `caller` that the allowlist left out of `env`, mapped to
    `[NAME scrubbed]` (values of SCRUB_MIN_CHARS or more, and none that `env` holds too)."""
    kept = set(env.values())
    return {
        value: f"[{name} scrubbed]"
        for name, value in caller.items()
        if name not in env
        and name not in _NOT_SECRETS
        and len(value) >= SCRUB_MIN_CHARS
        and value not in kept
    }


def scrubber(caller: Mapping[str, str], env: Mapping[str, str]) -> Scrubber:
    """A Scrubber (call it on a text, or stream a file through it) replacing every value the
    allowlist left out of `env` by `[NAME scrubbed]`, and every credential this process
    registered (`harness.text.scrub`: a URL's password, an Authorization header) by `[scrubbed]`;
    the longest first, so one secret containing another is scrubbed whole. For logs and log
    excerpts: a token the harness kept from a service must not come back through its output."""
    return Scrubber.of_text({**removed_values(caller, env), **registered()})


def scrub_file(path: Path, scrub: Scrubber, *, limit: int = DEFAULT_MAX_LOG_BYTES) -> None:
    """Rewrite `path` (a boot's or build's log under results/logs) scrubbed, by stream whatever
    its size, and cut to its last `limit` bytes (service.max_log_bytes) under a line that says
    so; atomically, best effort."""
    scrub_log(path, scrub, limit=limit, key="service.max_log_bytes")


# --------------------------------------------------------------------------- placeholders


def _problem(key: str, message: str) -> Problem:
    return Problem("service", message, field=key)


def _placeholder_problems(
    text: str, key: str, known: Iterable[str], data_set: bool, pins: Iterable[str] = ()
) -> list[Problem]:
    try:
        fields = [(name, (conv, spec)) for _, name, spec, conv in string.Formatter().parse(text)]
    except ValueError as exc:
        return [_problem(key, f"{exc} in {text!r}; write {{{{ and }}}} for literal braces")]
    known, pins = frozenset(known), frozenset(pins)
    problems = []
    for name, extra in fields:
        if name == "data" and not data_set:
            problems.append(_problem(key, "{data} is used but service.data is not set"))
        elif name is not None and name not in known and name not in pins and extra[1]:
            # `${VAR:-default}`: a shell's expansion, read as {VAR} with a :format spec
            problems.append(_problem(key, no_format_spec(name, extra[0] or "", extra[1])))
        elif name is not None and name not in known and name not in pins:
            message = f"unknown placeholder {{{name}}}; known: " + " ".join(
                f"{{{k}}}" for k in [*sorted(COMMAND_PLACEHOLDERS), *sorted(pins)]
            )
            if not key.startswith("env."):
                message += f"; or pin {name} in service.env"
            message += "; write {{ and }} for literal braces (a shell's ${X} is ${{X}})"
            problems.append(_problem(key, message))
        elif name is not None and (extra[0] or extra[1]):
            problems.append(_problem(key, no_format_spec(name, extra[0] or "", extra[1] or "")))
    return problems


def check_placeholders(spec: ServiceConfig) -> None:
    """Raise ConfigError listing every bad placeholder in start, prepare and env values (and a
    pinned MARKER_ENV), before anything is started. Start and prepare may also name the keys of
    `spec.env`; env values only COMMAND_PLACEHOLDERS."""
    problems: list[Problem] = []
    commands = [("start", spec.start)]
    commands += [(f"prepare[{i}]", cmd) for i, cmd in enumerate(spec.prepare)]
    data_set = spec.data is not None
    for key, text in commands:
        problems += _placeholder_problems(text, key, COMMAND_PLACEHOLDERS, data_set, spec.env)
    for name, value in spec.env.items():
        problems += _placeholder_problems(value, f"env.{name}", COMMAND_PLACEHOLDERS, data_set)
    if MARKER_ENV in spec.env:
        problems.append(_problem(f"env.{MARKER_ENV}", "reserved for the harness; remove it"))
    if problems:
        raise ConfigError("service: bad placeholders in the configuration", problems)


def expand_placeholders(text: str, values: Mapping[str, str], *, key: str) -> str:
    """`text` with each {name} replaced by values[name]; ConfigError on an unknown name.

    For start and prepare, `values` holds the pins too (`command_values`)."""
    problems = _placeholder_problems(text, key, values, "data" in values)
    if problems:
        raise ConfigError("service: bad placeholders in the configuration", problems)
    return text.format_map(values)


def command_values(own: Mapping[str, str], pins: Mapping[str, str]) -> dict[str, str]:
    """What {name} in start and prepare expands to: the harness's own values and the pins (their
    placeholders already expanded), each shlex-quoted; the harness's own win a name clash."""
    return {name: shlex.quote(value) for name, value in {**pins, **own}.items()}


# --------------------------------------------------------------------------- the throwaway root


def data_source(
    spec: ServiceConfig,
    worktree: Path,
    config_dir: Path | None = None,
    *,
    sandbox: str | None = None,
) -> Path | None:
    """Where `spec.data` is: relative to `worktree`, or to `config_dir` (the configuration file's
    folder, the user's tree) when it starts with {config_dir}, where it must stay; or an
    absolute path (or ~/...) kept outside the repository, resolved. ConfigError if it is
    missing, leads out of its tree, is or holds a folder the sandbox hides, or is to be used
    read-only where nothing can make it so (`sandbox` "plain", default: `sandbox_mode()`, and
    data the service's user can write: `writable_part`)."""
    if spec.data is None:
        return None
    from harness.config.loader import outside
    from harness.config.values import CONFIG_DIR, DATA_READ_ONLY, data_mode, outside_data

    if outside_data(spec.data):
        src = _outside_source(spec.data)
    else:
        root, whose = worktree, "the ref's worktree"
        if spec.data.startswith(CONFIG_DIR):
            if config_dir is None:
                raise ConfigError(
                    "service: {config_dir} in data, but no configuration folder given"
                )
            root, whose = config_dir, "the configuration's folder"
            src = config_dir / (spec.data.removeprefix(CONFIG_DIR).lstrip("/") or ".")
        else:
            src = worktree / spec.data
        why = outside(src, root)
        if why is None:
            why = _link_out(src, root)
        if why is not None:
            raise ConfigError(
                f"service: the data to copy for each boot is not inside {whose}",
                [_problem("data", why + "; service.data must be a path inside the repository")],
            )
        if not src.exists():
            why = f"{src} does not exist (a relative path is taken from {whose})"
            raise ConfigError("service: no data to copy for each boot", [_problem("data", why)])
    if data_mode(spec) == DATA_READ_ONLY:
        _check_read_only(src, sandbox)
    return src


def _outside_source(data: str) -> Path:
    """An absolute service.data (or ~/...), resolved: it must exist and must not be, or hold, a
    folder the sandbox hides (a home, /tmp, /run: what a service must never be handed)."""
    from harness.boot.mounts import hidden_within
    from harness.config.loader import expand_user

    src = expand_user(data)
    if not src.is_absolute():
        why = f"{data}: that home is not known here; write the absolute path"
        raise ConfigError("service: no data at the path given", [_problem("data", why)])
    if not src.exists():
        why = (
            f"{src} does not exist: give the absolute path of the folder or file that holds "
            "the data (is its disk mounted?)"
        )
        raise ConfigError("service: no data at the path given", [_problem("data", why)])
    src = src.resolve()
    hidden = hidden_within(src)
    if hidden is not None:
        what = "is" if hidden == src else f"holds {hidden},"
        why = (
            f"{src} {what} a folder the sandbox hides (the host's homes, sockets and secrets); "
            "name the folder inside it that holds the data"
        )
        raise ConfigError("service: the data would expose the host", [_problem("data", why)])
    return src


def _check_read_only(src: Path, sandbox: str | None) -> None:
    """Read-only data in plain isolation: the service runs as this user, so only data this
    user cannot write (or change the mode of) stays read-only; anything else is refused."""
    from harness.boot.sandbox import PLAIN, sandbox_mode

    if (sandbox or sandbox_mode()) != PLAIN:
        return  # bound read-only by bubblewrap
    found = writable_part(src)
    if found is None:
        return
    why = (
        f"{found} is writable by this user ({_user()}), and without the bubblewrap sandbox the "
        "service runs as this user: nothing keeps it from changing the data between boots"
    )
    raise ConfigError(
        "service: read-only data needs the sandbox here",
        [_problem("data", why)],
        hint="run with bubblewrap (unset HARNESS_SANDBOX=off; apt-get install bubblewrap), "
        "make the data read-only for this user (mount it read-only, or chown it to another "
        'user and chmod -R go-w), or set service.data_mode = "copy" (a fresh copy per boot)',
    )


def writable_part(src: Path) -> Path | None:
    """The first file or folder under `src` that this process's user could change: on a
    filesystem mounted read-write, writable by it (`access(2)`: root may write anything) or
    owned by it (an owner may chmod); None when there is none."""
    from harness.config.manifest import walk

    me = os.geteuid()
    for _, path in [("", src), *walk(src, folders=True)]:
        try:
            info = path.stat()
            if os.statvfs(path).f_flag & os.ST_RDONLY:
                continue
        except OSError:
            continue  # gone or unreadable: the service cannot write it either
        if os.access(path, os.W_OK) or info.st_uid == me:
            return path
    return None


def _user() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return f"uid {os.geteuid()}"


def _link_out(src: Path, worktree: Path) -> str | None:
    """The first symlink under `src` that leads outside `worktree` (or nowhere), named."""
    root = worktree.resolve()
    if not src.is_dir():
        return None
    for folder, dirs, files in os.walk(src):
        for name in (*dirs, *files):
            path = Path(folder) / name
            if path.is_symlink():
                target = path.resolve()
                if not target.is_relative_to(root):
                    return f"{path} is a symlink to {target}, outside the worktree"
    return None


def new_root(parent: Path | None, run_id: str) -> Path:
    """A new empty boot root under `parent` (default: the temp dir), in the leftovers state
    (kind "dir", with the boot's `run_id` in the same rewrite) from before it exists until the
    caller untracks it, after `remove_tree`: no signal can leave it made and unrecorded, and a
    SIGKILL leaves it to the next `recover()`. Assign it before anything else runs
    (`self._root = new_root(...)`): the teardown that removes it is the one that knows of it."""
    parent = Path(tempfile.gettempdir()) if parent is None else parent
    return leftovers.make_dir("dir", parent, "harness-svc-", also=[("run_id", run_id)])


ROOT_DIRS = {
    "HOME": "home",
    "TMPDIR": "tmp",
    "XDG_CONFIG_HOME": "xdg/config",
    "XDG_CACHE_HOME": "xdg/cache",
    "XDG_DATA_HOME": "xdg/data",
    "XDG_STATE_HOME": "xdg/state",
    "XDG_RUNTIME_DIR": "xdg/runtime",
}
"""The folders of a boot's root a service writes, by the variable that names each."""
SCRATCH = ("home", "tmp", "xdg")
"""The root's folders (all of `ROOT_DIRS`, not the data copy) the sandbox makes a bounded tmpfs."""


def fill_root(root: Path, data_src: Path | None) -> tuple[dict[str, str], Path | None]:
    """Home, tmp, xdg/* and the data copy made in `root`; its isolation env; the copy's path.
    On failure what was made stays for the caller's `leftovers.remove_tree(root)`.

    A data directory is copied to root/data, a data file to root/data/<its name>.
    """
    dirs = {name: root / relative for name, relative in ROOT_DIRS.items()}
    for path in dirs.values():
        path.mkdir(parents=True, mode=0o700)
    data = None
    if data_src is not None:
        if data_src.is_dir():
            data = Path(shutil.copytree(data_src, root / "data"))
        else:
            (root / "data").mkdir()
            data = Path(shutil.copy2(data_src, root / "data" / data_src.name))
    env = {name: str(path) for name, path in dirs.items()}
    # No __pycache__ written into the checked-out worktree (it must stay as git made it), and no
    # block-buffered stdout, so the log tail of a crash holds its last words.
    env |= {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"}
    return env, data


def give_root(root: Path, ids: tuple[int, int]) -> None:
    """Make `root` and all in it (the data copy) belong to the service's own uid and gid, so a
    service that is not the harness's user may write there; links are not followed."""
    uid, gid = ids
    os.chown(root, uid, gid)
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            os.lchown(os.path.join(folder, name), uid, gid)


def account_files(root: Path, ids: tuple[int, int], home: str) -> list[tuple[Path, Path]]:
    """The host's /etc/passwd and /etc/group with an account for the service's own uid and gid
    added (a program that looks its user up, `whoami`, `getpass.getuser()`, initdb, finds one),
    written into `root` (owned by the harness: the service cannot change them) and paired with
    where the sandbox binds them."""
    uid, gid = ids
    made = []
    for name, line in (
        ("passwd", f"harness:x:{uid}:{gid}:harness service:{home}:/bin/sh\n"),
        ("group", f"harness:x:{gid}:\n"),
    ):
        try:
            host = Path("/etc", name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            host = ""
        if host and not host.endswith("\n"):
            host += "\n"
        path = root / f".{name}"
        path.write_text(host + line, encoding="utf-8")
        path.chmod(0o644)
        made.append((path, Path("/etc", name)))
    return made

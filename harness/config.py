"""harness.toml (or [tool.harness] in pyproject.toml): loaded strictly into frozen values.

    load_config(path=None, *, repo=None, cwd=None) -> HarnessConfig
    side_hash(side) -> str                 what makes two runs of one side comparable
    substitute(template, values) -> str    literal {name} substitution, shared with the stages

Discovery: with no path, `harness.toml` in cwd, then `pyproject.toml` there if it has a
`[tool.harness]` table. `gold.path` and `gold.corpus` are relative to the config file's directory
(the caller's tree: a candidate branch can never edit what it is measured against);
`service.data` stays a string, relative to each ref's worktree.

Validation reads the whole file before failing and raises one ConfigError listing every problem
(unknown keys with a "did you mean", wrong types, missing required keys, bad values, JMESPath that
does not compile, unknown placeholders), each located as file:line: field. Integers are accepted
where a float is expected; booleans are never integers.

Placeholders. `start`, `prepare` and `env` values are expanded by the service stage with
str.format syntax: {port} {url} {data} {home} {worktree} {python}, `{{` and `}}` for literal
braces, no positional `{}`, no !conversion or :format; {data} needs service.data. `build` runs
before any service exists and is not expanded, so a known placeholder in it is an error. Request
templates (`params`, `headers`, strings in `json`) take {query} and {limit}, filled literally by
`substitute`, since the text filled in is the user's query.

Per-side overrides: `[baseline.service]`, `[baseline.query]`, `[candidate.service]` and
`[candidate.query]` take the same keys as the base sections, all optional, and override them key
by key. The tables `env`, `params` and `headers` are merged key by key too (a side can change one
parameter; it cannot remove one), while `json` (a whole body template) and the arrays `prepare`
and `pass_env` are replaced wholesale.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
import string
import tomllib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import jmespath
import jmespath.exceptions

from harness.errors import ConfigError, Problem

COMMAND_PLACEHOLDERS = frozenset({"port", "url", "data", "home", "worktree", "python"})
REQUEST_PLACEHOLDERS = frozenset({"query", "limit"})
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def substitute(template: str, values: Mapping[str, str]) -> str:
    """Replace each `{name}` whose name is in `values`, in one literal pass.

    Inserted text is never scanned again (a query containing "{limit}" stays as typed), and any
    other brace, such as `{}` or `{"a": 1}` in a shell command, is left alone.
    """

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        return values[name] if name in values else match.group(0)

    return _PLACEHOLDER.sub(fill, template)


# --------------------------------------------------------------------------- the values


@dataclass(frozen=True)
class ServiceConfig:
    """How to build, boot, prepare and tear down one ref's service. Every timeout lives here."""

    start: str  # command; placeholders {port} {url} {data} {home} {worktree} {python}
    ready: str  # path GET until 2xx, e.g. "/health"
    build: str | None = None  # run once per commit inside the worktree, cached
    venv: bool = False  # a per-commit virtualenv that build and start use
    data: str | None = None  # copied fresh for every boot; {data} is the copy
    prepare: tuple[str, ...] = ()  # run after ready, before queries
    env: Mapping[str, str] = field(default_factory=dict)  # pins: override anything
    pass_env: tuple[str, ...] = ()  # names allowed through from the caller's environment
    ready_timeout: float = 60.0  # seconds until `ready` must answer 2xx
    build_timeout: float = 1800.0
    prepare_timeout: float = 600.0
    stop_timeout: float = 10.0  # grace between SIGTERM and SIGKILL


@dataclass(frozen=True)
class QueryConfig:
    """How to ask the service one gold query and where the ranked ids are in its answer."""

    path: str
    ids: str  # JMESPath to the ranked ids
    method: str = "GET"  # or "POST"
    params: Mapping[str, str] = field(default_factory=dict)  # placeholders {query} {limit}
    json: Mapping[str, object] | None = None  # POST body template, same placeholders
    headers: Mapping[str, str] = field(default_factory=dict)  # same placeholders
    scores: str | None = None  # JMESPath to the scores, optional
    limit: int = 10
    timeout: float = 10.0  # seconds per query (httpx: per connect/read/write phase)
    warmup: int = 3  # queries sent first and not recorded


@dataclass(frozen=True)
class SideConfig:
    """The effective configuration of one side (base sections plus [baseline.*] / [candidate.*])."""

    service: ServiceConfig
    query: QueryConfig


@dataclass(frozen=True)
class CompareConfig:
    repeats: int = 3
    k: tuple[int, ...] = (5, 10)
    alpha: float = 0.05
    latency_tolerance: float = 0.10  # a latency ratio within 1 +/- this is "no difference"
    max_errors: int = 0  # errored queries tolerated before the verdict is "invalid"
    seed: int = 0  # for bootstrap and randomization tests


@dataclass(frozen=True)
class HarnessConfig:
    path: Path  # the config file it was read from (always the caller's tree)
    repo: Path
    gold: Path
    corpus: Path | None
    baseline: SideConfig
    candidate: SideConfig
    compare: CompareConfig = field(default_factory=CompareConfig)

    def side(self, name: str) -> SideConfig:
        if name not in ("baseline", "candidate"):
            raise ValueError(f"side must be 'baseline' or 'candidate', not {name!r}")
        side: SideConfig = getattr(self, name)
        return side

    @property
    def sides_differ(self) -> bool:
        return self.baseline != self.candidate

    def differences(self) -> list[str]:
        """Sorted keys whose effective values differ between the sides, e.g. "query.params.q".

        Entries of `env`, `params` and `headers` are named one by one; `json` is one value.
        """
        base, cand = dict(_flat(self.baseline)), dict(_flat(self.candidate))
        missing = object()
        return sorted(
            k for k in base.keys() | cand.keys() if base.get(k, missing) != cand.get(k, missing)
        )


def _flat(side: SideConfig) -> Iterator[tuple[str, object]]:
    for section in ("service", "query"):
        value = getattr(side, section)
        for f in fields(value):
            item = getattr(value, f.name)
            if f.name in _MERGED_TABLES:
                for key, entry in item.items():
                    yield f"{section}.{f.name}.{key}", entry
            else:
                yield f"{section}.{f.name}", item


# Deadlines decide whether a run completes, not what it measures: raising ready_timeout after a
# slow boot must not make the runs already recorded incomparable.
_NOT_HASHED = frozenset({"ready_timeout", "build_timeout", "prepare_timeout", "stop_timeout"})


def side_hash(side: SideConfig) -> str:
    """sha256 of the canonical JSON (sorted keys, no spaces) of one side's effective config.

    Everything that shapes what is measured is in it (commands, env pins, data, the request,
    query.timeout, warmup); the service's process deadlines are not.
    """
    canonical = {
        section: {
            f.name: _jsonable(getattr(getattr(side, section), f.name))
            for f in fields(getattr(side, section))
            if f.name not in _NOT_HASHED
        }
        for section in ("service", "query")
    }
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _jsonable(value: object) -> object:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


# --------------------------------------------------------------------------- the schema

Check = Callable[[Any], list[tuple[str, str]]]  # value -> [(field suffix, message)]


@dataclass(frozen=True)
class _Key:
    kind: str  # "str" "bool" "int" "float" "strs" "ints" "table" "json"
    check: Check | None = None


def _positive(value: float) -> list[tuple[str, str]]:
    if not math.isfinite(value) or value <= 0:
        return [("", f"must be a finite number of seconds > 0, not {value!r}")]
    return []


def _at_least(low: int) -> Check:
    def check(value: int) -> list[tuple[str, str]]:
        return [] if value >= low else [("", f"must be >= {low}, not {value}")]

    return check


def _slash_path(value: str) -> list[tuple[str, str]]:
    if not value.startswith("/"):
        return [("", f"must be a URL path starting with '/', e.g. {'/' + value!r}")]
    if _PLACEHOLDER.search(value):
        return [("", "takes no placeholders; put {query} and {limit} in params or json")]
    return []


def _query_path(value: str) -> list[tuple[str, str]]:
    if "?" in value:  # httpx replaces a URL's query string with `params`, even an empty one
        return [("", "has a query string; move its parameters into query.params")]
    return _slash_path(value)


def _unknown(name: str, allowed: frozenset[str], extra: str = "") -> str:
    known = " ".join(f"{{{n}}}" for n in sorted(allowed))
    close = difflib.get_close_matches(name, sorted(allowed), n=1)
    mean = f" (did you mean {{{close[0]}}}?)" if close else ""
    return f"unknown placeholder {{{name}}}{mean}; known: {known}{extra}"


def _request(value: object) -> list[tuple[str, str]]:
    """Unknown {name}s in a request template (filled literally: other braces are text)."""
    return [
        (suffix, _unknown(name, REQUEST_PLACEHOLDERS))
        for suffix, text in _strings(value, "")
        for name in dict.fromkeys(_PLACEHOLDER.findall(text))
        if name not in REQUEST_PLACEHOLDERS
    ]


def _strings(value: object, suffix: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield suffix, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, f"{suffix}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings(item, f"{suffix}[{index}]")


def _env_names(value: Mapping[str, str] | tuple[str, ...]) -> list[tuple[str, str]]:
    bad = [name for name in value if not _ENV_NAME.match(name)]
    return [("", f"{name!r} is not an environment variable name") for name in bad]


def _format_fields(text: str) -> tuple[list[tuple[str, str, str]], str | None]:
    """The (name, conversion, format spec) fields of a str.format template, or why it is not one."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as error:
        return [], f"{error}; write {{{{ and }}}} for literal braces"
    return [
        (name, conv or "", spec or "") for _, name, spec, conv in parsed if name is not None
    ], None


def _command(value: object) -> list[tuple[str, str]]:
    """Problems of str.format placeholders in a command or env value (as the service expands)."""
    found: list[tuple[str, str]] = []
    for suffix, text in _strings(value, ""):
        fields_, broken = _format_fields(text)
        if broken:
            found.append((suffix, broken))
        for name, conv, spec in dict.fromkeys(fields_):
            if name not in COMMAND_PLACEHOLDERS:
                literal = "; write {{ and }} for literal braces"
                found.append((suffix, _unknown(name, COMMAND_PLACEHOLDERS, literal)))
            elif conv or spec:
                found.append((suffix, f"placeholder {{{name}}} takes no !conversion or :format"))
    return found


def _build(value: str) -> list[tuple[str, str]]:
    used = [n for n in dict.fromkeys(_PLACEHOLDER.findall(value)) if n in COMMAND_PLACEHOLDERS]
    return [
        ("", f"build is run as written, before any service exists: {{{name}}} is not filled in")
        for name in used
    ]


def _env(value: Mapping[str, str]) -> list[tuple[str, str]]:
    return _env_names(value) + _command(value)


def _jmespath(value: str) -> list[tuple[str, str]]:
    try:
        jmespath.compile(value)
    except jmespath.exceptions.JMESPathError as error:
        first = str(error).splitlines()[0].removesuffix(", for expression:").rstrip(":")
        return [("", f"is not a valid JMESPath expression ({first})")]
    return []


def _method(value: str) -> list[tuple[str, str]]:
    ok = value.upper() in ("GET", "POST")
    return [] if ok else [("", f"must be GET or POST, not {value!r}")]


def _k(value: tuple[int, ...]) -> list[tuple[str, str]]:
    if not value:
        return [("", "must list at least one cutoff, e.g. k = [5, 10]")]
    found = [(f"[{i}]", f"must be >= 1, not {k}") for i, k in enumerate(value) if k < 1]
    if len(set(value)) != len(value):
        found.append(("", f"lists a cutoff twice: {list(value)}"))
    return found


def _alpha(value: float) -> list[tuple[str, str]]:
    return [] if 0 < value < 1 else [("", f"must be between 0 and 1 (exclusive), not {value}")]


def _tolerance(value: float) -> list[tuple[str, str]]:
    ok = math.isfinite(value) and value >= 0
    return [] if ok else [("", f"must be a finite fraction >= 0, not {value}")]


_SERVICE: dict[str, _Key] = {
    "start": _Key("str", _command),
    "ready": _Key("str", _slash_path),
    "build": _Key("str", _build),
    "venv": _Key("bool"),
    "data": _Key("str"),
    "prepare": _Key("strs", _command),
    "env": _Key("table", _env),
    "pass_env": _Key("strs", _env_names),
    "ready_timeout": _Key("float", _positive),
    "build_timeout": _Key("float", _positive),
    "prepare_timeout": _Key("float", _positive),
    "stop_timeout": _Key("float", _positive),
}
_QUERY: dict[str, _Key] = {
    "path": _Key("str", _query_path),
    "ids": _Key("str", _jmespath),
    "method": _Key("str", _method),
    "params": _Key("table", _request),
    "json": _Key("json", _request),
    "headers": _Key("table", _request),
    "scores": _Key("str", _jmespath),
    "limit": _Key("int", _at_least(1)),
    "timeout": _Key("float", _positive),
    "warmup": _Key("int", _at_least(0)),
}
_GOLD: dict[str, _Key] = {"path": _Key("str"), "corpus": _Key("str")}
_COMPARE: dict[str, _Key] = {
    "repeats": _Key("int", _at_least(1)),
    "k": _Key("ints", _k),
    "alpha": _Key("float", _alpha),
    "latency_tolerance": _Key("float", _tolerance),
    "max_errors": _Key("int", _at_least(0)),
    "seed": _Key("int", _at_least(0)),
}
_SECTIONS: dict[str, dict[str, _Key]] = {
    "service": _SERVICE,
    "query": _QUERY,
    "gold": _GOLD,
    "compare": _COMPARE,
}
_REQUIRED = {"service": ("start", "ready"), "query": ("path", "ids")}
_MERGED_TABLES = frozenset({"env", "params", "headers"})
_SIDES = ("baseline", "candidate")

_KIND_NAMES = {
    "str": "a string",
    "bool": "a boolean (true or false)",
    "int": "an integer",
    "float": "a number",
    "strs": "an array of strings",
    "ints": "an array of integers",
    "table": "a table of strings",
    "json": "a table (the JSON body template)",
}

_EXAMPLES = {
    "service.start": 'start = "python3 svc.py --port {port}"',
    "service.ready": 'ready = "/health"',
    "query.path": 'path = "/search"',
    "query.ids": 'ids = "results[].id"',
}


def _describe(value: object) -> str:
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int):
        return f"an integer ({value})"
    if isinstance(value, float):
        return f"a float ({value})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return f"a date/time ({value})"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _json_problem(value: object, where: str) -> str | None:
    """Why `value` cannot be a JSON body template, or None when it can."""
    if isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where} is {value}, which JSON cannot carry"
    items: list[tuple[str, object]] = []
    if isinstance(value, dict):
        items = [(f"{where}.{k}" if where else k, v) for k, v in value.items()]
    elif isinstance(value, list):
        items = [(f"{where}[{i}]", v) for i, v in enumerate(value)]
    else:
        return f"{where} is {_describe(value)}, which JSON cannot carry"
    return next((p for k, v in items if (p := _json_problem(v, k))), None)


def _convert(kind: str, value: Any) -> tuple[Any, str | None]:
    """(converted value, None) or (None, what is wrong with its type)."""
    wrong = f"expected {_KIND_NAMES[kind]}, got {_describe(value)}"
    if kind == "str":
        return (value, None) if isinstance(value, str) else (None, wrong)
    if kind == "bool":
        return (value, None) if isinstance(value, bool) else (None, wrong)
    if kind == "int":
        return (value, None) if _is_int(value) else (None, wrong)
    if kind == "float":
        ok = _is_int(value) or isinstance(value, float)
        return (float(value), None) if ok else (None, wrong)
    if kind in ("strs", "ints"):
        if not isinstance(value, list):
            hint = f"; write [{value!r}]" if kind == "strs" and isinstance(value, str) else ""
            return None, wrong + hint
        fits = (lambda v: isinstance(v, str)) if kind == "strs" else _is_int
        bad = [(i, v) for i, v in enumerate(value) if not fits(v)]
        if bad:
            return None, f"expected {_KIND_NAMES[kind]}; item {bad[0][0]} is {_describe(bad[0][1])}"
        return tuple(value), None
    if not isinstance(value, dict):
        return None, wrong
    if kind == "json":
        problem = _json_problem(value, "")
        return (value, None) if problem is None else (None, f"expected a JSON body: {problem}")
    bad_entries = [(k, v) for k, v in value.items() if not (isinstance(v, str) or _is_int(v))]
    if bad_entries:
        key, item = bad_entries[0]
        return None, f"expected a table of strings; entry {key!r} is {_describe(item)}"
    return {k: str(v) for k, v in value.items()}, None


# --------------------------------------------------------------------------- reading a file

_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")
_KEY_LINE = re.compile(r"^\s*([A-Za-z0-9_\-.\"' ]+?)\s*=")
_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


def _dotted(text: str) -> str:
    return ".".join(part.strip().strip("\"'") for part in text.split("."))


def _key_lines(text: str, prefix: str) -> dict[str, int]:
    """The first line of each table header and `key =` line, by dotted name (best effort)."""
    found: dict[str, int] = {}
    table = ""
    for number, line in enumerate(text.splitlines(), start=1):
        if header := _HEADER.match(line):
            table = _dotted(header.group(1))
            name = table
        elif key := _KEY_LINE.match(line):
            name = f"{table}.{_dotted(key.group(1))}" if table else _dotted(key.group(1))
        else:
            continue
        if prefix and not name.startswith(prefix):
            continue
        found.setdefault(name.removeprefix(prefix), number)
    return found


class _Reader:
    """Collects every problem in one config file, each located by key."""

    def __init__(self, path: Path, text: str, prefix: str) -> None:
        self.path = path
        self.prefix = prefix  # "tool.harness." inside pyproject.toml
        self.lines = _key_lines(text, prefix)
        self.problems: list[Problem] = []

    def add(self, key: str, message: str, near: str = "") -> None:
        """Record a problem at `key`, located at its line, else at `near`'s, else its table's."""
        line = None
        for name in (re.sub(r"\[\d+\]", "", key), near):
            while name and line is None:
                line = self.lines.get(name)
                name = name.rpartition(".")[0]
        self.problems.append(Problem(str(self.path), message, line, self.prefix + key))

    def unknown(self, key: str, where: str, known: list[str], extra: str = "") -> None:
        leaf = key.rpartition(".")[2]
        close = difflib.get_close_matches(leaf, known, n=1)
        mean = f"; did you mean {close[0]!r}?" if close else ""
        if not close and not extra:
            mean = f"; known keys: {', '.join(known)}"
        self.add(key, f"unknown key {leaf!r} in {where}{mean}{extra}")

    def table(self, value: object, key: str) -> dict[str, Any]:
        if isinstance(value, dict):
            return value
        self.add(key, f"expected a table [{self.prefix}{key}], got {_describe(value)}")
        return {}

    def section(self, raw: Mapping[str, Any], schema: Mapping[str, _Key], name: str) -> _Read:
        values: dict[str, Any] = {}
        for key, value in raw.items():
            full = f"{name}.{key}"
            if key not in schema:
                self.unknown(full, f"[{self.prefix}{name}]", list(schema))
                continue
            converted, wrong = _convert(schema[key].kind, value)
            if wrong:
                self.add(full, wrong)
                continue
            check = schema[key].check
            issues = check(converted) if check else []
            for suffix, message in issues:
                self.add(full + suffix, message)
            if not issues:
                values[key] = converted
        return _Read(values, frozenset(raw))


@dataclass(frozen=True)
class _Read:
    values: Mapping[str, Any]  # keys that passed every check, converted
    present: frozenset[str]  # every key written, valid or not


def _merge(base: _Read, over: _Read) -> dict[str, Any]:
    merged = dict(base.values)
    for key, value in over.values.items():
        if key in _MERGED_TABLES and key in merged:
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


# --------------------------------------------------------------------------- the loader


def load_config(
    path: Path | None = None, *, repo: Path | None = None, cwd: Path | None = None
) -> HarnessConfig:
    """Read, validate and resolve the harness configuration; ConfigError lists every problem.

    `path` may be a harness.toml or a pyproject.toml (read from its [tool.harness]); relative
    paths are taken from `cwd` (default: the process's). `repo` defaults to the git repository
    containing the config file.
    """
    cwd = (cwd or Path.cwd()).resolve()
    path = _discover(cwd) if path is None else (cwd / path).resolve()
    text = _read_text(path)
    in_pyproject = path.name == "pyproject.toml"
    doc: object = _parse_toml(path, text)
    if in_pyproject:
        tool = doc.get("tool", {}) if isinstance(doc, dict) else None
        doc = tool.get("harness") if isinstance(tool, dict) else None
    if not isinstance(doc, dict):
        raise ConfigError(
            f"{path}: no [tool.harness] table",
            hint="add [tool.harness.service], [tool.harness.query] and [tool.harness.gold]",
        )
    reader = _Reader(path, text, "tool.harness." if in_pyproject else "")
    gold, corpus, sides, compare = _validate(doc, reader, path.parent)
    if reader.problems or gold is None:  # a missing gold.path is one of the problems
        count = len(reader.problems)
        raise ConfigError(
            f"{path}: invalid harness configuration ({count} problem{'s' * (count != 1)})",
            reader.problems,
        )
    return HarnessConfig(
        path=path,
        repo=_find_repo(path) if repo is None else _check_repo((cwd / repo).resolve()),
        gold=gold,
        corpus=corpus,
        baseline=sides["baseline"],
        candidate=sides["candidate"],
        compare=compare,
    )


def _discover(cwd: Path) -> Path:
    candidate = cwd / "harness.toml"
    if candidate.is_file():
        return candidate
    pyproject = cwd / "pyproject.toml"
    if pyproject.is_file():
        tool = _parse_toml(pyproject, _read_text(pyproject)).get("tool", {})
        if isinstance(tool, dict) and "harness" in tool:
            return pyproject
    raise ConfigError(
        f"no harness configuration in {cwd}: looked for harness.toml, "
        "then a [tool.harness] table in pyproject.toml",
        hint="create harness.toml with [service] start and ready, [query] path and ids, "
        "and [gold] path (see the README's configuration section), or pass its path",
    )


def _read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file", hint="check the path") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the config file: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"{path}: not UTF-8 (byte {error.start}); TOML files must be UTF-8"
        ) from None


def _parse_toml(path: Path, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        message = str(error)
        at = _TOML_AT.search(message)
        line = int(at.group(1)) if at else None
        if at:
            message = f"{message[: at.start()]} (column {at.group(2)})"
        problem = Problem(str(path), f"TOML syntax error: {message}", line)
        raise ConfigError(f"{path}: not valid TOML", [problem]) from None


def _find_repo(config: Path) -> Path:
    for directory in config.parents:
        if (directory / ".git").exists():
            return directory
    raise ConfigError(
        f"{config}: no git repository contains this config file",
        hint="pass --repo PATH to name the repository whose refs are compared",
    )


def _check_repo(repo: Path) -> Path:
    if not repo.is_dir():
        raise ConfigError(f"{repo}: the repository given is not a directory", hint="check --repo")
    return repo


def _validate(
    doc: Mapping[str, Any], reader: _Reader, base: Path
) -> tuple[Path | None, Path | None, dict[str, SideConfig], CompareConfig]:
    top = [*_SECTIONS, *_SIDES]
    for key in doc:
        if key not in top:
            reader.unknown(key, "the top level", top)
    read = {
        name: reader.section(reader.table(doc.get(name, {}), name), schema, name)
        for name, schema in _SECTIONS.items()
    }
    overrides: dict[str, dict[str, _Read]] = {}
    for side in _SIDES:
        raw = reader.table(doc.get(side, {}), side)
        for key in raw:
            if key not in ("service", "query"):
                only = f"; only [{side}.service] and [{side}.query] can differ per side"
                reader.unknown(f"{side}.{key}", f"[{side}]", ["service", "query"], only)
        overrides[side] = {
            name: reader.section(
                reader.table(raw.get(name, {}), f"{side}.{name}"), _SECTIONS[name], f"{side}.{name}"
            )
            for name in ("service", "query")
        }

    gold_values = read["gold"].values
    if "path" not in read["gold"].present:
        reader.add("gold.path", 'missing required key: the gold set, e.g. path = "gold/gold.jsonl"')
    gold = (
        (base / Path(gold_values["path"]).expanduser()).resolve() if "path" in gold_values else None
    )
    corpus = gold_values.get("corpus")
    corpus_path = (base / Path(corpus).expanduser()).resolve() if corpus else None

    sides: dict[str, SideConfig] = {}
    issues: dict[str, list[str]] = {}
    for side in _SIDES:
        merged = {n: _merge(read[n], overrides[side][n]) for n in ("service", "query")}
        issues[side] = [
            f"{name}.{key}"
            for name, keys in _REQUIRED.items()
            for key in keys
            if key not in read[name].present and key not in overrides[side][name].present
        ]
        service, query = merged["service"], merged["query"]
        if _uses_data(service) and "data" not in service:
            issues[side].append("service.data")
        query["method"] = query.get("method", "GET").upper()
        if query.get("json") is not None and query["method"] == "GET":
            issues[side].append("query.json")
        if not issues[side] and not reader.problems:
            sides[side] = SideConfig(ServiceConfig(**merged["service"]), QueryConfig(**query))
    _report_side_issues(reader, issues)
    return gold, corpus_path, sides, CompareConfig(**read["compare"].values)


def _uses_data(service: Mapping[str, Any]) -> bool:
    commands = [
        service.get("start", ""),
        *service.get("prepare", ()),
        *service.get("env", {}).values(),
    ]
    return any(name == "data" for text in commands for name, _, _ in _format_fields(text)[0])


def _report_side_issues(reader: _Reader, issues: Mapping[str, list[str]]) -> None:
    """Report a problem once when both sides have it, else under the side that has it."""
    for key in dict.fromkeys(issues["baseline"] + issues["candidate"]):
        having = [side for side in _SIDES if key in issues[side]]
        section = key.partition(".")[0]
        for side in having if len(having) == 1 else [None]:
            where = f"[{reader.prefix}{section}]"
            if side is not None:
                where += f" or [{reader.prefix}{side}.{section}]"
            who = f" on the {side} side" if side else ""
            if key == "query.json":
                message = 'a JSON body needs method = "POST"; set it, or put the fields in params'
            elif key == "service.data":
                message = (
                    f"{{data}} is used{who} but data is not set: set it in {where} to a "
                    "directory of the worktree, copied fresh for every boot"
                )
            else:
                message = f"missing required key{who}: set {_EXAMPLES[key]} in {where}"
            reader.add(f"{side}.{key}" if side else key, message, near=key)

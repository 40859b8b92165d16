"""The schema of harness.toml: every key, its type, and the checks its value must pass.

    SECTIONS[section][key] -> Key(kind, check)   kind: str bool int float strs ints table json
    convert(kind, value) -> (value, None) | (None, what is wrong with its type)

A check takes the converted value and returns [(field suffix, message)], empty when it is fine;
the suffix locates a problem inside the value (".A" in a table, "[1]" in an array). Integers are
accepted where a float is expected; booleans are never integers. The checks of templates (commands,
env values, requests) are `harness.config.templates`'. Pure: no I/O.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jmespath
import jmespath.exceptions

from harness.config.templates import (
    build_problems,
    command_problems,
    env_names,
    env_problems,
    header_problems,
    id_template,
    request_problems,
    strings,
)
from harness.config.values import DATA_MODES, PLACEHOLDER, LoadConfig
from harness.errors import clip
from harness.values.limits import (
    MAX_BATCH,
    MAX_BYTES,
    MAX_COUNT,
    MAX_FOLDER_BYTES,
    MAX_LIMIT,
    MAX_LOG_BYTES,
    MAX_PROCESSES,
    MAX_REPEATS,
    MAX_SECONDS,
    MAX_SEED,
    MAX_WARMUP,
)

Check = Callable[[Any], list[tuple[str, str]]]  # value -> [(field suffix, message)]


@dataclass(frozen=True)
class Key:
    kind: str  # "str" "bool" "int" "float" "strs" "ints" "table" "json"
    check: Check | None = None


def _positive(value: float) -> list[tuple[str, str]]:
    if not math.isfinite(value) or value <= 0:
        return [("", f"must be a finite number of seconds > 0, not {value!r}")]
    if value > MAX_SECONDS:
        return [("", f"must be at most {MAX_SECONDS:.0f} seconds (1 day), not {value!r}")]
    return []


def _at_least(low: int, high: int) -> Check:
    """A count from `low` to `high`; the message names the bound that was passed."""

    def check(value: int) -> list[tuple[str, str]]:
        if value < low:
            return [("", f"must be >= {low}, not {clip(str(value))}")]
        if value > high:
            return [("", f"must be at most {high}, not {clip(str(value))}")]
        return []

    return check


def _slash_path(value: str) -> list[tuple[str, str]]:
    if not value.startswith("/"):
        return [("", f"must be a URL path starting with '/', e.g. {'/' + value!r}")]
    if PLACEHOLDER.search(value):
        return [("", "takes no placeholders; put {query} and {limit} in params or json")]
    return []


def _query_path(value: str) -> list[tuple[str, str]]:
    if "?" in value:  # httpx replaces a URL's query string with `params`, even an empty one
        return [("", "has a query string; move its parameters into query.params")]
    return _slash_path(value)


def _python(value: str) -> list[tuple[str, str]]:
    if not value.strip():
        return [("", 'is empty: give a command on PATH (e.g. "python3.12") or an absolute path')]
    if "/" in value and not value.startswith(("/", "~", "{")):
        why = f"is a relative path ({value!r}); give a command on PATH or an absolute path"
        return [("", why)]
    return []


def _outputs(value: tuple[str, ...]) -> list[tuple[str, str]]:
    if not value:
        return [("", "lists no path; remove the key to keep the whole build's delta")]
    found = []
    for i, path in enumerate(value):
        parts = path.strip("/").split("/")
        if path.startswith("/") or ".." in parts or not path.strip("/") or ".git" in parts:
            why = f'must be a path inside the checkout, e.g. "index/", not {path!r}'
            found.append((f"[{i}]", why))
    return found


# [service.load]: each key, its kind (as for a section's keys) and its check.
DOCUMENTS = "{documents}"


def _load_body(value: Mapping[str, object]) -> list[tuple[str, str]]:
    found = [s for s, text in strings(value, "") if text == DOCUMENTS]
    if len(found) != 1:
        return [("", f'needs the placeholder "{DOCUMENTS}" as exactly one value (the batch)')]
    other = [
        (suffix, f"unknown placeholder {{{name}}}; the body takes only {DOCUMENTS}")
        for suffix, text in strings(value, "")
        for name in PLACEHOLDER.findall(text)
        if name != "documents"
    ]
    return other


def _load_document(value: Mapping[str, object]) -> list[tuple[str, str]]:
    if not any(PLACEHOLDER.search(text) for _, text in strings(value, "")):
        return [("", 'names no corpus field; e.g. document = { id = "{_id}", text = "{text}" }')]
    return []


def _relative(value: str) -> list[tuple[str, str]]:
    parts = value.split("/")
    if value.startswith("/") or ".." in parts or not value.strip():
        return [("", f'must be a path inside the data copy, e.g. "corpus.jsonl", not {value!r}')]
    return []


LOAD_KEYS: dict[str, Key] = {
    "path": Key("str", lambda v: _query_path(v)),
    "method": Key("str", lambda v: _http_method(v)),
    "batch": Key("int", _at_least(1, MAX_BATCH)),
    "body": Key("json", _load_body),
    "document": Key("json", _load_document),
    "index": Key("str", lambda v: _query_path(v)),
    "index_method": Key("str", lambda v: _http_method(v)),
    "corpus": Key("str", _relative),
    "timeout": Key("float", _positive),
}


def _http_method(value: str) -> list[tuple[str, str]]:
    ok = value.upper() in ("POST", "PUT", "PATCH", "GET")
    return [] if ok else [("", f"must be POST, PUT, PATCH or GET, not {value!r}")]


def _load_table(value: Mapping[str, Any]) -> tuple[LoadConfig | None, list[tuple[str, str]]]:
    """[service.load] as a LoadConfig, or the problems of its keys (suffix ".key")."""
    problems: list[tuple[str, str]] = []
    values: dict[str, Any] = {}
    for key, item in value.items():
        if key not in LOAD_KEYS:
            close = difflib.get_close_matches(key, list(LOAD_KEYS), n=1)
            mean = f" (did you mean {close[0]!r}?)" if close else ""
            known = ", ".join(LOAD_KEYS)
            problems.append(
                (f".{key}", f"unknown key {key!r} in [service.load]{mean}; known: {known}")
            )
            continue
        converted, wrong = convert(LOAD_KEYS[key].kind, item)
        if wrong:
            problems.append((f".{key}", wrong))
            continue
        check = LOAD_KEYS[key].check
        issues = check(converted) if check else []
        problems += [(f".{key}{suffix}", message) for suffix, message in issues]
        values[key] = converted
    if "path" not in value:
        problems.append(
            (".path", 'is required: the endpoint the documents go to, e.g. "/documents"')
        )
    if problems:
        return None, problems
    for key in ("method", "index_method"):
        if key in values:
            values[key] = values[key].upper()
    return LoadConfig(**values), []


def _data(value: str) -> list[tuple[str, str]]:
    rest = value.removeprefix("{config_dir}")
    if not value.strip():
        return [("", 'is empty: give a folder or file, e.g. "data/index" or "/mnt/index"')]
    if PLACEHOLDER.search(rest) or (rest != value and rest[:1] not in ("", "/")):
        return [
            (
                "",
                "takes one placeholder, {config_dir}, and only at its start "
                '(data = "{config_dir}/corpus"); otherwise it is a path in the worktree, '
                'or an absolute one outside the repository ("/mnt/index")',
            )
        ]
    return []


def _data_mode(value: str) -> list[tuple[str, str]]:
    if value in DATA_MODES:
        return []
    close = difflib.get_close_matches(value, DATA_MODES, n=1)
    mean = f" (did you mean {close[0]!r}?)" if close else ""
    return [("", f"must be {' or '.join(map(repr, DATA_MODES))}, not {value!r}{mean}")]


def _data_version(value: str) -> list[tuple[str, str]]:
    ok = value.strip()
    return [] if ok else [("", 'is empty: give the version of the data, e.g. "2024-06-01"')]


def _id_pattern(value: str) -> list[tuple[str, str]]:
    try:
        groups = re.compile(value).groups
    except re.error as error:
        return [("", f"is not a regular expression ({error})")]
    if groups != 1:
        return [("", f"needs exactly one capture group (the id), has {groups}")]
    return []


def _id_field(value: str) -> list[tuple[str, str]]:
    try:
        id_template(value)
    except ValueError as error:
        return [("", str(error))]
    return []


_HOOK = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")


def _rewrite(value: str) -> list[tuple[str, str]]:
    from harness.config.rewrite import REWRITES

    if value in REWRITES or _HOOK.match(value):
        return []
    return [
        (
            "",
            f"must be one of {', '.join(sorted(REWRITES))}, or a hook \"module:function\" "
            f"(a module beside the config file), not {value!r}",
        )
    ]


def _selector(value: str) -> list[tuple[str, str]]:
    return [] if value.strip() else [("", "must be a CSS selector, e.g. \"a.result\"")]


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
    found += [
        (f"[{i}]", f"must be at most {MAX_LIMIT}, not {clip(str(k))}")
        for i, k in enumerate(value)
        if k > MAX_LIMIT
    ]
    if len(set(value)) != len(value):
        found.append(("", f"lists a cutoff twice: {list(value)}"))
    return found


def _alpha(value: float) -> list[tuple[str, str]]:
    return [] if 0 < value < 1 else [("", f"must be between 0 and 1 (exclusive), not {value}")]


def _effect(value: float) -> list[tuple[str, str]]:
    ok = 0 < value <= 1
    return [] if ok else [("", f"must be a fraction in (0, 1], e.g. 0.05, not {value}")]


def _tolerance(value: float) -> list[tuple[str, str]]:
    ok = math.isfinite(value) and 0 <= value < 1
    return [] if ok else [("", f"must be a fraction at least 0 and below 1, not {value}")]


_SERVICE: dict[str, Key] = {
    "start": Key("str", command_problems),
    "ready": Key("str", _slash_path),
    "build": Key("str", build_problems),
    "venv": Key("bool"),
    "data": Key("str", _data),
    "data_mode": Key("str", _data_mode),
    "data_version": Key("str", _data_version),
    "prepare": Key("strs", command_problems),
    "env": Key("table", env_problems),
    "pass_env": Key("strs", env_names),
    "ready_timeout": Key("float", _positive),
    "build_timeout": Key("float", _positive),
    "prepare_timeout": Key("float", _positive),
    "stop_timeout": Key("float", _positive),
    "probe_timeout": Key("float", _positive),
    "kill_wait": Key("float", _positive),
    "python": Key("str", _python),
    "build_outputs": Key("strs", _outputs),
    "load": Key("load"),
    "max_log_bytes": Key("int", _at_least(4096, MAX_LOG_BYTES)),
    "max_processes": Key("int", _at_least(16, MAX_PROCESSES)),
    "max_folder_bytes": Key("int", _at_least(1 << 20, MAX_FOLDER_BYTES)),
}
_QUERY: dict[str, Key] = {
    "path": Key("str", _query_path),
    "ids": Key("str", _jmespath),
    "method": Key("str", _method),
    "params": Key("table", request_problems),
    "json": Key("json", request_problems),
    "form": Key("table", request_problems),
    "headers": Key("table", header_problems),
    "scores": Key("str", _jmespath),
    "texts": Key("str", _jmespath),
    "rewrite": Key("str", _rewrite),
    "select": Key("str", _selector),
    "id_pattern": Key("str", _id_pattern),
    "id_field": Key("str", _id_field),
    "limit": Key("int", _at_least(1, MAX_LIMIT)),
    "timeout": Key("float", _positive),
    "max_bytes": Key("int", _at_least(1, MAX_BYTES)),
    "warmup": Key("int", _at_least(0, MAX_WARMUP)),
    "max_consecutive_failures": Key("int", _at_least(0, MAX_COUNT)),
}


def _budget(value: str) -> list[tuple[str, str]]:
    from harness.values.budget import parse_budget

    try:
        parse_budget(value)
    except ValueError as exc:
        return [("", str(exc))]
    return []


_GOLD: dict[str, Key] = {"path": Key("str"), "corpus": Key("str")}
_COMPARE: dict[str, Key] = {
    "repeats": Key("int", _at_least(1, MAX_REPEATS)),
    "k": Key("ints", _k),
    "alpha": Key("float", _alpha),
    "min_effect": Key("float", _effect),
    "max_unknown_ids": Key("int", _at_least(0, MAX_COUNT)),
    "latency_tolerance": Key("float", _tolerance),
    "latency_budget": Key("budget", _budget),
    "max_errors": Key("int", _at_least(0, MAX_COUNT)),
    "seed": Key("int", _at_least(0, MAX_SEED)),
    "sequential": Key("bool"),
}


def _floors(value: dict[str, Any]) -> list[tuple[str, str]]:
    from harness.config.floors import floor_problems

    return floor_problems(value)


def _margins(value: object) -> list[tuple[str, str]]:
    from harness.config.margins import margin_problems

    return margin_problems(value)


# [gate.floors]: harness.config.floors; non_inferior: harness.config.margins
_GATE: dict[str, Key] = {
    "floors": Key("floors", _floors),
    "non_inferior": Key("margins", _margins),
}


def _judge_command(value: str) -> list[tuple[str, str]]:
    import shlex

    try:
        words = shlex.split(value)
    except ValueError as exc:  # an unclosed quote
        return [("", f"is not a command line shlex can split ({exc}); close the quote")]
    if not words:
        return [("", 'is empty: give the command that grades pairs, e.g. "python3 grade.py"')]
    return []


# [judge]: `harness judge label`'s machine labeller (harness.config.judge reads it alone)
_JUDGE: dict[str, Key] = {"command": Key("str", _judge_command)}
SECTIONS: dict[str, dict[str, Key]] = {
    "service": _SERVICE,
    "query": _QUERY,
    "gold": _GOLD,
    "compare": _COMPARE,
    "gate": _GATE,
    "judge": _JUDGE,
}
REQUIRED = {"service": ("start", "ready"), "query": ("path", "ids")}
SIDES = ("baseline", "candidate")

_KIND_NAMES = {
    "str": "a string",
    "bool": "a boolean (true or false)",
    "int": "an integer",
    "budget": 'a round count (12) or a time ("5m", "300s")',
    "float": "a number",
    "strs": "an array of strings",
    "ints": "an array of integers",
    "table": "a table of strings",
    "json": "a table (the JSON body template)",
    "floors": 'a table of metric = value, e.g. "mrr@10" = 0.78',
    "margins": 'a margin (0.02) or a table of metric = margin, e.g. {"ndcg@10" = 0.02}',
    "load": "a table [service.load]",
}

EXAMPLES = {
    "service.start": 'start = "python3 svc.py --port {port}"',
    "service.ready": 'ready = "/health"',
    "query.path": 'path = "/search"',
    "query.ids": 'ids = "results[].id"',
}


def describe(value: object) -> str:
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
        return f"{where} is {describe(value)}, which JSON cannot carry"
    return next((p for k, v in items if (p := _json_problem(v, k))), None)


def convert(kind: str, value: Any) -> tuple[Any, str | None]:
    """(converted value, None) or (None, what is wrong with its type)."""
    wrong = f"expected {_KIND_NAMES[kind]}, got {describe(value)}"
    nul = next((suffix for suffix, text in strings(value, "") if "\x00" in text), None)
    if nul is not None:  # no argv, environment or path can carry one: it fails only at boot
        where = f" (at {nul.lstrip('.')})" if nul else ""
        return None, f"holds a NUL byte (\\x00){where}; remove it"
    if kind == "str":
        return (value, None) if isinstance(value, str) else (None, wrong)
    if kind == "bool":
        return (value, None) if isinstance(value, bool) else (None, wrong)
    if kind == "int":
        return (value, None) if _is_int(value) else (None, wrong)
    if kind == "budget":  # 12 or "12" (rounds), "5m" (a time): kept as its text
        ok = _is_int(value) or isinstance(value, str)
        return (str(value), None) if ok else (None, wrong)
    if kind == "float":
        if _is_int(value) and abs(value) > MAX_SECONDS * 1e6:  # float() of 1e400 overflows
            return None, f"expected a number of reasonable size, got {clip(str(value))}"
        ok = _is_int(value) or isinstance(value, float)
        return (float(value), None) if ok else (None, wrong)
    if kind in ("strs", "ints"):
        if not isinstance(value, list):
            hint = f"; write [{value!r}]" if kind == "strs" and isinstance(value, str) else ""
            return None, wrong + hint
        fits = (lambda v: isinstance(v, str)) if kind == "strs" else _is_int
        bad = [(i, v) for i, v in enumerate(value) if not fits(v)]
        if bad:
            return None, f"expected {_KIND_NAMES[kind]}; item {bad[0][0]} is {describe(bad[0][1])}"
        return tuple(value), None
    if kind == "margins":  # a number or a table, checked by its Key's check
        if isinstance(value, dict):
            return value, None
        number = isinstance(value, int | float) and not isinstance(value, bool)
        return (float(value), None) if number else (None, wrong)
    if not isinstance(value, dict):
        return None, wrong
    if kind == "floors":  # checked entry by entry by its Key's check
        return value, None
    if kind == "load":
        loaded, problems = _load_table(value)
        if problems:
            return None, "; ".join(f"load{suffix}: {message}" for suffix, message in problems)
        return loaded, None
    if kind == "json":
        problem = _json_problem(value, "")
        return (value, None) if problem is None else (None, f"expected a JSON body: {problem}")
    bad_entries = [(k, v) for k, v in value.items() if not isinstance(v, str)]
    if bad_entries:  # as config.schema.json says: an environment value or header is text
        key, item = bad_entries[0]
        quote = f'; quote it: {key} = "{item}"' if _is_int(item) else ""
        return None, f"expected a table of strings; entry {key!r} is {describe(item)}{quote}"
    return dict(value), None

"""Reading harness.toml (or [tool.harness] in pyproject.toml) strictly into a HarnessConfig.

    load_config(path=None, *, repo=None, cwd=None) -> HarnessConfig

Discovery, location of problems (file:line: field), and per-side overrides live here; what each
key may hold is `harness.config.schema`, the values it builds are `harness.config.values`.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.config.overrides import (
    BODY_NEEDS_POST,
    TWO_BODIES,
    UNSET_ENTRIES,
    apply,
    side_problems,
)
from harness.config.schema import (
    EXAMPLES,
    REQUIRED,
    SECTIONS,
    SIDES,
    Key,
    command_pins_needed,
    convert,
    describe,
    format_fields,
    pin_hint,
    receives_port,
    unknown_placeholder,
)
from harness.config.values import (
    COMMAND_PLACEHOLDERS,
    CONFIG_DIR,
    CompareConfig,
    GateConfig,
    HarnessConfig,
    Overlay,
    QueryConfig,
    RefSettings,
    ServiceConfig,
    SideConfig,
)
from harness.encodings import SAMPLE, encoding_problem
from harness.errors import ConfigError, Problem

_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")
_KEY_LINE = re.compile(r"^\s*([A-Za-z0-9_@\-.\"' ]+?)\s*=")  # @: "mrr@10" in [gate.floors]
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


def key_line(path: Path, keys: Sequence[str]) -> tuple[str, int] | None:
    """The first of `keys` (dotted, "baseline.query.ids") that the config file sets, and its
    line (best effort, as `_key_lines` reads it); None when none is set or the file is gone."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    prefix = "tool.harness." if path.name == "pyproject.toml" else ""
    lines = _key_lines(text, prefix)
    return next(((key, lines[key]) for key in keys if key in lines), None)


class _Reader:
    """Collects every problem in one config file, each located by key."""

    def __init__(self, path: Path, text: str, prefix: str) -> None:
        self.path = path
        self.prefix = prefix  # "tool.harness." inside pyproject.toml
        self.lines = _key_lines(text, prefix)
        self.problems: list[Problem] = []
        self.patterns: list[str] = []  # of [ref."PATTERN"] tables: shown quoted in fields

    def add(self, key: str, message: str, near: str = "") -> None:
        """Record a problem at `key`, located at its line, else at `near`'s, else its table's."""
        line = None
        for name in (re.sub(r"\[\d+\]", "", key), near):
            while name and line is None:
                line = self.lines.get(name)
                name = name.rpartition(".")[0]
        self.problems.append(Problem(str(self.path), message, line, self.prefix + self.shown(key)))

    def shown(self, key: str) -> str:
        """`key` as the user would write it: a ref table's pattern quoted, ref."v1.*".query."""
        for pattern in self.patterns:
            if key == f"ref.{pattern}" or key.startswith(f"ref.{pattern}."):
                return f'ref."{pattern}"' + key.removeprefix(f"ref.{pattern}")
        return key

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
        self.add(key, f"expected a table [{self.prefix}{self.shown(key)}], got {describe(value)}")
        return {}

    def section(
        self,
        raw: Mapping[str, Any],
        schema: Mapping[str, Key],
        name: str,
        *,
        override: bool = False,
    ) -> _Read:
        values: dict[str, Any] = {}
        unset: tuple[str, ...] = ()
        for key, value in raw.items():
            full = f"{name}.{key}"
            if key == "unset" and override:
                unset = self._unset(value, schema, full)
                continue
            if key == "unset":
                where = f"[{self.prefix}{name}]"
                self.add(
                    full,
                    f"unset removes an inherited key, so it only goes in an override table "
                    f"([baseline.{name}], [candidate.{name}] or [ref.\"PATTERN\".{name}]), "
                    f"not in {where}: leave the key out of {where} instead",
                )
                continue
            if key not in schema:
                self.unknown(full, f"[{self.prefix}{self.shown(name)}]", list(schema))
                continue
            converted, wrong = convert(schema[key].kind, value)
            if wrong:
                self.add(full, wrong)
                continue
            check = schema[key].check
            issues = check(converted) if check else []
            for suffix, message in issues:
                self.add(full + suffix, message)
            if not issues:
                values[key] = converted
        return _Read(values, frozenset(raw) - {"unset"}, unset)

    def _unset(self, value: object, schema: Mapping[str, Key], key: str) -> tuple[str, ...]:
        """The names of `unset = [...]`: keys of the section, or "TABLE.ENTRY" for an entry of
        env, params, headers, form or the top level of json; never a required key."""
        names, wrong = convert("strs", value)
        if wrong:
            self.add(key, wrong)
            return ()
        section = key.split(".")[-2]
        good = []
        for index, name in enumerate(names):
            where = f"{key}[{index}]"
            table, dot, entry = name.partition(".")
            if table not in schema:
                close = difflib.get_close_matches(table, list(schema), n=1)
                mean = f"; did you mean {close[0]!r}?" if close else ""
                self.add(where, f"cannot unset {name!r}: no key {table!r} in [{section}]{mean}")
            elif dot and (table not in UNSET_ENTRIES or not entry):
                self.add(
                    where,
                    f"cannot unset {name!r}: only entries of "
                    f"{', '.join(sorted(UNSET_ENTRIES))} are named one by one (TABLE.ENTRY)",
                )
            elif not dot and table in REQUIRED.get(section, ()):
                self.add(
                    where,
                    f"cannot unset {table!r}: {section}.{table} is required; set it to another "
                    "value instead",
                )
            else:
                good.append(name)
        return tuple(good)


@dataclass(frozen=True)
class _Read:
    values: Mapping[str, Any]  # keys that passed every check, converted
    present: frozenset[str]  # every key written, valid or not (`unset` aside)
    unset: tuple[str, ...] = ()  # the names `unset` removes (override tables only)

    @property
    def overlay(self) -> Overlay:
        return Overlay(dict(self.values), self.unset)


def _merge(base: _Read, over: _Read) -> dict[str, Any]:
    return apply(base.values, over.overlay)


def _inherits(values: Mapping[str, Any], name: str) -> bool:
    """Whether `values` (what an override inherits) has what `unset` names."""
    table, dot, entry = name.partition(".")
    if not dot:
        return table in values
    inner = values.get(table)
    return isinstance(inner, Mapping) and entry in inner


# --------------------------------------------------------------------------- the loader


def load_config(
    path: Path | None = None,
    *,
    repo: Path | None = None,
    cwd: Path | None = None,
    deployed: bool = False,
) -> HarnessConfig:
    """Read, validate and resolve the harness configuration; ConfigError lists every problem.

    `path` may be a harness.toml or a pyproject.toml (read from its [tool.harness]); relative
    paths are taken from `cwd` (default: the process's). `repo` defaults to the git repository
    containing the config file.  `deployed`: the services are already running (compare
    --baseline-url): service.start is not needed (nor read), and no repository either.
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
            hint="add [tool.harness.boot.service], [tool.harness.query] and [tool.harness.gold]",
        )
    reader = _Reader(path, text, "tool.harness." if in_pyproject else "")
    gold, corpus, sides, compare, refs, gate = _validate(
        doc, reader, path.parent, deployed=deployed
    )
    if repo is not None:
        root = _check_repo((cwd / repo).resolve())
    elif deployed:
        root = next((d for d in path.parents if (d / ".git").exists()), path.parent)
    else:
        root = _find_repo(path)
    _check_inside(reader, root, path.parent, doc)
    for name, side in sides.items():
        load = side.service.load
        if load is not None and load.corpus is None and corpus is None:
            where = "service.load" if name == "baseline" else f"{name}.service.load"
            reader.add(where, "has no corpus to post: set gold.corpus, or load.corpus (a file "
                       "inside service.data)")
            break
    if reader.problems or gold is None:  # a missing gold.path is one of the problems
        count = len(reader.problems)
        raise ConfigError(
            f"{path}: invalid harness configuration ({count} problem{'s' * (count != 1)})",
            reader.problems,
        )
    return HarnessConfig(
        path=path,
        repo=root,
        gold=gold,
        corpus=corpus,
        baseline=sides["baseline"],
        candidate=sides["candidate"],
        compare=compare,
        refs=refs,
        gate=gate,
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
        "and [gold] path (docs/configure.md; `harness demo DIR` writes an example to copy), "
        "or pass its path",
    )


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
        wide = encoding_problem(data[:SAMPLE], path)
        if wide is not None:
            raise ConfigError(f"{path}:1: {wide}")
        return data.decode("utf-8")
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
    except ValueError as error:  # not a TOMLDecodeError: an integer of over 4300 digits
        problem = Problem(str(path), f"a value is too large to read ({error})")
        raise ConfigError(f"{path}: not valid TOML", [problem]) from None
    except RecursionError:  # tomllib recurses into nested arrays and inline tables
        problem = Problem(str(path), "nested too deeply: arrays and inline tables in arrays "
                          "and inline tables, hundreds of levels; no key takes that")
        raise ConfigError(f"{path}: not valid TOML", [problem]) from None


def outside(path: Path, root: Path) -> str | None:
    """Why `path` (absolute, not yet resolved) is not inside `root`, or None when it is: it
    climbs out (`..`, an absolute path elsewhere), or a symlink on the way leads out."""
    root = root.resolve()
    lexical = Path(os.path.normpath(path))
    if not lexical.is_relative_to(root):
        return f"{lexical} is outside the repository {root}"
    real = path.resolve()
    if not real.is_relative_to(root):
        # Name the first link on the way that leads out.
        walked = root
        for part in lexical.relative_to(root).parts:
            walked = walked / part
            if walked.is_symlink() and not walked.resolve().is_relative_to(root):
                return f"{walked} is a symlink to {walked.resolve()}, outside the repository"
        return f"{lexical} resolves to {real}, outside the repository {root}"
    return None


def _check_inside(reader: _Reader, repo: Path, base: Path, doc: Mapping[str, Any]) -> None:
    """gold.path, gold.corpus (or beside a config outside the repository) and each side's
    service.data must resolve inside the repository:
    the harness reads them (and copies the data) on the user's behalf, and a path that climbs
    out, or a committed symlink that leads out, would hand a service a file of the host."""
    gold = doc.get("gold") if isinstance(doc.get("gold"), dict) else {}
    for key in ("path", "corpus"):
        value = gold.get(key) if isinstance(gold, dict) else None
        if isinstance(value, str) and value and "\x00" not in value:  # NUL: refused already
            # Inside the repository, or beside a config file kept outside it.
            target = base / Path(value).expanduser()
            whys = [outside(target, root) for root in dict.fromkeys((repo, base))]
            if all(whys):
                reader.add(f"gold.{key}", f"{whys[0]}; keep the gold set in the repository")
    tables = [("service", doc.get("service"))]
    tables += [(f"{side}.service", _get(doc, side, "service")) for side in SIDES]
    refs: Mapping[str, Any] = doc["ref"] if isinstance(doc.get("ref"), dict) else {}
    tables += [(f"ref.{pattern}.service", _get(refs, pattern, "service")) for pattern in refs]
    for where, table in tables:
        value = table.get("data") if isinstance(table, dict) else None
        if isinstance(value, str) and "\x00" in value:
            continue  # refused by its key's check
        if isinstance(value, str) and value.startswith(CONFIG_DIR):
            rest = value.removeprefix(CONFIG_DIR).lstrip("/") or "."
            why = outside(base / rest, base)
            if why:
                reader.add(f"{where}.data", f"{why}; {{config_dir}}/... must stay in that folder")
        elif isinstance(value, str) and value:
            # Relative to each ref's worktree, which mirrors the repository.
            why = outside(repo / value, repo)
            if why:
                reader.add(
                    f"{where}.data",
                    f"{why}; service.data must be a path inside the repository",
                )


def _index(doc: Mapping[str, Any], *keys: str) -> int:
    """Where the name keys[-1] is in the unset list at keys[:-1] (for locating a problem)."""
    names = _get(doc, *keys[:-1])
    names = names.get("unset") if isinstance(names, Mapping) else None
    return names.index(keys[-1]) if isinstance(names, list) and keys[-1] in names else 0


def _get(doc: Mapping[str, Any], *keys: str) -> object:
    for key in keys:
        inner = doc.get(key) if isinstance(doc, Mapping) else None
        if not isinstance(inner, Mapping):
            return None
        doc = inner
    return doc


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
    doc: Mapping[str, Any], reader: _Reader, base: Path, *, deployed: bool = False
) -> tuple[
    Path | None,
    Path | None,
    dict[str, SideConfig],
    CompareConfig,
    tuple[RefSettings, ...],
    GateConfig,
]:
    top = [*SECTIONS, *SIDES, "ref"]
    for key in doc:
        if key not in top:
            reader.unknown(key, "the top level", top)
    read = {
        name: reader.section(reader.table(doc.get(name, {}), name), schema, name)
        for name, schema in SECTIONS.items()
    }
    overrides: dict[str, dict[str, _Read]] = {}
    for side in SIDES:
        raw = reader.table(doc.get(side, {}), side)
        for key in raw:
            if key not in ("service", "query"):
                only = f"; only [{side}.service] and [{side}.query] can differ per side"
                reader.unknown(f"{side}.{key}", f"[{side}]", ["service", "query"], only)
        overrides[side] = {
            name: reader.section(
                reader.table(raw.get(name, {}), f"{side}.{name}"),
                SECTIONS[name],
                f"{side}.{name}",
                override=True,
            )
            for name in ("service", "query")
        }
        for name in ("service", "query"):
            for item in overrides[side][name].unset:
                if not _inherits(read[name].values, item):
                    reader.add(
                        f"{side}.{name}.unset[{_index(doc, side, name, item)}]",
                        f"nothing to unset: [{reader.prefix}{name}] does not set {item!r}",
                    )

    gold_values = read["gold"].values
    if "path" not in read["gold"].present:
        reader.add("gold.path", 'missing required key: the gold set, e.g. path = "gold/gold.jsonl"')
    gold = _gold_path(base, gold_values["path"]) if "path" in gold_values else None
    corpus = gold_values.get("corpus")
    corpus_path = _gold_path(base, corpus) if corpus else None

    sides: dict[str, SideConfig] = {}
    issues: dict[str, list[str]] = {}
    unpinned: dict[str, list[tuple[str, str]]] = {}
    pins: dict[str, frozenset[str]] = {}
    merged_sides: dict[str, dict[str, dict[str, Any]]] = {}
    for side in SIDES:
        merged = {n: _merge(read[n], overrides[side][n]) for n in ("service", "query")}
        merged_sides[side] = merged
        pins[side] = frozenset(merged["service"].get("env", {}))
        # an env table with a problem of its own is left out: its pins are unknown, not missing
        env_read = all(
            "env" in r.values or "env" not in r.present
            for r in (read["service"], overrides[side]["service"])
        )
        present = overrides[side]["service"].present
        unpinned[side] = _unpinned(merged["service"], present, side) if env_read else []
        issues[side] = [
            f"{name}.{key}"
            for name, keys in REQUIRED.items()
            for key in keys
            if key not in read[name].present and key not in overrides[side][name].present
            if not (deployed and name == "service")
        ]
        service, query = merged["service"], merged["query"]
        if deployed:  # nothing is started: only ready (optional) and the timeouts are read
            unpinned[side] = []
            service.setdefault("start", "")
            service.setdefault("ready", "")
        elif _uses_data(service) and "data" not in service:
            issues[side].append("service.data")
        # A start whose {NAME} is unknown has that problem to fix first (often a misspelt port).
        start_unpinned = any(where.endswith("start") for where, _ in unpinned[side])
        starts = service.get("start", "").strip() and not deployed
        if starts and not start_unpinned and not receives_port(service):
            issues[side].append(_NO_PORT)
        query["method"] = query.get("method", "GET").upper()
        if query.get("json") is not None and query.get("form") is not None:
            issues[side].append(_TWO_BODIES)
        for body in ("json", "form"):
            if query.get(body) is not None and query["method"] == "GET":
                issues[side].append(f"query.{body}")
        if not issues[side] and not reader.problems:
            sides[side] = SideConfig(ServiceConfig(**merged["service"]), QueryConfig(**query))
    _report_side_issues(reader, issues)
    _report_unpinned(reader, unpinned, pins)
    refs = _read_refs(doc, reader, merged_sides)
    rewrites = {side: config.query.rewrite for side, config in sides.items()}
    if len(set(rewrites.values())) > 1:
        raise ConfigError(
            f"{reader.path}: query.rewrite differs between the sides ({rewrites['baseline']!r} "
            f"and {rewrites['candidate']!r}): both sides must be asked the same queries",
            hint="set query.rewrite once, in [query], not in [baseline.query] or [candidate.query]",
        )
    hook = next(iter(rewrites.values()), None)
    if hook and ":" in hook:
        _check_hook(reader, base, hook)
    floors = dict(read["gate"].values.get("floors", {}))
    gate = GateConfig(floors, floors.pop("slice", {}))
    return gold, corpus_path, sides, CompareConfig(**read["compare"].values), refs, gate


def _gold_path(base: Path, value: str) -> Path:
    """gold.path or gold.corpus: relative to the config file's folder, as {config_dir}/... is."""
    if value.startswith(CONFIG_DIR):
        value = value.removeprefix(CONFIG_DIR).lstrip("/") or "."
    return (base / Path(value).expanduser()).resolve()


def _check_hook(reader: _Reader, base: Path, spec: str) -> None:
    """query.rewrite = "module:function": importable from the config's folder, and callable."""
    from harness.replay.hook import load_hook

    try:
        load_hook(spec, base)
    except ConfigError as error:
        reader.add("query.rewrite", error.message)


def _read_refs(
    doc: Mapping[str, Any], reader: _Reader, sides: Mapping[str, Mapping[str, Mapping[str, Any]]]
) -> tuple[RefSettings, ...]:
    """Every [ref."PATTERN"] table, in file order, each checked against both sides."""
    value = doc.get("ref")
    if value is None:
        return ()
    found = []
    for pattern, raw in reader.table(value, "ref").items():
        reader.patterns.append(pattern)
        where = f"ref.{pattern}"
        shown = f'ref."{pattern}"'
        if not pattern.strip():
            reader.add(where, "a ref pattern cannot be empty: name a branch, tag, SHA or glob")
            continue
        raw = reader.table(raw, where)
        for key in raw:
            if key not in ("service", "query"):
                only = f"; only [{shown}.service] and [{shown}.query] can be set per ref"
                reader.unknown(f"{where}.{key}", f"[{shown}]", ["service", "query"], only)
        before = len(reader.problems)
        read = {
            name: reader.section(
                reader.table(raw.get(name, {}), f"{where}.{name}"),
                SECTIONS[name],
                f"{where}.{name}",
                override=True,
            )
            for name in ("service", "query")
        }
        if "rewrite" in read["query"].present or "rewrite" in read["query"].unset:
            reader.add(
                f"{where}.query.rewrite",
                "query.rewrite cannot differ per ref: both sides must be asked the same "
                "queries; set it once, in [query]",
            )
        lines = {
            key.removeprefix(where + "."): line
            for key, line in reader.lines.items()
            if key == where or key.startswith(where + ".")
        }
        lines[""] = lines.pop(where, 0) or min(lines.values(), default=0)
        layer = RefSettings(pattern, read["service"].overlay, read["query"].overlay, lines)
        if len(reader.problems) == before:
            _check_ref(doc, reader, layer, read, sides)
        found.append(layer)
    return tuple(found)


def _check_ref(
    doc: Mapping[str, Any],
    reader: _Reader,
    layer: RefSettings,
    read: Mapping[str, _Read],
    sides: Mapping[str, Mapping[str, Mapping[str, Any]]],
) -> None:
    """What one ref table makes of each side on its own: an unset of nothing, keys that no
    longer fit together (each problem once, naming the side when only one has it)."""
    where = f"ref.{layer.pattern}"
    for name in ("service", "query"):
        for item in read[name].unset:
            if not any(_inherits(sides[side][name], item) for side in SIDES):
                index = _index(doc, "ref", layer.pattern, name, item)
                reader.add(
                    f"{where}.{name}.unset[{index}]",
                    f"nothing to unset: no side sets {name}.{item}",
                )
    found: dict[tuple[str, str], list[str]] = {}
    for side in SIDES:
        service = apply(sides[side]["service"], layer.service)
        query = apply(sides[side]["query"], layer.query)
        for key, message in side_problems(service, query):
            found.setdefault((key, message), []).append(side)
    for (key, message), having in found.items():
        who = f" (on the {having[0]} side)" if len(having) == 1 else ""
        reader.add(f"{where}.{key}", message + who, near=where)


def _uses_data(service: Mapping[str, Any]) -> bool:
    commands = [
        service.get("start", ""),
        *service.get("prepare", ()),
        *service.get("env", {}).values(),
    ]
    return any(name == "data" for text in commands for name, _, _ in format_fields(text)[0])


def _unpinned(
    service: Mapping[str, Any], overridden: frozenset[str], side: str
) -> list[tuple[str, str]]:
    """(where the command is written, NAME) for each {NAME} in one side's start and prepare that
    is neither the harness's own placeholder nor a key of that side's merged service.env."""
    pins = service.get("env", {})
    commands = [("start", service.get("start", ""))]
    commands += [(f"prepare[{i}]", cmd) for i, cmd in enumerate(service.get("prepare", ()))]
    found = []
    for key, text in commands:
        where = f"{side}.service.{key}" if key.partition("[")[0] in overridden else f"service.{key}"
        found += [(where, name) for name in command_pins_needed(text) if name not in pins]
    return found


def _report_unpinned(
    reader: _Reader,
    unpinned: Mapping[str, list[tuple[str, str]]],
    pins: Mapping[str, frozenset[str]],
) -> None:
    """Report an unknown {NAME} at the command's key and line: once when both sides lack the
    pin, else naming the side that lacks it and where its pin could go."""
    for where, name in dict.fromkeys(unpinned["baseline"] + unpinned["candidate"]):
        having = [side for side in SIDES if (where, name) in unpinned[side]]
        hint, who = pin_hint(name), ""
        if len(having) == 1:
            who = f" on the {having[0]} side"
            hint += f" (or in [{reader.prefix}{having[0]}.service] env)"
        known = frozenset.intersection(*(pins[side] for side in having))
        message = unknown_placeholder(name, COMMAND_PLACEHOLDERS, hint, pins=known, who=who)
        reader.add(where, message)


_NO_PORT = "service.start:port"  # an issue of start that is not a missing key
_TWO_BODIES = "query.form:json"  # both bodies set
_BODY_NAMES = {"query.json": "JSON", "query.form": "form"}


def _report_side_issues(reader: _Reader, issues: Mapping[str, list[str]]) -> None:
    """Report a problem once when both sides have it, else under the side that has it."""
    for issue in dict.fromkeys(issues["baseline"] + issues["candidate"]):
        having = [side for side in SIDES if issue in issues[side]]
        key = issue.partition(":")[0]
        section = key.partition(".")[0]
        for side in having if len(having) == 1 else [None]:
            where = f"[{reader.prefix}{section}]"
            if side is not None:
                where += f" or [{reader.prefix}{side}.{section}]"
            who = f" on the {side} side" if side else ""
            if issue == _NO_PORT:
                message = (
                    f"start never receives the port the harness picks{who}: write {{port}} in "
                    "it (e.g. --port {port}), or pin it in service.env, e.g. "
                    'env = { PORT = "{port}" }'
                )
            elif issue == _TWO_BODIES:
                message = TWO_BODIES
            elif key in ("query.json", "query.form"):
                message = BODY_NEEDS_POST.format(what=_BODY_NAMES[key])
            elif key == "service.data":
                message = (
                    f"{{data}} is used{who} but data is not set: set it in {where} to a "
                    "directory of the worktree, copied fresh for every boot"
                )
            else:
                message = f"missing required key{who}: set {EXAMPLES[key]} in {where}"
                if key == "service.ready":  # the path to name is the user's most common guess
                    message += (
                        ", a path the service answers with 2xx once it can take queries (no "
                        'health route? FastAPI serves "/openapi.json")'
                    )
            reader.add(f"{side}.{key}" if side else key, message, near=key)

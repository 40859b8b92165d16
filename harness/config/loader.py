"""Reading harness.toml (or [tool.harness] in pyproject.toml) strictly into a HarnessConfig.

    load_config(path=None, *, repo=None, cwd=None) -> HarnessConfig

Discovery, validation of the whole document and per-side overrides live here; reading one file
with every problem located (file:line: field) is `harness.config.reader`, what each key may hold
`harness.config.schema`, the values it builds `harness.config.values`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.config.manifest import system_folder
from harness.config.overrides import (
    BODY_NEEDS_POST,
    TWO_BODIES,
    apply,
    side_problems,
)
from harness.config.reader import Read, Reader, inherits, merge, parse_toml, read_text
from harness.config.schema import EXAMPLES, REQUIRED, SECTIONS, SIDES
from harness.config.templates import (
    command_pins_needed,
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
    QueryConfig,
    RefSettings,
    ServiceConfig,
    SideConfig,
    outside_data,
)
from harness.errors import ConfigError
from harness.process.inputs import not_regular

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
    named = "" if path is None else "--config"  # every caller passes the option's value
    path = _discover(cwd) if path is None else (cwd / path).resolve()
    text = read_text(path, named)
    in_pyproject = path.name == "pyproject.toml"
    doc: object = parse_toml(path, text)
    if in_pyproject:
        tool = doc.get("tool", {}) if isinstance(doc, dict) else None
        doc = tool.get("harness") if isinstance(tool, dict) else None
    if not isinstance(doc, dict):
        raise ConfigError(
            f"{path}: no [tool.harness] table",
            hint="add [tool.harness.boot.service], [tool.harness.query] and [tool.harness.gold]",
        )
    reader = Reader(path, text, "tool.harness." if in_pyproject else "")
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
        tool = parse_toml(pyproject, read_text(pyproject)).get("tool", {})
        if isinstance(tool, dict) and "harness" in tool:
            return pyproject
    raise ConfigError(
        f"no harness configuration in {cwd}: looked for harness.toml, "
        "then a [tool.harness] table in pyproject.toml",
        hint="create harness.toml with [service] start and ready, [query] path and ids, "
        "and [gold] path (docs/configure.md; `harness demo DIR` writes an example to copy), "
        "or pass its path",
    )


def expand_user(value: str) -> Path:
    """`value` with a leading ~ or ~user expanded, as the shell would; left as written when
    that home is unknown (a user that does not exist), so that the path reads as relative and
    its check says so, instead of a traceback."""
    try:
        return Path(value).expanduser()
    except RuntimeError:
        return Path(value)


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


def _check_inside(reader: Reader, repo: Path, base: Path, doc: Mapping[str, Any]) -> None:
    """gold.path (and a relative gold.corpus) must resolve inside the repository or beside a
    config kept outside it, and a relative service.data inside the repository: the harness
    reads them (and copies the data) on the user's behalf, and a path that climbs out, or a
    committed symlink that leads out, would hand a service a file of the host. An absolute
    gold.corpus or service.data (or ~/...) written in your configuration names data kept
    outside the repository on purpose: it must not lie inside the repository (and exist when
    a ref boots: a command that boots nothing needs no data disk mounted)."""
    gold = doc.get("gold") if isinstance(doc.get("gold"), dict) else {}
    for key in ("path", "corpus"):
        value = gold.get(key) if isinstance(gold, dict) else None
        if isinstance(value, str) and value and "\x00" not in value:  # NUL: refused already
            written = expand_user(value)
            target = base / written
            if key == "corpus" and written.is_absolute() and _elsewhere(target, (repo, base)):
                continue  # an absolute path outside: load_gold says if it is missing
            # Inside the repository, or beside a config file kept outside it.
            whys = [outside(target, root) for root in dict.fromkeys((repo, base))]
            if all(whys):
                hint = " (or give the corpus's absolute path)" if key == "corpus" else ""
                reader.add(f"gold.{key}", f"{whys[0]}; keep the gold set in the repository{hint}")
    for key in ("path", "corpus"):
        value = gold.get(key) if isinstance(gold, dict) else None
        if isinstance(value, str) and value and "\x00" not in value:
            why = _not_a_file(_gold_path(base, value))
            if why:
                reader.add(f"gold.{key}", why)
    tables = [("service", doc.get("service"))]
    tables += [(f"{side}.service", _get(doc, side, "service")) for side in SIDES]
    refs: Mapping[str, Any] = doc["ref"] if isinstance(doc.get("ref"), dict) else {}
    tables += [(f"ref.{pattern}.service", _get(refs, pattern, "service")) for pattern in refs]
    for where, table in tables:
        value = table.get("data") if isinstance(table, dict) else None
        if not isinstance(value, str) or not value.strip() or "\x00" in value:
            continue  # refused by its key's check
        why = _data_problem(value, repo, base)
        if why:
            reader.add(f"{where}.data", why)


def _not_a_file(path: Path) -> str | None:
    """Why the gold file or corpus at `path` can never be read: a FIFO (reading it would wait
    for a writer forever), a device (/dev/zero never ends), a socket; None for a regular file,
    a folder (a BEIR gold set or corpus) or nothing (load_gold says it is missing)."""
    try:
        what = not_regular(path.stat().st_mode)
    except (OSError, ValueError):
        return None
    if what is None or what == "a folder":
        return None
    return (f"{path} is {what}, not a regular file; save it to a file on disk and give that "
            "path (harness reads only regular files: reading a pipe can wait forever, a device "
            "never ends)")


def _elsewhere(path: Path, roots: tuple[Path, ...]) -> bool:
    """Whether `path`, absolute as written, lies outside every one of `roots`, as written and
    resolved."""
    lexical = Path(os.path.normpath(path))
    return not any(
        p.is_relative_to(r.resolve()) for p in (lexical, path.resolve()) for r in roots
    )


def _data_problem(value: str, repo: Path, base: Path) -> str | None:
    """What is wrong with one service.data path, or None."""
    if value.startswith(CONFIG_DIR):
        rest = value.removeprefix(CONFIG_DIR).lstrip("/") or "."
        why = outside(base / rest, base)
        return f"{why}; {{config_dir}}/... must stay in that folder" if why else None
    if not outside_data(value):
        # Relative to each ref's worktree, which mirrors the repository.
        why = outside(repo / value, repo)
        if why is None:
            return None
        return (
            f"{why}; a relative service.data must stay inside the repository (an absolute "
            'path, e.g. data = "/mnt/index", names data kept outside it)'
        )
    path = expand_user(value)
    if not path.is_absolute():
        return f"{value} cannot be expanded (no home directory known); write the absolute path"
    # A relative path or {config_dir}/... stays in its folder (above); an absolute one could
    # name the whole disk, which the manifest would walk.
    system = system_folder(path)
    if system:
        return (f"{system}: name the folder your service reads its data from (an index, a "
                'model), e.g. data = "/mnt/index"')
    if not _elsewhere(path, (repo,)):
        return (
            f"{path} is inside the repository {repo.resolve()}: write it relative to the "
            "repository, so that each ref boots with its own commit's data"
        )
    return None  # whether it exists is asked when a ref boots (`data_source`), not to read it


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
    doc: Mapping[str, Any], reader: Reader, base: Path, *, deployed: bool = False
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
    overrides: dict[str, dict[str, Read]] = {}
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
                if not inherits(read[name].values, item):
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
        merged = {n: merge(read[n], overrides[side][n]) for n in ("service", "query")}
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
    gate = GateConfig(floors, floors.pop("slice", {}), read["gate"].values.get("non_inferior"))
    return gold, corpus_path, sides, CompareConfig(**read["compare"].values), refs, gate


def _gold_path(base: Path, value: str) -> Path:
    """gold.path or gold.corpus: relative to the config file's folder, as {config_dir}/... is."""
    if value.startswith(CONFIG_DIR):
        value = value.removeprefix(CONFIG_DIR).lstrip("/") or "."
    return (base / expand_user(value)).resolve()


def _check_hook(reader: Reader, base: Path, spec: str) -> None:
    """query.rewrite = "module:function": importable from the config's folder, and callable."""
    from harness.config.hook import load_hook

    try:
        load_hook(spec, base)
    except ConfigError as error:
        reader.add("query.rewrite", error.message)


def _read_refs(
    doc: Mapping[str, Any], reader: Reader, sides: Mapping[str, Mapping[str, Mapping[str, Any]]]
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
    reader: Reader,
    layer: RefSettings,
    read: Mapping[str, Read],
    sides: Mapping[str, Mapping[str, Mapping[str, Any]]],
) -> None:
    """What one ref table makes of each side on its own: an unset of nothing, keys that no
    longer fit together (each problem once, naming the side when only one has it)."""
    where = f"ref.{layer.pattern}"
    for name in ("service", "query"):
        for item in read[name].unset:
            if not any(inherits(sides[side][name], item) for side in SIDES):
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
    reader: Reader,
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


def _report_side_issues(reader: Reader, issues: Mapping[str, list[str]]) -> None:
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
                    "folder of the worktree (copied fresh for every boot), or to an absolute "
                    "path outside the repository (bound read-only)"
                )
            else:
                message = f"missing required key{who}: set {EXAMPLES[key]} in {where}"
                if key == "service.ready":  # the path to name is the user's most common guess
                    message += (
                        ", a path the service answers with 2xx once it can take queries (no "
                        'health route? FastAPI serves "/openapi.json")'
                    )
            reader.add(f"{side}.{key}" if side else key, message, near=key)

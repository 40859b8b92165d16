"""The matrix file: named configurations, the reference, the metrics and the constraints, read
strictly (every problem located as file:line: field, then one ConfigError, exit 2), and a
configuration applied to the harness config.

    read_matrix(path) -> Matrix
    apply_entry(config, side, entry) -> HarnessConfig

The file (TOML):

    reference = "hybrid"                   # optional: default the first configuration
    metrics = ["ndcg@10", "mrr@10"]        # optional: default --metrics
    [config.lexical]
    env = { RANKING = "lexical" }          # pins on the service's env
    [config.lexical.service]               # optional: overrides, as [baseline.service]
    [config.lexical.query]                 # optional: overrides, as [baseline.query]
    [[constraint]]
    config = "lexical"
    metric = "ndcg@10"
    slice = "entity"                       # optional: default overall
    max_drop = 0.05                        # or min = 0.7 / max = 0.3 (absolute)

Overrides merge over the side's effective config key by key, the tables env, params and
headers entry by entry (as the per-side overrides of harness.toml); `env` pins are merged last.
Each key is checked by `harness.config.schema`, as in harness.toml.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.config import HarnessConfig
from harness.config.schema import SECTIONS, convert, describe
from harness.config.templates import receives_port
from harness.config.values import MERGED_TABLES
from harness.errors import ConfigError, Problem
from harness.matrix.values import Constraint, Entry, Matrix
from harness.process.inputs import MATRIX, read_input
from harness.score.metrics import parse_metric
from harness.values.types import GoldSet

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\[\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-.\"' ]+?)\s*=")
_TOP = ("reference", "metrics", "config", "constraint")
_ENTRY = ("env", "service", "query", "description")
_BOUNDS = ("max_drop", "min", "max")
_CONSTRAINT = ("config", "metric", "slice", *_BOUNDS)


def _lines(text: str) -> dict[str, int]:
    """The line of each table header and key, by dotted name; the n-th [[constraint]] is
    "constraint[n]"."""
    found: dict[str, int] = {}
    table, counts = "", dict[str, int]()
    for number, line in enumerate(text.splitlines(), start=1):
        if header := _HEADER.match(line):
            table = ".".join(p.strip().strip("\"'") for p in header.group(2).split("."))
            if header.group(1) == "[[":
                counts[table] = counts.get(table, -1) + 1
                table = f"{table}[{counts[table]}]"
            found.setdefault(table, number)
        elif key := _KEY.match(line):
            name = ".".join(p.strip().strip("\"'") for p in key.group(1).split("."))
            found.setdefault(f"{table}.{name}" if table else name, number)
    return found


class _Problems:
    def __init__(self, path: Path, text: str) -> None:
        self.path, self.lines, self.found = path, _lines(text), []

    found: list[Problem]

    def problem(self, where: str, message: str) -> Problem:
        """`message` located at `where`'s line, else its table's."""
        name, line = where, None
        while name and line is None:
            line = self.lines.get(name)
            if line is None and name.endswith("]") and "[" in name:  # an array item: its key
                name = name[: name.rindex("[")]
            else:
                name = name.rpartition(".")[0] if "." in name else ""
        if line is None:  # a table written only through its sub-tables: the first of them
            inside = [n for k, n in self.lines.items() if k.startswith((f"{where}.", f"{where}["))]
            line = min(inside, default=None)
        return Problem(str(self.path), message, line, where)

    def add(self, where: str, message: str) -> None:
        self.found.append(self.problem(where, message))

    def table(self, value: object, where: str) -> dict[str, Any]:
        if isinstance(value, dict):
            return value
        self.add(where, f"expected a table, got {describe(value)}")
        return {}

    def unknown(self, raw: Mapping[str, Any], known: tuple[str, ...], where: str) -> None:
        for key in raw:
            if key not in known:
                self.add(
                    f"{where}.{key}" if where else key,
                    f"unknown key {key!r}; known keys: {', '.join(known)}",
                )


def _section(problems: _Problems, raw: Mapping[str, Any], name: str, where: str) -> dict[str, Any]:
    """One [config.X.service] or [config.X.query] table checked by harness.config.schema."""
    schema, values = SECTIONS[name], {}
    for key, value in raw.items():
        at = f"{where}.{key}"
        if key not in schema:
            problems.add(at, f"unknown key {key!r} in [{name}]; known keys: {', '.join(schema)}")
            continue
        converted, wrong = convert(schema[key].kind, value)
        if wrong:
            problems.add(at, wrong)
            continue
        check = schema[key].check
        issues = check(converted) if check else []
        for suffix, message in issues:
            problems.add(at + suffix, message)
        if not issues:
            values[key] = converted.upper() if key == "method" else converted
    return values


def _entry(problems: _Problems, name: str, raw: dict[str, Any]) -> Entry:
    where = f"config.{name}"
    if not _NAME.fullmatch(name):
        problems.add(where, f"{name!r} is not a usable name (letters, digits, _ . + -)")
    problems.unknown(raw, _ENTRY, where)
    env: dict[str, str] = {}
    if "env" in raw:
        converted, wrong = convert("table", raw["env"])
        if wrong:
            problems.add(f"{where}.env", wrong)
        else:
            for key, value in converted.items():
                if _ENV_NAME.fullmatch(key):
                    env[key] = value
                else:
                    problems.add(
                        f"{where}.env.{key}", f"{key!r} is not an environment variable name"
                    )
    sections = {
        part: _section(
            problems, problems.table(raw.get(part, {}), f"{where}.{part}"), part, f"{where}.{part}"
        )
        for part in ("service", "query")
    }
    description = raw.get("description", "")
    if not isinstance(description, str):
        problems.add(f"{where}.description", f"expected a string, got {describe(description)}")
        description = ""
    if (
        not env
        and not sections["service"]
        and not sections["query"]
        and set(raw) <= {"description"}
    ):
        problems.add(
            where,
            "sets nothing: give env pins, or [service] / [query] overrides "
            '(e.g. env = { MODE = "bm25" })',
        )
    return Entry(name, env, sections["service"], sections["query"], description)


def _number(problems: _Problems, value: object, where: str) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        problems.add(where, f"expected a number, got {describe(value)}")
        return None
    return float(value)


def _constraint(
    problems: _Problems, i: int, raw: dict[str, Any], names: list[str], reference: str
) -> Constraint | None:
    where = f"constraint[{i}]"
    problems.unknown(raw, _CONSTRAINT, where)
    ok = True
    config = raw.get("config")
    if not isinstance(config, str) or config not in names:
        problems.add(
            f"{where}.config", f"must name a configuration ({', '.join(names)}), not {config!r}"
        )
        ok = False
    metric = raw.get("metric")
    try:
        metric = str(parse_metric(metric)) if isinstance(metric, str) else parse_metric("?")
    except ValueError as error:
        problems.add(
            f"{where}.metric",
            str(error)
            if isinstance(metric, str)
            else f"expected a metric name such as ndcg@10, got {describe(metric)}",
        )
        ok = False
    scope = raw.get("slice", "overall")
    if not isinstance(scope, str) or not scope:
        problems.add(f"{where}.slice", f"expected a slice name, got {describe(scope)}")
        ok = False
    bounds = [b for b in _BOUNDS if b in raw]
    if len(bounds) != 1:
        given = ", ".join(bounds) or "none"
        problems.add(where, f"needs exactly one of max_drop, min, max (given: {given})")
        return None
    bound = bounds[0]
    value = _number(problems, raw[bound], f"{where}.{bound}")
    if value is None:
        return None
    if bound == "max_drop" and value < 0:
        problems.add(f"{where}.max_drop", f"must be >= 0, not {value:g}")
        ok = False
    if bound == "max_drop" and config == reference:
        problems.add(
            f"{where}.config",
            f"{config!r} is the reference: a drop against itself is 0; "
            "use min or max for an absolute bound",
        )
        ok = False
    if not ok:
        return None
    return Constraint(
        str(config),
        str(metric),
        str(scope),
        bound,
        value,
        problems.problem(f"{where}.slice", "").__str__().removesuffix(": "),
    )


def read_matrix(path: Path) -> Matrix:
    """Read and check the matrix file; one ConfigError lists every problem, each located."""
    try:
        text = read_input(path, MATRIX, "--matrix").decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such matrix file", hint="check --matrix") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot read the matrix file ({error})") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        line = re.search(r"at line (\d+)", str(error))
        problem = Problem(
            str(path), f"TOML syntax error: {error}", int(line.group(1)) if line else None
        )
        raise ConfigError(f"{path}: not valid TOML", [problem]) from None
    problems = _Problems(path, text)
    problems.unknown(doc, _TOP, "")
    configs = problems.table(doc.get("config", {}), "config")
    entries = [
        _entry(problems, name, problems.table(raw, f"config.{name}"))
        for name, raw in configs.items()
    ]
    names = [e.name for e in entries]
    if len(entries) < 2:
        problems.add(
            "config",
            "a matrix needs at least two configurations, e.g. [config.a] and "
            "[config.b], each with env pins or overrides",
        )
    reference = doc.get("reference", names[0] if names else "")
    if not isinstance(reference, str) or (names and reference not in names):
        problems.add(
            "reference", f"must name a configuration ({', '.join(names)}), not {reference!r}"
        )
        reference = names[0] if names else ""
    metrics: list[str] = []
    raw_metrics = doc.get("metrics", [])
    if not isinstance(raw_metrics, list) or (not raw_metrics and "metrics" in doc):
        problems.add("metrics", 'expected a non-empty array of metric names, e.g. ["ndcg@10"]')
    else:
        for j, name in enumerate(raw_metrics):
            try:
                metrics.append(str(parse_metric(name if isinstance(name, str) else repr(name))))
            except ValueError as error:
                problems.add(f"metrics[{j}]", str(error))
    raw_constraints = doc.get("constraint", [])
    if not isinstance(raw_constraints, list):
        problems.add("constraint", "expected [[constraint]] tables")
        raw_constraints = []
    constraints = [
        c
        for i, raw in enumerate(raw_constraints)
        if (
            c := _constraint(problems, i, problems.table(raw, f"constraint[{i}]"), names, reference)
        )
        is not None
    ]
    if problems.found:
        n = len(problems.found)
        raise ConfigError(
            f"{path}: invalid matrix file ({n} problem{'s' * (n != 1)})", problems.found
        )
    return Matrix(
        str(path), reference, tuple(entries), tuple(dict.fromkeys(metrics)), tuple(constraints)
    )


def _merged(base: object, over: Mapping[str, Any]) -> dict[str, Any]:
    changes = {
        key: {**getattr(base, key), **value} if key in MERGED_TABLES else value
        for key, value in over.items()
    }
    return changes


def apply_entry(config: HarnessConfig, side: str, entry: Entry, source: str = "") -> HarnessConfig:
    """`config` with the entry's overrides merged over `side`, then its env pins; ConfigError
    when the result cannot receive the port."""
    chosen = config.side(side)
    service = replace(chosen.service, **_merged(chosen.service, entry.service))
    service = replace(service, env={**service.env, **entry.env})
    query = replace(chosen.query, **_merged(chosen.query, entry.query))
    if not receives_port({"start": service.start, "env": dict(service.env)}):
        raise ConfigError(
            f"{source}: config.{entry.name}: the service's start never receives {{port}}",
            hint="write {port} in [config.NAME.service] start, or pin it in env",
        )
    changed = replace(chosen, service=service, query=query)
    if side == "baseline":
        return replace(config, baseline=changed)
    return replace(config, candidate=changed)


def unknown_slices(matrix: Matrix, gold: GoldSet) -> None:
    """ConfigError, before anything runs, for a constraint on a slice the gold set lacks."""
    problems = [
        f"{c.where}: the gold set {gold.source} has no slice {c.scope!r}; known: "
        f"{', '.join(gold.slices)}"
        for c in matrix.constraints
        if c.scope != "overall" and c.scope not in gold.slices
    ]
    if problems:
        raise ConfigError(
            f"{matrix.source}: a constraint names an unknown slice", hint="\n".join(problems)
        )

"""One config file read strictly, every problem located: the TOML text and document, and a
Reader that checks tables against `harness.config.schema` and collects each problem at its
key's line (file:line: field), so that `harness.config.loader` fails once, listing them all.

    text = read_text(path); doc = parse_toml(path, text)    # ConfigError: encoding, syntax
    reader = Reader(path, text, prefix)                     # prefix "tool.harness." in pyproject
    read = reader.section(raw, SECTIONS["query"], "query")  # Read: values that passed, keys written
    reader.problems                                         # [Problem], in the order found
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.config.overrides import UNSET_ENTRIES, apply
from harness.config.schema import REQUIRED, Key, convert, describe
from harness.config.values import Overlay
from harness.errors import ConfigError, Problem
from harness.process.inputs import CONFIG, read_input
from harness.text.encodings import SAMPLE, encoding_problem

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
        text = read_input(path, CONFIG).decode("utf-8")
    except (OSError, UnicodeDecodeError, ConfigError):
        return None
    prefix = "tool.harness." if path.name == "pyproject.toml" else ""
    lines = _key_lines(text, prefix)
    return next(((key, lines[key]) for key in keys if key in lines), None)


class Reader:
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
    ) -> Read:
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
        return Read(values, frozenset(raw) - {"unset"}, unset)

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
class Read:
    values: Mapping[str, Any]  # keys that passed every check, converted
    present: frozenset[str]  # every key written, valid or not (`unset` aside)
    unset: tuple[str, ...] = ()  # the names `unset` removes (override tables only)

    @property
    def overlay(self) -> Overlay:
        return Overlay(dict(self.values), self.unset)


def merge(base: Read, over: Read) -> dict[str, Any]:
    return apply(base.values, over.overlay)


def inherits(values: Mapping[str, Any], name: str) -> bool:
    """Whether `values` (what an override inherits) has what `unset` names."""
    table, dot, entry = name.partition(".")
    if not dot:
        return table in values
    inner = values.get(table)
    return isinstance(inner, Mapping) and entry in inner


def read_text(path: Path, named: str = "") -> str:
    """The text of a config file (`named`: the option that gave it); ConfigError for anything
    but a UTF-8 regular file of at most 4 MiB (`harness.process.inputs`: a FIFO would block,
    /dev/zero never end)."""
    try:
        data = read_input(path, CONFIG, named)
        wide = encoding_problem(data[:SAMPLE], path)
        if wide is not None:
            raise ConfigError(f"{path}:1: {wide}")
        return data.decode("utf-8-sig")  # a byte-order mark (Windows editors) is not TOML
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file", hint="check the path") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the config file: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"{path}: not UTF-8 (byte {error.start}); TOML files must be UTF-8"
        ) from None


def parse_toml(path: Path, text: str) -> dict[str, Any]:
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

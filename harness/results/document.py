"""A Comparison as a JSON document, and back: schema-versioned, every field, nothing computed.

    comparison_to_dict(comparison, *, redact=False) -> dict    {"schema", "schema_version",
                                                                "verdict", "valid", ...fields}
    comparison_from_dict(document, source) -> Comparison       ResultsError names the bad field

Pure: no I/O (`harness.results` saves and loads the files; `harness.report.page` renders the
JSON text).  The document is the Comparison's dataclass tree as nested objects: enums by value,
tuples as lists, None as null; the two verdicts are lifted into {"verdict": {"quality", "latency"}}
and `valid` is added.  Reading it back rebuilds an equal Comparison from the field annotations,
refusing unknown fields, absent required ones, wrong types and enum values outside the vocabulary.
`redact=True` leaves every query text and every sample of an errored answer's body out (a
Comparison holds no other document text: ids, hashes and numbers only).
"""

from __future__ import annotations

import enum
import functools
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import fields, is_dataclass, replace
from typing import Any

from harness.errors import ResultsError, require_schema
from harness.verdict.comparison import Comparison

SCHEMA = "harness-comparison"
SCHEMA_VERSION = 2  # 2: hit rates over repeats, power, findings, inconclusive


def jsonable(value: object) -> object:
    """`value` with every dataclass turned into a dict of its fields, enums into their values and
    tuples into lists, recursively; anything else as it is."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [jsonable(v) for v in value]
    return value


# An absolute path: "/" then at least one "folder/" then a last component; it keeps its last part.
_PATH = re.compile(r"(?<![\w.~/])/(?:[^\s/;,:()'\"]+/)+([^\s/;,:()'\"]+)")


def without_paths(text: str) -> str:
    """`text` with every absolute path cut to its last component (a log file's name)."""
    return _PATH.sub(r"\1", text)


def redacted(c: Comparison) -> Comparison:
    """The comparison without any query text (each flip's `text` is None) and without a local
    path: the gold set is named by its file name, a reused record by its file name, and a path
    quoted in an invalid reason or a warning (a service log) by its last component; and without
    any answer's words (each error kind's sample body is None)."""
    flips = tuple(replace(f, flips=tuple(replace(x, text=None) for x in f.flips)) for f in c.flips)
    h = c.header
    header = replace(
        h,
        gold=replace(h.gold, source=h.gold.source.rstrip("/").rsplit("/", 1)[-1]),
        baseline=replace(h.baseline, record_path=_name(h.baseline.record_path)),
        candidate=replace(h.candidate, record_path=_name(h.candidate.record_path)),
    )
    return replace(
        c,
        flips=flips,
        errors=tuple(replace(e, sample=None) for e in c.errors),
        header=header,
        invalid_reasons=tuple(map(without_paths, c.invalid_reasons)),
        warnings=tuple(map(without_paths, c.warnings)),
    )


def _name(path: str | None) -> str | None:
    """The last component of a path (the file name, or the folder of a BEIR set)."""
    return None if path is None else path.rstrip("/").rsplit("/", 1)[-1]


def comparison_to_dict(comparison: Comparison, *, redact: bool = False) -> dict[str, Any]:
    """The JSON document: schema, version, the two verdicts, then every field of the Comparison."""
    c = redacted(comparison) if redact else comparison
    body = {f.name: jsonable(getattr(c, f.name)) for f in fields(c)}
    quality, latency = body.pop("verdict_quality"), body.pop("verdict_latency")
    if not c.floors:  # [gate.floors] unset: the document is what it was before floors existed
        del body["floors"]
    settings = body["settings"]
    if not c.settings.non_inferior and isinstance(settings, dict):  # no margin asked for: as
        del body["noninferiority"], settings["non_inferior"]  # it was before margins existed
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "verdict": {"quality": quality, "latency": latency},
        "valid": c.valid,
        **body,
    }


class _Malformed(Exception):
    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")


class _Bad(Exception):
    """A value that does not fit its type: the message, and the path to it, innermost first
    (each enclosing loader adds its step as the exception passes: no path is built for the
    values that do fit)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.steps: list[str] = []


Loader = Callable[[object], Any]


@functools.cache
def _loader(tp: Any) -> Loader:
    """The function that rebuilds a value of type `tp` (a dataclass, enum, tuple, union or
    scalar) from JSON, worked out once per type (resolving string annotations and walking the
    type at every value was most of reading a 10k-query comparison back)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (types.UnionType, typing.Union):
        (inner,) = [a for a in args if a is not type(None)]
        if type(None) not in args:
            return _loader(inner)
        return lambda value: None if value is None else _loader(inner)(value)
    if origin is tuple:
        return _tuple_loader(args)
    if isinstance(tp, type) and is_dataclass(tp):
        return _dataclass_loader(tp)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return functools.partial(_enum, tp)
    if tp is float:
        return _float
    if tp in (int, str, bool):
        return functools.partial(_exact, tp)
    return functools.partial(_unknown, tp)


def _tuple_loader(args: tuple[Any, ...]) -> Loader:
    def load(value: object) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise _Bad(f"expected a list, got {type(value).__name__}")
        kinds = [args[0]] * len(value) if args[1:] == (...,) else list(args)
        if len(kinds) != len(value):
            raise _Bad(f"expected {len(kinds)} items, got {len(value)}")
        index = 0
        try:
            if args[1:] == (...,):
                item = _loader(args[0])
                return tuple(map(item, value))
            return tuple(_loader(t)(v) for t, v in zip(kinds, value, strict=True))
        except _Bad as bad:
            for index, (t, v) in enumerate(zip(kinds, value, strict=True)):  # noqa: B007
                try:
                    _loader(t)(v)
                except _Bad:
                    break
            bad.steps.append(f"[{index}]")
            raise

    return load


def _dataclass_loader(tp: type) -> Loader:
    fields_of: dict[str, Loader] = {}
    known = frozenset(f.name for f in fields(tp))

    def load(value: object) -> Any:
        if not isinstance(value, dict):
            raise _Bad(f"expected an object, got {type(value).__name__}")
        if unknown := sorted(set(value) - known):
            raise _Bad(f"unknown field {unknown[0]!r}")
        if not fields_of:  # resolved at first use: a dataclass may name itself
            hints = typing.get_type_hints(tp)
            fields_of.update({name: _loader(hints[name]) for name in known})
        loaded = {}
        for k, v in value.items():
            try:
                loaded[k] = fields_of[k](v)
            except _Bad as bad:
                bad.steps.append(f".{k}")
                raise
        try:
            return tp(**loaded)
        except TypeError as error:  # a required field is absent
            raise _Bad(str(error).partition(".__init__() ")[2] or str(error)) from None

    return load


def _enum(tp: type[enum.Enum], value: object) -> enum.Enum:
    try:
        return tp(value)
    except ValueError:
        choices = ", ".join(repr(m.value) for m in tp)
        raise _Bad(f"{value!r} is not one of {choices}") from None


def _float(value: object) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise _Bad(f"expected float, got {value!r}")


def _exact(tp: type, value: object) -> object:
    if type(value) is tp:
        return value
    raise _Bad(f"expected {tp.__name__}, got {value!r}")


def _unknown(tp: Any, value: object) -> object:
    raise _Bad(f"expected {getattr(tp, '__name__', tp)}, got {value!r}")


def _load(tp: Any, value: object, where: str) -> Any:
    """Rebuild a value of type `tp` from JSON; _Malformed names where it does not fit."""
    try:
        return _loader(tp)(value)
    except _Bad as bad:
        raise _Malformed(where + "".join(reversed(bad.steps)), bad.message) from None


def comparison_from_dict(document: Mapping[str, Any], source: str = "<memory>") -> Comparison:
    """Read back what `comparison_to_dict` wrote; ResultsError names the field that is wrong."""
    require_schema(
        document,
        source,
        schema=SCHEMA,
        version=SCHEMA_VERSION,
        what="comparison",
        version_hint=["re-run harness compare to measure it again"],
    )
    body = {k: v for k, v in document.items() if k not in ("schema", "schema_version", "valid")}
    verdict = body.pop("verdict", None)
    if not isinstance(verdict, dict):
        raise ResultsError(f"{source}: verdict: expected an object with quality and latency")
    body["verdict_quality"], body["verdict_latency"] = (
        verdict.get("quality"),
        verdict.get("latency"),
    )
    try:
        comparison: Comparison = _load(Comparison, body, "comparison")
    except _Malformed as error:
        raise ResultsError(
            f"{source}: malformed comparison: {error}", ["re-run harness compare to write it again"]
        ) from None
    return comparison

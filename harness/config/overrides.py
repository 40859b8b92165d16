"""Overrides: a side's or a ref's table on top of what it inherits, and which refs a table matches.

    apply(values, overlay) -> dict               `unset` first, then the table's own keys
    matches(pattern, ref, sha) -> bool           a [ref."PATTERN"] table applies to this ref?
    side_problems(service, query) -> [(key, message)]   keys that do not fit together
    for_ref(config, name, side, ref, sha) -> SideConfig  what `HarnessConfig.side` returns

Precedence, lowest first: the base sections ([service], [query]), the side's ([baseline.*] or
[candidate.*]), then every [ref."PATTERN"] table that matches the ref, in the order the file
writes them. Inside one table `unset` is applied before its keys, so `unset = ["params"]` with
`params = { ... }` replaces the inherited table whole, while `params = { ... }` alone merges
entry by entry.

A pattern matches the ref as the user wrote it (`main`, `v1.2`, `release/2024`, an abbreviated
SHA) or the full SHA it resolved to, as an fnmatch glob (`v1.*`, `release/*`; case-sensitive,
`*` also crosses `/`); a pattern of 4 to 40 hex digits also matches a commit whose SHA starts
with it. Pure: no I/O.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from harness.config.templates import command_pins_needed, format_fields, receives_port
from harness.config.values import (
    COMMAND_PLACEHOLDERS,
    MERGED_TABLES,
    HarnessConfig,
    Overlay,
    QueryConfig,
    RefSettings,
    ServiceConfig,
    SideConfig,
)
from harness.errors import ConfigError, Problem

_HEX = re.compile(r"^[0-9a-f]{4,40}$")

# The keys whose entries `unset` can name one by one ("params.q"); `json` by its top-level keys.
UNSET_ENTRIES = frozenset({*MERGED_TABLES, "form", "json"})

BODY_NEEDS_POST = 'a {what} body needs method = "POST"; set it, or put the fields in params'
TWO_BODIES = (
    "json and form are both set, and a request has one body: keep one "
    '(unset = ["json"] or unset = ["form"] removes an inherited one)'
)


def apply(values: Mapping[str, Any], overlay: Overlay) -> dict[str, Any]:
    """`values` (one section's keys) with `overlay` on top: its `unset` removed first, then its
    keys set; `env`, `params` and `headers` merge entry by entry, anything else is replaced."""
    merged = dict(values)
    for name in overlay.unset:
        key, dot, entry = name.partition(".")
        if not dot:
            merged.pop(key, None)
        elif isinstance(merged.get(key), Mapping):
            merged[key] = {k: v for k, v in merged[key].items() if k != entry}
    for key, value in overlay.values.items():
        if key in MERGED_TABLES and isinstance(merged.get(key), Mapping):
            merged[key] = {**merged[key], **value}  # type: ignore[dict-item]
        else:
            merged[key] = value
    return merged


def matches(pattern: str, ref: str | None, sha: str | None) -> bool:
    """Whether a [ref."PATTERN"] table applies to `ref` (as written) resolved to `sha`."""
    names = [name for name in (ref, sha) if name]
    if any(fnmatch.fnmatchcase(name, pattern) for name in names):
        return True
    return bool(sha and _HEX.match(pattern) and sha.lower().startswith(pattern))


def ref_tables(config: HarnessConfig, key: str, ref: str | None, sha: str | None) -> list[str]:
    """The patterns of the [ref."PATTERN"] tables matching (`ref`, `sha`) that set or unset
    `key` (a `differences` key: "service.build", "query.params.q"), in file order."""
    section, _, name = key.partition(".")
    top, _, entry = name.partition(".")
    found = []
    for layer in config.refs:
        if section not in ("service", "query") or not matches(layer.pattern, ref, sha):
            continue
        overlay: Overlay = getattr(layer, section)
        value = overlay.values.get(top)
        sets = top in overlay.values and (
            not entry or (isinstance(value, Mapping) and entry in value)
        )
        if sets or name in overlay.unset or top in overlay.unset:
            found.append(layer.pattern)
    return found


def labelled(
    config: HarnessConfig, keys: list[str], sides: list[tuple[str | None, str | None]]
) -> list[str]:
    """`keys` (`differences`), each set by a per-ref table named as one: `[ref."v2*"]
    service.build`, so a report never passes an override off as the sides' own settings."""
    out = []
    for key in keys:
        found = (p for ref, sha in sides for p in ref_tables(config, key, ref, sha))
        patterns = list(dict.fromkeys(found))
        out.append(" ".join([*(f'[ref."{p}"]' for p in patterns), key]))
    return out


def uses(service: Mapping[str, Any], name: str) -> bool:
    """Whether start, prepare or an env value of `service` names the placeholder {name}."""
    texts = [service.get("start", ""), *service.get("prepare", ())]
    texts += service.get("env", {}).values()
    return any(field == name for text in texts for field, _, _ in format_fields(text)[0])


def side_problems(service: Mapping[str, Any], query: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(key, message) for each key of one effective side that does not fit with the others:
    a body without POST, two bodies, {data} without data, a start that never gets the port,
    a {NAME} in start or prepare that no service.env pin gives."""
    found: list[tuple[str, str]] = []
    method = str(query.get("method", "GET")).upper()
    if query.get("json") is not None and query.get("form") is not None:
        found.append(("query.form", TWO_BODIES))
    for body in ("json", "form"):
        if query.get(body) is not None and method == "GET":
            what = "JSON" if body == "json" else "form"
            found.append((f"query.{body}", BODY_NEEDS_POST.format(what=what)))
    if uses(service, "data") and not service.get("data"):
        found.append(("service.data", "{data} is used but data is not set"))
    pins = service.get("env", {})
    commands = [("start", service.get("start", ""))]
    commands += [(f"prepare[{i}]", cmd) for i, cmd in enumerate(service.get("prepare", ()))]
    unpinned = False
    for key, text in commands:
        for name in command_pins_needed(text):
            if name not in pins:
                unpinned = True
                known = " ".join(f"{{{n}}}" for n in sorted(COMMAND_PLACEHOLDERS | set(pins)))
                found.append(
                    (f"service.{key}", f"unknown placeholder {{{name}}}; known: {known}")
                )
    if service.get("start", "").strip() and not unpinned and not receives_port(service):
        found.append(("service.start", "start never receives the port: write {port} in it"))
    return found


def as_values(section: ServiceConfig | QueryConfig) -> dict[str, Any]:
    return {f.name: getattr(section, f.name) for f in fields(section)}


def effective_side(
    config: HarnessConfig, name: str, ref: str | None = None, sha: str | None = None
) -> SideConfig:
    """The effective configuration of side `name`: the base sections, then [name.*], then every
    [ref."PATTERN"] table matching `ref` (as the user wrote it) or `sha` (its commit), in file
    order. ConfigError when the result does not fit together (file:line: field)."""
    side = config.side(name)
    if (ref is None and sha is None) or not config.refs:
        return side
    return for_ref(config, name, side, ref, sha)


def for_ref(
    config: HarnessConfig, name: str, side: SideConfig, ref: str | None, sha: str | None
) -> SideConfig:
    """`side` (the side's own effective configuration) with every [ref."PATTERN"] table of
    `config` that matches (`ref`, `sha`) applied in file order; ConfigError naming the table's
    line and key when the result does not fit together."""
    layers = [layer for layer in config.refs if matches(layer.pattern, ref, sha)]
    if not layers:
        return side
    service, query = as_values(side.service), as_values(side.query)
    for layer in layers:
        service, query = apply(service, layer.service), apply(query, layer.query)
    query["method"] = str(query.get("method", "GET")).upper()
    problems = side_problems(service, query)
    if problems:
        shown = f"{ref} ({sha[:12]})" if ref and sha else (ref or sha or "")
        raise ConfigError(
            f"{config.path}: the settings for {shown} on the {name} side do not fit together",
            [_located(config, layers, key, message) for key, message in problems],
            hint="fix the [ref.\"PATTERN\"] tables that match it, or the sections they override",
        )
    return SideConfig(ServiceConfig(**service), QueryConfig(**query))


def _located(
    config: HarnessConfig, layers: list[RefSettings], key: str, message: str
) -> Problem:
    """The problem at the last matching table that writes `key` (else the last one)."""
    bare = key.partition("[")[0]
    for layer in reversed(layers):
        if bare in layer.lines:
            return Problem(str(config.path), message, layer.lines[bare], _field(layer, key))
    last = layers[-1]
    return Problem(str(config.path), message, last.lines.get(""), _field(last, key))


def _field(layer: RefSettings, key: str) -> str:
    return f'ref."{layer.pattern}".{key}'

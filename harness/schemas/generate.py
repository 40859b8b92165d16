"""Generate the schemas that follow from the types: `comparison` from the Comparison dataclass
tree, `config` from harness.config.schema's key table.  `python -m harness.schemas.generate`
rewrites harness/schemas/{comparison,config}.schema.json; tests/schemas/test_schemas.py fails when
the committed files differ from what this prints.
"""

from __future__ import annotations

import enum
import json
import sys
import types
import typing
from collections.abc import Mapping
from dataclasses import MISSING, fields, is_dataclass
from pathlib import Path
from typing import Any

DRAFT = "https://json-schema.org/draft/2020-12/schema"
_SCALARS = {int: "integer", float: "number", str: "string", bool: "boolean"}


def _type_schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (types.UnionType, typing.Union):
        options = [_type_schema(a, defs) for a in args if a is not type(None)]
        one = options[0] if len(options) == 1 else {"anyOf": options}
        return {"anyOf": [one, {"type": "null"}]} if type(None) in args else one
    if origin is tuple:
        if args[1:] == (...,):
            return {"type": "array", "items": _type_schema(args[0], defs)}
        items = [_type_schema(a, defs) for a in args]
        return {"type": "array", "prefixItems": items, "minItems": len(items), "items": False}
    if origin in (Mapping, dict, typing.Mapping):
        return {"type": "object", "additionalProperties": _type_schema(args[1], defs)}
    if isinstance(tp, type) and is_dataclass(tp):
        if tp.__name__ not in defs:
            defs[tp.__name__] = {}  # placeholder: recursion stops here
            defs[tp.__name__] = _dataclass_schema(tp, defs)
        return {"$ref": f"#/$defs/{tp.__name__}"}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"enum": [m.value for m in tp]}
    if tp is float:
        return {"type": "number"}
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    if tp in (Any, object):
        return {}
    raise TypeError(f"no JSON Schema for {tp!r}")


def _dataclass_schema(tp: type, defs: dict[str, Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(tp)
    properties = {f.name: _type_schema(hints[f.name], defs) for f in fields(tp)}
    doc = (tp.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
    out: dict[str, Any] = {"type": "object"}
    if doc and not doc.startswith(f"{tp.__name__}("):
        out["description"] = " ".join(doc.split())
    # comparison_to_dict writes every field; a reader may leave out those with a default.
    required = [
        f.name for f in fields(tp) if f.default is MISSING and f.default_factory is MISSING
    ]
    out.update(properties=properties, required=required, additionalProperties=False)
    return out


def comparison_schema() -> dict[str, Any]:
    """comparison.json: `comparison_to_dict`'s document (the Comparison's fields, its two
    verdicts lifted into {"verdict": {"quality", "latency"}}, plus schema, version and valid)."""
    from harness.results.document import SCHEMA, SCHEMA_VERSION
    from harness.verdict.comparison import Comparison

    defs: dict[str, Any] = {}
    body = _dataclass_schema(Comparison, defs)
    props = dict(body["properties"])
    quality, latency = props.pop("verdict_quality"), props.pop("verdict_latency")
    required = [n for n in body["required"] if n not in ("verdict_quality", "verdict_latency")]
    verdict = {
        "type": "object",
        "properties": {"quality": quality, "latency": latency},
        "required": ["quality", "latency"],
        "additionalProperties": False,
    }
    return {
        "$schema": DRAFT,
        "$id": "https://harness.invalid/schemas/comparison.schema.json",
        "title": "harness comparison (comparison.json)",
        "description": body.get("description", ""),
        "type": "object",
        "properties": {
            "schema": {"const": SCHEMA},
            "schema_version": {"const": SCHEMA_VERSION},
            "verdict": verdict,
            "valid": {"type": "boolean"},
            **props,
        },
        "required": ["schema", "schema_version", "verdict", "valid", *required],
        "additionalProperties": False,
        "$defs": dict(sorted(defs.items())),
    }


_KINDS: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "bool": {"type": "boolean"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "budget": {"type": ["integer", "string"]},  # compare.latency_budget: 12, "5m"
    "strs": {"type": "array", "items": {"type": "string"}},
    "ints": {"type": "array", "items": {"type": "integer"}},
    "table": {"type": "object", "additionalProperties": {"type": "string"}},
    "json": {"type": "object"},
    # [gate.floors]: "metric" = value, and [gate.floors.slice.NAME] tables of the same
    "floors": {
        "type": "object",
        "properties": {
            "slice": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "additionalProperties": {"type": "number"},
                },
            }
        },
        "additionalProperties": {"type": "number"},
    },
    # [gate] non_inferior: a margin for every headline metric, or "metric" = margin
    "margins": {
        "anyOf": [
            {"type": "number"},
            {"type": "object", "additionalProperties": {"type": "number"}},
        ]
    },
}


def _kind_schema(kind: str) -> dict[str, Any]:
    """A key's JSON Schema by its kind; [service.load] from its own key table."""
    if kind == "load":
        from harness.config.schema import LOAD_KEYS

        return {
            "type": "object",
            "properties": {key: dict(_KINDS[k.kind]) for key, k in LOAD_KEYS.items()},
            "additionalProperties": False,
        }
    return dict(_KINDS[kind])


def config_schema() -> dict[str, Any]:
    """harness.toml: every section and key of harness.config.schema.SECTIONS with its type, the
    required keys, the per-side [baseline.*] / [candidate.*] overrides and the per-ref
    [ref."PATTERN".*] ones (the loader's `_validate` and `_read_refs` read the same layout).
    Checks beyond the type (placeholders, JMESPath, ranges) stay the loader's: it names the
    line."""
    from harness.config.schema import REQUIRED, SECTIONS, SIDES

    def section(name: str, required: bool) -> dict[str, Any]:
        keys = SECTIONS[name]
        properties = {key: _kind_schema(k.kind) for key, k in keys.items()}
        if not required:  # an override table: `unset` removes inherited keys
            properties["unset"] = {"type": "array", "items": {"type": "string"}}
        out: dict[str, Any] = {
            "type": "object",
            "properties": properties,
            "additionalProperties": False,
        }
        # [service]'s keys are required only when harness starts the service: comparing
        # deployments by URL (--baseline-url) reads none of them; the loader says which.
        needed = [] if name == "service" else [*REQUIRED.get(name, ())]
        needed += ["path"] if name == "gold" else []
        if required and needed:
            out["required"] = needed
        return out

    side = {
        "type": "object",
        "properties": {"service": section("service", False), "query": section("query", False)},
        "additionalProperties": False,
    }
    return {
        "$schema": DRAFT,
        "$id": "https://harness.invalid/schemas/config.schema.json",
        "title": "harness configuration (harness.toml, or [tool.harness] in pyproject.toml)",
        "type": "object",
        "properties": {
            **{name: section(name, True) for name in SECTIONS},
            **dict.fromkeys(SIDES, side),
            # [ref."PATTERN"]: settings for the refs a pattern matches, as a side's overrides
            "ref": {"type": "object", "additionalProperties": side},
        },
        "description": "service.start and service.ready are required too, except when "
        "compare measures deployed services by URL (--baseline-url, --candidate-url)",
        "required": ["query", "gold"],
        "additionalProperties": False,
    }


GENERATED = {"comparison": comparison_schema, "config": config_schema}


def render(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    folder = Path(__file__).resolve().parent
    for name, build in GENERATED.items():
        path = folder / f"{name}.schema.json"
        path.write_text(render(build()), encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

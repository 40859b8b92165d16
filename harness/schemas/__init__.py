"""JSON Schemas (draft 2020-12) of what harness writes and reads, published in the package.

    comparison   comparison.json (`compare`, `harness report DIR --format json`)
    run          a run record, results/runs/*.json
    config       harness.toml (its TOML tables as JSON: what tools such as taplo, or an editor's
                 "evenBetterToml.schema", validate), and [tool.harness] in pyproject.toml

`comparison` is generated from the `Comparison` dataclass tree (`harness.schemas.generate`, the
same field annotations `harness.results.document` reads back with), `config` from the key table
of `harness.config.schema`; `run` is written by hand beside `harness.results.records` and a test
checks it against the records it writes.  `python -m harness.schemas.generate` rewrites the
generated files; a test fails when they are stale.  `harness schema NAME` prints one.

In: nothing.  Out: schema documents.  Never validates anything itself (that is jsonschema's job,
in the tests and in the user's tools).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from harness.errors import HarnessError

NAMES = ("comparison", "run", "config")


def schema_text(name: str) -> str:
    """The published schema `name` as the packaged file's text."""
    if name not in NAMES:
        raise HarnessError(f"unknown schema {name!r}; known: {', '.join(NAMES)}")
    return resources.files(__name__).joinpath(f"{name}.schema.json").read_text(encoding="utf-8")


def load_schema(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(schema_text(name))
    return document

"""The matrix's values: the configurations, the constraints and the whole file, as read by
`harness.matrix.spec`. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Entry:
    """One named configuration: env pins and service/query overrides (checked values)."""

    name: str
    env: Mapping[str, str] = field(default_factory=dict)
    service: Mapping[str, Any] = field(default_factory=dict)
    query: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""

    def overrides(self) -> tuple[str, ...]:
        """The keys it overrides: "service.start", "query.params" ..."""
        return tuple(f"service.{k}" for k in self.service) + tuple(f"query.{k}" for k in self.query)


@dataclass(frozen=True)
class Constraint:
    """`metric` of `config` in `scope` ("overall" or a slice): at most `max_drop` below the
    reference, or at least `min`, or at most `max` (absolute). `where` locates it in the file."""

    config: str
    metric: str
    scope: str
    bound: str  # "max_drop" | "min" | "max"
    value: float
    where: str  # "file:line: constraint[i].slice", for an error about it

    def words(self) -> str:
        what = f"{self.metric}" + ("" if self.scope == "overall" else f" on slice {self.scope}")
        if self.bound == "max_drop":
            return f"{self.config}: {what} at most {self.value:g} below the reference"
        word = "at least" if self.bound == "min" else "at most"
        return f"{self.config}: {what} {word} {self.value:g}"


@dataclass(frozen=True)
class Matrix:
    source: str
    reference: str
    entries: tuple[Entry, ...]
    metrics: tuple[str, ...]  # canonical names from the file; empty: the command's --metrics
    constraints: tuple[Constraint, ...]

    def entry(self, name: str) -> Entry:
        return next(e for e in self.entries if e.name == name)

"""harness.toml (or [tool.harness] in pyproject.toml): loaded strictly into frozen values.

SKELETON: the dataclasses below are the contract other stages build on. The loader is to come.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class ServiceConfig:
    """How to build, boot, prepare and tear down one ref's service. Every timeout lives here."""

    start: str  # command; placeholders {port} {url} {data} {home} {worktree}
    ready: str  # path GET until 2xx, e.g. "/health"
    build: str | None = None  # run once per commit inside the worktree, cached
    venv: bool = False  # a per-commit virtualenv that build and start use
    data: str | None = None  # copied fresh for every boot; {data} is the copy
    prepare: tuple[str, ...] = ()  # run after ready, before queries
    env: Mapping[str, str] = field(default_factory=dict)  # pins: override anything
    pass_env: tuple[str, ...] = ()  # names allowed through from the caller's environment
    ready_timeout: float = 60.0  # seconds until `ready` must answer 2xx
    build_timeout: float = 1800.0
    prepare_timeout: float = 600.0
    stop_timeout: float = 10.0  # grace between SIGTERM and SIGKILL


@dataclass(frozen=True)
class QueryConfig:
    """How to ask the service one gold query and where the ranked ids are in its answer."""

    path: str
    ids: str  # JMESPath to the ranked ids
    method: str = "GET"  # or "POST"
    params: Mapping[str, str] = field(default_factory=dict)  # placeholders {query} {limit}
    json: Mapping[str, object] | None = None  # POST body template, same placeholders
    headers: Mapping[str, str] = field(default_factory=dict)
    scores: str | None = None  # JMESPath to the scores, optional
    limit: int = 10
    timeout: float = 10.0  # seconds per query
    warmup: int = 3  # queries sent first and not recorded


@dataclass(frozen=True)
class SideConfig:
    """The effective configuration of one side (base sections plus [baseline.*] / [candidate.*])."""

    service: ServiceConfig
    query: QueryConfig


@dataclass(frozen=True)
class CompareConfig:
    repeats: int = 3
    k: tuple[int, ...] = (5, 10)
    alpha: float = 0.05
    latency_tolerance: float = 0.10  # a latency ratio within 1 +/- this is "no difference"
    max_errors: int = 0  # errored queries tolerated before the verdict is "invalid"
    seed: int = 0  # for bootstrap and randomization tests


@dataclass(frozen=True)
class HarnessConfig:
    path: Path  # the config file it was read from (always the caller's tree)
    repo: Path
    gold: Path
    corpus: Path | None
    baseline: SideConfig
    candidate: SideConfig
    compare: CompareConfig = field(default_factory=CompareConfig)

    def side(self, name: str) -> SideConfig:
        if name not in ("baseline", "candidate"):
            raise ValueError(f"side must be 'baseline' or 'candidate', not {name!r}")
        side: SideConfig = getattr(self, name)
        return side

    @property
    def sides_differ(self) -> bool:
        return self.baseline != self.candidate

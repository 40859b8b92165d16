"""The frozen configuration values, what makes two runs of one side comparable, and placeholders.

    side_hash(side) -> str                 what makes two runs of one side comparable
    HarnessConfig.differences() -> [str]   the keys whose effective values differ between sides
    substitute(template, values) -> str    literal {name} substitution, shared with the stages

No I/O here: `harness.config.loader` reads and validates a file into these values.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path

COMMAND_PLACEHOLDERS = frozenset(
    {"port", "url", "data", "home", "worktree", "python", "config_dir"}
)
CONFIG_DIR = "{config_dir}"  # the configuration file's folder: the user's tree, not the ref's
# service.data_mode: a fresh copy per boot the service may write, or the data itself, bound
# read-only (the default of an absolute path outside the repository: see `data_mode`).
DATA_COPY, DATA_READ_ONLY = "copy", "read-only"
DATA_MODES = (DATA_COPY, DATA_READ_ONLY)
REQUEST_PLACEHOLDERS = frozenset({"query", "limit"})
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")

# The tables a [baseline.*] / [candidate.*] section merges key by key, and differences() names
# entry by entry; every other key is one value.
MERGED_TABLES = frozenset({"env", "params", "headers"})


def substitute(template: str, values: Mapping[str, str]) -> str:
    """Replace each `{name}` whose name is in `values`, in one literal pass.

    Inserted text is never scanned again (a query containing "{limit}" stays as typed), and any
    other brace, such as `{}` or `{"a": 1}` in a shell command, is left alone.
    """

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        return values[name] if name in values else match.group(0)

    return PLACEHOLDER.sub(fill, template)


# --------------------------------------------------------------------------- the values


@dataclass(frozen=True)
class LoadConfig:
    """`[service.load]`: the corpus posted to the booted service in batches, then an optional
    index call (`harness.boot.loader`)."""

    path: str  # the endpoint the batches go to, e.g. "/documents"
    method: str = "POST"
    batch: int = 100  # documents per request
    # The request body: a JSON template in which a value exactly "{documents}" is the batch's
    # array; None: the array is the whole body.
    body: Mapping[str, object] | None = None
    # One document as sent: a JSON template over the corpus line's fields ("{_id}", "{text}");
    # a value exactly "{field}" keeps the field's JSON type. None: the corpus line as it is.
    document: Mapping[str, object] | None = None
    index: str | None = None  # an endpoint called once after the last batch
    index_method: str = "POST"
    corpus: str | None = None  # relative to the boot's data copy; None: gold.corpus
    timeout: float = 60.0  # seconds per request


@dataclass(frozen=True)
class ServiceConfig:
    """How to build, boot, prepare and tear down one ref's service. Every timeout lives here."""

    start: str  # command; placeholders {port} {url} {data} {home} {worktree} {python}
    ready: str  # path GET until 2xx, e.g. "/health"
    build: str | None = None  # run once per commit inside the worktree, cached
    venv: bool = False  # a per-commit virtualenv that build and start use
    # A folder or file: relative to the worktree, "{config_dir}/...", or an absolute path (or
    # ~/...) outside the repository; {data} is where the service finds it (`data_mode`).
    data: str | None = None
    data_mode: str | None = None  # "copy" | "read-only"; None: by where data is (`data_mode`)
    # Stands for the data's identity in the reuse key instead of its manifest
    # (harness.config.manifest): the user says when the data changed.
    data_version: str | None = None
    prepare: tuple[str, ...] = ()  # run after ready, before queries
    env: Mapping[str, str] = field(default_factory=dict)  # pins: override anything
    pass_env: tuple[str, ...] = ()  # names allowed through from the caller's environment
    ready_timeout: float = 60.0  # seconds until `ready` must answer 2xx
    build_timeout: float = 1800.0
    prepare_timeout: float = 600.0
    stop_timeout: float = 10.0  # grace between SIGTERM and SIGKILL
    probe_timeout: float = 2.0  # per readiness GET (capped by what is left of ready_timeout)
    kill_wait: float = 5.0  # after each SIGKILL round, for the killed processes to be gone
    python: str | None = None  # interpreter (on PATH, or a path) the per-commit venv is made with
    # What the build writes into the checkout that must come back with a cached build (paths
    # relative to the checkout, a folder meaning all under it); None: the whole tree's delta.
    build_outputs: tuple[str, ...] | None = None
    load: LoadConfig | None = None  # [service.load]: the corpus posted over HTTP after ready
    max_log_bytes: int = 16 << 20  # a boot's or build's log is cut to its tail past this
    # In the sandbox: the most processes and threads the service may run at once (its fork
    # fails past it), and the most each of its writable folders (HOME, TMPDIR, the XDG_*
    # folders, /dev/shm: memory-backed) may hold. Past what any real service needs.
    max_processes: int = 4096
    max_folder_bytes: int = 4 << 30


def outside_data(data: str) -> bool:
    """Whether service.data names data kept outside the repository: an absolute path or ~/..."""
    return data.startswith(("/", "~"))


def data_mode(service: ServiceConfig) -> str | None:
    """The effective service.data_mode (None without data): as set, else read-only for data
    outside the repository (copying a 20 GB index per boot is not an option) and a fresh copy
    for data in the worktree or under {config_dir} (what a service may write and a boot must
    not see from the boot before)."""
    if service.data is None:
        return None
    if service.data_mode is not None:
        return service.data_mode
    return DATA_READ_ONLY if outside_data(service.data) else DATA_COPY


@dataclass(frozen=True)
class QueryConfig:
    """How to ask the service one gold query and where the ranked ids are in its answer."""

    path: str
    ids: str  # JMESPath to the ranked ids
    method: str = "GET"  # or "POST"
    params: Mapping[str, str] = field(default_factory=dict)  # placeholders {query} {limit}
    json: Mapping[str, object] | None = None  # POST body template, same placeholders
    form: Mapping[str, str] | None = None  # POST form body (urlencoded), same placeholders
    headers: Mapping[str, str] = field(default_factory=dict)  # same placeholders
    scores: str | None = None  # JMESPath to the scores, optional
    texts: str | None = None  # JMESPath to each result's returned context text, optional
    rewrite: str | None = None  # a name in harness.config.rewrite.REWRITES, e.g. "fts5_or"
    select: str | None = None  # CSS selector: the answer is HTML (harness.replay.ids)
    id_pattern: str | None = None  # regex whose one group is the id inside each returned value
    # A corpus field ("text", "title") or a template over fields ("{title} {text}"): returned
    # values are that text of a document (harness.config.templates.id_template)
    id_field: str | None = None
    limit: int = 10
    timeout: float = 10.0  # seconds per query: the whole request's deadline, body included
    max_bytes: int = 10_000_000  # the longest answer read (headers and body); longer: too_large
    warmup: int = 3  # queries sent first and not recorded
    # Timeouts or connection failures in a row on one side that stop the round (0: never)
    max_consecutive_failures: int = 5


@dataclass(frozen=True)
class SideConfig:
    """The effective configuration of one side (base sections plus [baseline.*] / [candidate.*])."""

    service: ServiceConfig
    query: QueryConfig


@dataclass(frozen=True)
class CompareConfig:
    repeats: int = 5  # rounds: 3 left a +50% branch inconclusive 7 times in 20 (README)
    k: tuple[int, ...] = (5, 10)
    alpha: float = 0.05
    min_effect: float = 0.05  # the band "no measurable difference" must rule out (TOST)
    latency_tolerance: float = 0.10  # a latency ratio within 1 +/- this is "no difference"
    # The most latency rounds (a count, "15") or the time they may take ("5m", "300s"): the
    # sequential rule (harness.verdict.latency_rule) adds rounds past `repeats` up to it.
    latency_budget: str = "15"
    max_errors: int = 0  # errored queries tolerated before the verdict is "invalid"
    max_unknown_ids: int = 0  # returned ids absent from gold.corpus tolerated, per side
    seed: int = 0  # for bootstrap and randomization tests
    # Ask the gold set block by block and stop once the headline is decided
    # (harness.verdict.quality_sequential; compare --sequential / --no-sequential).  None, the
    # default: wherever the compare can be (not under --concurrency N > 1, --ray or
    # --reuse-runs, which ask the whole gold set, quietly); True: asked for, and a compare
    # that cannot be says why on stderr; False: never.
    sequential: bool | None = None


@dataclass(frozen=True)
class GateConfig:
    """[gate.floors]: absolute floors, off unless set (harness.gate.floors states the rules);
    [gate] non_inferior: margins, one for every headline metric or per metric
    (harness.config.margins; compare and gate --non-inferior override them)."""

    floors: Mapping[str, float] = field(default_factory=dict)  # metric -> limit, overall
    slice_floors: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    non_inferior: float | Mapping[str, float] | None = None


@dataclass(frozen=True)
class Overlay:
    """One override table ([candidate.query], [ref."v1.*".service], ...): the keys it sets,
    checked and converted, and the keys it removes (`unset`: "json", "params.q"), applied first."""

    values: Mapping[str, object] = field(default_factory=dict)
    unset: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.values or self.unset)


@dataclass(frozen=True)
class RefSettings:
    """A `[ref."PATTERN"]` table: settings for every ref whose name or commit matches PATTERN
    (`harness.config.overrides.matches`), applied on top of the side's, in file order."""

    pattern: str
    service: Overlay = field(default_factory=Overlay)
    query: Overlay = field(default_factory=Overlay)
    lines: Mapping[str, int] = field(default_factory=dict)  # "" (the table), "query.path", ...


@dataclass(frozen=True)
class HarnessConfig:
    path: Path  # the config file it was read from (always the caller's tree)
    repo: Path
    gold: Path
    corpus: Path | None
    baseline: SideConfig
    candidate: SideConfig
    compare: CompareConfig = field(default_factory=CompareConfig)
    refs: tuple[RefSettings, ...] = ()  # [ref."PATTERN"] tables, in file order
    gate: GateConfig = field(default_factory=GateConfig)

    @property
    def config_dir(self) -> Path:
        """{config_dir}: the folder of the configuration file."""
        return self.path.parent

    def side(self, name: str) -> SideConfig:
        """Side `name`'s configuration: the base sections, then [name.*]; with the [ref."PATTERN"]
        tables of a ref on top, `harness.config.overrides.effective_side`."""
        if name not in ("baseline", "candidate"):
            raise ValueError(f"side must be 'baseline' or 'candidate', not {name!r}")
        side: SideConfig = getattr(self, name)
        return side

    @property
    def sides_differ(self) -> bool:
        return self.baseline != self.candidate

    def differences(
        self, baseline: SideConfig | None = None, candidate: SideConfig | None = None
    ) -> list[str]:
        """Sorted keys whose effective values differ between the sides, e.g. "query.params.q"
        (between `baseline` and `candidate` when given: the sides for two refs).

        Entries of `env`, `params` and `headers` are named one by one; `json` is one value.
        """
        base = dict(_flat(baseline or self.baseline))
        cand = dict(_flat(candidate or self.candidate))
        missing = object()
        return sorted(
            k for k in base.keys() | cand.keys() if base.get(k, missing) != cand.get(k, missing)
        )


def _flat(side: SideConfig) -> Iterator[tuple[str, object]]:
    for section in ("service", "query"):
        value = getattr(side, section)
        for f in fields(value):
            item = getattr(value, f.name)
            if f.name in MERGED_TABLES:
                for key, entry in item.items():
                    yield f"{section}.{f.name}.{key}", entry
            else:
                yield f"{section}.{f.name}", item


# --------------------------------------------------------------------------- comparability

# Deadlines decide whether a run completes, not what it measures: raising ready_timeout after a
# slow boot must not make the runs already recorded incomparable.
_NOT_HASHED = frozenset(
    {
        "ready_timeout",
        "build_timeout",
        "prepare_timeout",
        "stop_timeout",
        "probe_timeout",
        "kill_wait",
        "max_log_bytes",  # how much of a log is kept, not what is measured
        "max_processes",  # a ceiling no real service meets, not what is measured
        "max_folder_bytes",
        "max_consecutive_failures",  # when to give up on a round, not what is measured
    }
)
_LOAD_NOT_HASHED = frozenset({"timeout"})  # service.load.timeout; query.timeout is hashed

# Keys added after records were first saved: hashed only when set to something other than their
# default, so the records saved before them are still found for reuse.
_HASHED_WHEN_SET = frozenset(
    {
        "max_bytes",
        "rewrite",
        "select",
        "id_pattern",
        "id_field",
        "form",
        "python",
        "build_outputs",
        "load",
        "texts",
        "data_mode",
        "data_version",
    }
)


def _hashed(section: object, name: str) -> bool:
    if name in _NOT_HASHED:
        return False
    if name in _HASHED_WHEN_SET:
        default = next(f.default for f in fields(type(section)) if f.name == name)  # type: ignore[arg-type]
        return bool(getattr(section, name) != default)
    return True



def side_hash(side: SideConfig) -> str:
    """sha256 of the canonical JSON (sorted keys, no spaces) of one side's effective config.

    Everything that shapes what is measured is in it (commands, env pins, data, the request,
    query.timeout, warmup); the service's process deadlines are not.
    """
    canonical = {
        section: {
            f.name: _jsonable(getattr(getattr(side, section), f.name))
            for f in fields(getattr(side, section))
            if _hashed(getattr(side, section), f.name)
        }
        for section in ("service", "query")
    }
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _jsonable(value: object) -> object:
    if is_dataclass(value) and not isinstance(value, type):
        # A nested table's deadline (service.load.timeout) is a deadline like the others.
        skip = _LOAD_NOT_HASHED if isinstance(value, LoadConfig) else frozenset()
        return {
            f.name: _jsonable(getattr(value, f.name)) for f in fields(value) if f.name not in skip
        }
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value

"""harness.toml (or [tool.harness] in pyproject.toml): loaded strictly into frozen values.

    load_config(path=None, *, repo=None, cwd=None) -> HarnessConfig
    side_hash(side) -> str                 what makes two runs of one side comparable
    inputs.inputs_hash(side, config)       the contents of the files it names outside the checkout
    substitute(template, values) -> str    literal {name} substitution, shared with the stages
    rewrite.py, hook.py                    `query.rewrite`: a named rewrite or the user's hook,
                                           loaded and checked here, applied to each query text

The first stage but one: it imports no stage except `harness.score`'s metric grammar (a
[gate.floors] or non_inferior name is checked with `parse_metric`); what it validates for
another stage is a value below the stages (`harness.values.budget`) or lives here (`rewrite`,
`hook`).

Discovery: with no path, `harness.toml` in cwd, then `pyproject.toml` there if it has a
`[tool.harness]` table. `gold.path` and `gold.corpus` are relative to the config file's directory
(the caller's tree: a candidate branch can never edit what it is measured against; gold.corpus
may also be an absolute path anywhere); `service.data` stays a string, relative to each ref's
worktree (or to the config's folder when it starts with {config_dir}), or an absolute path (or
~/...) outside the repository, used in place (`values.data_mode`).

Validation reads the whole file before failing and raises one ConfigError listing every problem
(unknown keys with a "did you mean", wrong types, missing required keys, bad values, JMESPath that
does not compile, unknown placeholders), each located as file:line: field. Integers are accepted
where a float is expected; booleans are never integers.

Placeholders. `start`, `prepare` and `env` values are expanded by the service stage with
str.format syntax: {port} {url} {data} {home} {worktree} {python}, `{{` and `}}` for literal
braces, no positional `{}`, no !conversion or :format; {data} needs service.data. `start` and
`prepare` (not `env` values, not `build`) may also name a key of the side's effective
`service.env` (after the per-side merge), {RRF_K}, which expands to that pin's value; any other
name is a problem at the command's key and line (on one side only: naming that side). `build` runs
before any service exists and is not expanded, so a known placeholder in it is an error. Request
templates (`params`, `headers`, strings in `json`) take {query} and {limit}, filled literally by
`substitute`, since the text filled in is the user's query.

Per-side overrides: `[baseline.service]`, `[baseline.query]`, `[candidate.service]` and
`[candidate.query]` take the same keys as the base sections, all optional, and override them key
by key. The tables `env`, `params` and `headers` are merged key by key too, while `json` and
`form` (whole bodies) and the arrays `prepare` and `pass_env` are replaced wholesale. Any
override table may hold `unset = ["params.q", "json"]`: inherited keys (back to their default)
or entries removed before the table's own keys apply; a required or unknown name is a problem.

Per-ref settings: `[ref."PATTERN".service]` and `[ref."PATTERN".query]` apply to every ref whose
name as given, or whose commit, PATTERN matches (`overrides.matches`), over the side's settings,
in file order: `effective_side(config, name, ref, sha)` is the effective SideConfig a session
measures (`config.side(name)`, or `config.baseline`, is the side without any ref table).

{config_dir} is the configuration file's folder (`HarnessConfig.config_dir`): a placeholder of
start, prepare, env values and build, and a prefix of service.data (and gold paths). Hashes keep
it as written; `inputs` hashes the files it names by content.

The package: `values` (the frozen values, side_hash, differences, substitute), `schema` (every
key, its type and checks; `floors` the [gate.floors] table's; `templates` the grammar of
placeholders and of query.id_field), `reader` (one file read, every problem located), `loader`
(discovery, validating the document), `overrides` (how a side's or a ref's table lands on what
it inherits, `effective_side`; pure), `inputs` (the files a side names by path outside the
checkout or through {config_dir}, and a rewrite hook's file, hashed into the reuse key) and
`manifest` (service.data outside the checkout keyed by sizes and mtimes, not read whole).
"""

from harness.config.loader import load_config
from harness.config.overrides import effective_side
from harness.config.schema import Check
from harness.config.values import (
    COMMAND_PLACEHOLDERS,
    REQUEST_PLACEHOLDERS,
    CompareConfig,
    HarnessConfig,
    LoadConfig,
    QueryConfig,
    ServiceConfig,
    SideConfig,
    side_hash,
    substitute,
)

__all__ = [
    "COMMAND_PLACEHOLDERS",
    "REQUEST_PLACEHOLDERS",
    "Check",
    "CompareConfig",
    "HarnessConfig",
    "LoadConfig",
    "QueryConfig",
    "ServiceConfig",
    "SideConfig",
    "effective_side",
    "load_config",
    "side_hash",
    "substitute",
]

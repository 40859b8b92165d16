"""harness.toml (or [tool.harness] in pyproject.toml): loaded strictly into frozen values.

    load_config(path=None, *, repo=None, cwd=None) -> HarnessConfig
    side_hash(side) -> str                 what makes two runs of one side comparable
    inputs.inputs_hash(side, config)       the contents of the files it names outside the checkout
    substitute(template, values) -> str    literal {name} substitution, shared with the stages

Discovery: with no path, `harness.toml` in cwd, then `pyproject.toml` there if it has a
`[tool.harness]` table. `gold.path` and `gold.corpus` are relative to the config file's directory
(the caller's tree: a candidate branch can never edit what it is measured against);
`service.data` stays a string, relative to each ref's worktree.

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
by key. The tables `env`, `params` and `headers` are merged key by key too (a side can change one
parameter; it cannot remove one), while `json` (a whole body template) and the arrays `prepare`
and `pass_env` are replaced wholesale.

The package: `values` (the frozen values, side_hash, differences, substitute), `schema` (every
key, its type and checks), `loader` (discovery, reading, locating problems, overrides) and
`inputs` (the files a side names by path outside the checkout, hashed into the reuse key).
"""

from harness.config.loader import load_config
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
    "load_config",
    "side_hash",
    "substitute",
]

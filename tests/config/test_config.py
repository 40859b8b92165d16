"""harness.config: discovery, strict validation (all problems, located), overrides, hashing."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from config_support import MINIMAL

from harness.config import (
    CompareConfig,
    HarnessConfig,
    QueryConfig,
    ServiceConfig,
    SideConfig,
    load_config,
    side_hash,
    substitute,
)
from harness.errors import ConfigError, Problem

DATA = Path(__file__).resolve().parents[1] / "data" / "config"
ROOT = Path(__file__).resolve().parents[2]



@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A directory that looks like a git repository to the loader (it only walks up to .git)."""
    (tmp_path / ".git").mkdir()
    return tmp_path


def write(directory: Path, text: str, name: str = "harness.toml") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def problems_of(path: Path) -> tuple[Problem, ...]:
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return caught.value.problems


def line_of(text: str, marker: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), start=1) if marker in line)


# --------------------------------------------------------------------------- valid files


def test_complete_example_reads_every_key() -> None:
    config = load_config(DATA / "harness.toml")
    service = ServiceConfig(
        start="{python} svc.py --port {port} --data {data}",
        ready="/health",
        build="python -m pip install -e .",
        venv=True,
        data="fixtures/corpus",
        prepare=("{python} load.py --url {url} --data {data}", "echo {worktree} {home}"),
        env={"SOUL_SYNC_URL": "http://127.0.0.1:9", "WORKERS": "1"},
        pass_env=("MODEL_DIR",),
        ready_timeout=30.0,
        build_timeout=900.0,
        prepare_timeout=120.5,
        stop_timeout=5.0,
        probe_timeout=3.0,
        kill_wait=2.5,
    )
    query = QueryConfig(
        path="/search",
        ids="results[].id",
        method="POST",  # written "post"
        params={"debug": "0"},
        json={"q": "{query}", "k": "{limit}", "filters": {"lang": ["en"]}, "exact": False},
        headers={"X-Client": "harness"},
        scores="results[].score",
        limit=20,
        timeout=2.5,
        warmup=1,
    )
    assert config == HarnessConfig(
        path=DATA / "harness.toml",
        repo=ROOT,  # the nearest directory holding .git above the config file
        gold=DATA / "gold" / "gold.jsonl",
        corpus=DATA.parent / "corpus.jsonl",
        baseline=SideConfig(service, query),
        candidate=SideConfig(service, query),
        compare=CompareConfig(
            repeats=5, k=(1, 3, 10), alpha=0.01, latency_tolerance=0.2, max_errors=2, seed=7
        ),
    )
    assert not config.sides_differ
    assert config.differences() == []


def test_minimal_file_gets_the_documented_defaults(repo: Path) -> None:
    config = load_config(write(repo, MINIMAL))
    assert config.repo == repo
    assert config.corpus is None
    assert config.compare == CompareConfig()
    assert config.baseline.service == ServiceConfig(
        start="python3 svc.py --port {port}", ready="/health"
    )
    assert config.baseline.query == QueryConfig(
        path="/search", ids="results[].id", params={"q": "{query}", "k": "{limit}"}
    )


def test_literal_braces_follow_each_template_syntax(repo: Path) -> None:
    # commands are str.format templates (the service stage expands them); build is not expanded;
    # request templates are filled literally, so their other braces are plain text
    text = MINIMAL.replace('"python3 svc.py --port {port}"', "'python3 -c \"print({{}})\" {port}'")
    text = text.replace("[query]", "build = 'echo ${HOME} {}'\n[query]", 1)
    text = text.replace('"{query}"', """'{query} {} {"a": 1}'""")
    config = load_config(write(repo, text))
    assert config.baseline.service.start == 'python3 -c "print({{}})" {port}'
    assert config.baseline.service.build == "echo ${HOME} {}"
    assert config.baseline.query.params["q"] == '{query} {} {"a": 1}'


def test_integers_are_accepted_where_seconds_are_floats(repo: Path) -> None:
    text = MINIMAL.replace("[query]\n", "[query]\ntimeout = 5\n")
    timeout = load_config(write(repo, text)).baseline.query.timeout
    assert timeout == 5.0
    assert isinstance(timeout, float)


def test_gold_is_relative_to_the_config_file_not_to_cwd(repo: Path) -> None:
    write(repo / "conf", MINIMAL.replace('"gold/gold.jsonl"', '"../gold.jsonl"'))
    (repo / "elsewhere").mkdir()
    config = load_config(Path("../conf/harness.toml"), cwd=repo / "elsewhere")
    assert config.path == repo / "conf" / "harness.toml"
    assert config.gold == repo / "gold.jsonl"


def test_repo_can_be_named_and_must_exist(repo: Path) -> None:
    path = write(repo / "sub", MINIMAL)
    other = repo / "other"
    other.mkdir()
    assert load_config(path, repo=other).repo == other
    with pytest.raises(ConfigError, match="--repo"):
        load_config(path, repo=repo / "missing")


def test_config_outside_any_repository_says_to_pass_repo(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL)
    with pytest.raises(ConfigError, match="no git repository") as caught:
        load_config(path)
    assert "pass --repo" in str(caught.value)


# --------------------------------------------------------------------------- discovery


def test_discovery_prefers_harness_toml_over_pyproject(repo: Path) -> None:
    write(repo, MINIMAL)
    write(repo, "[tool.harness]\nbogus = 1\n", name="pyproject.toml")
    assert load_config(cwd=repo).path == repo / "harness.toml"


def test_discovery_reads_tool_harness_from_pyproject(repo: Path) -> None:
    tables = re.sub(r"^\[(\w+)\]$", r"[tool.harness.\1]", MINIMAL, flags=re.M)
    write(repo, '[project]\nname = "svc"\n\n' + tables, name="pyproject.toml")
    config = load_config(cwd=repo)
    assert config.path == repo / "pyproject.toml"
    assert config.baseline.query.ids == "results[].id"
    assert config.gold == repo / "gold" / "gold.jsonl"


def test_problems_in_pyproject_name_the_full_key_and_line(repo: Path) -> None:
    tables = re.sub(r"^\[(\w+)\]$", r"[tool.harness.\1]", MINIMAL, flags=re.M)
    text = "[project]\nlimit = 1\n\n" + tables.replace('path = "/search"', "limit = 0")
    problems = problems_of(write(repo, text, name="pyproject.toml"))
    assert [(p.field, p.line) for p in problems] == [
        ("tool.harness.query.limit", line_of(text, "limit = 0")),
        ("tool.harness.query.path", line_of(text, "[tool.harness.query]")),  # missing: its table
    ]


def test_pyproject_without_tool_harness_is_not_a_config(repo: Path) -> None:
    write(repo, '[project]\nname = "svc"\n', name="pyproject.toml")
    with pytest.raises(ConfigError) as caught:
        load_config(cwd=repo)
    message = str(caught.value)
    assert "harness.toml" in message
    assert "[tool.harness]" in message
    assert str(repo) in message
    with pytest.raises(ConfigError, match=r"no \[tool.harness\] table"):
        load_config(repo / "pyproject.toml")


def test_nothing_to_discover_says_how_to_start(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"looked for harness\.toml") as caught:
        load_config(cwd=tmp_path)
    assert "create harness.toml" in str(caught.value)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "nope.toml")


# --------------------------------------------------------------------------- one rule each

# Each case: an edit of MINIMAL (old -> new), the field named, a phrase of the message, and a
# marker text whose line the problem must point at.
BROKEN = [
    pytest.param(
        '"/search"', '"/search?fmt=json"', "query.path", "into query.params", "path =", id="path?"
    ),
    pytest.param(
        "{port}", "{}", "service.start", "unknown placeholder {}", "start =", id="positional {}"
    ),
    pytest.param(
        "{port}", "{port", "service.start", "write {{ and }}", "start =", id="unbalanced brace"
    ),
    pytest.param(
        "{port}", "{port!r:>5}", "service.start", "no !conversion or :format", "start =", id="spec"
    ),
    pytest.param(
        "{port}",
        "{port} --data {data}",
        "service.data",
        "{data} is used but data is not set",
        "[service]",
        id="{data} without data",
    ),
    pytest.param(
        "[query]",
        "build = 'pip install {worktree}'\n[query]",
        "service.build",
        "{worktree} is not filled in",
        "build =",
        id="placeholder in build",
    ),
    pytest.param(
        "[query]\n",
        "[query]\nlimt = 3\n",
        "query.limt",
        "did you mean 'limit'?",
        "limt",
        id="unknown key",
    ),
    pytest.param(
        "[gold]",
        "[servce]\n[gold]",
        "servce",
        "did you mean 'service'?",
        "[servce]",
        id="unknown section",
    ),
    pytest.param(
        "[gold]",
        "[baseline.gold]\n[gold]",
        "baseline.gold",
        "can differ per side",
        "[baseline.gold]",
        id="unknown side section",
    ),
    pytest.param(
        "[service]",
        "compare = 3\n[service]",
        "compare",
        "expected a table",
        "compare = 3",
        id="section not a table",
    ),
    pytest.param(
        '"python3 svc.py --port {port}"',
        "3",
        "service.start",
        "expected a string, got an integer (3)",
        "start =",
        id="string expected",
    ),
    pytest.param(
        "[query]\n",
        "[query]\nlimit = true\n",
        "query.limit",
        "got a boolean (true)",
        "limit =",
        id="bool is not an int",
    ),
    pytest.param(
        "[query]\n",
        "[query]\nlimit = 2.5\n",
        "query.limit",
        "expected an integer",
        "limit =",
        id="float is not an int",
    ),
    pytest.param(
        "[query]\n",
        "[query]\ntimeout = false\n",
        "query.timeout",
        "expected a number",
        "timeout =",
        id="bool is not a number",
    ),
    pytest.param(
        "[query]",
        'prepare = "load"\n[query]',
        "service.prepare",
        "write ['load']",
        "prepare =",
        id="prepare must be an array",
    ),
    pytest.param(
        "[query]",
        "env = { A = true }\n[query]",
        "service.env",
        "entry 'A' is a boolean",
        "env =",
        id="env must hold strings",
    ),
    pytest.param(
        "[query]",
        'env = { "1A" = "x" }\n[query]',
        "service.env",
        "not an environment variable",
        "env =",
        id="env names",
    ),
    pytest.param(
        "[query]\n",
        "[query]\nmethod = 'POST'\njson = { d = 1979-05-27 }\n",
        "query.json",
        "JSON cannot carry",
        "json =",
        id="json cannot carry dates",
    ),
    pytest.param(
        'start = "python3 svc.py --port {port}"\n',
        "",
        "service.start",
        "missing required key",
        "[service]",
        id="missing start",
    ),
    pytest.param(
        'ready = "/health"\n',
        "",
        "service.ready",
        "missing required key",
        "[service]",
        id="missing ready",
    ),
    pytest.param(
        'path = "/search"\n',
        "",
        "query.path",
        "missing required key",
        "[query]",
        id="missing query.path",
    ),
    pytest.param(
        'ids = "results[].id"\n',
        "",
        "query.ids",
        "missing required key",
        "[query]",
        id="missing ids",
    ),
    pytest.param(
        'path = "gold/gold.jsonl"\n',
        "",
        "gold.path",
        "missing required key",
        "[gold]",
        id="missing gold.path",
    ),
    pytest.param(
        "[query]\n",
        "[query]\nmethod = 'PUT'\n",
        "query.method",
        "GET or POST, not 'PUT'",
        "method =",
        id="method",
    ),
    pytest.param(
        "[query]\n",
        "[query]\njson = { q = '{query}' }\n",
        "query.json",
        'method = "POST"',
        "json =",
        id="json with GET",
    ),
    pytest.param(
        "[query]\n",
        "[query]\nlimit = 0\n",
        "query.limit",
        "must be >= 1, not 0",
        "limit =",
        id="limit < 1",
    ),
    pytest.param(
        "[query]\n",
        "[query]\nwarmup = -1\n",
        "query.warmup",
        "must be >= 0",
        "warmup =",
        id="warmup < 0",
    ),
    pytest.param(
        "[query]\n",
        "[query]\nmax_consecutive_failures = -1\n",
        "query.max_consecutive_failures",
        "must be >= 0",
        "max_consecutive_failures =",
        id="max_consecutive_failures < 0",
    ),
    pytest.param(
        "[query]\n",
        "[query]\ntimeout = 0\n",
        "query.timeout",
        "> 0",
        "timeout =",
        id="query timeout 0",
    ),
    pytest.param(
        "[query]",
        "ready_timeout = -1\n[query]",
        "service.ready_timeout",
        "> 0",
        "ready_timeout",
        id="ready_timeout < 0",
    ),
    pytest.param(
        "[query]",
        "stop_timeout = inf\n[query]",
        "service.stop_timeout",
        "finite",
        "stop_timeout",
        id="infinite timeout",
    ),
    pytest.param(
        "[query]",
        "probe_timeout = 0\n[query]",
        "service.probe_timeout",
        "> 0",
        "probe_timeout",
        id="probe_timeout 0",
    ),
    pytest.param(
        "[query]",
        "kill_wait = nan\n[query]",
        "service.kill_wait",
        "finite",
        "kill_wait",
        id="kill_wait nan",
    ),
    pytest.param(
        "[gold]",
        "[compare]\nrepeats = 0\n[gold]",
        "compare.repeats",
        "must be >= 1",
        "repeats =",
        id="repeats < 1",
    ),
    pytest.param(
        "[gold]",
        "[compare]\nk = []\n[gold]",
        "compare.k",
        "at least one cutoff",
        "k = [",
        id="k empty",
    ),
    pytest.param(
        "[gold]",
        "[compare]\nk = [5, 0]\n[gold]",
        "compare.k[1]",
        "must be >= 1, not 0",
        "k = [",
        id="k < 1",
    ),
    pytest.param(
        "[gold]", "[compare]\nk = [5, 5]\n[gold]", "compare.k", "twice", "k = [", id="k twice"
    ),
    pytest.param(
        "[gold]",
        "[compare]\nalpha = 0\n[gold]",
        "compare.alpha",
        "between 0 and 1",
        "alpha =",
        id="alpha 0",
    ),
    pytest.param(
        "[gold]",
        "[compare]\nalpha = 1.0\n[gold]",
        "compare.alpha",
        "between 0 and 1",
        "alpha =",
        id="alpha 1",
    ),
    pytest.param(
        '"/health"',
        '"health"',
        "service.ready",
        "starting with '/'",
        "ready =",
        id="ready without slash",
    ),
    pytest.param(
        '"/search"',
        '"search"',
        "query.path",
        "starting with '/'",
        "path =",
        id="path without slash",
    ),
    pytest.param(
        '"/search"',
        '"/search/{query}"',
        "query.path",
        "no placeholders",
        "path =",
        id="path placeholder",
    ),
    pytest.param(
        '"results[].id"',
        '"results[.id"',
        "query.ids",
        "not a valid JMESPath",
        "ids =",
        id="ids JMESPath",
    ),
    pytest.param(
        "[query]\n",
        "[query]\nscores = 'a..b'\n",
        "query.scores",
        "not a valid JMESPath",
        "scores =",
        id="scores JMESPath",
    ),
    pytest.param(
        "{port}",
        "{prot}",
        "service.start",
        "unknown placeholder {prot} (did you mean {port}?)",
        "start =",
        id="start placeholder",
    ),
    pytest.param(
        "{port}",
        "{query}",
        "service.start",
        "unknown placeholder {query}",
        "start =",
        id="request placeholder in a command",
    ),
    pytest.param(
        "[query]",
        "prepare = ['a {url}', 'b {dat}']\n[query]",
        "service.prepare[1]",
        "{dat}",
        "prepare =",
        id="prepare placeholder",
    ),
    pytest.param(
        "[query]",
        "env = { A = '{urll}' }\n[query]",
        "service.env.A",
        "{urll}",
        "env =",
        id="env placeholder",
    ),
    pytest.param(
        '"{query}"',
        '"{qeury}"',
        "query.params.q",
        "did you mean {query}?",
        "params =",
        id="params placeholder",
    ),
    pytest.param(
        '"{limit}"',
        '"{port}"',
        "query.params.k",
        "unknown placeholder {port}",
        "params =",
        id="command placeholder in a request",
    ),
    pytest.param(
        "[query]\n",
        "[query]\nmethod = 'POST'\njson = { f = { q = '{text}' } }\n",
        "query.json.f.q",
        "{text}",
        "json =",
        id="json placeholder",
    ),
    pytest.param(
        "[query]\n",
        "[query]\nheaders = { X = '{port}' }\n",
        "query.headers.X",
        "{port}",
        "headers =",
        id="headers placeholder",
    ),
    pytest.param(
        "[gold]",
        "[candidate.query]\nlimit = 0\n[gold]",
        "candidate.query.limit",
        "must be >= 1",
        "limit = 0",
        id="override validated too",
    ),
    pytest.param(
        "[gold]",
        "[candidate.service]\nstrat = 'x'\n[gold]",
        "candidate.service.strat",
        "did you mean 'start'?",
        "strat",
        id="unknown override key",
    ),
]


@pytest.mark.parametrize(("old", "new", "field", "phrase", "marker"), BROKEN)
def test_each_rule_names_its_key_and_line(
    repo: Path, old: str, new: str, field: str, phrase: str, marker: str
) -> None:
    assert old in MINIMAL
    text = MINIMAL.replace(old, new, 1)
    path = write(repo, text)
    (problem,) = problems_of(path)
    assert problem.field == field
    assert phrase in problem.message
    assert problem.path == str(path)
    assert problem.line == line_of(text, marker)


def test_every_problem_is_reported_at_once(repo: Path) -> None:
    text = (
        MINIMAL.replace('"/health"', '"health"')
        .replace("[query]\n", "[query]\nlimit = 0\nlimt = 1\n")
        .replace('ids = "results[].id"\n', "")
    )
    path = write(repo, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    fields = [str(p.field) for p in caught.value.problems]
    assert sorted(fields) == ["query.ids", "query.limit", "query.limt", "service.ready"]
    assert "(4 problems)" in caught.value.message
    for problem in caught.value.problems:
        assert f"  {problem}" in caught.value.details


def test_toml_syntax_error_gives_file_line_and_column(repo: Path) -> None:
    text = MINIMAL.replace('ready = "/health"', "ready = /health")
    path = write(repo, text)
    (problem,) = problems_of(path)
    assert problem.path == str(path)
    assert problem.line == line_of(text, "ready =")
    assert "TOML syntax error" in problem.message
    assert "column 9" in problem.message


def test_not_utf8_is_a_config_error(repo: Path) -> None:
    path = repo / "harness.toml"
    path.write_bytes(MINIMAL.encode() + b"# \xff\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(path)


# --------------------------------------------------------------------------- per-side overrides

OVERRIDES = (
    MINIMAL.replace("[query]\n", "[query]\nheaders = { A = 'a' }\n")
    + """
[baseline.service]
env = { PIN = "1" }

[candidate.service]
env = { OTHER = "2" }

[candidate.query]
path = "/v2/search"
params = { q = "{query}", mode = "hybrid" }
"""
)


def test_overrides_merge_key_by_key_and_tables_entry_by_entry(repo: Path) -> None:
    config = load_config(write(repo, OVERRIDES))
    base, cand = config.baseline, config.candidate
    assert base.query.path == "/search"
    assert cand.query.path == "/v2/search"
    assert base.query.params == {"q": "{query}", "k": "{limit}"}
    assert cand.query.params == {"q": "{query}", "k": "{limit}", "mode": "hybrid"}
    assert cand.query.headers == base.query.headers == {"A": "a"}
    assert base.service.env == {"PIN": "1"}
    assert cand.service.env == {"OTHER": "2"}
    assert config.sides_differ
    assert config.differences() == [
        "query.params.mode",
        "query.path",
        "service.env.OTHER",
        "service.env.PIN",
    ]


def test_a_json_template_is_replaced_wholesale(repo: Path) -> None:
    text = MINIMAL.replace(
        "[query]\n", "[query]\nmethod = 'POST'\njson = { q = '{query}', k = 3 }\n"
    )
    text += "[candidate.query]\njson = { text = '{query}' }\n"
    config = load_config(write(repo, text))
    assert config.baseline.query.json == {"q": "{query}", "k": 3}
    assert config.candidate.query.json == {"text": "{query}"}
    assert config.differences() == ["query.json"]


def test_a_key_set_for_one_side_only_is_missing_for_the_other(repo: Path) -> None:
    text = MINIMAL.replace('start = "python3 svc.py --port {port}"\n', "")
    text += "[candidate.service]\nstart = 'new --port {port}'\n"
    (problem,) = problems_of(write(repo, text))
    assert problem.field == "baseline.service.start"
    assert "on the baseline side" in problem.message
    assert "[baseline.service]" in problem.message
    assert problem.line == line_of(text, "[service]")


def test_a_side_that_switches_method_keeps_the_other_side_checked(repo: Path) -> None:
    text = MINIMAL.replace("[query]\n", "[query]\njson = { q = '{query}' }\n")
    text += "[baseline.query]\nmethod = 'POST'\n"
    (problem,) = problems_of(write(repo, text))
    assert problem.field == "candidate.query.json"
    assert problem.line == line_of(text, "json =")


# --------------------------------------------------------------------------- pins as placeholders

PINNED = MINIMAL.replace(
    'start = "python3 svc.py --port {port}"\n',
    'start = "python3 svc.py --port {port} --rrf-k {RRF_K}"\n'
    "prepare = ['load --url {url} --k {RRF_K} --mode {MODE}']\n"
    'env = { RRF_K = "60", MODE = "{home}/m" }\n',
)


def test_a_pinned_name_is_a_placeholder_of_start_and_prepare(repo: Path) -> None:
    service = load_config(write(repo, PINNED)).baseline.service
    assert service.start == "python3 svc.py --port {port} --rrf-k {RRF_K}"  # kept for the service
    assert service.prepare == ("load --url {url} --k {RRF_K} --mode {MODE}",)
    assert service.env == {"RRF_K": "60", "MODE": "{home}/m"}


def test_an_unpinned_name_is_an_error_at_each_command_with_the_hint(repo: Path) -> None:
    text = PINNED.replace("{RRF_K}", "{RRF_k}").replace("{MODE}", "{LEVEL}")
    start, prepare, level = problems_of(write(repo, text))
    assert (start.field, start.line) == ("service.start", line_of(text, "start ="))
    assert start.message == (
        "unknown placeholder {RRF_k} (did you mean {RRF_K}?); known: {config_dir} {data} {home} "
        "{port} {python} {url} {worktree} and the service.env pins {MODE} {RRF_K}; "
        "write {{ and }} for literal braces, or pin RRF_k in service.env"
    )
    assert (prepare.field, prepare.line) == ("service.prepare[0]", line_of(text, "prepare ="))
    assert "unknown placeholder {RRF_k}" in prepare.message
    assert (level.field, level.line) == ("service.prepare[0]", line_of(text, "prepare ="))
    assert "unknown placeholder {LEVEL}" in level.message  # each name its own problem
    assert level.message.endswith("or pin LEVEL in service.env")


def test_literal_shell_braces_in_a_command_say_to_write_them_doubled(repo: Path) -> None:
    shell = "sh -c 'svc --port {port} --conf ${XDG_CONFIG_HOME:-$HOME/.config}/svc'"
    text = MINIMAL.replace('start = "python3 svc.py --port {port}"', f'start = "{shell}"')
    (problem,) = problems_of(write(repo, text))
    assert (problem.field, problem.line) == ("service.start", line_of(text, "start ="))
    assert problem.message == (
        "placeholder {XDG_CONFIG_HOME:-$HOME/.config} takes no !conversion or :format: harness "
        "fills {...} itself, so a shell's ${XDG_CONFIG_HOME:-$HOME/.config} is written "
        "${{XDG_CONFIG_HOME:-$HOME/.config}} (write {{ and }} for literal braces)"
    )
    fixed = text.replace("${XDG_CONFIG_HOME:-$HOME/.config}", "${{XDG_CONFIG_HOME:-$HOME/.config}}")
    assert "${{XDG_CONFIG_HOME" in load_config(write(repo, fixed)).baseline.service.start


def test_a_pin_on_one_side_only_makes_the_other_side_an_error(repo: Path) -> None:
    text = MINIMAL.replace("{port}", "{port} --rrf-k {RRF_K}", 1)
    text += '[candidate.service]\nenv = { RRF_K = "20" }\n'
    (problem,) = problems_of(write(repo, text))
    assert (problem.field, problem.line) == ("service.start", line_of(text, "start ="))
    assert problem.message.startswith("unknown placeholder {RRF_K} on the baseline side; ")
    assert problem.message.endswith("or pin RRF_K in service.env (or in [baseline.service] env)")
    assert load_config(write(repo, text + "[baseline.service]\nenv = { RRF_K = '60' }\n"))


def test_a_command_overridden_on_one_side_is_checked_against_that_sides_pins(
    repo: Path,
) -> None:
    text = MINIMAL + "[candidate.service]\nstart = 'new --port {port} --k {K}'\n"
    (problem,) = problems_of(write(repo, text))
    assert (problem.field, problem.line) == ("candidate.service.start", line_of(text, "new --"))
    assert "{K} on the candidate side" in problem.message
    pinned = load_config(
        write(repo, text.replace("start = 'new", "env = { K = '3' }\nstart = 'new"))
    )
    assert pinned.candidate.service.start == "new --port {port} --k {K}"


def test_env_values_still_take_only_the_harness_placeholders(repo: Path) -> None:
    text = PINNED.replace('MODE = "{home}/m"', 'MODE = "{RRF_K}"')
    (problem,) = problems_of(write(repo, text))
    assert (problem.field, problem.line) == ("service.env.MODE", line_of(text, "env ="))
    known = "unknown placeholder {RRF_K}; known: {config_dir} {data} {home}"
    assert problem.message.startswith(known)
    assert "pin" not in problem.message  # a pin cannot name another pin


def test_pins_never_pass_conversions_or_non_names(repo: Path) -> None:
    for bad, says in (("{RRF_K!r}", "no !conversion or :format"), ("{RRF_K.x}", "{RRF_K.x}")):
        (problem,) = problems_of(write(repo, PINNED.replace("--rrf-k {RRF_K}", bad)))
        assert problem.field == "service.start"
        assert says in problem.message


# --------------------------------------------------------------------------- side_hash


def test_side_hash_is_stable_and_independent_of_key_order(repo: Path) -> None:
    first = load_config(write(repo / "a", MINIMAL)).baseline
    reordered = MINIMAL.replace(
        '{ q = "{query}", k = "{limit}" }', '{ k = "{limit}", q = "{query}" }'
    )
    second = load_config(write(repo / "b", reordered)).baseline
    assert re.fullmatch(r"[0-9a-f]{64}", side_hash(first))
    assert side_hash(first) == side_hash(second)


@pytest.mark.parametrize(
    "change",
    [
        {"query": {"limit": 11}},
        {"query": {"params": {"q": "{query}", "k": "10"}}},
        {"query": {"method": "POST", "json": {"q": "{query}"}}},
        {"query": {"timeout": 9.0}},
        {"query": {"scores": "results[].score"}},
        {"service": {"start": "python3 svc.py --port {port} --fast"}},
        {"service": {"env": {"SEED": "1"}}},
        {"service": {"data": "fixtures/other"}},
    ],
    ids=lambda change: ".".join(f"{s}.{next(iter(v))}" for s, v in change.items()),
)
def test_side_hash_changes_with_what_is_measured(change: dict[str, dict[str, Any]]) -> None:
    side = SideConfig(ServiceConfig("svc --port {port}", "/health"), QueryConfig("/s", "ids"))
    changed = SideConfig(
        replace(side.service, **change.get("service", {})),
        replace(side.query, **change.get("query", {})),
    )
    assert side_hash(changed) != side_hash(side)


def test_side_hash_ignores_process_deadlines() -> None:
    side = SideConfig(ServiceConfig("svc --port {port}", "/health"), QueryConfig("/s", "ids"))
    slower = replace(side.service, ready_timeout=600.0, build_timeout=1.0, stop_timeout=1.0)
    assert side_hash(SideConfig(slower, side.query)) == side_hash(side)


def test_max_consecutive_failures_is_not_hashed() -> None:
    """When to give up on a stalled round is not what a run measured: records stay reusable."""
    side = SideConfig(ServiceConfig("svc --port {port}", "/health"), QueryConfig("/s", "ids"))
    assert side.query.max_consecutive_failures == 5
    for value in (0, 3, 100):
        patient = replace(side.query, max_consecutive_failures=value)
        assert side_hash(SideConfig(side.service, patient)) == side_hash(side)


def test_the_load_deadline_is_not_hashed_but_the_load_is() -> None:
    from harness.config.values import LoadConfig

    side = SideConfig(ServiceConfig("svc --port {port}", "/health"), QueryConfig("/s", "ids"))
    loaded = replace(side.service, load=LoadConfig("/documents"))
    patient = replace(loaded, load=LoadConfig("/documents", timeout=600.0))
    moved = replace(loaded, load=LoadConfig("/docs"))
    assert side_hash(SideConfig(patient, side.query)) == side_hash(SideConfig(loaded, side.query))
    assert side_hash(SideConfig(moved, side.query)) != side_hash(SideConfig(loaded, side.query))
    assert side_hash(SideConfig(loaded, side.query)) != side_hash(side)


def test_probe_and_kill_deadlines_are_not_hashed_and_old_hashes_hold() -> None:
    side = SideConfig(ServiceConfig("svc --port {port}", "/health"), QueryConfig("/s", "ids"))
    patient = replace(side.service, probe_timeout=30.0, kill_wait=0.5)
    assert side_hash(SideConfig(patient, side.query)) == side_hash(side)
    # side_hash of this side computed before probe_timeout and kill_wait were ServiceConfig
    # fields (commit 3fc0729): run records saved then are still found for reuse.
    old = "50e2645726a61653dc4adbc8504c55e4e6fa8ca19ac11f8e404b875cf81e6cf1"
    assert side_hash(side) == old


# --------------------------------------------------------------------------- substitute


def test_substitute_is_literal_and_leaves_other_braces_alone() -> None:
    template = 'python -c "print({})" --json \'{"a": 1}\' --port {port} {unknown}'
    values = {"port": "{unknown}", "unused": "x"}
    assert substitute(template, values) == (
        'python -c "print({})" --json \'{"a": 1}\' --port {unknown} {unknown}'
    )


def test_a_missing_ready_names_a_path_a_service_without_a_health_route_serves(repo: Path) -> None:
    text = MINIMAL.replace('ready = "/health"\n', "")
    (problem,) = problems_of(write(repo, text))
    assert problem.field == "service.ready"
    assert problem.message.startswith('missing required key: set ready = "/health" in [service]')
    assert 'no health route? FastAPI serves "/openapi.json"' in problem.message

"""harness.config: form bodies, `unset`, [ref."PATTERN"] settings, {config_dir} and rewrite hooks
(loader and hashing; the end-to-end runs are tests/e2e/test_shapes_e2e.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from config_support import MINIMAL

from harness.config import effective_side, load_config, side_hash
from harness.config.hook import rewritten_items
from harness.config.inputs import build_inputs, inputs_hash
from harness.config.overrides import matches
from harness.config.values import ServiceConfig
from harness.errors import ConfigError, Problem
from harness.replay.request import encode_request, make_request

SHA = "abc1234" + "0" * 33


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    return tmp_path


def write(repo: Path, extra: str, base: str = MINIMAL) -> Path:
    path = repo / "harness.toml"
    path.write_text(base + extra, encoding="utf-8")
    return path


def problems(path: Path) -> list[Problem]:
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return list(caught.value.problems)


def line_of(path: Path, marker: str, after: int = 0) -> int:
    lines = path.read_text().splitlines()
    return next(i for i, line in enumerate(lines, start=1) if i > after and marker in line)


# --------------------------------------------------------------------------- form bodies


def test_a_form_body_is_read_and_sent_urlencoded(repo: Path) -> None:
    text = MINIMAL.replace('params = { q = "{query}", k = "{limit}" }', 'method = "POST"\nform = '
                        '{ q = "{query}", k = "{limit}", lang = "en" }')
    query = load_config(write(repo, "", base=text)).baseline.query
    assert query.form == {"q": "{query}", "k": "{limit}", "lang": "en"}
    raw = encode_request("http://127.0.0.1:9", make_request(query, "what's new & why? ü"))
    head, _, body = raw.partition(b"\r\n\r\n")
    assert body == b"q=what%27s+new+%26+why%3F+%C3%BC&k=10&lang=en"
    assert b"Content-Type: application/x-www-form-urlencoded" in head
    assert f"Content-Length: {len(body)}".encode() in head
    assert head.startswith(b"POST /search HTTP/1.1")


def test_a_content_type_header_replaces_the_harness_own(repo: Path) -> None:
    text = MINIMAL.replace('params = { q = "{query}", k = "{limit}" }', 'method = "POST"\n'
                        'form = { q = "{query}" }\nheaders = { Content-Type = "text/plain" }')
    query = load_config(write(repo, "", base=text)).baseline.query
    head = encode_request("http://127.0.0.1:9", make_request(query, "x")).partition(b"\r\n\r\n")[0]
    assert head.count(b"Content-Type") == 1 and b"Content-Type: text/plain" in head


def test_a_form_body_needs_post_and_excludes_json(repo: Path) -> None:
    path = write(repo, '\n[candidate.query]\nform = { q = "{query}" }\n')
    (problem,) = problems(path)
    assert problem.field == "candidate.query.form"
    assert problem.message.startswith('a form body needs method = "POST"')
    path = write(repo, '\n[candidate.query]\nmethod = "POST"\nform = { q = "{query}" }\n'
                 'json = { q = "{query}" }\n')
    (problem,) = problems(path)
    assert problem.field == "candidate.query.form"
    assert "json and form are both set" in problem.message


def test_form_is_hashed_only_when_set(repo: Path) -> None:
    config = load_config(write(repo, '\n[candidate.query]\nmethod = "POST"\n'))
    assert config.candidate.query.form is None
    text = MINIMAL.replace("params =", 'method = "POST"\nform = { q = "{query}" }\nparams =')
    with_form = load_config(write(repo, "", base=text)).baseline
    assert side_hash(with_form) != side_hash(config.candidate)


# --------------------------------------------------------------------------- unset


def test_unset_removes_an_entry_and_a_key(repo: Path) -> None:
    config = load_config(write(repo, """
[candidate.query]
unset = ["params.q"]
params = { text = "{query}" }
[baseline.query]
unset = ["params"]
params = { only = "{query}" }
"""))
    # unset first, then the table's own keys: an inherited entry goes, a new one merges in
    assert config.candidate.query.params == {"k": "{limit}", "text": "{query}"}
    assert config.baseline.query.params == {"only": "{query}"}  # the whole table replaced


def test_unset_a_scalar_restores_its_default(repo: Path) -> None:
    text = MINIMAL.replace("params =", 'limit = 20\nmethod = "POST"\njson = { q = "{query}" }\n'
                        "params =")
    config = load_config(write(repo, '\n[candidate.query]\nunset = ["json", "limit", "method"]\n',
                               base=text))
    assert (config.candidate.query.json, config.candidate.query.limit) == (None, 10)
    assert config.candidate.query.method == "GET"
    assert config.baseline.query.limit == 20


def test_unset_errors_are_located(repo: Path) -> None:
    path = write(repo, """
[candidate.query]
unset = ["paramz", "path", "params.nope", "limit.x"]
""")
    found = {(p.field, p.line): p.message for p in problems(path)}
    line = line_of(path, "unset =")
    assert found.pop(("candidate.query.unset[0]", line)).endswith("did you mean 'params'?")
    assert "query.path is required" in found.pop(("candidate.query.unset[1]", line))
    assert found.pop(("candidate.query.unset[2]", line)) == (
        "nothing to unset: [query] does not set 'params.nope'"
    )
    assert "only entries of env, form, headers, json, params" in found.pop(
        ("candidate.query.unset[3]", line)
    )
    assert not found


def test_unset_in_a_base_section_is_an_error(repo: Path) -> None:
    path = write(repo, "", base=MINIMAL.replace('ids = "', 'unset = ["limit"]\nids = "'))
    (problem,) = problems(path)
    assert problem.field == "query.unset" and problem.line == line_of(path, "unset")
    assert "only goes in an override table" in problem.message


# --------------------------------------------------------------------------- per ref


REFS = """
[candidate.query]
params = { q = "{query}", k = "{limit}", side = "candidate" }

[ref."v1.*".query]
path = "/v1/search"
unset = ["params.k"]

[ref."v1.2"]
query = { limit = 20 }
service = { env = { MODE = "legacy" } }

[ref."abc1234".query]
headers = { X-Commit = "abc" }
"""


def test_ref_tables_apply_on_top_of_the_side_in_file_order(repo: Path) -> None:
    config = load_config(write(repo, REFS))
    assert config.side("baseline") == config.baseline  # no ref: the side as before
    side = effective_side(config, "candidate", "v1.2", "f" * 40)
    assert side.query.path == "/v1/search"  # v1.* and v1.2 both match, in file order
    assert side.query.params == {"q": "{query}", "side": "candidate"}  # base < side < ref
    assert side.query.limit == 20 and side.service.env == {"MODE": "legacy"}
    other = effective_side(config, "baseline", "v1.3", "f" * 40)
    assert (other.query.path, other.query.limit, other.service.env) == ("/v1/search", 10, {})
    assert effective_side(config, "baseline", "main", "f" * 40) == config.baseline
    # the commit matches too: by SHA prefix, whatever name the ref was given by
    assert effective_side(config, "baseline", "main", SHA).query.headers == {"X-Commit": "abc"}


@pytest.mark.parametrize(
    ("pattern", "ref", "sha", "expected"),
    [
        ("v1.*", "v1.2", None, True),
        ("v1.*", "v10", None, False),
        ("release/*", "release/2024", None, True),
        ("release/2024", "release/2024", None, True),
        ("main", "maint", None, False),
        ("abc1234", "main", SHA, True),  # an abbreviated SHA matches the resolved commit
        ("abc1234", "abc1234", None, True),  # the ref as given
        (SHA, "abc1234", SHA, True),  # the full SHA
        ("abc12*", "main", SHA, True),  # a glob over the SHA
        ("abcd", "main", SHA, False),
        ("ABC1234", "main", SHA, False),  # fnmatch is case-sensitive, SHAs are lower-case
    ],
)
def test_ref_patterns(pattern: str, ref: str, sha: str | None, expected: bool) -> None:
    assert matches(pattern, ref, sha) is expected


def test_unknown_keys_in_ref_tables_are_located(repo: Path) -> None:
    path = write(repo, """
[ref."v1.*".query]
pth = "/v1"

[ref."v2"]
servce = { start = "x" }
""")
    found = {(p.field, p.line): p.message for p in problems(path)}
    assert found.pop(('ref."v1.*".query.pth', line_of(path, "pth ="))).startswith(
        "unknown key 'pth' in [ref.\"v1.*\".query]; did you mean 'path'?"
    )
    message = found.pop(('ref."v2".servce', line_of(path, "servce =")))
    assert "did you mean 'service'?" in message
    assert not found


def test_a_ref_table_that_breaks_a_side_is_an_error_at_load(repo: Path) -> None:
    path = write(repo, """
[candidate.query]
method = "POST"

[ref."v2".query]
json = { q = "{query}" }

[ref."v3".service]
start = "python3 svc.py"
""")
    found = {(p.field, p.line): p.message for p in problems(path)}
    assert found.pop(('ref."v2".query.json', line_of(path, "json ="))) == (
        'a JSON body needs method = "POST"; set it, or put the fields in params '
        "(on the baseline side)"
    )
    assert "never receives the port" in found.pop(
        ('ref."v3".service.start', line_of(path, 'start = "python3 svc.py"', 10))
    )
    assert not found


def test_refs_that_do_not_fit_together_fail_when_resolved(repo: Path) -> None:
    config = load_config(write(repo, """
[ref."v*".query]
method = "POST"
json = { q = "{query}" }

[ref."v2"]
query = { unset = ["method"] }
"""))
    assert effective_side(config, "baseline", "v1", "f" * 40).query.json == {"q": "{query}"}
    with pytest.raises(ConfigError) as caught:
        effective_side(config, "candidate", "v2", "f" * 40)
    (problem,) = caught.value.problems
    assert "the settings for v2 (ffffffffffff) on the candidate side" in caught.value.message
    assert problem.field == 'ref."v*".query.json'
    assert problem.line == line_of(config.path, "json =")


def test_rewrite_cannot_be_set_per_ref(repo: Path) -> None:
    (problem,) = problems(write(repo, '\n[ref."v1"]\nquery = { rewrite = "lower" }\n'))
    assert problem.field == 'ref."v1".query.rewrite'
    assert "cannot differ per ref" in problem.message


def test_a_ref_table_of_the_wrong_shape(repo: Path) -> None:
    (problem,) = problems(write(repo, '\n[ref]\nv1 = "x"\n'))
    assert problem.field == 'ref."v1"' and "expected a table" in problem.message


# --------------------------------------------------------------------------- {config_dir}


def test_config_dir_in_commands_env_build_and_data(repo: Path) -> None:
    (repo / "shared").mkdir()
    text = MINIMAL.replace(
        'ready = "/health"',
        'ready = "/health"\nprepare = ["{python} {config_dir}/load.py {url}"]\n'
        'env = { SETTINGS = "{config_dir}/settings.toml" }\ndata = "{config_dir}/shared"\n'
        'build = "sh {config_dir}/build.sh"',
    )
    config = load_config(write(repo, "", base=text))
    service = config.baseline.service
    assert service.data == "{config_dir}/shared"  # kept as written: hashed independent of place
    assert config.config_dir == repo


def test_config_dir_data_must_stay_in_the_folder(repo: Path) -> None:
    text = MINIMAL.replace('ready = "/health"', 'ready = "/health"\ndata = "{config_dir}/../x"')
    (problem,) = problems(write(repo, "", base=text))
    assert problem.field == "service.data" and "must stay in that folder" in problem.message
    text = MINIMAL.replace('ready = "/health"', 'ready = "/health"\ndata = "x/{config_dir}"')
    (problem,) = problems(write(repo, "", base=text))
    assert "only at its start" in problem.message


def test_only_config_dir_is_filled_in_build(repo: Path) -> None:
    text = MINIMAL.replace('ready = "/health"', 'ready = "/health"\nbuild = "make {worktree}"')
    (problem,) = problems(write(repo, "", base=text))
    assert "{worktree} is not filled in (only {config_dir} is)" in problem.message


def test_files_named_through_config_dir_are_hashed_by_content(repo: Path) -> None:
    (repo / "load.py").write_text("print(1)\n")
    (repo / "shared").mkdir()
    (repo / "shared" / "a.txt").write_text("a\n")
    text = MINIMAL.replace(
        'ready = "/health"',
        'ready = "/health"\nprepare = ["{python} {config_dir}/load.py"]\n'
        'data = "{config_dir}/shared"',
    )
    config = load_config(write(repo, "", base=text))
    before = inputs_hash(config.baseline, config)
    (repo / "load.py").write_text("print(2)\n")
    edited = inputs_hash(config.baseline, config)
    (repo / "shared" / "a.txt").write_text("b\n")
    assert len({before, edited, inputs_hash(config.baseline, config)}) == 3
    # where the folder is does not matter to the config hash, only what is in it
    assert "{config_dir}" in config.baseline.service.prepare[0]


def test_a_build_naming_config_dir_is_keyed_by_what_it_names(repo: Path) -> None:
    (repo / "build.sh").write_text("echo 1\n")
    build = 'build = "sh {config_dir}/build.sh"'
    text = MINIMAL.replace('ready = "/health"', f'ready = "/health"\n{build}')
    config = load_config(write(repo, "", base=text))
    service, key = build_inputs(config.baseline.service, "f" * 40, config)
    assert service.build == f"sh {repo}/build.sh"
    assert key.startswith("f" * 40 + "+config.")
    (repo / "build.sh").write_text("echo 2\n")
    assert build_inputs(config.baseline.service, "f" * 40, config)[1] != key
    plain = ServiceConfig(start="x {port}", ready="/", build="make")
    assert build_inputs(plain, "f" * 40, config) == (plain, "f" * 40)


# --------------------------------------------------------------------------- rewrite hooks


HOOKED = MINIMAL.replace('ids = "', 'rewrite = "hooks.topic:rewrite"\nids = "')


def hook(repo: Path, source: str) -> Path:
    (repo / "hooks").mkdir(exist_ok=True)
    path = repo / "hooks" / "topic.py"
    path.write_text(source)
    return path


def test_a_hook_is_loaded_from_the_config_folder_and_applied(repo: Path) -> None:
    hook(repo, "from hooks.helper import last\n\ndef rewrite(text):\n    return last(text)\n")
    (repo / "hooks" / "helper.py").write_text("def last(text):\n    return text.split()[-1]\n")
    config = load_config(write(repo, "", base=HOOKED))
    items = rewritten_items([("q1", "tell me about q01")], "hooks.topic:rewrite", config.path)
    assert items == [("q1", "q01")]


def test_an_edited_hook_changes_the_inputs_hash(repo: Path) -> None:
    path = hook(repo, "def rewrite(text):\n    return text\n")
    config = load_config(write(repo, "", base=HOOKED))
    before = inputs_hash(config.baseline, config)
    path.write_text("def rewrite(text):\n    return text.lower()\n")
    assert inputs_hash(config.baseline, config) != before
    # and the new content is what is applied: loaded once per content of the file
    assert rewritten_items([("q", "AB")], "hooks.topic:rewrite", config.path) == [("q", "ab")]


def test_an_edited_module_that_the_hook_imports_changes_the_inputs_hash(repo: Path) -> None:
    # Each harness run is one process (a module is imported once per process): so is each
    # hash here.
    hook(repo, "from hooks.helper import last\n\ndef rewrite(text):\n    return last(text)\n")
    helper = repo / "hooks" / "helper.py"
    helper.write_text("def last(text):\n    return text.split()[-1]\n")
    config = write(repo, "", base=HOOKED)
    script = (
        "import sys\nfrom harness.config import load_config\n"
        "from harness.config.inputs import inputs_hash\n"
        "c = load_config(sys.argv[1])\nprint(inputs_hash(c.baseline, c))\n"
    )

    def key() -> str:
        done = subprocess.run(
            [sys.executable, "-c", script, str(config)],
            capture_output=True, text=True, check=True, cwd=repo,
        )  # fmt: skip
        return done.stdout.strip()

    before = key()
    assert key() == before  # stable
    helper.write_text("def last(text):\n    return text.split()[0]\n")
    assert key() != before


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (None, "no module 'hooks.topic' in"),
        ("def other(text):\n    return text\n", "no attribute 'rewrite' (its functions: other)"),
        ("rewrite = 3\n", "rewrite is int, not callable"),
        ("import nowhere_at_all\n", "importing"),
    ],
)
def test_hook_errors_name_the_file_and_field(
    repo: Path, source: str | None, expected: str
) -> None:
    if source is not None:
        hook(repo, source)
    path = write(repo, "", base=HOOKED)
    (problem,) = problems(path)
    assert problem.field == "query.rewrite" and problem.line == line_of(path, "rewrite =")
    assert expected in problem.message
    assert problem.path == str(path)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("    raise ValueError('no topic')\n", "raised ValueError: no topic on query 'q2'"),
        ("    return None if 'b' in text else text\n", "returned NoneType, not a string, on "
         "query 'q2'"),
    ],
)
def test_a_hook_that_fails_on_a_query_names_it(repo: Path, body: str, expected: str) -> None:
    source = "def rewrite(text):\n    if 'b' not in text:\n        return text\n" + body
    hook(repo, source)
    config = load_config(write(repo, "", base=HOOKED))
    with pytest.raises(ConfigError) as caught:
        rewritten_items([("q1", "a"), ("q2", "b")], "hooks.topic:rewrite", config.path)
    assert expected in caught.value.message
    assert str(config.path) in caught.value.message


def test_a_bad_hook_name_is_an_error(repo: Path) -> None:
    path = write(repo, "", base=MINIMAL.replace('ids = "', 'rewrite = "hooks/topic.py"\nids = "'))
    (problem,) = problems(path)
    assert 'or a hook "module:function"' in problem.message


# --------------------------------------------------------------------------- sessions


def test_a_session_takes_the_ref_settings_and_a_sweep_point_last(tmp_path: Path) -> None:
    """What compare, run --ref, sweep and gate measure: RefSession(plan, side, ref)."""
    from e2e_support import git

    from harness.driver.plan import Asked
    from harness.driver.runner import RefSession, RunPlan
    from harness.gold import load_gold

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "gold").mkdir()
    (repo / "gold" / "gold.jsonl").write_text(
        '{"format": "harness-gold", "version": 1}\n'
        '{"id": "q1", "query": "Tea", "relevant": {"d1": 1}}\n'
    )
    write(repo, '\n[ref."v1.*".service]\nenv = { MODE = "legacy", RRF_K = "10" }\n'
                '\n[ref."v1.*".query]\npath = "/v1/search"\n',
          base=MINIMAL.replace('ids = "', 'rewrite = "lower"\nids = "'))
    git(repo, "init", "-q", "-b", "main", home=tmp_path)
    git(repo, "add", "-A", home=tmp_path)
    git(repo, "commit", "-q", "-m", "one", home=tmp_path)
    git(repo, "tag", "v1.4", home=tmp_path)
    config = load_config(repo / "harness.toml")
    plan = RunPlan(config, Asked.of(load_gold(config.gold)), None, tmp_path / "results")
    session = RefSession(plan, "candidate", "v1.4", pins={"RRF_K": "60"})
    assert session.side.query.path == "/v1/search"
    assert session.side.service.env == {"MODE": "legacy", "RRF_K": "60"}  # the point wins
    assert session.items() == [("q1", "tea")]
    main = RefSession(plan, "candidate", "main")
    assert main.side == config.candidate  # the same commit, but "main" matches no table
    assert main.config_hash != session.config_hash


def test_a_ref_table_lowering_the_limit_below_a_cutoff_is_refused(tmp_path: Path) -> None:
    from e2e_support import git

    from harness.driver.plan import Asked
    from harness.driver.runner import RefSession, RunPlan
    from harness.gold import load_gold

    repo = tmp_path / "repo"
    (repo / "gold").mkdir(parents=True)
    (repo / "gold" / "gold.jsonl").write_text(
        '{"format": "harness-gold", "version": 1}\n'
        '{"id": "q1", "query": "Tea", "relevant": {"d1": 1}}\n'
    )
    write(repo, '\n[ref."main".query]\nlimit = 5\n')
    git(repo, "init", "-q", "-b", "main", home=tmp_path)
    git(repo, "add", "-A", home=tmp_path)
    git(repo, "commit", "-q", "-m", "one", home=tmp_path)
    config = load_config(repo / "harness.toml")
    plan = RunPlan(config, Asked.of(load_gold(config.gold)), None, tmp_path / "results")
    with pytest.raises(ConfigError, match=r"query\.limit = 5 for main on the baseline side"):
        RefSession(plan, "baseline", "main")

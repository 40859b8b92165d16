"""harness matrix: the matrix file (every error located, exit 2), applying a configuration, and
the real CLI on the demo service, its three rankings (RANKING=lexical|concept|hybrid) as three
configurations. Numbers are not pinned: the tests assert structure and direction."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import psutil
import pytest
from cli_support import run_cli
from purity import impurities

from harness.config import load_config
from harness.errors import ConfigError
from harness.matrix.spec import apply_entry, read_matrix

DEMO_MATRIX = """\
reference = "hybrid"
metrics = ["ndcg@10", "mrr@10", "hit@5"]

[config.lexical]
env = { RANKING = "lexical" }

[config.concept]
env = { RANKING = "concept" }

[config.hybrid]
env = { RANKING = "hybrid" }
"""

FAILING = """
[[constraint]]
config = "lexical"
metric = "ndcg@10"
max_drop = 0.01

[[constraint]]
config = "hybrid"
metric = "mrr@10"
slice = "entity"
min = 0.01
"""


def _problems(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "matrix.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        read_matrix(path)
    return [line.strip().replace(str(path), "M") for line in caught.value.details]


# --------------------------------------------------------------------------- the file


def test_a_matrix_file_is_read_with_its_constraints(tmp_path: Path) -> None:
    path = tmp_path / "m.toml"
    path.write_text(DEMO_MATRIX + FAILING)
    matrix = read_matrix(path)
    assert [e.name for e in matrix.entries] == ["lexical", "concept", "hybrid"]
    assert matrix.reference == "hybrid" and matrix.metrics == ("ndcg@10", "mrr@10", "hit@5")
    first, second = matrix.constraints
    assert (first.config, first.metric, first.scope, first.bound, first.value) == (
        "lexical", "ndcg@10", "overall", "max_drop", 0.01)  # fmt: skip
    assert (second.scope, second.bound) == ("entity", "min")
    assert second.where.endswith("m.toml:21: constraint[1].slice")
    assert first.words() == "lexical: ndcg@10 at most 0.01 below the reference"


def test_the_reference_defaults_to_the_first_configuration(tmp_path: Path) -> None:
    path = tmp_path / "m.toml"
    path.write_text('[config.a]\nenv = { X = "1" }\n[config.b]\nenv = { X = "2" }\n')
    assert read_matrix(path).reference == "a"


def test_every_problem_in_a_matrix_file_is_located(tmp_path: Path) -> None:
    text = """\
reference = "nope"
colour = "red"
metrics = ["hitt@10"]

[config.a]
env = { "1BAD" = "x" }
speed = 3

[config.a.service]
strat = "python3 svc.py"

[config.a.query]
limit = 0

[config.b]
env = { MODE = "b" }

[[constraint]]
config = "c"
metric = "ndcg@10"
max_drop = 0.05

[[constraint]]
config = "b"
metric = "ndcg@10"

[[constraint]]
config = "b"
metric = "ndcg@10"
max_drop = -1
"""
    found = _problems(tmp_path, text)
    expected = [
        "M:2: colour: unknown key 'colour'",
        "M:7: config.a.speed: unknown key 'speed'",
        "M:6: config.a.env.1BAD: '1BAD' is not an environment variable name",
        "M:10: config.a.service.strat: unknown key 'strat' in [service]",
        "M:13: config.a.query.limit: must be >= 1, not 0",
        "M:1: reference: must name a configuration (a, b), not 'nope'",
        "M:3: metrics[0]: unknown metric 'hitt@10'",
        "M:19: constraint[0].config: must name a configuration (a, b), not 'c'",
        "M:23: constraint[1]: needs exactly one of max_drop, min, max (given: none)",
        "M:30: constraint[2].max_drop: must be >= 0, not -1",
    ]
    assert len(found) == len(expected), found
    for line, want in zip(found, expected, strict=True):
        assert line.startswith(want), (line, want)


def test_a_matrix_needs_two_configurations_that_each_set_something(tmp_path: Path) -> None:
    found = _problems(tmp_path, '[config.only]\ndescription = "nothing"\n')
    assert found[0].startswith("M:1: config.only: sets nothing")
    assert found[1].startswith("M:1: config: a matrix needs at least two configurations")


def test_a_drop_against_the_reference_itself_is_refused(tmp_path: Path) -> None:
    text = DEMO_MATRIX + '[[constraint]]\nconfig = "hybrid"\nmetric = "mrr@10"\nmax_drop = 0.1\n'
    (line,) = _problems(tmp_path, text)
    assert line.startswith("M:13: constraint[0].config: 'hybrid' is the reference")


def test_toml_syntax_errors_name_the_line(tmp_path: Path) -> None:
    (line,) = _problems(tmp_path, "[config.a]\nenv = {\n")
    assert line.startswith("M:2: TOML syntax error")


def test_a_missing_matrix_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such matrix file"):
        read_matrix(tmp_path / "absent.toml")


def test_the_summary_and_render_of_a_matrix_are_pure() -> None:
    pure = ("harness.matrix", "harness.matrix.values", "harness.matrix.summary",
            "harness.matrix.render")  # fmt: skip
    found = impurities(*pure, "harness.matrix.run")
    assert {module: found[module] for module in pure} == {module: [] for module in pure}
    assert "harness.driver.runner" in found["harness.matrix.run"]


# --------------------------------------------------------------------------- applying one


def test_a_configuration_merges_over_the_side_like_a_per_side_override(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "harness.toml").write_text(
        '[service]\nstart = "svc --port {port}"\nready = "/health"\nenv = { A = "1", B = "2" }\n'
        '[query]\npath = "/search"\nids = "ids"\nparams = { q = "{query}", k = "{limit}" }\n'
        '[gold]\npath = "gold.jsonl"\n'
    )
    config = load_config(tmp_path / "harness.toml")
    (tmp_path / "m.toml").write_text(
        '[config.x]\nenv = { B = "3" }\n[config.x.service]\nenv = { C = "4" }\n'
        '[config.x.query]\nparams = { mode = "x" }\nmethod = "post"\n'
        '[config.y]\nenv = { B = "5" }\n'
    )
    entry = read_matrix(tmp_path / "m.toml").entries[0]
    side = apply_entry(config, "baseline", entry).baseline
    assert dict(side.service.env) == {"A": "1", "B": "3", "C": "4"}
    assert dict(side.query.params) == {"q": "{query}", "k": "{limit}", "mode": "x"}
    assert side.query.method == "POST"
    assert apply_entry(config, "baseline", entry).candidate == config.candidate
    (tmp_path / "bad.toml").write_text(
        '[config.x.service]\nstart = "svc"\n[config.y]\nenv = { B = "5" }\n'
    )
    bad = read_matrix(tmp_path / "bad.toml").entries[0]
    with pytest.raises(ConfigError, match=r"config.x: the service's start never receives"):
        apply_entry(config, "baseline", bad, "bad.toml")


# --------------------------------------------------------------------------- the real CLI


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    home = tmp_path_factory.mktemp("matrix")
    (home / "tmp").mkdir()
    env = {"TMPDIR": str(home / "tmp"), "HARNESS_CACHE_DIR": str(home / "cache")}
    done = run_cli("harness", "demo", home / "demo", cwd=home, env=env)
    assert done.returncode == 0, done.stderr
    (home / "ablation.toml").write_text(DEMO_MATRIX)
    (home / "failing.toml").write_text(DEMO_MATRIX + FAILING)
    return home, env


def _matrix(
    demo: tuple[Path, dict[str, str]], name: str, *args: str
) -> subprocess.CompletedProcess[str]:
    home, env = demo
    return run_cli(
        "harness", "matrix", "--ref", "main", "--matrix", home / name, "--repeats", "1",
        "--results", home / "results", *args, cwd=home / "demo", env=env, timeout=300,
    )  # fmt: skip


@pytest.mark.slow
def test_matrix_on_the_demo_prints_one_row_per_configuration(
    demo: tuple[Path, dict[str, str]],
) -> None:
    home, _ = demo
    done = _matrix(demo, "ablation.toml", "--format", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["schema"] == "harness-matrix" and document["reference"] == "hybrid"
    assert [r["name"] for r in document["rows"]] == ["lexical", "concept", "hybrid"]
    rows = {r["name"]: r for r in document["rows"]}
    assert rows["hybrid"]["reference"] and rows["hybrid"]["quality"] == "reference"
    assert {r["record_path"] for r in rows.values()} == {
        r["record_path"] for r in rows.values() if r["record_path"]
    } and len({r["record_path"] for r in rows.values()}) == 3
    for name, row in rows.items():
        assert json.loads(Path(row["record_path"]).read_text())["ref"] == f"main [{name}]"
    overall = {n: r["cells"]["overall"] for n, r in rows.items()}
    # Each single channel is worse than both fused: direction only.
    for single in ("lexical", "concept"):
        cell = overall[single]["ndcg@10"]
        assert cell["value"] < overall["hybrid"]["ndcg@10"]["value"]
        assert cell["ci_low"] <= cell["delta"] <= cell["ci_high"] < 0
        assert cell["p_holm"] >= cell["p"] and cell["verdict"] == "regressed"
        assert overall[single]["hit@5"]["ci_low"] is None  # McNemar: no interval
    assert overall["hybrid"]["ndcg@10"]["p"] is None  # the reference is not tested
    (directory,) = (home / "results").glob("matrix_*")
    assert {p.name for p in directory.iterdir()} == {
        "matrix.json", "report.md", "vs_lexical.json", "vs_concept.json"}  # fmt: skip
    assert json.loads((directory / "matrix.json").read_text()) == document


@pytest.mark.slow
def test_a_redacted_matrix_saves_no_query_text(demo: tuple[Path, dict[str, str]]) -> None:
    home, env = demo
    lines = (home / "demo" / "gold" / "gold.jsonl").read_text().splitlines()[1:]
    # Whole query texts only: a short one ("ERR-89375") may also be a document's words.
    texts = [q for q in (json.loads(line)["query"] for line in lines) if len(q.split()) >= 3]
    assert len(texts) > 20
    found: dict[bool, list[str]] = {}
    for redact in (False, True):
        results = home / f"results-redact-{redact}"
        done = run_cli(
            "harness", "matrix", "--ref", "main", "--matrix", home / "ablation.toml",
            "--repeats", "1", "--results", results, *(["--redact"] if redact else []),
            cwd=home / "demo", env=env, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        (directory,) = results.glob("matrix_*")
        saved = "".join(p.read_text() for p in directory.iterdir())
        found[redact] = [t for t in texts if t in saved]
    assert found[False], "the control: an unredacted matrix's comparisons quote flipped queries"
    assert found[True] == []


@pytest.mark.slow
def test_a_failing_constraint_fails_the_run_like_a_regression(
    demo: tuple[Path, dict[str, str]],
) -> None:
    done = _matrix(demo, "failing.toml")
    assert done.returncode == 1, done.stderr
    out = done.stdout
    assert "harness matrix: main (" in out and "reference hybrid" in out
    assert "Constraints: 1 of 2 failed" in out
    assert "FAILED  lexical: ndcg@10 at most 0.01 below the reference" in out
    assert "ok      hybrid: mrr@10 on slice entity at least 0.01" in out
    assert "hybrid (reference)" in out and "Holm p" in out
    for name in ("lexical", "concept"):
        assert any(line.startswith(name) and " - " in line for line in out.splitlines())
    assert "RANKING=concept" in out


@pytest.mark.slow
def test_matrix_file_errors_exit_2_before_anything_runs(
    demo: tuple[Path, dict[str, str]],
) -> None:
    home, _ = demo
    (home / "bad.toml").write_text(DEMO_MATRIX + '[[constraint]]\nconfig = "lexical"\n')
    done = _matrix(demo, "bad.toml")
    assert done.returncode == 2
    assert "harness: error: " in done.stderr and "invalid matrix file (2 problems)" in done.stderr
    assert "bad.toml:12: constraint[0].metric" in done.stderr
    assert "Traceback" not in done.stderr
    (home / "slice.toml").write_text(
        DEMO_MATRIX
        + '[[constraint]]\nconfig = "lexical"\nmetric = "mrr@10"\nslice = "x"\nmin = 0\n'
    )
    done = _matrix(demo, "slice.toml")
    assert done.returncode == 2
    assert "slice.toml:15: constraint[0].slice: the gold set" in done.stderr
    assert "has no slice 'x'" in done.stderr


@pytest.mark.slow
def test_the_demos_own_ablation_matrix_runs_as_the_readme_shows(
    demo: tuple[Path, dict[str, str]],
) -> None:
    done = _matrix(demo, "demo/ablation.toml")
    assert done.returncode == 1, done.stderr  # its lexical constraint fails, by design
    assert "Constraints: 1 of 2 failed" in done.stdout
    assert "FAILED  lexical: ndcg@10 at most 0.05 below the reference" in done.stdout
    assert "ok      hybrid: mrr@10 on slice semantic at least 0.3" in done.stdout


@pytest.mark.slow
def test_nothing_is_left_behind(demo: tuple[Path, dict[str, str]]) -> None:
    home, _ = demo
    assert list((home / "tmp").iterdir()) == []
    worktrees = home / "cache" / "worktrees"
    assert not worktrees.exists() or list(worktrees.iterdir()) == []
    for proc in psutil.process_iter(["cmdline"]):
        assert str(home) not in " ".join(proc.info["cmdline"] or ())

"""One configuration for a real service whose API moved across three refs, end to end.

tests/fixtures/moving_api/app.py is a FastAPI service: v1.0 answers GET /search and boots only
with LEGACY_MODE=1, v2.0 a form POST with field q, main a form POST with field text; every
version answers only a bare topic id, which the user's query hook (`hooks.topic:rewrite`) makes
of each question. tests/fixtures/moving_api/user_tree/ is the user's tree beside the committed
service: harness.toml with [ref."v1.*"] and [ref."v2.*"] tables, the hook, the corpus
(`data = "{config_dir}/shared"`) and a prepare script (`{config_dir}/tools/warm.py`), none of
them in any ref, so only {config_dir} and the hook's loading from the config's folder reach them.

The repository lives under the harness process's HOME, which the bubblewrap sandbox hides: the
sandboxed run passes only because the config folder is bound read-only into the sandbox.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from doc_pages import marked
from e2e_support import Sandbox, git, record_document, record_paths

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "moving_api"
TOPICS = 30
# Looked up, not imported (an import would load FastAPI into every worker's collection).
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not all(importlib.util.find_spec(m) for m in ("fastapi", "uvicorn", "multipart")),
        reason="the service is a FastAPI app under uvicorn, with python-multipart (test extra)",
    ),
]


class Box(Sandbox):
    """A Sandbox whose repository is under HOME (hidden by the sandbox but for what is bound)."""

    @property
    def repo(self) -> Path:
        return self.home / "proj"


def build_box(root: Path) -> Box:
    box = Box(root)
    for folder in (box.home, box.cache, box.tmp):
        folder.mkdir(parents=True)
    repo = box.repo
    repo.mkdir()
    shutil.copy(FIXTURE / "app.py", repo / "app.py")
    (repo / ".gitignore").write_text("results/\n__pycache__/\n")
    git(repo, "init", "-q", "-b", "main", home=box.home)
    for version, tag in ((1, "v1.0"), (2, "v2.0"), (3, None)):
        (repo / "api.json").write_text(json.dumps({"version": version}) + "\n")
        git(repo, "add", "-A", home=box.home)
        git(repo, "commit", "-q", "-m", f"api v{version}", home=box.home)
        if tag:
            git(repo, "tag", tag, home=box.home)
    # The user's tree: never committed, so no ref's checkout has any of it.
    shutil.copytree(FIXTURE / "user_tree", repo, dirs_exist_ok=True)
    (repo / "shared").mkdir()
    docs = [{"id": f"d{n:02d}", "text": f"topic q{n:02d}"} for n in range(1, TOPICS + 1)]
    docs += [{"id": f"f{n:02d}", "text": f"filler {n}"} for n in range(1, 6)]
    (repo / "shared" / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    header = {"format": "harness-gold", "version": 1}
    rows = [
        {"id": f"q{n:02d}", "query": f"tell me about topic q{n:02d}", "relevant": {f"d{n:02d}": 1}}
        for n in range(1, TOPICS + 1)
    ]
    (repo / "gold").mkdir()
    (repo / "gold" / "gold.jsonl").write_text(
        "".join(json.dumps(r, sort_keys=True) + "\n" for r in (header, *rows))
    )
    return box


@pytest.fixture
def box(tmp_path: Path) -> Box:
    return build_box(tmp_path / "box")


def test_the_readme_quotes_the_configuration_verbatim() -> None:
    found = marked("example", "moving_api")  # docs/configure.md quotes it
    assert found, "no page of the manual has a toml block after <!-- example: moving_api -->"
    shown = (FIXTURE / "user_tree" / "harness.toml").read_text(encoding="utf-8")
    assert found == [shown] * len(found)


def _ok(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def _clean(box: Box) -> None:
    assert box.leftovers() == [] and box.worktrees() == []


def test_compare_across_refs_whose_api_moved(box: Box) -> None:
    # The two refs answer through different code paths (a form POST against a GET): their
    # latency may really differ, and latency is not what this test is about.
    done = box.harness(
        "compare", "--baseline", "v1.0", "--candidate", "main", "--repeats", "2", "--format",
        "json", "--latency-tolerance", "0.9", "--latency-budget", "2",
    )  # fmt: skip
    _ok(done)
    report = json.loads(done.stdout)
    text = json.dumps(report)
    # the two sides differ as the refs make them: the report names what was asked differently
    for key in ("query.path", "query.method", "query.form", "query.params.q"):
        assert key in text, key
    records = {str(r["ref"]): r for r in map(record_document, record_paths(box.results))}
    baseline, candidate = records["v1.0"], records["main"]
    assert baseline["query_config"]["path"] == "/search"  # type: ignore[index]
    assert candidate["query_config"]["form"] == {"text": "{query}", "k": "{limit}"}  # type: ignore[index]
    _clean(box)


@pytest.mark.parametrize(("ref", "side"), [("v1.0", "baseline"), ("v1.0", "candidate"),
                                           ("v2.0", "baseline")])
def test_run_ref_applies_the_ref_settings_on_either_side(box: Box, ref: str, side: str) -> None:
    done = box.harness("run", "--ref", ref, "--side", side, "--repeats", "1", "--format", "json")
    _ok(done)
    (record,) = (record_document(p) for p in record_paths(box.results))
    repeat = record["repeats"][0]  # type: ignore[index]
    assert all(r["error"] is None for r in repeat["results"]), repeat["results"][:2]
    assert len(repeat["results"]) == TOPICS
    _clean(box)


def test_a_json_body_where_a_form_is_expected_gets_422(box: Box) -> None:
    config = box.repo / "harness.toml"
    text = config.read_text().partition('[ref."v1.*".service]')[0]  # main's settings only
    config.write_text(text.replace("form = {", "json = {"))
    done = box.harness("run", "--ref", "main", "--repeats", "1")
    assert done.returncode == 3, done.stdout + done.stderr
    (record,) = (record_document(p) for p in record_paths(box.results))
    results = record["repeats"][0]["results"]  # type: ignore[index]
    assert {r["status"] for r in results} == {422}
    _clean(box)


def test_a_hook_failing_on_a_query_stops_before_anything_is_built(box: Box) -> None:
    hook = box.repo / "hooks" / "topic.py"
    hook.write_text(hook.read_text().replace('re.search(r"q\\d\\d"', 're.search(r"q0\\d"'))
    done = box.harness("compare", "--baseline", "v1.0", "--candidate", "main", "--repeats", "1")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "query.rewrite = 'hooks.topic:rewrite' raised ValueError" in done.stderr
    assert "on query 'q10'" in done.stderr  # the first query it fails on
    assert "Traceback" not in done.stderr
    assert not (box.results / "logs").exists()  # nothing booted
    _clean(box)


def test_without_the_ref_tables_the_old_ref_cannot_be_measured(box: Box) -> None:
    config = box.repo / "harness.toml"
    config.write_text(config.read_text().partition('[ref."v1.*".service]')[0])
    done = box.harness("run", "--ref", "v1.0", "--repeats", "1")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "LEGACY_MODE" in done.stdout + done.stderr  # v1 exits at boot without its pin
    _clean(box)


def test_config_dir_is_bound_into_the_bubblewrap_sandbox(box: Box) -> None:
    from harness.boot.sandbox import BUBBLEWRAP, sandbox_mode

    if sandbox_mode({}) != BUBBLEWRAP:
        pytest.skip("bubblewrap cannot sandbox a boot on this machine")
    done = box.harness(
        "run", "--ref", "v2.0", "--repeats", "1", "--format", "json", env={"HARNESS_SANDBOX": ""}
    )
    _ok(done)
    (record,) = (record_document(p) for p in record_paths(box.results))
    repeat = record["repeats"][0]  # type: ignore[index]
    assert repeat["sandbox"] == BUBBLEWRAP
    assert all(r["error"] is None for r in repeat["results"])
    _clean(box)

"""[service.load]: the corpus posted over HTTP in batches, then an index call; each step timed.

The loader against httpx.MockTransport for the request shapes and the errors; the real CLI
against a FastAPI service under uvicorn that keeps its index in memory and answers queries only
once it was loaded.
"""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path

import httpx
import pytest
from e2e_support import (
    Sandbox,
    build_sandbox,
    config_text,
    git,
    load_json,
    record_document,
    record_paths,
)

from harness.boot.loader import corpus_path, load_corpus
from harness.boot.sandbox import BUBBLEWRAP, sandbox_mode
from harness.config import LoadConfig, load_config
from harness.errors import ConfigError, ServiceError

APP = Path(__file__).resolve().parents[1] / "fixtures" / "loaded_service" / "app.py"


def corpus(tmp_path: Path, n: int = 7) -> Path:
    path = tmp_path / "corpus.jsonl"
    rows = [{"_id": f"d{i}", "text": f"text {i}", "year": 2000 + i} for i in range(1, n + 1)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "\n")
    return path


def recording(status: int = 200) -> tuple[list[httpx.Request], httpx.Client]:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(status, json={"detail": "nope " * 100} if status >= 300 else {})

    return seen, httpx.Client(transport=httpx.MockTransport(handler))


def test_batches_follow_the_templates_and_the_index_is_called_once(tmp_path: Path) -> None:
    spec = LoadConfig(
        path="/docs",
        batch=3,
        body={"collection": "c1", "docs": "{documents}"},
        document={"id": "{_id}", "body": "{text} ({year})", "year": "{year}"},
        index="/refresh",
        index_method="PUT",
    )
    seen, client = recording()
    timings = load_corpus(spec, client, "http://svc", corpus(tmp_path))
    assert [(r.method, r.url.path) for r in seen] == [("POST", "/docs")] * 3 + [("PUT", "/refresh")]
    bodies = [json.loads(r.content) for r in seen[:3]]
    assert [len(b["docs"]) for b in bodies] == [3, 3, 1]
    assert bodies[0]["collection"] == "c1"
    # "{year}" alone keeps the JSON type; inside a string it is text
    assert bodies[0]["docs"][0] == {"id": "d1", "body": "text 1 (2001)", "year": 2001}
    assert set(timings) == {"load", "index"} and all(t >= 0 for t in timings.values())


def test_without_templates_the_lines_are_the_body(tmp_path: Path) -> None:
    seen, client = recording()
    load_corpus(LoadConfig(path="/docs", batch=100), client, "http://svc", corpus(tmp_path, 2))
    (request,) = seen
    assert json.loads(request.content) == [
        {"_id": "d1", "text": "text 1", "year": 2001},
        {"_id": "d2", "text": "text 2", "year": 2002},
    ]


def test_a_refused_batch_names_the_batch_lines_status_and_a_clipped_body(tmp_path: Path) -> None:
    _, client = recording(status=422)
    path = corpus(tmp_path)
    with pytest.raises(ServiceError) as caught:
        load_corpus(LoadConfig(path="/docs", batch=5), client, "http://svc", path)
    error = caught.value
    assert error.stage == "prepare"
    assert error.message.startswith(
        f"service.load: batch 1 (documents on lines 1-5 of {path}) to POST /docs: HTTP 422: "
    )
    assert "nope" in error.message and "more characters" in error.message  # clipped


def test_a_template_field_the_corpus_lacks_names_the_line(tmp_path: Path) -> None:
    _, client = recording()
    path = corpus(tmp_path)
    spec = LoadConfig(path="/docs", document={"id": "{id}"})
    with pytest.raises(ServiceError, match=rf"{path}:1: no field 'id' for the document template"):
        load_corpus(spec, client, "http://svc", path)


def test_a_timeout_says_which_key_to_raise(tmp_path: Path) -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    client = httpx.Client(transport=httpx.MockTransport(slow))
    with pytest.raises(ServiceError) as caught:
        load_corpus(LoadConfig(path="/d", timeout=2), client, "http://svc", corpus(tmp_path))
    assert "no answer within service.load.timeout = 2 s" in caught.value.message
    assert "raise service.load.timeout" in caught.value.details[0]


def test_the_corpus_comes_from_the_data_copy_or_gold_corpus(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    gold = tmp_path / "gold-corpus.jsonl"
    assert corpus_path(LoadConfig(path="/d", corpus="c.jsonl"), data, gold) == data / "c.jsonl"
    assert corpus_path(LoadConfig(path="/d"), data, gold) == gold
    with pytest.raises(ServiceError, match="no corpus to post"):
        corpus_path(LoadConfig(path="/d"), data, None)


def write_config(tmp_path: Path, load: str, corpus_line: str = "") -> Path:
    path = tmp_path / "harness.toml"
    path.write_text(
        textwrap.dedent(
            """
            [service]
            start = "x --port {port}"
            ready = "/health"
            [service.load]
            """
        )
        + load
        + textwrap.dedent(
            f"""
            [query]
            path = "/s"
            ids = "ids"
            [gold]
            path = "gold.jsonl"
            {corpus_line}
            """
        )
    )
    return path


def test_the_load_table_is_validated_key_by_key(tmp_path: Path) -> None:
    load = 'path = "docs"\nbatch = 0\nbody = { docs = "x" }\nbatsh = 3\n'
    with pytest.raises(ConfigError) as caught:
        load_config(write_config(tmp_path, load), repo=tmp_path)
    text = str(caught.value)
    assert "load.path: must be a URL path starting with '/'" in text
    assert "load.batch: must be >= 1" in text
    assert 'load.body: needs the placeholder "{documents}"' in text
    assert "unknown key 'batsh' in [service.load] (did you mean 'batch'?)" in text


def test_a_load_without_any_corpus_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="has no corpus to post"):
        load_config(write_config(tmp_path, 'path = "/docs"\n'), repo=tmp_path)


def test_a_load_is_part_of_the_side_hash_only_when_set(tmp_path: Path) -> None:
    (tmp_path / "c.jsonl").write_text("")
    config = load_config(
        write_config(tmp_path, 'path = "/docs"\n', 'corpus = "c.jsonl"'), repo=tmp_path
    )
    from dataclasses import replace

    from harness.config import side_hash

    side = config.baseline
    assert side.service.load == LoadConfig(path="/docs")
    other = replace(side, service=replace(side.service, load=LoadConfig(path="/d2")))
    none = replace(side, service=replace(side.service, load=None))
    assert len({side_hash(side), side_hash(other), side_hash(none)}) == 3


# --------------------------------------------------------------------------- end to end

LOAD = """
[service.load]
path = "/documents"
batch = {batch}
body = {{ docs = "{{documents}}" }}
document = {{ id = "{{id}}", text = "{{title}} {{text}}" }}
index = "/index"
corpus = "corpus.jsonl"
"""


def loaded_sandbox(tmp_path: Path, batch: int) -> tuple[Sandbox, Path]:
    pytest.importorskip("fastapi", reason="the loaded service is a FastAPI app (test extra)")
    pytest.importorskip("uvicorn", reason="the loaded service runs under uvicorn (test extra)")
    sandbox = build_sandbox(tmp_path / "x", {})
    shutil.copyfile(APP, sandbox.repo / "app.py")
    git(sandbox.repo, "add", "app.py", home=sandbox.home)
    git(sandbox.repo, "commit", "--quiet", "-m", "a service loaded over HTTP", home=sandbox.home)
    text = config_text(gold=str(sandbox.repo / "gold" / "gold.jsonl"), repeats=1)
    text = text.replace(
        'start = "{python} svc.py --port {port} --data {data}"',
        'start = "{python} -m uvicorn app:app --host 127.0.0.1 --port {port}"',
    )
    head, _, tail = text.partition("\n[query]")
    config = sandbox.root / "harness.toml"
    config.write_text(head + LOAD.format(batch=batch) + "\n[query]" + tail)
    return sandbox, config


@pytest.mark.parametrize("isolation", ["plain", "bubblewrap"])
def test_a_service_loaded_over_http_is_measured_and_each_step_timed(
    tmp_path: Path, isolation: str
) -> None:
    if isolation == "bubblewrap" and sandbox_mode({}) != BUBBLEWRAP:
        pytest.skip("bubblewrap cannot sandbox here (see harness.boot.sandbox)")
    sandbox, config = loaded_sandbox(tmp_path, batch=25)
    env = {"HARNESS_SANDBOX": "off" if isolation == "plain" else "on"}
    done = sandbox.harness("run", "--ref", "main", "--repeats", "2", config=config, env=env)
    assert done.returncode == 0, done.stderr
    assert f"isolation: {isolation}" in done.stdout  # through the sandbox's network too
    assert "before the queries (not latency): load " in done.stdout
    assert "index " in done.stdout and "median over 2 boots" in done.stdout
    (record,) = [record_document(p) for p in record_paths(sandbox.results)]
    for rep in record["repeats"]:  # type: ignore[union-attr]
        assert {"prepare:load", "prepare:index", "boot", "queries"} <= set(rep["timings_s"])
        assert all(r["error"] is None for r in rep["results"])
        # every gold query's one relevant document comes first
        assert all(r["ids"][0] == "d" + r["query_id"][1:] for r in rep["results"])
    assert sandbox.leftovers() == [] and sandbox.worktrees() == []


def test_a_refused_batch_fails_the_boot_with_the_batch_and_status(tmp_path: Path) -> None:
    sandbox, config = loaded_sandbox(tmp_path, batch=30)
    done = sandbox.harness("run", "--ref", "main", "--repeats", "1", config=config)
    assert done.returncode == 3, done.stderr
    assert "harness: error: prepare: service.load: batch 1 (documents on lines 1-30 of " in (
        done.stderr
    )
    assert "to POST /documents: HTTP 413: " in done.stderr
    assert "at most 25 documents a batch" in done.stderr
    assert sandbox.leftovers() == [] and sandbox.worktrees() == []


@pytest.mark.slow
def test_compare_reports_the_loading_apart_from_latency(tmp_path: Path) -> None:
    sandbox, config = loaded_sandbox(tmp_path, batch=25)
    done = sandbox.harness(
        "compare", "--baseline", "main", "--candidate", "main", "--repeats", "1", config=config
    )
    assert done.returncode == 0, done.stderr + done.stdout
    section = done.stdout.partition("Before the queries (prepare commands and loading")[2]
    assert "baseline: load " in section and "candidate: load " in section
    # Every boot's steps, latency-only rounds past --repeats 1 included (the A/A's latency rule
    # runs 2 or more rounds).
    boots = re.findall(r"\(median over (\d+) boots\)", section)
    assert "index " in section and len(boots) == 2 and all(int(n) >= 2 for n in boots)
    saved = next(sandbox.results.glob("*/comparison.json"))
    steps = {(s["side"], s["step"]) for s in load_json(saved)["prepare"]}  # type: ignore[union-attr]
    assert steps == {
        (side, step) for side in ("baseline", "candidate") for step in ("load", "index")
    }


def test_a_fifo_as_the_corpus_to_post_is_refused_at_once(tmp_path: Path) -> None:
    # A FIFO at load.corpus in the data copy would block the boot forever on open(2).
    import os
    import subprocess
    import sys

    fifo = tmp_path / "corpus.jsonl"
    os.mkfifo(fifo)
    code = (
        "import sys; from pathlib import Path; from harness.boot import loader\n"
        "from harness.errors import HarnessError\n"
        "try:\n    next(loader._documents(Path(sys.argv[1]), None))\n"
        "except HarnessError as exc:\n    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(fifo)], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert "named pipe" in done.stdout and "service.load.corpus" in done.stdout, done.stdout

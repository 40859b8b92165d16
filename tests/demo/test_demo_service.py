"""The embedded demo: generator, materialised repository, and the service on both branches.

Every expected number below is a property of the generated data, not a tuned constant: the
slice sizes come from harness.demo.generate.SLICE_SIZES, the answers from the gold set, and the
story thresholds (>= 8 queries) from the brief the demo was built to.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
from conftest import examples
from e2e_support import leased_port
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.config import load_config
from harness.demo import CANDIDATE, materialise, svc, vocabulary
from harness.demo.generate import SLICE_SIZES, generate
from harness.errors import HarnessError
from harness.gold import load_gold

BOOT_DEADLINE_S = 20.0  # generous: a readiness deadline, not a timing assertion
GOLD_KEYS = {"id", "query", "slice", "relevant", "outranks", "derivation"}
DOC_KEYS = {"id", "title", "text", "age_days"}


# --------------------------------------------------------------------------- fixtures


def _git(repo: Path, *args: str) -> str:
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(repo),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "LC_ALL": "C",
    }
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


@pytest.fixture(scope="module")
def demo_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return materialise(tmp_path_factory.mktemp("demo") / "repo")


@pytest.fixture(scope="module")
def gold(demo_repo: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = (demo_repo / "gold" / "gold.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    return rows[0], rows[1:]


@pytest.fixture(scope="module")
def corpus(demo_repo: Path) -> dict[str, dict[str, Any]]:
    lines = (demo_repo / "data" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    docs = [json.loads(line) for line in lines]
    return {doc["id"]: doc for doc in docs}


@pytest.fixture(scope="module")
def versions(demo_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """svc.py of each branch, checked out side by side."""
    out = {}
    for branch in ("main", CANDIDATE):
        folder = tmp_path_factory.mktemp(branch.replace("/", "-"))
        (folder / "svc.py").write_text(_git(demo_repo, "show", f"{branch}:svc.py"))
        out[branch] = folder / "svc.py"
    return out


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rankings(
    versions: dict[str, Path], demo_repo: Path, gold: tuple[dict[str, Any], list[dict[str, Any]]]
) -> dict[str, dict[str, list[str]]]:
    """Top 10 ids of every gold query on each branch, ranked in-process (no HTTP)."""
    out = {}
    for branch, path in versions.items():
        module = _load(path, f"demo_svc_{branch.replace('/', '_')}")
        index = module.Index()
        index.load(demo_repo / "data" / "corpus.jsonl")
        out[branch] = {q["id"]: [i for i, _ in index.search(q["query"], 10)] for q in gold[1]}
        del sys.modules[module.__name__]
    return out


# --------------------------------------------------------------------------- generation


def test_generation_is_deterministic_across_processes(tmp_path: Path) -> None:
    first, second = generate(), generate()
    assert first.corpus == second.corpus and first.gold == second.gold
    # Another interpreter, another hash seed, through the documented command line.
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run(
        [sys.executable, "-m", "harness.demo.generate", str(tmp_path)],
        env=env,
        check=True,
        capture_output=True,
    )
    assert (tmp_path / "corpus.jsonl").read_bytes() == first.corpus
    assert (tmp_path / "gold.jsonl").read_bytes() == first.gold


# The sha256 of the bytes `generate()` gave before the generator was made cheaper (tokenising
# each draft once, an incremental view of recent drafts): a speed-up must not move a single byte.
# Change these only with a deliberate change to the demo's data, and say so in the commit.
PINNED_CORPUS_SHA256 = "20ae0557ee65b21e0ff17bdb2ae91d01a258ae9d336e21db9a2114f5e39716df"
PINNED_GOLD_SHA256 = "51c6038aaf84e18a244583905ec641742b19d0adb3afa7a4df49cfe9c2cbb400"


def test_generated_bytes_are_pinned() -> None:
    data = generate()
    assert hashlib.sha256(data.corpus).hexdigest() == PINNED_CORPUS_SHA256
    assert hashlib.sha256(data.gold).hexdigest() == PINNED_GOLD_SHA256
    assert data.corpus_sha256 == PINNED_CORPUS_SHA256


def test_header_records_the_corpus_sha256(
    demo_repo: Path, gold: tuple[dict[str, Any], list[dict[str, Any]]]
) -> None:
    header = gold[0]
    corpus_bytes = (demo_repo / "data" / "corpus.jsonl").read_bytes()
    assert header["format"] == "harness-gold" and header["version"] == 1
    assert header["corpus"] == {
        "name": "corpus.jsonl",
        "sha256": hashlib.sha256(corpus_bytes).hexdigest(),
    }
    assert corpus_bytes == generate().corpus


def test_files_are_one_sorted_json_object_per_line(demo_repo: Path) -> None:
    for path in (demo_repo / "data" / "corpus.jsonl", demo_repo / "gold" / "gold.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            assert line == json.dumps(json.loads(line), sort_keys=True)


def test_documents_and_rows_have_exactly_the_native_keys(
    corpus: dict[str, dict[str, Any]], gold: tuple[dict[str, Any], list[dict[str, Any]]]
) -> None:
    assert len(corpus) >= 2000
    assert all(set(doc) == DOC_KEYS and doc["age_days"] >= 0 for doc in corpus.values())
    rows = gold[1]
    assert len({row["id"] for row in rows}) == len(rows)
    for row in rows:
        assert {"id", "query", "slice", "relevant", "derivation"} <= set(row) <= GOLD_KEYS
        assert set(row["relevant"]) <= set(corpus)
        for correct, stale in row.get("outranks", []):
            assert row["relevant"][correct] >= 1 and row["relevant"][stale] == 0


def test_slices_have_the_sizes_claimed(gold: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    sizes = Counter(row["slice"] for row in gold[1])
    assert sizes == Counter(SLICE_SIZES)
    assert sum(sizes.values()) >= 200 and min(sizes.values()) >= 25
    for name, size in SLICE_SIZES.items():
        assert f"{name} {size}" in gold[0]["description"]


def _words(text: str) -> set[str]:
    """The brief's check, written independently of the generator's own."""
    return {w for w in re.split(r"[^0-9a-z]+", text.lower()) if w} - svc.STOPWORDS


def test_semantic_queries_share_no_content_word_with_their_answer(
    corpus: dict[str, dict[str, Any]], gold: tuple[dict[str, Any], list[dict[str, Any]]]
) -> None:
    semantic = [row for row in gold[1] if row["slice"] == "semantic"]
    for row in semantic:
        (answer,) = row["relevant"]
        doc = corpus[answer]
        assert _words(row["query"]), row["query"]  # not a query of stop words only
        assert not _words(row["query"]) & _words(f"{doc['title']} {doc['text']}"), row
        # ...yet the answer is the only document holding every concept the query expresses.
        wanted = set(svc.concepts(row["query"]))
        holders = [
            i for i, d in corpus.items() if wanted <= set(svc.concepts(f"{d['title']} {d['text']}"))
        ]
        assert holders == [answer]


def test_nonsense_tokens_occur_nowhere_in_the_corpus(
    corpus: dict[str, dict[str, Any]], gold: tuple[dict[str, Any], list[dict[str, Any]]]
) -> None:
    vocabulary: set[str] = set()
    for doc in corpus.values():
        text = f"{doc['title']} {doc['text']}"
        vocabulary |= _words(text) | set(svc.tokens(text))
    nonsense = [row for row in gold[1] if row["slice"] == "nonsense"]
    for row in nonsense:
        assert row["relevant"] == {}
        assert not (_words(row["query"]) | set(svc.tokens(row["query"]))) & vocabulary, row


def test_exact_tokens_occur_in_exactly_one_document(
    corpus: dict[str, dict[str, Any]], gold: tuple[dict[str, Any], list[dict[str, Any]]]
) -> None:
    for row in (r for r in gold[1] if r["slice"] == "exact_token"):
        (ident,) = [t for t in svc.tokens(row["query"]) if t not in svc.STOPWORDS]
        holders = [i for i, d in corpus.items() if ident in svc.tokens(f"{d['title']} {d['text']}")]
        assert holders == list(row["relevant"]), row


def test_freshness_twins_differ_only_in_value_and_age(
    corpus: dict[str, dict[str, Any]], gold: tuple[dict[str, Any], list[dict[str, Any]]]
) -> None:
    for row in (r for r in gold[1] if r["slice"] == "freshness"):
        ((fresh, stale),) = row["outranks"]
        a, b = corpus[fresh]["text"].split(), corpus[stale]["text"].split()
        assert len(a) == len(b) and sum(x != y for x, y in zip(a, b, strict=True)) >= 1
        differing = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        assert differing == list(range(differing[0], differing[-1] + 1))  # one value, in place
        assert corpus[fresh]["age_days"] < corpus[stale]["age_days"]


def test_entity_derivations_count_the_recent_mentions_truthfully(
    corpus: dict[str, dict[str, Any]], gold: tuple[dict[str, Any], list[dict[str, Any]]]
) -> None:
    pattern = re.compile(r"reference page of (.+?), \d+ days old; .* at most 30 .*: (\d+)$")
    for row in (r for r in gold[1] if r["slice"] == "entity"):
        match = pattern.search(row["derivation"])
        assert match, row["derivation"]
        entity, claimed = match.group(1), int(match.group(2))
        (page,) = row["relevant"]
        assert corpus[page]["age_days"] > 30
        recent = [
            i
            for i, d in corpus.items()
            if i != page and d["age_days"] <= 30 and entity in f"{d['title']} {d['text']}"
        ]
        assert len(recent) == claimed


# --------------------------------------------------------------------------- the repository


def test_materialise_makes_main_and_feat_x_differing_exactly_by_the_diff(demo_repo: Path) -> None:
    branches = _git(demo_repo, "branch", "--format=%(refname:short)").split()
    assert sorted(branches) == ["feat/x", "main"]
    assert _git(demo_repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert _git(demo_repo, "status", "--porcelain") == ""
    assert _git(demo_repo, "ls-files").split() == sorted(
        [
            ".gitignore",
            "README.md",
            "ablation.toml",
            "data/corpus.jsonl",
            "gold/gold.jsonl",
            "harness.toml",
            "svc.py",
        ]
    )
    assert _git(demo_repo, "diff", "--name-only", "main", CANDIDATE).split() == ["svc.py"]
    assert _git(demo_repo, "rev-list", "--count", f"main..{CANDIDATE}").strip() == "1"

    def hunks(diff: str) -> list[str]:
        lines = diff[diff.index("\n@@") + 1 :].splitlines()
        return [re.sub(r"^(@@ [^@]+ @@).*", r"\1", line) for line in lines]

    shipped = resources.files("harness.demo").joinpath("feat_x.diff").read_text()
    actual = _git(demo_repo, "diff", "--no-color", "--no-ext-diff", "main", CANDIDATE)
    assert hunks(actual) == hunks(shipped)
    assert (demo_repo / "svc.py").read_bytes() == resources.files("harness.demo").joinpath(
        "svc.py"
    ).read_bytes()


def test_materialise_is_reproducible_down_to_the_commit_shas(tmp_path: Path) -> None:
    one, two = materialise(tmp_path / "one"), materialise(tmp_path / "two")
    for branch in ("main", CANDIDATE):
        assert _git(one, "rev-parse", branch) == _git(two, "rev-parse", branch)
    message = _git(one, "log", "-1", "--format=%s%n%b", CANDIDATE)
    assert "recency boost" in message.lower()


def test_materialise_refuses_a_non_empty_destination(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(HarnessError, match="not an empty directory"):
        materialise(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_harness_toml_is_the_commented_template(demo_repo: Path) -> None:
    text = (demo_repo / "harness.toml").read_text()
    config = tomllib.loads(text)
    service, query = config["service"], config["query"]
    assert service["start"] == "{python} svc.py --port {port} --data {data}"
    assert (service["ready"], service["venv"], service["data"]) == ("/health", False, "data")
    assert (demo_repo / service["data"] / "corpus.jsonl").is_file()
    assert (query["method"], query["path"]) == ("GET", "/search")
    assert query["params"] == {"q": "{query}", "k": "{limit}"}
    assert (query["ids"], query["scores"]) == ("results[].id", "results[].score")
    assert query["limit"] == 10
    assert (demo_repo / config["gold"]["path"]).is_file()
    assert (demo_repo / config["gold"]["corpus"]).is_file()
    assert (config["compare"]["repeats"], config["compare"]["k"]) == (5, [5, 10])
    uncommon = [
        *("build", "prepare", "env", "pass_env", "json", "headers", "timeout", "warmup"),
        *("alpha", "latency_tolerance", "max_errors", "seed"),
        *("[baseline.service]", "[candidate.query]"),
    ]
    commented = "\n".join(line for line in text.splitlines() if line.startswith("#"))
    for key in uncommon:
        assert key in commented, f"{key} is not shown (commented out) in the template"


def test_the_demo_loads_with_the_harness_config_and_gold_loaders(demo_repo: Path) -> None:
    config = load_config(demo_repo / "harness.toml")
    assert config.repo == demo_repo.resolve() and not config.sides_differ
    assert config.baseline.service.start.startswith("{python} ")
    assert config.corpus == (demo_repo / "data" / "corpus.jsonl").resolve()
    gold = load_gold(config.gold, corpus=config.corpus)
    assert gold.format == "native" and len(gold) == sum(SLICE_SIZES.values())
    assert gold.corpus is not None
    assert gold.corpus.sha256 == hashlib.sha256(config.corpus.read_bytes()).hexdigest()


# --------------------------------------------------------------------------- ranking, in-process


def _hit(ids: list[str], row: dict[str, Any], k: int) -> bool:
    return any(row["relevant"].get(i, 0) >= 1 for i in ids[:k])


def _outranks(ids: list[str], row: dict[str, Any]) -> bool:
    def rank(doc: str) -> int:
        return ids.index(doc) if doc in ids else len(ids)

    return all(rank(a) < rank(b) for a, b in row["outranks"])


def test_the_branches_tell_the_story_the_demo_promises(
    rankings: dict[str, dict[str, list[str]]], gold: tuple[dict[str, Any], list[dict[str, Any]]]
) -> None:
    rows = gold[1]
    base, cand = rankings["main"], rankings[CANDIDATE]

    def count(slice_: str, ranked: dict[str, list[str]], test: Any) -> int:
        return sum(bool(test(ranked[r["id"]], r)) for r in rows if r["slice"] == slice_)

    def hit(k: int) -> Any:
        return lambda ids, r: _hit(ids, r, k)

    assert count("freshness", cand, hit(1)) - count("freshness", base, hit(1)) >= 8
    assert count("superseded", cand, _outranks) - count("superseded", base, _outranks) >= 8
    assert count("entity", base, hit(5)) - count("entity", cand, hit(5)) >= 8
    assert count("entity", base, hit(1)) > count("entity", cand, hit(1))
    exact = [r["id"] for r in rows if r["slice"] == "exact_token"]
    assert [base[q] for q in exact] == [cand[q] for q in exact]
    # Nonsense: the same queries come back empty on both; the boost only reorders the few
    # false positives (thesaurus-only slang), it never adds or removes an answer.
    nonsense = [r["id"] for r in rows if r["slice"] == "nonsense"]
    assert [len(base[q]) for q in nonsense] == [len(cand[q]) for q in nonsense]
    assert 0 < sum(1 for q in nonsense if base[q]) <= len(nonsense) // 5
    semantic_main = count("semantic", base, hit(10))
    assert SLICE_SIZES["semantic"] // 2 < semantic_main < SLICE_SIZES["semantic"]
    overall = [_hit(base[r["id"]], r, 10) != _hit(cand[r["id"]], r, 10) for r in rows]
    assert sum(overall) <= 4  # discordant pairs at hit@10: "no measurable difference"


def test_the_lexical_channel_alone_cannot_answer_a_semantic_query(
    demo_repo: Path, gold: tuple[dict[str, Any], list[dict[str, Any]]]
) -> None:
    index = svc.Index()
    index.load(demo_repo / "data" / "corpus.jsonl")
    docs = {d.id: rowid for rowid, d in enumerate(index._docs, start=1)}
    for row in (r for r in gold[1] if r["slice"] == "semantic"):
        lexical = index._channel(
            "SELECT rowid FROM lexical WHERE lexical MATCH ? LIMIT ?",
            svc.content_tokens(row["query"]),
        )
        (answer,) = row["relevant"]
        assert docs[answer] not in lexical


@pytest.fixture(scope="module")
def tiny_index(tmp_path_factory: pytest.TempPathFactory) -> svc.Index:
    path = tmp_path_factory.mktemp("tiny") / "corpus.jsonl"
    docs = [
        {"id": "a", "title": "ledger-sync", "text": "restart the queue", "age_days": 1},
        {"id": "b", "title": "ERR-48213", "text": "quota exceeded", "age_days": 400},
        {"id": "c", "title": "notes", "text": "the backlog is wedged", "age_days": 3},
    ]
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    index = svc.Index()
    index.load(path)
    return index


def test_identifiers_and_synonyms_are_found(tiny_index: svc.Index) -> None:
    assert svc.tokens('ERR-48213 "Ledger-Sync" (x)') == ["err-48213", "ledger-sync", "x"]
    assert [i for i, _ in tiny_index.search("err-48213", 10)] == ["b"]
    # "reboot" is nowhere in the corpus: only the concept channel can find the restart doc.
    assert [i for i, _ in tiny_index.search("reboot", 10)] == ["a"]
    assert tiny_index.search("zorblax quimple", 10) == []


FTS_SYNTAX = ["NEAR", "OR", "AND", "NOT", '"', "*", ":", "^", "-", "+", "(", ")", "{", "}"]
FRAGMENTS = [*FTS_SYNTAX, "title", "text", "ledger-sync", "reboot", "ab", "é", "\x00", " "]


@settings(max_examples=examples(200))
@given(st.one_of(st.text(max_size=30), st.lists(st.sampled_from(FRAGMENTS)).map("".join)))
def test_no_user_text_is_read_as_fts_syntax(tiny_index: svc.Index, text: str) -> None:
    results = tiny_index.search(text, 5)
    assert len(results) <= 5
    assert all(score > 0 for _, score in results)


# --------------------------------------------------------------------------- the service, booted


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@contextmanager
def _booted(script: Path, data: Path, log: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    with leased_port() as port, log.open("wb") as sink:  # e2e_support: a leased port
        proc = subprocess.Popen(
            [sys.executable, str(script), "--port", str(port), "--data", str(data)],
            stdout=sink,
            stderr=sink,
            start_new_session=True,
        )
        try:
            yield proc, f"http://127.0.0.1:{port}"
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()


def _wait_ready(client: httpx.Client, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + BOOT_DEADLINE_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"service exited at boot:\n{log.read_text()}"
        try:
            if client.get("/health").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.02)
    pytest.fail(f"service not ready within {BOOT_DEADLINE_S} s:\n{log.read_text()}")


@pytest.mark.slow
@pytest.mark.parametrize("branch", ["main", CANDIDATE])
def test_each_branch_boots_answers_and_is_gone_after_sigterm(
    branch: str,
    versions: dict[str, Path],
    demo_repo: Path,
    gold: tuple[dict[str, Any], list[dict[str, Any]]],
    tmp_path: Path,
) -> None:
    rows = gold[1]
    log = tmp_path / "svc.log"
    with (
        _booted(versions[branch], demo_repo / "data", log) as (proc, url),
        httpx.Client(base_url=url, timeout=10) as client,
    ):
        _wait_ready(client, proc, log)
        assert client.get("/health").json() == {"status": "ok"}

        def search(query: str, k: int = 10) -> list[dict[str, Any]]:
            answer = client.get("/search", params={"q": query, "k": k})
            assert answer.status_code == 200
            results: list[dict[str, Any]] = answer.json()["results"]
            return results

        exact = next(r for r in rows if r["slice"] == "exact_token")
        results = search(exact["query"], 3)
        assert [r["id"] for r in results] == list(exact["relevant"])
        assert all(isinstance(r["score"], float) for r in results)

        nonsense = [r for r in rows if r["slice"] == "nonsense" and "slang" not in r["derivation"]]
        assert all(search(r["query"]) == [] for r in nonsense)
        slang = [r for r in rows if r["slice"] == "nonsense" and "slang" in r["derivation"]]
        assert all(len(search(r["query"])) <= 10 for r in slang)

        freshness = [r for r in rows if r["slice"] == "freshness"]
        in_order = [_outranks([h["id"] for h in search(r["query"])], r) for r in freshness]
        if branch == CANDIDATE:
            assert all(in_order)  # the fresh fact above its stale twin, every time
        else:
            assert not all(in_order)  # main leaves it to a tie-break

        assert client.get("/search", params={"q": "x", "k": "0"}).status_code == 400
        assert client.get("/nowhere").status_code == 404

        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=10) == 0, log.read_text()
    assert not _group_alive(proc.pid)
    assert "svc: stopped" in log.read_text()


def test_a_broken_corpus_stops_the_service_with_the_line_to_fix(
    versions: dict[str, Path], tmp_path: Path
) -> None:
    (tmp_path / "corpus.jsonl").write_text('{"id": "a", "text": "fine"}\n{"title": "no id"}\n')
    log = tmp_path / "svc.log"
    with _booted(versions["main"], tmp_path, log) as (proc, _):
        assert proc.wait(timeout=BOOT_DEADLINE_S) == 1
    assert f"{tmp_path / 'corpus.jsonl'}:2: KeyError" in log.read_text()
    assert not _group_alive(proc.pid)


def test_the_thesaurus_maps_each_word_to_one_concept() -> None:
    words = [word for forms in svc.THESAURUS.values() for word in forms]
    assert len(words) == len(set(words)) == len(svc.CONCEPT_OF)
    assert all(svc.tokens(word) == [word] and word not in svc.STOPWORDS for word in words)
    runbook_concepts = [*vocabulary.ACTIONS, *vocabulary.OBJECTS, *vocabulary.CONDITIONS]
    assert sorted(runbook_concepts) == sorted(svc.THESAURUS)


def test_health_is_503_until_the_index_is_built(tmp_path: Path) -> None:
    import threading

    (tmp_path / "corpus.jsonl").write_text('{"id": "a", "title": "t", "text": "x"}\n')
    index = svc.Index()
    server = svc.Server(("127.0.0.1", 0), index)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.server_port}") as client:
            assert client.get("/health").status_code == 503
            assert client.get("/search", params={"q": "x"}).status_code == 503
            index.load(tmp_path / "corpus.jsonl")
            assert client.get("/health").json() == {"status": "ok"}
            assert client.get("/search", params={"q": "x"}).json()["results"][0]["id"] == "a"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()

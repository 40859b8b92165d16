"""The recipes of the manual (docs/recipes.md, three of them in README.md too), each run for
real: a public-style service, its harness.toml as the pages print it, and a compare that must
call the `worse` branch a regression.

Each recipe lives in tests/fixtures/recipes/NAME/ (see its README); a recipe whose harness.toml
uses a key this harness does not know fails here, as it would for a user.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from doc_pages import marked
from e2e_support import Sandbox, git, leased_port

RECIPES = Path(__file__).resolve().parents[1] / "fixtures" / "recipes"
TOPICS = 80
# Looked up, not imported (an import would load FastAPI into every worker's collection).
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not all(importlib.util.find_spec(m) for m in ("fastapi", "uvicorn")),
        reason="the recipe services are FastAPI apps under uvicorn (test extra)",
    ),
]


def gold_lines() -> list[str]:
    header = {"format": "harness-gold", "version": 1, "description": "recipes"}
    rows = [
        {"id": f"q{n:02d}", "query": f"what's topic q{n:02d} about?", "relevant": {f"d{n:02d}": 1}}
        for n in range(1, TOPICS + 1)
    ]
    return [json.dumps(row, sort_keys=True) for row in (header, *rows)]


def corpus_lines() -> list[str]:
    docs = [
        {"id": f"d{n:02d}", "title": f"Topic q{n:02d}", "text": f"notes on topic q{n:02d} in depth"}
        for n in range(1, TOPICS + 1)
    ]
    docs += [
        {"id": f"f{n:02d}", "title": "Filler", "text": f"unrelated filler page {n}"}
        for n in range(1, 21)
    ]
    return [json.dumps(doc, sort_keys=True) for doc in docs]


def recipe_sandbox(root: Path, name: str) -> Sandbox:
    """A repository holding recipe `name` on main, and branch `worse` (see the fixtures' README)."""
    sandbox = Sandbox(root)
    for folder in (sandbox.repo, sandbox.cache, sandbox.home, sandbox.tmp):
        folder.mkdir(parents=True)
    repo = sandbox.repo
    for item in (RECIPES / name).iterdir():
        if item.is_file():
            shutil.copy(item, repo / item.name)
        elif item.name != "__pycache__":
            shutil.copytree(item, repo / item.name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(RECIPES / "rank.py", repo / "rank.py")
    (repo / "data").mkdir()
    (repo / "data" / "corpus.jsonl").write_text("\n".join(corpus_lines()) + "\n")
    (repo / "gold").mkdir()
    (repo / "gold" / "gold.jsonl").write_text("\n".join(gold_lines()) + "\n")
    (repo / ".gitignore").write_text("results/\n__pycache__/\n")
    git(repo, "init", "-q", "-b", "main", home=sandbox.home)
    git(repo, "add", "-A", home=sandbox.home)
    git(repo, "commit", "-q", "-m", "the service", home=sandbox.home)
    git(repo, "checkout", "-q", "-b", "worse", home=sandbox.home)
    (repo / "worse").write_text("drop the best answer of topics 1-20\n")
    git(repo, "add", "-A", home=sandbox.home)
    git(repo, "commit", "-q", "-m", "worse", home=sandbox.home)
    git(repo, "checkout", "-q", "main", home=sandbox.home)
    return sandbox


def readme_recipe(name: str) -> str:
    """The ```toml block that follows `<!-- recipe: NAME -->` in README.md and docs/ (a recipe
    may be quoted on several pages: every quotation must be the same)."""
    found = marked("recipe", name)
    assert found, f"no page has a toml block after <!-- recipe: {name} -->"
    assert found == [found[0]] * len(found), f"the pages quote recipe {name} differently"
    return found[0]


@pytest.mark.parametrize(
    "name",
    [
        "text", "html", "form_fts5", "build_index", "editable", "http_load", "deployments",
        "fixed_port",
    ],
)
def test_readme_quotes_the_recipe_verbatim(name: str) -> None:
    assert readme_recipe(name) == (RECIPES / name / "harness.toml").read_text(encoding="utf-8")


def _compare(
    sandbox: Sandbox, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    # Two rounds and one look: these tests are about quality (the `worse` branch regressed);
    # without the budget, latency rounds would go on to compare.latency_budget's 15.
    return sandbox.harness("compare", "--repeats", "2", "--latency-budget", "2", *extra, env=env)


def _regressed(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    assert "regressed" in done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("name", ["text", "html", "form_fts5", "http_load", "fixed_port"])
def test_recipe_calls_the_worse_branch_a_regression(tmp_path: Path, name: str) -> None:
    if name == "html":
        pytest.importorskip("bs4", reason="query.select needs the html extra")
    sandbox = recipe_sandbox(tmp_path / "box", name)
    done = _compare(sandbox, "--baseline", "main", "--candidate", "worse")
    _regressed(done)
    assert "unknown id" not in done.stdout.lower(), done.stdout
    assert sandbox.leftovers() == [] and sandbox.worktrees() == []


@pytest.mark.parametrize("name", ["build_index", "editable"])
def test_a_cached_build_boots_again_from_a_fresh_worktree(tmp_path: Path, name: str) -> None:
    """The cached build is reused by the second --fresh compare, in new worktrees, and the
    service boots as after a real build: build_index, because what the build wrote (index/)
    comes back with it; editable, a `pip install -e .` of a src-layout package into the ref's
    cached venv, which points at the first build's checkout, because the package is imported
    from the new checkout."""
    sandbox = recipe_sandbox(tmp_path / "box", name)
    first = _compare(sandbox, "--baseline", "main", "--candidate", "worse", "--fresh")
    _regressed(first)
    again = _compare(sandbox, "--baseline", "main", "--candidate", "worse", "--fresh")
    _regressed(again)
    records = [json.loads(p.read_text()) for p in (sandbox.results / "runs").glob("*.json")]
    assert sorted(r["build_cached"] for r in records) == [False, False, True, True]
    assert sandbox.leftovers() == [] and sandbox.worktrees() == []


def test_form_fts5_without_the_rewrite_fails_and_says_why(tmp_path: Path) -> None:
    """Raw questions make FTS5's MATCH fail: every query errors, and the verdict is invalid."""
    sandbox = recipe_sandbox(tmp_path / "box", "form_fts5")
    config = sandbox.root / "raw.toml"
    text = (sandbox.repo / "harness.toml").read_text().replace('rewrite = "fts5_or"', "")
    config.write_text(text.replace('"gold/', f'"{sandbox.repo}/gold/').replace(
        '"data/corpus', f'"{sandbox.repo}/data/corpus'))
    done = sandbox.harness(
        "compare", "--repeats", "1", "--latency-budget", "2", "--baseline", "main",
        "--candidate", "worse", config=config,
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    assert "HTTP 500" in done.stdout + done.stderr


def _deploy(
    sandbox: Sandbox, tls: tuple[Path, Path] | None = None
) -> Iterator[tuple[str, str]]:
    """Two running deployments of the recipe service, started here, not by harness: the
    baseline from main, the candidate from the `worse` branch's tree; over TLS with `tls`
    (certificate, key). Each listens on a leased port (e2e_support.leased_port) until it is gone."""
    procs: list[subprocess.Popen[bytes]] = []
    urls = []
    scheme = "https" if tls else "http"
    extra = ["--ssl-certfile", str(tls[0]), "--ssl-keyfile", str(tls[1])] if tls else []
    with ExitStack() as leases:
        try:
            for branch in ("main", "worse"):
                tree = sandbox.root / f"deploy-{branch}"
                shutil.copytree(sandbox.repo, tree, ignore=shutil.ignore_patterns(".git"))
                if branch == "worse":
                    (tree / "worse").write_text("as on the worse branch\n")
                port = leases.enter_context(leased_port())
                env = {"PATH": "/usr/bin:/bin", "CORPUS": str(tree / "data" / "corpus.jsonl")}
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "uvicorn", "app:app", "--port", str(port), *extra],
                        cwd=tree,
                        env=env,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                )
                urls.append(f"{scheme}://127.0.0.1:{port}")
            for url in urls:
                _wait(url + "/health")
            yield urls[0], urls[1]
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


@pytest.fixture
def deployments(tmp_path: Path) -> Iterator[tuple[Sandbox, str, str]]:
    sandbox = recipe_sandbox(tmp_path / "box", "deployments")
    for baseline, candidate in _deploy(sandbox):
        yield sandbox, baseline, candidate


def _private_ca(folder: Path) -> tuple[Path, Path, Path]:
    """(CA bundle, server certificate, key): a throwaway CA and a certificate for 127.0.0.1."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "harness test CA")])
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    bundle, cert, key_file = folder / "ca.pem", folder / "cert.pem", folder / "key.pem"
    bundle.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return bundle, cert, key_file


def _wait(url: str) -> None:
    import httpx

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            # the test's own service: its certificate is checked by harness, not here
            if httpx.get(url, timeout=1, verify=False).is_success:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} never answered")


def test_two_running_deployments_compared_by_url(
    deployments: tuple[Sandbox, str, str],
) -> None:
    sandbox, baseline, candidate = deployments
    done = _compare(sandbox, "--baseline-url", baseline, "--candidate-url", candidate)
    _regressed(done)
    assert "nothing was checked out, built, booted or isolated" in done.stdout
    assert sandbox.worktrees() == []  # nothing checked out
    # The same deployment on both sides: an A/A, no difference.
    same = _compare(sandbox, "--baseline-url", baseline, "--candidate-url", baseline)
    assert same.returncode == 0, same.stdout + same.stderr


def test_https_deployments_are_compared_with_their_certificate_checked(tmp_path: Path) -> None:
    pytest.importorskip("cryptography", reason="the test's private CA needs cryptography")
    sandbox = recipe_sandbox(tmp_path / "box", "deployments")
    bundle, cert, key = _private_ca(tmp_path)
    for baseline, candidate in _deploy(sandbox, (cert, key)):
        assert baseline.startswith("https://")
        urls = ("--baseline-url", baseline, "--candidate-url", candidate)
        trusted = _compare(sandbox, *urls, env={"SSL_CERT_FILE": str(bundle)})
        _regressed(trusted)  # the same verdict as over http
        # Not trusted (the system's store has no such CA): a ready failure that names it.
        untrusted = sandbox.harness("compare", "--repeats", "1", *urls)
        assert untrusted.returncode == 3, untrusted.stdout + untrusted.stderr
        said = untrusted.stdout + untrusted.stderr
        assert "TLS certificate did not verify" in said and "SSL_CERT_FILE" in said, said[:3000]
        assert "Traceback" not in said


def test_a_deployment_that_is_not_there_is_invalid(
    deployments: tuple[Sandbox, str, str],
) -> None:
    sandbox, baseline, _ = deployments
    # Waiting for it is right (a deployment may be restarting), but not for the default 60 s.
    config = sandbox.root / "impatient.toml"
    text = (sandbox.repo / "harness.toml").read_text()
    config.write_text(
        text.replace("[service]\n", "[service]\nready_timeout = 3\n", 1)
        .replace('"gold/', f'"{sandbox.repo}/gold/')
        .replace('"data/corpus', f'"{sandbox.repo}/data/corpus')
    )
    with leased_port() as port:  # held, never listening: nothing answers there meanwhile
        gone = f"http://127.0.0.1:{port}"
        done = sandbox.harness(
            "compare", "--repeats", "1", "--baseline-url", baseline, "--candidate-url", gone,
            config=config, env={},
        )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    assert gone in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--baseline-url", "http://127.0.0.1:1"], "go together"),
        (["--baseline-url", "ftp://x", "--candidate-url", "http://127.0.0.1:1"], "not an http"),
        (
            ["--baseline", "main", "--baseline-url", "http://a:1", "--candidate-url", "http://b:1"],
            "drop --demo, --baseline and --candidate",
        ),
    ],
)
def test_url_options_are_checked_before_anything_runs(
    tmp_path: Path, argv: list[str], message: str
) -> None:
    sandbox = recipe_sandbox(tmp_path / "box", "deployments")
    done = sandbox.harness("compare", *argv)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr

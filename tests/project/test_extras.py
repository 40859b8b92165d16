"""The light install: the core runs `metrics` and reads TREC runs without any extra, and each
optional module, when it is missing, is one line naming the extra to install (exit 2, no
traceback). Absence is simulated by blocking the import (sys.modules[name] = None in process,
a module that raises ImportError first on PYTHONPATH for a subprocess)."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest
from cli_support import run_cli
from records_support import record

from harness.config.values import QueryConfig
from harness.driver.remote import require_ray
from harness.errors import HarnessError
from harness.process.extras import EXTRAS, require
from harness.replay.client import Requests
from harness.results.export import to_table
from harness.results.records import save_run
from harness.score.runfile import load_run
from harness.values.types import QueryResult

ROOT = Path(__file__).resolve().parents[2]
GOLD, RUN = ROOT / "gold" / "example.jsonl", ROOT / "gold" / "example-run.jsonl"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def blocker(tmp_path: Path, *modules: str) -> dict[str, str]:
    """An environment whose Python cannot import `modules` (as if they were not installed)."""
    folder = tmp_path / "blocked"
    folder.mkdir(exist_ok=True)
    for name in modules:
        (folder / f"{name}.py").write_text(f"raise ImportError('{name} is blocked')\n")
    return {"PYTHONPATH": str(folder)}


def test_the_core_dependencies_hold_no_extra() -> None:
    core = {
        dep.split(">")[0].split("=")[0].split("[")[0].strip().lower()
        for dep in PYPROJECT["dependencies"]
    }
    assert {"gitpython", "httpx", "scipy", "pandas", "tabulate", "psutil"} <= core
    extras = PYPROJECT["optional-dependencies"]
    for module, extra in EXTRAS.items():
        assert extra.distribution not in core, module  # an extra stays out of `pip install .`
        assert any(dep.startswith(extra.distribution) for dep in extras[extra.extra]), module
    assert extras["all"] == ["retrieval-harness[arrow,html,ray]"]


@pytest.mark.parametrize(
    ("module", "what", "extra"),
    [
        ("pyarrow", "--format parquet", "arrow"),
        ("bs4", "query.select", "html"),
        ("ray", "--ray", "ray"),
    ],
)
def test_a_missing_module_is_one_line_naming_its_extra(
    monkeypatch: pytest.MonkeyPatch, module: str, what: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import now raises ImportError
    with pytest.raises(HarnessError) as info:
        require(module, what)
    assert str(info.value) == (
        f"{what} needs {EXTRAS[module].distribution}, which is not installed: install "
        f"retrieval-harness[{extra}] (pip install 'retrieval-harness[{extra}]')"
    )
    assert info.value.exit_status == 2 and info.value.details == ()


def test_each_optional_feature_asks_for_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd  # here, not at collection: every xdist worker collects every file

    for module in EXTRAS:
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(HarnessError, match=r"--format parquet needs pyarrow.*\[arrow\]"):
        to_table(pd.DataFrame({"a": [1]}), "parquet")
    # query.select: said when the replay is set up, before any query is sent
    with pytest.raises(HarnessError, match=r"query.select needs beautifulsoup4.*\[html\]"):
        Requests(QueryConfig(path="/search", ids="[*].href", select="a.hit"))
    Requests(QueryConfig(path="/search", ids="results"))  # JSON answers need nothing more
    with pytest.raises(HarnessError, match=r"--ray needs ray.*\[ray\]"):
        require_ray()


def _trec(tmp_path: Path) -> Path:
    lines = [
        f"{qid} Q0 {doc} {rank} {100 - rank} light"
        for qid, docs in load_run(RUN).rankings.items()
        for rank, doc in enumerate(docs, 1)
    ]
    path = tmp_path / "run.trec"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_metrics_reads_a_trec_run_without_pyarrow_as_with_it(tmp_path: Path) -> None:
    run = _trec(tmp_path)
    args = ("metrics", "--gold", GOLD, "--run", run, "--format", "json", "--per-query")
    fast = run_cli("harness", *args, cwd=tmp_path)
    light = run_cli("harness", *args, cwd=tmp_path, env=blocker(tmp_path, "pyarrow"))
    assert light.returncode == 0, light.stderr
    assert light.stdout == fast.stdout and fast.returncode == 0


def test_the_cli_says_which_extra_and_exits_2(tmp_path: Path) -> None:
    path = save_run(tmp_path / "results", record(QueryResult("q1", ("d1",), status=200)))
    out = tmp_path / "q.parquet"
    env = blocker(tmp_path, "pyarrow")
    args = ("export", path, "--format", "parquet", "--output", out)
    done = run_cli("harness", *args, cwd=tmp_path, env=env)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "harness: error: --format parquet needs pyarrow, which is not installed: install "
        "retrieval-harness[arrow] (pip install 'retrieval-harness[arrow]')"
    ]
    assert not out.exists()

"""Release-ready packaging: one version, a changelog that names it, and (slow) an sdist and a
wheel that `python -m build` makes and `twine check` passes."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

import harness

ROOT = Path(__file__).resolve().parents[2]


def test_the_version_has_one_source() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in pyproject["project"]  # never written twice
    assert pyproject["project"]["dynamic"] == ["version"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "harness.__version__"}
    assert importlib.metadata.version("retrieval-harness") == harness.__version__
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"## {harness.__version__} - " in changelog


@pytest.mark.slow
def test_build_makes_an_sdist_and_a_wheel_that_twine_accepts(tmp_path: Path) -> None:
    for tool in ("build", "twine"):
        if importlib.util.find_spec(tool) is None:
            pytest.skip(f"{tool} is not installed (pip install -e '.[test]')")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(tmp_path), str(ROOT)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert "!!" not in built.stdout + built.stderr  # no setuptools deprecation banner
    version = harness.__version__
    wheel = tmp_path / f"retrieval_harness-{version}-py3-none-any.whl"
    sdist = tmp_path / f"retrieval_harness-{version}.tar.gz"
    assert wheel.is_file() and sdist.is_file()
    names = zipfile.ZipFile(wheel).namelist()
    assert "harness/py.typed" in names and "harness/demo/harness.toml" in names
    assert any(n.endswith("licenses/LICENSE") for n in names)
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr

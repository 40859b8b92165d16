"""The Python in gold/README.md and examples/README.md runs as written (from the repository
root, on the files it names, here copied into a scratch directory)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def python_blocks(readme: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", readme.read_text(encoding="utf-8"), flags=re.S)


def run(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip


def test_the_gold_readme_api_snippet_runs(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "gold", tmp_path / "gold")
    blocks = [b for b in python_blocks(ROOT / "gold" / "README.md") if "convert(" in b]
    assert blocks, "gold/README.md shows the convert API"
    for block in blocks:
        done = run(block, tmp_path)
        assert done.returncode == 0, done.stderr
    assert (tmp_path / "converted-beir" / "queries.jsonl").is_file()
    assert (tmp_path / "built.jsonl").is_file()


def test_the_examples_readme_snippet_builds_the_demo_repository(tmp_path: Path) -> None:
    (block,) = python_blocks(ROOT / "examples" / "README.md")
    done = run(block.replace("/tmp/harness-demo", str(tmp_path / "demo")), tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "demo" / "harness.toml").is_file()

"""The manual's GitHub Actions workflows checked as GitHub would read them.

    check_against_github_schema(path)   # check-jsonschema's bundled workflow schema, offline
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def check_against_github_schema(workflow: Path) -> None:
    """Validate `workflow` against GitHub's workflow schema (check-jsonschema's bundled copy,
    offline); skip when check-jsonschema (the test extra) is not installed."""
    tool = shutil.which("check-jsonschema") or str(Path(sys.executable).parent / "check-jsonschema")
    if not Path(tool).exists():
        pytest.skip("check-jsonschema (test extra) is not installed")
    done = subprocess.run(
        [tool, "--builtin-schema", "vendor.github-workflows", str(workflow)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr

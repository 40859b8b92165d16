"""The smallest valid harness.toml, shared by the config tests (tests/config/test_config.py,
tests/config/test_config_overrides.py, tests/gate/test_floors.py,
tests/verdict/test_noninferiority.py): each test edits it or adds its own tables to it."""

from __future__ import annotations

from pathlib import Path

MINIMAL = """\
[service]
start = "python3 svc.py --port {port}"
ready = "/health"

[query]
path = "/search"
params = { q = "{query}", k = "{limit}" }
ids = "results[].id"

[gold]
path = "gold/gold.jsonl"
"""


def config_with(folder: Path, text: str) -> Path:
    """folder/harness.toml holding MINIMAL and then `text`, in a folder the loader takes for a
    repository (it only walks up to .git)."""
    (folder / ".git").mkdir(exist_ok=True)
    path = folder / "harness.toml"
    path.write_text(MINIMAL + text)
    return path

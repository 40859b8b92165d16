"""harness.checkout.editable: a cached venv's editable installs, pointed at the booting checkout.
(tests/project/test_recipes.py boots a real `pip install -e .` of a src-layout package twice.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.checkout.editable import editable_paths


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _venv(cache: Path) -> Path:
    site = cache / "builds" / "k" / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    return site


def test_a_pth_line_and_a_finder_mapping_are_moved_into_the_new_checkout(cache: Path) -> None:
    site = _venv(cache)
    old = cache / "worktrees" / "abc123-old"
    new = cache / "worktrees" / "abc123-new"
    for folder in (new / "src", new / "lib" / "flat"):
        folder.mkdir(parents=True)
    (site / "__editable__.svc-0.1.pth").write_text(f"{old}/src\n")
    (site / "__editable___flat_0_1_finder.py").write_text(
        f"MAPPING: dict[str, str] = {{'flat': '{old}/lib/flat'}}\nNAMESPACES = {{}}\n"
    )
    (site / "distutils-precedence.pth").write_text("import os; print('not a path')\n")
    assert editable_paths(site.parents[2], new) == (new / "src", new / "lib")


def test_sources_outside_the_caches_checkouts_are_left_alone(cache: Path, tmp_path: Path) -> None:
    site = _venv(cache)
    elsewhere = tmp_path / "elsewhere" / "src"
    elsewhere.mkdir(parents=True)
    (site / "a.pth").write_text(f"{elsewhere}\n# a comment\nrelative/path\n")
    (site / "b.pth").write_text(f"{cache / 'worktrees' / 'x-1' / 'gone'}\n")  # not in new
    new = cache / "worktrees" / "x-2"
    new.mkdir(parents=True)
    assert editable_paths(site.parents[2], new) == ()

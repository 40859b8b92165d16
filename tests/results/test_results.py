"""harness.results: new_directory, the one place a results directory is claimed
(save_comparison and save_sweep both use it), and load_record, what `harness threshold` reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import ResultsError
from harness.results.files import new_directory
from harness.results.records import load_record


def test_a_taken_name_gets_the_next_free_suffix(tmp_path: Path) -> None:
    parent = tmp_path / "results"  # created on the way
    made = [new_directory(parent, "stamp_a_b") for _ in range(3)]
    assert [p.name for p in made] == ["stamp_a_b", "stamp_a_b-2", "stamp_a_b-3"]
    assert all(p.is_dir() and p.parent == parent for p in made)


def test_an_existing_directory_is_never_written_into(tmp_path: Path) -> None:
    (tmp_path / "stamp").mkdir()
    (tmp_path / "stamp" / "report.md").write_text("kept\n")
    (tmp_path / "stamp-2").mkdir()
    made = new_directory(tmp_path, "stamp")
    assert made == tmp_path / "stamp-3"
    assert list(made.iterdir()) == []
    assert (tmp_path / "stamp" / "report.md").read_text() == "kept\n"


def test_load_record_reads_a_record_or_a_comparison_side(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match="neither a run record nor a comparison directory"):
        load_record(tmp_path, "candidate")


def test_results_files_get_an_ordinary_files_mode(tmp_path: Path) -> None:
    """Not mkstemp's 0600: a report is written to be shared (0666 less the umask)."""
    import os

    from harness.results.files import write_text_new

    mask = os.umask(0o022)
    try:
        path = write_text_new(tmp_path / "report.html", "<html></html>")
    finally:
        os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o644

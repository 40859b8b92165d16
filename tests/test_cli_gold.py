"""`harness gold ...` through the installed CLI: exit statuses and that compare fails fast."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import run_cli

ROOT = Path(__file__).resolve().parent.parent
GOLD, CORPUS = ROOT / "gold" / "example.jsonl", ROOT / "gold" / "example-corpus.jsonl"


def test_check_passes_the_bundled_example(tmp_path: Path) -> None:
    done = run_cli(
        "harness", "gold", "check", GOLD, "--corpus", CORPUS, "--format", "json", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ok"] is True


def test_check_exits_2_on_a_dangling_id_naming_query_and_line(tmp_path: Path) -> None:
    lines = GOLD.read_text().splitlines()
    row = json.loads(lines[1])
    row["relevant"] = {"no-such-doc": 1}
    lines[1] = json.dumps(row)
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(lines) + "\n")
    done = run_cli("harness", "gold", "check", broken, "--corpus", CORPUS, cwd=tmp_path)
    assert done.returncode == 2
    assert "no-such-doc" in done.stdout + done.stderr
    assert row["id"] in done.stdout + done.stderr


def test_build_then_check_then_convert_round_trip(tmp_path: Path) -> None:
    out = tmp_path / "built.jsonl"
    done = run_cli(
        "harness",
        "gold",
        "build",
        "--corpus",
        CORPUS,
        "--out",
        out,
        "--exact-rare",
        "3",
        "--nonsense",
        "2",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert (
        run_cli("harness", "gold", "check", out, "--corpus", CORPUS, cwd=tmp_path).returncode == 0
    )
    again = run_cli(
        "harness",
        "gold",
        "build",
        "--corpus",
        CORPUS,
        "--out",
        out,
        "--exact-rare",
        "3",
        cwd=tmp_path,
    )
    assert again.returncode == 2 and "exists" in again.stderr  # never overwritten unasked
    trec = tmp_path / "trec"
    done = run_cli("harness", "gold", "convert", out, "--to", "trec", "--out", trec, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "warning" in done.stderr  # nonsense rows cannot live in qrels: it says so


def test_stats_json(tmp_path: Path) -> None:
    done = run_cli("harness", "gold", "stats", GOLD, "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["queries"] == 20

"""A wrong adapter stops the run after the first answers of the first boot (issue 27, item 4):
the ids path matching nothing, or ids from another field, is exit 3 before the second service
boots (boots counted by the fixture service itself), with a sample of the answer and the config
line to fix; a right adapter is not disturbed (the probe is the warm-up: no extra request)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_support import Sandbox, build_sandbox, query_ids


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    box = build_sandbox(
        tmp_path_factory.mktemp("adapter") / "s", {"bury3": {"bury": query_ids(1, 3)}}
    )
    yield box
    assert box.leftovers() == [] and box.worktrees() == []


def _config(sandbox: Sandbox, name: str, old: str, new: str, warmup: int | None = None) -> Path:
    config = sandbox.write_config(name)
    text = config.read_text().replace(old, new)
    if warmup is not None:
        text = text.replace("[query]\n", f"[query]\nwarmup = {warmup}\n")
    config.write_text(text)
    return config


def _line_of(config: Path, start: str) -> int:
    return next(
        i for i, line in enumerate(config.read_text().splitlines(), 1) if line.startswith(start)
    )


def test_an_ids_path_matching_nothing_stops_before_the_second_boot(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    config = _config(sandbox, "no-match.toml", '"results[].id"', '"hits[].id"')
    before = sandbox.boots()
    done = sandbox.harness(
        "compare", "--baseline", "main", "--candidate", "bury3", results=tmp_path, config=config
    )
    assert done.returncode == 3, done.stderr
    assert sandbox.boots() - before == 1  # the baseline's first boot; the candidate never booted
    err = done.stderr
    assert 'query.ids = "hits[].id" read no ids in any of the first 3 answers' in err
    assert "stopped after the first boot" in err and "Traceback" not in err
    assert '{"results": [{"id": "d01"' in err  # the answer's sample, as the service sent it
    assert f'fix {config}:{_line_of(config, "ids = ")}: query.ids = "hits[].id"' in err


def test_ids_from_another_field_stop_before_the_second_boot(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    config = _config(sandbox, "wrong-field.toml", '"results[].id"', '"results[].to_string(score)"')
    before = sandbox.boots()
    done = sandbox.harness(
        "compare", "--baseline", "main", "--candidate", "bury3", results=tmp_path, config=config
    )
    assert done.returncode == 3, done.stderr
    assert sandbox.boots() - before == 1
    assert "is a document id of the gold set's judgements" in done.stderr
    assert 'q01 answered ["' in done.stderr and "query.ids" in done.stderr


def test_without_warm_up_the_first_recorded_answers_are_checked(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    # query.warmup = 0: no probe; round 1's first answers are checked, before round 2 boots.
    config = _config(sandbox, "no-warmup.toml", '"results[].id"', '"hits[].id"', warmup=0)
    before = sandbox.boots()
    done = sandbox.harness(
        "compare", "--baseline", "main", "--candidate", "bury3", results=tmp_path, config=config
    )
    assert done.returncode == 3, done.stderr
    assert sandbox.boots() - before == 2  # round 1's two boots; of the two rounds, one ran
    assert "read no ids in any of the first" in done.stderr


@pytest.mark.parametrize("warmup", [None, 0])
def test_asked_block_by_block_a_wrong_adapter_stops_as_early(
    sandbox: Sandbox, tmp_path: Path, warmup: int | None
) -> None:
    # --sequential (the default outside these tests) boots the R rounds' services before it
    # asks: the probe follows each boot of round 1 all the same, and without warm-up the first
    # answers are checked before the next block. Before, every block of every round was asked
    # and the run ended invalid, or with the adapter's error after a latency round.
    config = _config(sandbox, f"seq-{warmup}.toml", '"results[].id"', '"hits[].id"', warmup)
    before = sandbox.boots()
    done = sandbox.harness(
        "compare", "--baseline", "main", "--candidate", "bury3", "--sequential",
        "--repeats", "3", results=tmp_path, config=config,
    )
    assert done.returncode == 3, done.stderr
    assert "read no ids in any of the first" in done.stderr and "Traceback" not in done.stderr
    # With the probe: the baseline's first boot alone. Without: the rounds' six boots, then
    # the first answers of the first block.
    assert sandbox.boots() - before == (1 if warmup is None else 6)
    assert done.stdout == ""  # no report of an invalid run that was never asked


def test_with_format_json_a_stopped_run_still_writes_its_invalid_verdict(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    # A CI job that parses --format json gets a document saying "invalid" and why, not nothing.
    import json

    config = _config(sandbox, "json-no-match.toml", '"results[].id"', '"hits[].id"')
    done = sandbox.harness(
        "compare", "--baseline", "main", "--candidate", "bury3", "--format", "json",
        results=tmp_path, config=config,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    document = json.loads(done.stdout)
    assert document["valid"] is False and document["complete"] is False
    assert document["verdict"] == {"quality": "invalid", "latency": "invalid"}
    assert 'query.ids = "hits[].id" read no ids' in document["invalid_reasons"][0]
    assert "read no ids" in done.stderr  # the error is still said where it always was


def test_a_run_of_one_ref_stops_after_its_first_boot(sandbox: Sandbox, tmp_path: Path) -> None:
    config = _config(sandbox, "run-no-match.toml", '"results[].id"', '"hits[].id"')
    before = sandbox.boots()
    done = sandbox.harness(
        "run", "--ref", "main", "--repeats", "3", results=tmp_path, config=config
    )
    assert done.returncode == 3, done.stderr
    assert sandbox.boots() - before == 1
    assert "read no ids" in done.stderr


@pytest.mark.slow
def test_a_right_adapter_runs_to_the_end(sandbox: Sandbox, tmp_path: Path) -> None:
    config = sandbox.write_config("right.toml")
    before = sandbox.boots()
    done = sandbox.harness(
        "compare", "--baseline", "main", "--candidate", "bury3", results=tmp_path, config=config
    )
    assert done.returncode == 0, done.stderr
    assert sandbox.boots() - before >= 4  # two rounds (latency_budget 2), two sides each


def test_under_redact_the_answer_is_not_quoted(sandbox: Sandbox, tmp_path: Path) -> None:
    config = _config(sandbox, "redact-no-match.toml", '"results[].id"', '"hits[].id"')
    done = sandbox.harness(
        "compare",
        "--baseline",
        "main",
        "--candidate",
        "bury3",
        "--redact",
        results=tmp_path,
        config=config,
    )
    assert done.returncode == 3, done.stderr
    assert "read no ids" in done.stderr and "not quoted under --redact" in done.stderr
    assert '"results"' not in done.stderr


def test_a_gold_set_judging_nothing_yet_has_no_id_space_to_check(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    # A new pool: the queries, answerable, nothing judged yet (docs/gold.md: build it from
    # main's answers with `harness judge pairs --all`). No judged id and no corpus: nothing
    # to check the answers' ids against, so the run goes on.
    queries = sandbox.root / "queries-only.jsonl"  # beside the config, as gold sets may be
    rows = [{"format": "harness-gold", "version": 1, "judged": "pooled"}]
    rows += [{"id": q, "query": f"tell me about topic {q}", "relevant": {}, "answerable": True}
             for q in query_ids(1, 5)]  # fmt: skip
    queries.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = _config(sandbox, "queries-only.toml", str(sandbox.repo / "gold" / "gold.jsonl"),
                     str(queries))  # fmt: skip
    done = sandbox.harness("run", "--ref", "main", "--repeats", "1", results=tmp_path,
                           config=config)  # fmt: skip
    assert done.returncode == 0, done.stderr

"""The inner loop, `pytest -m "not slow"`, runs every property test on a quarter of its examples;
the whole `pytest` (CI, the README's command) runs all of them (tests/conftest.py)."""

from __future__ import annotations

import pytest
from conftest import PROFILE, examples
from hypothesis import settings


def test_the_inner_loop_runs_a_quarter_of_the_examples_and_the_whole_run_all(
    request: pytest.FixtureRequest,
) -> None:
    if PROFILE is not None:
        pytest.skip(f"HARNESS_HYPOTHESIS_PROFILE={PROFILE} chooses the examples")
    if "not slow" in (request.config.option.markexpr or ""):
        assert settings().max_examples == 25
        assert (examples(300), examples(60), examples(15)) == (75, 25, 15)
    else:
        assert settings().max_examples == 100
        assert (examples(300), examples(60), examples(15)) == (300, 60, 15)

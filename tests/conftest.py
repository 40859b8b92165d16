"""Shared fixtures. Real collections live in ../shared/data; tests that need them skip without."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# No per-example deadline anywhere: the machine is shared and loaded, and a property either holds
# or not whatever an example costs. "mutate" (scripts/mutate.py) runs fewer examples per test.
settings.register_profile("default", deadline=None)
settings.register_profile("mutate", deadline=None, max_examples=25)
settings.load_profile(os.environ.get("HARNESS_HYPOTHESIS_PROFILE", "default"))

# A test run started in the background by a shell without job control (`pytest &`, `nohup ... &`,
# some CI runners) inherits SIGINT ignored, and every process it starts would too: the Ctrl-C
# tests would then see a harness that cannot be interrupted. Ctrl-C is what they test, so the
# run puts it back (the processes it starts get the default disposition).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


def shared_collection(name: str) -> Path:
    """Path of a public collection in ../shared/data, or skip the test saying why."""
    path = SHARED_DATA / name
    if not (path / "corpus.jsonl").is_file():
        pytest.skip(
            f"public collection {name!r} not found at {path} (a fresh clone has no ../shared)"
        )
    return path


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """One headless Chromium per test process (tests/browser_support.py), launched when a test
    first asks for it; skips, saying why, without Chromium or Playwright."""
    from browser_support import launched

    with launched() as browser:
        yield browser

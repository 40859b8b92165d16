"""Shared fixtures. Real collections live in ../shared/data; tests that need them skip without."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import durations_support
import pytest
from hypothesis import settings

# No per-example deadline anywhere: the machine is shared and loaded, and a property either holds
# or not whatever an example costs. "mutate" (scripts/mutate.py) runs fewer examples per test;
# so does the inner loop, `pytest -m "not slow"` ("inner", chosen in pytest_configure below): a
# quarter of each property test's examples. The whole `pytest` (CI) runs every one of them.
settings.register_profile("default", deadline=None)
settings.register_profile("mutate", deadline=None, max_examples=25)
settings.register_profile("inner", deadline=None, max_examples=25)
PROFILE = os.environ.get("HARNESS_HYPOTHESIS_PROFILE")
settings.load_profile(PROFILE or "default")


def examples(n: int) -> int:
    """A property test's `max_examples`: `n` under the default profile (100 examples a test), in
    proportion under a smaller one (the inner loop's and mutate's 25: a quarter of `n`, never
    fewer than min(n, 25))."""
    base = settings().max_examples
    return n if base >= 100 else max(min(n, base), n * base // 100)

# A test run started in the background by a shell without job control (`pytest &`, `nohup ... &`,
# some CI runners) inherits SIGINT ignored, and every process it starts would too: the Ctrl-C
# tests would then see a harness that cannot be interrupted. Ctrl-C is what they test, so the
# run puts it back (the processes it starts get the default disposition).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# A machine may tell Python not to write bytecode (PYTHONDONTWRITEBYTECODE=1, as this one and
# CI images often do). Then every xdist worker rewrites the asserts of every test module again
# (collection 9.0 s a worker, 4.7 s with the cache), and every `harness` process a test starts
# compiles the editable install from source. The tests' processes may cache (in .gitignore).
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

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


@pytest.fixture(scope="session", autouse=True)
def _own_harness_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Each test process its own harness cache, never the user's ~/.cache/harness: a harness
    command recovers what any dead run left there and says so on stderr, so a run killed by one
    test (or a worker of an earlier session) put a "recovered" line into another test's output
    (two compare-runs error tests failed that way under xdist). A test that needs its own cache
    still sets HARNESS_CACHE_DIR itself."""
    patch = pytest.MonkeyPatch()
    patch.setenv("HARNESS_CACHE_DIR", str(tmp_path_factory.mktemp("harness-cache")))
    yield
    patch.undo()


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """One headless Chromium per test process (tests/browser_support.py), launched when a test
    first asks for it; skips, saying why, without Chromium or Playwright."""
    from browser_support import launched

    with launched() as browser:
        yield browser


def _inner(config: pytest.Config) -> bool:
    return "not slow" in (config.option.markexpr or "")


def pytest_configure(config: pytest.Config) -> None:
    """The inner loop (a -m expression that leaves the slow tests out) runs the "inner" profile,
    unless HARNESS_HYPOTHESIS_PROFILE names one. Test modules are imported after this, so their
    `examples(n)` read the profile chosen here (in each xdist worker alike). With
    HARNESS_TEST_DURATIONS=PATH the run writes each file's seconds there (durations_support)."""
    if PROFILE is None and _inner(config):
        settings.load_profile("inner")
    durations_support.register(config)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest files first (tests/durations.json), so that xdist starts the minute-long
    end-to-end files at once rather than last (durations_support)."""
    items[:] = durations_support.longest_first(
        items, durations_support.load(), inner=_inner(config)
    )


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadfile` (addopts) in two lanes: the files that mostly wait on some workers,
    the busy ones on the others (durations_support.make_scheduler)."""
    if config.getoption("dist") != "loadfile":
        return None
    return durations_support.make_scheduler(config, log, inner=_inner(config))


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: two workers per core, at most cores + 4. Most of a test's time here is a
    service booting, a build or a git command waiting, not the test's own CPU: with one worker
    per core half of the machine sat idle (inner loop on 2 cores: 114-121 s with 2 workers,
    94-98 s with 4, the same tests)."""
    cores = os.cpu_count() or 1
    return max(2, min(2 * cores, cores + 4))

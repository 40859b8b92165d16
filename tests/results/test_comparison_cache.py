"""The comparison cache: a re-compare of the same runs and settings reads the comparison back
and does no statistics; a changed record, setting, gold set, corpus or version recomputes."""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from compare_support import FAST, buried, candidate, make_gold, make_run, ranks

import harness.results.cache as cache
from harness.results.cache import CACHE_DIR, cached_compare
from harness.results.records import load_run, save_run
from harness.verdict.decide import compare


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Path, object, object, object]:
    gold = make_gold()
    base = load_run(save_run(tmp_path, make_run(gold, ranks())))
    cand = load_run(save_run(tmp_path, candidate(gold, ranks(buried(1, 2, 3, 4, 5, 6, 7)))))
    return tmp_path, gold, base, cand


def _cached(results, gold, base, cand, settings, **options):  # type: ignore[no-untyped-def]
    """cached_compare handed the verdict stage's compare, as the compare tool hands it."""
    compute = lambda: compare(gold, base, cand, settings)  # noqa: E731
    return cached_compare(results, gold, base, cand, settings, compute, **options)


def _count_compares(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    original = compare

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sys.modules[__name__], "compare", counting)
    return calls


def test_a_second_compare_of_the_same_runs_is_read_back_equal(stored, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    results, gold, base, cand = stored
    calls = _count_compares(monkeypatch)
    first, hit1 = _cached(results, gold, base, cand, FAST)
    second, hit2 = _cached(results, gold, base, cand, FAST)
    assert (hit1, hit2) == (False, True) and len(calls) == 1
    assert second == first
    assert len(list((results / CACHE_DIR).glob("*.json"))) == 1


@pytest.mark.parametrize(
    "change",
    [
        "alpha",
        "seed",
        "k",
        "gate_on",
        "resamples",
        "record",
        "repeats",
        "gold",
        "corpus",
        "version",
    ],
)
def test_any_changed_input_recomputes(stored, monkeypatch, change: str) -> None:  # type: ignore[no-untyped-def]
    results, gold, base, cand = stored
    calls = _count_compares(monkeypatch)
    settings, corpus = FAST, "c1"
    _cached(results, gold, base, cand, settings, corpus_hash=corpus)
    if change == "alpha":
        settings = replace(settings, alpha=0.01)
    elif change == "seed":
        settings = replace(settings, seed=1)
    elif change == "k":
        settings = replace(settings, k=(1, 10))
    elif change == "gate_on":
        settings = replace(settings, gate_on=("mrr@10",))
    elif change == "resamples":
        settings = replace(settings, resamples=3_000)
    elif change == "record":  # another measurement of the same ref: another record file
        cand = load_run(save_run(results, candidate(gold, ranks(buried(1, 2)))))
    elif change == "repeats":
        base = replace(base, repeats=base.repeats[:1])
    elif change == "gold":
        gold = replace(gold, hash="another")
    elif change == "corpus":
        corpus = "c2"
    elif change == "version":
        monkeypatch.setattr(cache, "__version__", "9.9.9")
    comparison, hit = _cached(results, gold, base, cand, settings, corpus_hash=corpus)
    assert not hit and len(calls) == 2
    assert comparison == compare(gold, base, cand, settings)


def test_a_damaged_entry_is_recomputed_not_trusted(stored) -> None:  # type: ignore[no-untyped-def]
    results, gold, base, cand = stored
    first, _ = _cached(results, gold, base, cand, FAST)
    (entry,) = (results / CACHE_DIR).glob("*.json")
    entry.write_text("{not json")
    again, hit = _cached(results, gold, base, cand, FAST)
    assert not hit and again == first


def test_unused_the_cache_is_neither_read_nor_written(stored) -> None:  # type: ignore[no-untyped-def]
    results, gold, base, cand = stored
    _, hit = _cached(results, gold, base, cand, FAST, use=False)
    assert not hit and not (results / CACHE_DIR).exists()
    _cached(results, gold, base, cand, FAST)
    _, hit = _cached(results, gold, base, cand, FAST, use=False)
    assert not hit


def test_an_entry_read_back_is_saved_as_it_is(stored, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import harness.results.comparisons as comparisons
    from harness.report.saved import save_comparison
    from harness.results.document import comparison_to_dict
    from harness.results.files import json_text

    results, gold, base, cand = stored
    first, _ = _cached(results, gold, base, cand, FAST)
    (entry,) = (results / CACHE_DIR).glob("*.json")
    expected = json_text(comparison_to_dict(first)).encode()
    assert entry.read_bytes() == expected  # the entry is the comparison.json, byte for byte
    again, hit = _cached(results, gold, base, cand, FAST)
    assert hit

    def no_encoding(*args: object, **kwargs: object) -> object:
        raise AssertionError("encoded again")

    monkeypatch.setattr(comparisons, "comparison_to_dict", no_encoding)
    saved = save_comparison(results / "saved", again, (base, cand))
    assert (saved / comparisons.COMPARISON_FILE).read_bytes() == expected
    monkeypatch.undo()
    # A comparison changed since it was read is encoded afresh, not written as the entry.
    changed = replace(again, warnings=(*again.warnings, "changed"))
    saved = save_comparison(results / "saved", changed, (base, cand))
    assert (saved / comparisons.COMPARISON_FILE).read_bytes() == json_text(
        comparison_to_dict(changed)).encode()


def test_an_unchanged_record_is_linked_into_the_saved_comparison(stored) -> None:  # type: ignore[no-untyped-def]
    from harness.report.saved import save_comparison
    from harness.results.sidecar import sidecar_of
    from harness.text import scrub

    results, gold, base, cand = stored
    comparison, _ = _cached(results, gold, base, cand, FAST)
    saved = save_comparison(results / "saved", comparison, (base, cand))
    source = sidecar_of(Path(base.record_path))
    assert (saved / "baseline.npz").stat().st_ino == source.stat().st_ino  # one file, two names
    assert load_run(saved / "baseline.json").repeats[0].results == base.repeats[0].results
    # Bytes a registered credential matches are scrubbed: then written, never linked.
    held = re.search(rb"[A-Za-z_]{6,}", source.read_bytes())
    assert held is not None
    scrub.register([held.group().decode()])
    try:
        again = save_comparison(results / "saved", comparison, (base, cand))
    finally:
        scrub.forget_all()
    copy = again / "baseline.npz"
    assert copy.stat().st_ino != source.stat().st_ino
    assert held.group() not in copy.read_bytes()

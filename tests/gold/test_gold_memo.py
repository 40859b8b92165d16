"""The gold cache (harness.gold.memo): a gold set read back from the cache is exactly what a fresh
parse gives, field by field; changed bytes are a miss; a file that now has an error raises its
own error, never a stale success; a damaged or foreign entry is ignored and written again;
writers racing on one key leave one sound entry."""

from __future__ import annotations

import json
import multiprocessing
from dataclasses import fields
from pathlib import Path

import pytest

from harness.errors import GoldError
from harness.gold import load_gold, memo
from harness.values.types import GoldSet

NATIVE = [
    {"format": "harness-gold", "version": 1, "judged": "pooled",
     "corpus": {"name": "kb.jsonl", "sha256": "a" * 64}},
    {"id": "q1", "query": "who owns billing?", "slice": "entity", "relevant": {"d4": 2, "d9": 0,
                                                                                "d1": 1}},
    {"id": "q2", "query": "rotate the TLS cert", "relevant": ["d12"], "outranks": [["d12", "d3"]],
     "derivation": "mined", "spans": {"d12": ["rotate", "the cert"]}},
    {"id": "q3", "query": "drain a node", "relevant": {"d7": 0}},
    {"id": "q4", "query": "nothing here", "relevant": {}, "answerable": False},
]


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))


def _write_native(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _entries() -> list[Path]:
    return sorted((memo.cache_dir() / memo.FOLDER).glob("*.gold"))


def _fresh(monkeypatch: pytest.MonkeyPatch, *args: object, **kwargs: object) -> GoldSet:
    """A parse that reads no entry and writes none."""
    with monkeypatch.context() as patch:
        patch.setattr(memo, "recall", lambda key: None)
        patch.setattr(memo, "remember", lambda key, gold: None)
        return load_gold(*args, **kwargs)  # type: ignore[arg-type]


def _same(cached: GoldSet, fresh: GoldSet) -> None:
    """Field by field, with the types the readers make (dict, tuples of str, int, bool)."""
    for f in fields(GoldSet):
        if f.name != "queries":
            assert getattr(cached, f.name) == getattr(fresh, f.name), f.name
    assert len(cached.queries) == len(fresh.queries)
    for a, b in zip(cached.queries, fresh.queries, strict=True):
        for f in fields(a):
            x, y = getattr(a, f.name), getattr(b, f.name)
            assert x == y and type(x) is type(y), (a.id, f.name, x, y)
        assert list(a.relevant.items()) == list(b.relevant.items())  # the file's order
        assert all(type(pair) is tuple for pair in a.outranks)
        assert all(type(s) is tuple for s in a.spans.values())


def test_a_second_load_reads_the_entry_back_exactly_as_parsed(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    gold_file = _write_native(tmp_path / "gold.jsonl", NATIVE)
    first = load_gold(gold_file)
    assert len(_entries()) == 1
    parses: list[int] = []
    real = memo.recall
    monkeypatch.setattr(memo, "recall", lambda key: parses.append(1) or real(key))
    second = load_gold(gold_file)
    assert parses and second is not first
    _same(second, _fresh(monkeypatch, gold_file))
    _same(first, second)


@pytest.mark.parametrize("form", ["trec", "trec+topics", "beir"])
def test_the_table_formats_read_back_exactly(tmp_path, monkeypatch, form) -> None:  # type: ignore[no-untyped-def]
    qrels = "q1 0 d1 2\nq1 0 d2 0\nq2 0 d5 1\n"
    topics = tmp_path / "topics.jsonl"
    topics.write_text('{"_id": "q1", "text": "first", "metadata": {"slice": "s"}}\n'
                      '{"_id": "q2", "text": "second", "outranks": [["d5", "d9"]]}\n')
    if form == "beir":
        folder = tmp_path / "beir"
        (folder / "qrels").mkdir(parents=True)
        (folder / "queries.jsonl").write_text(topics.read_text())
        (folder / "qrels" / "test.tsv").write_text(
            "query-id\tcorpus-id\tscore\n" + qrels.replace(" 0 ", "\t").replace(" ", "\t"))
        args: dict[str, object] = {}
        target: Path = folder
    else:
        target = tmp_path / "qrels.txt"
        target.write_text(qrels)
        args = {"queries": topics} if form == "trec+topics" else {"texts": False}
    load_gold(target, **args)  # type: ignore[arg-type]
    assert len(_entries()) == 1
    _same(load_gold(target, **args), _fresh(monkeypatch, target, **args))  # type: ignore[arg-type]


def test_changed_bytes_are_a_miss(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    gold_file = _write_native(tmp_path / "gold.jsonl", NATIVE)
    load_gold(gold_file)
    rows = [*NATIVE[:1], {**NATIVE[1], "relevant": {"d4": 1}}, *NATIVE[2:]]
    _write_native(gold_file, rows)
    again = load_gold(gold_file)
    assert again.by_id["q1"].relevant == {"d4": 1}
    assert len(_entries()) == 2
    _same(again, _fresh(monkeypatch, gold_file))


def test_a_file_now_in_error_raises_it_never_a_stale_success(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    gold_file = _write_native(tmp_path / "gold.jsonl", NATIVE)
    load_gold(gold_file)
    load_gold(gold_file)
    _write_native(gold_file, [*NATIVE, {"id": "q1", "query": "again", "relevant": {"d1": -1}}])
    with pytest.raises(GoldError) as cached:
        load_gold(gold_file)
    with pytest.raises(GoldError) as fresh:
        _fresh(monkeypatch, gold_file)
    assert str(cached.value) == str(fresh.value)
    assert cached.value.problems == fresh.value.problems
    assert [(p.path, p.line) for p in cached.value.problems] == [(str(gold_file), 6)] * 2
    assert len(_entries()) == 1  # an error is never stored


@pytest.mark.parametrize("damage", ["truncated", "flipped", "empty", "not json", "foreign"])
def test_a_bad_entry_is_ignored_and_written_again(tmp_path, monkeypatch, damage) -> None:  # type: ignore[no-untyped-def]
    other = _write_native(tmp_path / "other.jsonl", [NATIVE[0], NATIVE[3]])
    load_gold(other)
    gold_file = _write_native(tmp_path / "gold.jsonl", NATIVE)
    load_gold(gold_file)
    (entry,) = set(_entries()) - {e for e in _entries() if b"q1" not in e.read_bytes()}
    good = entry.read_bytes()
    foreign = next(e for e in _entries() if e != entry).read_bytes()
    bad = {"truncated": good[: len(good) // 2], "empty": b"", "not json": b"{[\n\x00",
           "flipped": good.replace(b"d4", b"d5"), "foreign": foreign}[damage]
    entry.write_bytes(bad)
    _same(load_gold(gold_file), _fresh(monkeypatch, gold_file))
    assert entry.read_bytes() == good  # written again, sound


def test_a_load_with_a_corpus_is_not_cached(tmp_path) -> None:  # type: ignore[no-untyped-def]
    corpus = tmp_path / "kb.jsonl"
    corpus.write_text("".join(json.dumps({"_id": d, "text": "t"}) + "\n"
                              for d in ("d1", "d3", "d4", "d7", "d9", "d12")))
    gold_file = _write_native(tmp_path / "gold.jsonl", [{"format": "harness-gold",
                                                          "version": 1}, *NATIVE[1:]])
    load_gold(gold_file, corpus=corpus)
    assert _entries() == []


def _load_in_child(path: str) -> tuple[str, int]:
    gold = load_gold(path)
    return gold.hash, len(gold)


def test_concurrent_writers_leave_one_sound_entry(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    rows = [NATIVE[0], *({"id": f"q{i}", "query": f"text {i}", "relevant": {f"d{i}": 1,
                                                                            f"e{i}": 0}}
                         for i in range(3000))]
    gold_file = _write_native(tmp_path / "gold.jsonl", rows)
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        found = pool.map(_load_in_child, [str(gold_file)] * 8)
    fresh = _fresh(monkeypatch, gold_file)
    assert set(found) == {(fresh.hash, len(fresh))}
    folder = memo.cache_dir() / memo.FOLDER
    temps = [p.name for p in folder.iterdir() if not p.name.endswith((".gold", ".txt"))]
    assert temps == []
    (entry,) = _entries()
    assert memo.recall(entry.stem) is not None
    _same(load_gold(gold_file), fresh)


def test_the_qrels_hash_is_computed_once_per_content(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import harness.score.trec as trec
    from harness.score.runfile import load_trec_tables

    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 2\nq1 0 d2 0\nq2 0 d5 1\n")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 2 t\nq2 Q0 d5 1 1 t\n")
    expected = _fresh(monkeypatch, qrels, texts=False).hash
    calls: list[int] = []
    real = trec.qrels_hash
    monkeypatch.setattr("harness.score.runfile.qrels_hash",
                        lambda q: calls.append(1) or real(q))

    def printed() -> str:
        tables = load_trec_tables(qrels, run, 10)
        assert tables is not None
        return tables.hash

    assert printed() == expected and printed() == expected and calls == [1]
    (entry,) = (memo.cache_dir() / memo.FOLDER).glob("*.txt")
    entry.write_text(entry.read_text().replace(expected, "0" * 64))  # damaged: not trusted
    assert printed() == expected and calls == [1, 1]
    qrels.write_text("q1 0 d1 1\n")  # other bytes: computed again
    assert printed() == _fresh(monkeypatch, qrels, texts=False).hash and calls == [1, 1, 1]


def test_a_file_past_the_gold_sets_cap_is_never_hashed(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # The key hashes every byte: a sparse file one byte past the 4 GiB cap took 30-40 s to hash
    # before the reader refused it at its size. Past the cap there is no key, and the reader
    # refuses it at once.
    from harness.process.inputs import GOLD
    path = tmp_path / "gold.jsonl"
    with path.open("wb") as handle:
        handle.truncate(GOLD.cap + 1)  # sparse: no disk used

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("hashed a file past its cap")

    monkeypatch.setattr(memo.hashlib, "file_digest", never)
    assert memo.gold_key([path], path, None, "test", False) is None
    with pytest.raises(GoldError, match="over harness's limit of 4 GiB"):
        load_gold(path)

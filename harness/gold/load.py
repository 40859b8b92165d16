"""Reading a gold set from disk: which format a path is in, and `load_gold`/`check_files`, the
entry points `harness.gold` re-exports (its face imports this module; `convert` reads back what it
wrote through it)."""

from __future__ import annotations

import gc
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from harness.errors import GoldError
from harness.gold import memo
from harness.gold.canonical import canonical_hash
from harness.gold.corpus import dangling, load_corpus, load_corpus_ids
from harness.gold.native import read_native
from harness.gold.reading import (
    LONE_SURROGATE,
    NESTED_TOO_DEEPLY,
    JsonObject,
    Parsed,
    Problems,
    loads,
    not_utf8,
)
from harness.gold.tables import beir_qrels, read_beir, read_qrels, read_trec
from harness.process.inputs import CORPUS, GOLD, is_input_file, open_input
from harness.text.encodings import SAMPLE, encoding_problem
from harness.values.types import CorpusInfo, GoldSet

if TYPE_CHECKING:
    from harness.gold.check import CheckReport

FORMATS = ("native", "beir", "trec")


def detect_format(path: Path | str) -> str:
    """"beir" for a folder; "native" for a file whose first non-blank line is a JSON object;
    otherwise "trec". A UTF-16 or UTF-32 file is a GoldError naming its encoding."""
    path = Path(path)
    try:
        if path.is_dir():
            return "beir"
        with open_input(path, GOLD) as handle:  # a FIFO or /dev/zero: GoldError, no wait
            return _sniff(handle, path)
    except FileNotFoundError:
        raise GoldError(f"{path}: gold set not found; check the path (--gold)") from None
    except OSError as exc:
        raise GoldError(f"{path}: cannot read: {exc.strerror}") from exc


def _sniff(handle: BinaryIO, path: Path) -> str:
    """`detect_format` on the open file."""
    wide = encoding_problem(handle.read(SAMPLE), path)
    if wide is not None:  # told before the format: read as UTF-8 it looks like TREC qrels
        raise GoldError(f"{path}:1: {wide}")
    handle.seek(0)
    for number, raw in enumerate(handle, start=1):
        if raw.strip():
            try:
                text = raw.decode("utf-8-sig")
            except UnicodeDecodeError as exc:  # binary, or another encoding: not qrels either
                said = not_utf8(exc, "the file", in_line=True)
                raise GoldError(f"{path}:{number}: {said} (a gold set is JSON lines or TREC "
                                "qrels)") from None
            try:
                first = loads(text)
            except ValueError as exc:  # JSON too deep or with a lone surrogate: native's
                return "native" if str(exc) in (NESTED_TOO_DEEPLY, LONE_SURROGATE) else "trec"
            return "native" if isinstance(first, JsonObject) else "trec"
    return "native"  # an empty file: let the native reader say it has no queries


def load_gold(path: Path | str, *, queries: Path | None = None, corpus: Path | None = None,
              fmt: str | None = None, split: str = "test", texts: bool = True) -> GoldSet:
    """Read, validate and hash a gold set; raise one GoldError listing every problem.

    `fmt` forces "native", "beir" or "trec"; by default a folder is BEIR (`split` picks its qrels),
    a file starting with a JSON object is native, anything else TREC qrels, which need `queries`
    (the topics file) unless `texts` is False (scoring alone: the queries then have empty texts,
    read from the qrels, as `trec_eval qrels run` reads them). With `corpus` (a JSONL file or a
    BEIR folder), every judged or `outranks`
    doc id must be in it and a corpus sha256 recorded in the header must match it.

    The GoldSet's `corpus` is the header's, with the sha256 of `corpus` when one was given; for a
    header-less gold set it is `corpus` itself (None without one). `hash` is `canonical_hash`.
    """
    path = Path(path)
    try:
        found = path.exists()
    except OSError as exc:  # a folder above it this user may not enter
        raise GoldError(f"{path}: cannot read: {exc.strerror}; check that this user may enter "
                        "every folder above it") from None
    if not found:
        raise GoldError(f"{path}: gold set not found; check the path (the `gold` setting)")
    # Without a corpus, a gold set read before from the same bytes is read back (gold.memo).
    key = _memo_key(path, fmt, queries, split, texts) if corpus is None else None
    problems = Problems()
    with _collector_paused():
        if key is not None and (known := memo.recall(key)) is not None:
            return known
        try:
            chosen = fmt if fmt is not None else detect_format(path)
            parsed = _read(path, chosen, queries, split, problems, texts, corpus is not None)
            info = parsed.corpus
            if corpus is not None:
                info = _check_corpus(parsed, Path(corpus), problems)
        except OSError as exc:
            raise GoldError(f"{exc.filename or path}: cannot read: {exc.strerror}") from exc
        problems.raise_if_any(f"{path}: the gold set is invalid")
        gold = GoldSet(parsed.queries, parsed.source, parsed.format,
                       canonical_hash(parsed.queries), info, parsed.version, parsed.pooled)
        if key is not None:
            memo.remember(key, gold)
        return gold


def _memo_key(path: Path, fmt: str | None, queries: Path | None, split: str,
              texts: bool) -> str | None:
    """`gold.memo`'s key of this load: the files it reads, hashed; None for a load whose files
    are not plain files yet (the readers say what is wrong)."""
    try:
        if path.is_dir():
            if fmt not in (None, "beir") or queries is not None:
                return None
            files = [path / "queries.jsonl", beir_qrels(path, split)]
        else:
            files = [path] if queries is None else [path, Path(queries)]
    except (OSError, GoldError):
        return None
    return memo.gold_key(files, path, fmt, split, texts)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a gold set is read: reading makes a few objects
    per judgement and no cycle, and at 100,000 queries the collector's passes over them took a
    fifth of the reading time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _read(path: Path, fmt: str, queries: Path | None, split: str,
          problems: Problems, texts: bool = True, refs: bool = True) -> Parsed:
    """The reader of `fmt`; `refs`: collect where each doc id was read (for a corpus check)."""
    if fmt not in FORMATS:
        raise GoldError(f"unknown gold format {fmt!r}; use one of {', '.join(FORMATS)}")
    if fmt != "trec" and queries is not None:
        raise GoldError(f"{queries}: a queries file is only read with TREC qrels; a native gold "
                        "file holds its query texts, a BEIR folder its queries.jsonl")
    if fmt == "beir":
        if not path.is_dir():
            raise GoldError(f"{path}: a BEIR gold set is a folder (queries.jsonl, qrels/)")
        return read_beir(path, split, problems, refs)
    if path.is_dir():
        raise GoldError(f"{path}: a {fmt} gold set is a file, not a folder")
    if fmt == "native":
        return read_native(path, problems, refs=refs)
    if queries is None and not texts:
        return read_qrels(path, problems, refs)
    if queries is None:
        raise GoldError(f"{path}: TREC qrels need their query texts: pass a queries file "
                        "(JSONL or qid<TAB>text)")
    return read_trec(path, Path(queries), problems, refs)


def _check_corpus(parsed: Parsed, corpus: Path, problems: Problems) -> CorpusInfo | None:
    """Check every referenced doc id and the header's sha256 against the corpus."""
    file = corpus / "corpus.jsonl" if corpus.is_dir() else corpus
    if not is_input_file(file, CORPUS):
        problems.add(file, "corpus not found; pass the corpus JSONL file or its BEIR folder")
        return parsed.corpus
    try:
        ids, sha256 = load_corpus_ids(file)
    except GoldError as exc:
        if not problems:  # the gold set is sound: the error is the corpus's, and says so
            raise
        problems.found.extend(exc.problems)  # the corpus's own problems join the gold set's
        return parsed.corpus
    recorded = parsed.corpus
    if recorded is not None and recorded.sha256 is not None and recorded.sha256 != sha256:
        problems.add(parsed.source, f"the header records corpus sha256 {recorded.sha256} but "
                     f"{file} has {sha256}: the corpus changed since the gold set was made; "
                     "re-check the judgements, then update the header", parsed.header_line,
                     "corpus.sha256")
    dangling(parsed.refs, ids, file, problems)
    return CorpusInfo(recorded.name if recorded else str(file), sha256)


def check_files(gold: Path | str, corpus: Path | str | None = None, *,
                queries: Path | None = None, fmt: str | None = None, split: str = "test",
                alpha: float = 0.05, slices: Collection[str] = ()) -> tuple[GoldSet, CheckReport]:
    """Load a gold set and its corpus, then `check_gold` them: what `gold check`, `compare` and
    `run` call before anything is built.

    A gold file that cannot be read (malformed lines, unknown fields) or a malformed corpus still
    raises GoldError, since nothing can be checked in it (listing the dangling ids too, as
    `load_gold(..., corpus=...)` does); otherwise ids missing from the corpus and a stale corpus
    sha256 are findings of the report. The GoldSet returned records the corpus
    as `load_gold(..., corpus=...)` would: the header's name (else the corpus path) and the
    corpus's sha256. Call `report.raise_if_errors()` to fail fast.
    """
    from harness.gold.check import check_gold

    try:
        loaded = load_gold(gold, queries=queries, fmt=fmt, split=split)
    except GoldError:
        if corpus is not None:  # raise once, with the corpus problems too, as load_gold lists them
            load_gold(gold, queries=queries, fmt=fmt, split=split, corpus=Path(corpus))
        raise
    documents = load_corpus(corpus) if corpus is not None else None
    report = check_gold(loaded, documents, alpha=alpha, slices=slices,
                        lines_in=str(queries) if loaded.format == "trec" and queries else None)
    if documents is not None:
        name = loaded.corpus.name if loaded.corpus else documents.name
        loaded = replace(loaded, corpus=CorpusInfo(name, documents.sha256))
    return loaded, report

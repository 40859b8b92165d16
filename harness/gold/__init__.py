"""The gold stage: read a labelled gold set, validate all of it, and give it a content hash.

    load_gold(path) -> GoldSet
      ├── native.py    JSON Lines, optional header, one query a line (the format to write)
      ├── tables.py    BEIR folder (queries.jsonl + qrels) and TREC qrels + topics file
      ├── corpus.py    corpus ids and sha256: every judged id must be a document
      └── canonical.py the content hash, the same whichever format held the content
    write_native(gold, path)  the reverse of the native reader, atomically

Every reader collects all problems of every file (gold, queries, qrels, corpus) and `load_gold`
raises one GoldError listing them, each as path:line: field: what is wrong and what to do.
The rules, with examples, are in gold/README.md.
"""

from __future__ import annotations

from pathlib import Path

from harness.errors import GoldError
from harness.gold.canonical import canonical_form, canonical_hash
from harness.gold.corpus import dangling, file_sha256, load_corpus_ids
from harness.gold.native import read_native, write_native
from harness.gold.reading import JsonObject, Parsed, Problems, loads
from harness.gold.tables import read_beir, read_trec
from harness.types import CorpusInfo, GoldSet

__all__ = [
    "FORMATS",
    "canonical_form",
    "canonical_hash",
    "detect_format",
    "file_sha256",
    "load_corpus_ids",
    "load_gold",
    "write_native",
]

FORMATS = ("native", "beir", "trec")


def detect_format(path: Path | str) -> str:
    """"beir" for a folder; "native" for a file whose first non-blank line is a JSON object;
    otherwise "trec"."""
    path = Path(path)
    if path.is_dir():
        return "beir"
    with open(path, "rb") as handle:
        for raw in handle:
            if raw.strip():
                try:
                    first = loads(raw.decode("utf-8-sig", errors="replace"))
                except ValueError:
                    return "trec"
                return "native" if isinstance(first, JsonObject) else "trec"
    return "native"  # an empty file: let the native reader say it has no queries


def load_gold(path: Path | str, *, queries: Path | None = None, corpus: Path | None = None,
              fmt: str | None = None, split: str = "test") -> GoldSet:
    """Read, validate and hash a gold set; raise one GoldError listing every problem.

    `fmt` forces "native", "beir" or "trec"; by default a folder is BEIR (`split` picks its qrels),
    a file starting with a JSON object is native, anything else TREC qrels, which need `queries`
    (the topics file). With `corpus` (a JSONL file or a BEIR folder), every judged or `outranks`
    doc id must be in it and a corpus sha256 recorded in the header must match it.

    The GoldSet's `corpus` is the header's, with the sha256 of `corpus` when one was given; for a
    header-less gold set it is `corpus` itself (None without one). `hash` is `canonical_hash`.
    """
    path = Path(path)
    if not path.exists():
        raise GoldError(f"{path}: gold set not found; check the path (the `gold` setting)")
    problems = Problems()
    try:
        chosen = fmt if fmt is not None else detect_format(path)
        parsed = _read(path, chosen, queries, split, problems)
        info = parsed.corpus
        if corpus is not None:
            info = _check_corpus(parsed, Path(corpus), problems)
    except OSError as exc:
        raise GoldError(f"{exc.filename or path}: cannot read: {exc.strerror}") from exc
    problems.raise_if_any(f"{path}: the gold set is invalid")
    return GoldSet(parsed.queries, parsed.source, parsed.format, canonical_hash(parsed.queries),
                   info, parsed.version)


def _read(path: Path, fmt: str, queries: Path | None, split: str,
          problems: Problems) -> Parsed:
    if fmt not in FORMATS:
        raise GoldError(f"unknown gold format {fmt!r}; use one of {', '.join(FORMATS)}")
    if fmt != "trec" and queries is not None:
        raise GoldError(f"{queries}: a queries file is only read with TREC qrels; a native gold "
                        "file holds its query texts, a BEIR folder its queries.jsonl")
    if fmt == "beir":
        if not path.is_dir():
            raise GoldError(f"{path}: a BEIR gold set is a folder (queries.jsonl, qrels/)")
        return read_beir(path, split, problems)
    if path.is_dir():
        raise GoldError(f"{path}: a {fmt} gold set is a file, not a folder")
    if fmt == "native":
        return read_native(path, problems)
    if queries is None:
        raise GoldError(f"{path}: TREC qrels need their query texts: pass a queries file "
                        "(JSONL or qid<TAB>text)")
    return read_trec(path, Path(queries), problems)


def _check_corpus(parsed: Parsed, corpus: Path, problems: Problems) -> CorpusInfo | None:
    """Check every referenced doc id and the header's sha256 against the corpus."""
    file = corpus / "corpus.jsonl" if corpus.is_dir() else corpus
    if not file.is_file():
        problems.add(file, "corpus not found; pass the corpus JSONL file or its BEIR folder")
        return parsed.corpus
    try:
        ids, sha256 = load_corpus_ids(file)
    except GoldError as exc:  # the corpus's own problems join the gold set's
        problems.found.extend(exc.problems)
        return parsed.corpus
    recorded = parsed.corpus
    if recorded is not None and recorded.sha256 is not None and recorded.sha256 != sha256:
        problems.add(parsed.source, f"the header records corpus sha256 {recorded.sha256} but "
                     f"{file} has {sha256}: the corpus changed since the gold set was made; "
                     "re-check the judgements, then update the header", parsed.header_line,
                     "corpus.sha256")
    dangling(parsed.refs, ids, file, problems)
    return CorpusInfo(recorded.name if recorded else str(file), sha256)

"""The gold stage: read a labelled gold set, validate all of it, and give it a content hash.

    load_gold(path) -> GoldSet         load.py: which format, read, validate, hash
      ├── native.py    JSON Lines, optional header, one query a line (the format to write)
      ├── tables.py    BEIR folder (queries.jsonl + qrels) and TREC qrels + topics file
      ├── corpus.py    corpus ids and sha256: every judged id must be a document
      └── canonical.py the content hash, the same whichever format held the content
    write_native(gold, path)  the reverse of the native reader, atomically

The gold-set tools behind `harness gold check|build|convert|stats`:

    load_corpus(path) -> Corpus            corpus.py: every document, sha256; documents.py: index
    check_gold(gold, corpus) -> CheckReport   check.py (pure; text.py is the shared tokeniser)
    check_files(gold_path, corpus_path) -> (GoldSet, CheckReport)   load both, then check_gold
    build_gold(corpus, ...) -> [GoldQuery]  build.py (pure): mined queries, answers by construction
    convert(gold, to, out) -> [warnings]    convert.py: native, BEIR or TREC files, atomically
    gold_stats(gold) -> GoldStats           summary.py (pure)
    render_check / render_stats             render.py: text or JSON
    read_grades(path, known) -> Grades      grades.py: a team's answer grades (the 2x2)

The tools are imported on first use (PEP 562), so `load_gold` alone does not pull in scipy.

Every reader collects all problems of every file (gold, queries, qrels, corpus) and `load_gold`
raises one GoldError listing them, each as path:line: field: what is wrong and what to do.
The rules, with examples, are in gold/README.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from harness.gold.canonical import canonical_form, canonical_hash

# Imported eagerly, unlike the other tools: a function named like its submodule would otherwise
# be shadowed by the submodule itself once anything imports harness.gold.convert ("'module'
# object is not callable"). It needs nothing heavy.
from harness.gold.convert import convert
from harness.gold.corpus import file_sha256, load_corpus, load_corpus_ids
from harness.gold.documents import Corpus, Document
from harness.gold.load import FORMATS, check_files, detect_format, load_gold
from harness.gold.native import write_native

if TYPE_CHECKING:
    from harness.gold.build import build_gold
    from harness.gold.check import CheckReport, Finding, SlicePower, check_gold
    from harness.gold.render import render_check, render_stats
    from harness.gold.summary import GoldStats, gold_stats

__all__ = [
    "FORMATS",
    "CheckReport",
    "Corpus",
    "Document",
    "Finding",
    "GoldStats",
    "SlicePower",
    "build_gold",
    "canonical_form",
    "canonical_hash",
    "check_files",
    "check_gold",
    "convert",
    "detect_format",
    "file_sha256",
    "gold_stats",
    "load_corpus",
    "load_corpus_ids",
    "load_gold",
    "render_check",
    "render_stats",
    "write_native",
]

_LAZY = {
    "build_gold": "build", "CheckReport": "check", "Finding": "check", "SlicePower": "check",
    "check_gold": "check", "render_check": "render",
    "render_stats": "render", "GoldStats": "summary", "gold_stats": "summary",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(importlib.import_module(f"harness.gold.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'harness.gold' has no attribute {name!r}")

"""`harness gold convert`: write a gold set as native JSONL, a BEIR folder or TREC qrels + topics.

    convert(gold, to, out, *, overwrite=False, split="test", topics="jsonl") -> list[str]

The return value lists what the target cannot hold and was dropped, in plain words (empty when
nothing was). What each target holds:

- "native": `out` is a file, written by `write_native`: everything a GoldSet holds, header corpus
  included. (A header's description is not part of a GoldSet, so it is never carried.)
- "beir": `out` is a folder holding `queries.jsonl` ({"_id", "text", "metadata": {"slice",
  "derivation", "outranks"}}, metadata keys only when set) and `qrels/<split>.tsv` (header, then
  `query-id<TAB>corpus-id<TAB>score` in gold order). harness reads the metadata back; other BEIR
  tools ignore it.
- "trec": `out` is a folder holding `qrels.txt` (`qid 0 docid grade`, gold order) and a topics
  file: `topics.jsonl` ({"id", "text", "slice", "derivation", "outranks"}, read back whole) or,
  with topics="tsv", `topics.tsv` (`qid<TAB>text`: slice, derivation and outranks dropped).

Both table formats drop what qrels cannot hold: a query with no judgement at all (relevant: {})
has no qrels line, so it is not written (readers load judged queries only); a query answerable
with only grade-0 judgements (`GoldQuery.declared`) is read back unanswerable, as BEIR and TREC
read every such query; and the header's corpus name and sha256 have no place. Ids or texts
that a target's separators would split (a tab or newline in a TSV cell, whitespace in a TREC
qrels id) are a GoldError naming the query, never a silently different file. Before anything
appears at `out`, the files are read back with `load_gold` and must give exactly the queries
that were meant to be kept (same canonical hash).

Writing is atomic: a folder is built beside `out` and renamed into place, a file via
`write_native`'s temp file. An existing `out` (other than an empty folder) is a GoldError unless
`overwrite` is True.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from harness.errors import GoldError
from harness.gold.canonical import canonical_hash
from harness.gold.native import write_native
from harness.gold.tables import BEIR_HEADER
from harness.values.types import GoldQuery, GoldSet

TARGETS = ("native", "beir", "trec")
TOPICS = ("jsonl", "tsv")
_TSV_UNSAFE = re.compile(r"[\t\n\r]")
_TREC_UNSAFE = re.compile(r"\s")


def convert(gold: GoldSet, to: str, out: Path | str, *, overwrite: bool = False,
            split: str = "test", topics: str = "jsonl") -> list[str]:
    """Write `gold` as `to` at `out` (see the module docstring); return what was dropped."""
    out = Path(out)
    if to not in TARGETS:
        raise GoldError(f"unknown target format {to!r}; use one of {', '.join(TARGETS)}")
    if topics not in TOPICS:
        raise GoldError(f"unknown topics format {topics!r}; use one of {', '.join(TOPICS)}")
    if not split or _TSV_UNSAFE.search(split) or "/" in split:
        raise GoldError(f"split {split!r} must be a plain file name such as test or dev")
    _refuse_existing(out, overwrite, to)
    if to == "native":
        out.parent.mkdir(parents=True, exist_ok=True)
        write_native(gold, out, overwrite=overwrite)
        return []
    kept = [q for q in gold.queries if q.relevant]  # `written` counts the same
    warnings = _dropped(gold, kept, to, topics)
    lossy = to == "trec" and topics == "tsv"
    # Qrels cannot say a query is answerable: read back, the grades decide (GoldQuery.declared).
    expected = [replace(q, slice="default", derivation=None, outranks=(), declared=None) if lossy
                else replace(q, declared=None) for q in kept]
    files = _beir_files(kept, split) if to == "beir" else _trec_files(kept, topics)
    _write_folder(out, files, lambda folder: _read_back(folder, to, split, topics, expected))
    return warnings


def written(gold: GoldSet, to: str) -> int:
    """How many queries `convert(gold, to, ...)` writes: all of them natively; in BEIR and TREC
    only the judged ones (qrels hold judgements, so a query without any has no line)."""
    return len(gold) if to == "native" else sum(1 for q in gold.queries if q.relevant)


def _refuse_existing(out: Path, overwrite: bool, to: str) -> None:
    if to == "native" and out.is_dir():
        raise GoldError(f"--out {out}: is a folder, and a native gold set is one file; name a "
                        "file (--out gold.jsonl)")
    if to != "native" and out.exists() and not out.is_dir():
        raise GoldError(f"--out {out}: is a file, and {to} is written as a folder; name a "
                        "folder (--out DIR)")
    empty_folder = to != "native" and out.is_dir() and not any(out.iterdir())
    if overwrite or not out.exists() or empty_folder:
        return
    raise GoldError(f"{out}: already exists; choose another output, or pass --force to "
                    "replace it")


def _dropped(gold: GoldSet, kept: list[GoldQuery], to: str, topics: str) -> list[str]:
    warnings = []
    unjudged = [q.id for q in gold.queries if not q.relevant]
    if unjudged:
        shown = ", ".join(unjudged[:10]) + (" ..." if len(unjudged) > 10 else "")
        warnings.append(f"{len(unjudged)} queries without any judgement (relevant: {{}}) were "
                        f"dropped: qrels hold judgements, so {to} cannot hold them ({shown}); "
                        "keep the native file for them, or judge one document 0")
    pooled = [q.id for q in kept if q.answerable and not q.has_relevant]
    if pooled:
        shown = ", ".join(pooled[:10]) + (" ..." if len(pooled) > 10 else "")
        warnings.append(f"{len(pooled)} queries answerable with only grade-0 judgements (answer "
                        f"not found yet) will read as unanswerable: {to} cannot say a query is "
                        f"answerable ({shown}); keep the native file for them, or judge their "
                        "answer")
    if gold.corpus is not None:
        warnings.append(f"the corpus the gold set records ({gold.corpus.name}"
                        f"{', sha256 ' + gold.corpus.sha256[:12] if gold.corpus.sha256 else ''}"
                        f") was dropped: {to} has no header, so `gold check` cannot tell whether "
                        "the converted set is stale")
    if to == "trec" and topics == "tsv":
        for what, count in (("slices", sum(q.slice != "default" for q in kept)),
                            ("derivations", sum(q.derivation is not None for q in kept)),
                            ("outranks pairs", sum(len(q.outranks) for q in kept))):
            if count:
                warnings.append(f"{count} {what} were dropped: qid<TAB>text topics cannot hold "
                                "them; use topics jsonl to keep them")
    return warnings


def _unsafe(query: GoldQuery, what: str, value: str, pattern: re.Pattern[str],
            target: str) -> None:
    if pattern.search(value):
        raise GoldError(f"query {query.id!r}: its {what} {value!r} holds a character that "
                        f"{target} uses as a separator, so it cannot be written there; keep the "
                        "native format, or change the id")


def _beir_files(queries: list[GoldQuery], split: str) -> dict[str, str]:
    rows, qrels = [], [BEIR_HEADER]
    for q in queries:
        _unsafe(q, "id", q.id, _TSV_UNSAFE, "BEIR qrels (TSV)")
        metadata: dict[str, object] = {}
        if q.slice != "default":
            metadata["slice"] = q.slice
        if q.derivation is not None:
            metadata["derivation"] = q.derivation
        if q.outranks:
            metadata["outranks"] = [list(pair) for pair in q.outranks]
        rows.append(_json({"_id": q.id, "text": q.text, "metadata": metadata}))
        for doc, grade in q.relevant.items():
            _unsafe(q, "document id", doc, _TSV_UNSAFE, "BEIR qrels (TSV)")
            qrels.append(f"{q.id}\t{doc}\t{grade}")
    return {"queries.jsonl": _lines(rows), f"qrels/{split}.tsv": _lines(qrels)}


def _trec_files(queries: list[GoldQuery], topics: str) -> dict[str, str]:
    qrels, rows = [], []
    for q in queries:
        _unsafe(q, "id", q.id, _TREC_UNSAFE, "TREC qrels (whitespace-separated)")
        for doc, grade in q.relevant.items():
            _unsafe(q, "document id", doc, _TREC_UNSAFE, "TREC qrels (whitespace-separated)")
            qrels.append(f"{q.id} 0 {doc} {grade}")
        if topics == "jsonl":
            row: dict[str, object] = {"id": q.id, "text": q.text, "slice": q.slice}
            if q.derivation is not None:
                row["derivation"] = q.derivation
            if q.outranks:
                row["outranks"] = [list(pair) for pair in q.outranks]
            rows.append(_json(row))
        else:
            _unsafe(q, "text", q.text, _TSV_UNSAFE, "a qid<TAB>text topics file")
            if q.id.startswith(("{", "<")) or not q.text.strip():
                raise GoldError(f"query {q.id!r}: a qid<TAB>text topics line cannot start with "
                                "'{' or '<' (read as JSON or SGML); use topics jsonl")
            rows.append(f"{q.id}\t{q.text}")
    return {"qrels.txt": _lines(qrels), f"topics.{topics}": _lines(rows)}


def _json(value: dict[str, object]) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _lines(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def _read_back(folder: Path, to: str, split: str, topics: str,
               expected: list[GoldQuery]) -> None:
    """Refuse files that would not read back as exactly the queries meant to be kept."""
    if not expected:
        raise GoldError(f"nothing to write: no query of the gold set has a judgement, and {to} "
                        "holds judged queries only; keep the native format")
    from harness.gold.load import load_gold  # at call time: reading back needs it only here

    if to == "beir":
        back = load_gold(folder, fmt="beir", split=split)
    else:
        back = load_gold(folder / "qrels.txt", fmt="trec", queries=folder / f"topics.{topics}")
    if back.hash != canonical_hash(expected):
        raise GoldError(f"the {to} files would not read back as the gold set written (a text or "
                        "id the format cannot carry); keep the native format")


def _write_folder(out: Path, files: dict[str, str], verify: Callable[[Path], None]) -> None:
    from harness.process import leftovers  # at call time: reading a gold set needs none of it

    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        # Recorded, then made; 0777 less the umask, as mkdir makes: the output is to be shared.
        temp = leftovers.make_dir("dir", out.parent, f".{out.name}.tmp-", shared=True)
    except OSError as exc:
        raise GoldError(f"--out {out}: cannot write the converted gold set: {exc.strerror}; "
                        "check the permissions of the folder it goes in, or name another "
                        "(--out DIR)") from None
    old: Path | None = None
    try:
        for name, text in files.items():
            path = temp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
        verify(temp)
        if out.exists():
            old = out.with_name(f".{out.name}.old-{temp.name}")
            os.replace(out, old)
        os.replace(temp, out)
    except BaseException as exc:
        shutil.rmtree(temp, ignore_errors=True)
        if not os.path.lexists(temp):
            leftovers.untrack("dir", temp)
        if old is not None and not out.exists():
            os.replace(old, out)  # put back what was there
        if isinstance(exc, OSError):
            raise GoldError(f"--out {out}: cannot write the converted gold set: "
                            f"{exc.strerror}") from exc
        raise
    leftovers.untrack("dir", temp)  # it is `out` now
    if old is not None and old.is_dir():
        shutil.rmtree(old, ignore_errors=True)
    elif old is not None:
        with contextlib.suppress(OSError):
            old.unlink()

"""The demo's corpus and gold set, generated deterministically from one seed.

    python -m harness.demo.generate OUTDIR      # writes OUTDIR/corpus.jsonl and OUTDIR/gold.jsonl

The corpus is an internal engineering wiki (service, team and people pages, runbooks, incidents,
error codes, tickets, standup notes, changelogs) plus memory-like facts, each document
`{"age_days", "id", "text", "title"}`. The gold set is in the native format (a header line, then
one query per line) and every answer is known by construction, in six slices:

- exact_token: an error code or ticket id that occurs in exactly one document.
- entity: a service, team or person; the answer is its (old) reference page, while a controlled
  number of newer documents merely mention it, so boosting recent documents pushes it down.
- freshness: a fact recorded twice with the same wording and different values; the newer one is
  relevant (grade 1), the older twin is judged not relevant (grade 0) and must rank below it.
- semantic: a paraphrase of a runbook that shares no content word (see `content_words`) with the
  runbook's title or text; the runbook is the only document holding all the query's concepts.
- superseded: a decision and the later correction that supersedes it; the correction is relevant,
  the decision is judged 0, and `outranks` asks for the correction above it.
- nonsense: unanswerable controls whose tokens occur in no document. A few contain a slang word
  that only the service's thesaurus knows, so a concept-matching service may answer them anyway.

Nothing here does I/O except `write` and `main`. The same seed gives the same bytes on any
platform and under any PYTHONHASHSEED: no set is iterated unsorted, and every random draw comes
from `random.Random(f"{seed}/{section}")`, one stream per section, so retuning one section leaves
the others' draws alone.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.demo.questions import (
    background_mentions,
    entity_questions,
    exact_token_questions,
    freshness_questions,
    nonsense_questions,
    semantic_questions,
    superseded_questions,
)
from harness.demo.world import (
    SEED,
    SLICE_SIZES,
    Builder,
    incidents_and_codes,
    make_world,
    reference_pages,
    write_runbooks,
)

# --------------------------------------------------------------------------- assembly


@dataclass(frozen=True)
class DemoData:
    """The generated files, as bytes, and the sha256 of the corpus recorded in the gold header."""

    corpus: bytes
    gold: bytes
    corpus_sha256: str


_ENCODER = json.JSONEncoder(sort_keys=True)  # json.dumps(obj, sort_keys=True), made once


def _line(obj: object) -> str:
    return _ENCODER.encode(obj) + "\n"


def generate(seed: int = SEED) -> DemoData:
    """Build the corpus and gold set in memory; the same seed always gives the same bytes."""
    b = Builder(seed)
    world = make_world(b.stream("world"))
    pages = reference_pages(b, world)
    runbooks = write_runbooks(b, world)
    codes, tickets = incidents_and_codes(b, world)
    background_mentions(b, world, 1400)
    freshness_questions(b, world)
    superseded_questions(b, world)
    entity_questions(b, world, pages)
    exact_token_questions(b, codes, tickets)
    semantic_questions(b, runbooks)
    nonsense_questions(b)

    order = list(range(len(b.drafts)))
    b.stream("order").shuffle(order)  # corpus order, so tie-breaks, carries no hint of kind
    ids = {draft: f"kb-{position:05d}" for position, draft in enumerate(order, start=1)}
    corpus = "".join(
        _line(
            {
                "id": ids[i],
                "title": b.drafts[i].title,
                "text": b.drafts[i].text,
                "age_days": b.drafts[i].age_days,
            }
        )
        for i in order
    ).encode("utf-8")
    sha = hashlib.sha256(corpus).hexdigest()

    by_slice = {name: [q for q in b.questions if q.slice == name] for name in SLICE_SIZES}
    for name, size in SLICE_SIZES.items():
        if len(by_slice[name]) != size:
            raise RuntimeError(f"generator bug: slice {name} has {len(by_slice[name])} queries")
    header = {
        "format": "harness-gold",
        "version": 1,
        "corpus": {"name": "corpus.jsonl", "sha256": sha},
        "description": (
            f"harness demo gold set (seed {seed}): an engineering wiki of {len(order)} documents; "
            + ", ".join(f"{name} {size}" for name, size in SLICE_SIZES.items())
        ),
    }
    rows = [_line(header)]
    number = 0
    for name in SLICE_SIZES:
        for q in by_slice[name]:
            number += 1
            row: dict[str, object] = {
                "id": f"q{number:03d}",
                "query": q.query,
                "slice": q.slice,
                "relevant": {ids[i]: grade for i, grade in q.relevant.items()},
                "derivation": q.derivation,
            }
            if q.outranks:
                row["outranks"] = [[ids[a], ids[z]] for a, z in q.outranks]
            rows.append(_line(row))
    return DemoData(corpus, "".join(rows).encode("utf-8"), sha)


def write(outdir: Path, seed: int = SEED) -> tuple[Path, Path]:
    """Write corpus.jsonl and gold.jsonl into `outdir` (created if missing); returns both paths."""
    data = generate(seed)
    outdir.mkdir(parents=True, exist_ok=True)
    corpus, gold = outdir / "corpus.jsonl", outdir / "gold.jsonl"
    corpus.write_bytes(data.corpus)
    gold.write_bytes(data.gold)
    return corpus, gold


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m harness.demo.generate",
        description="Write the demo corpus.jsonl and gold.jsonl into OUTDIR.",
    )
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    corpus, gold = write(args.outdir, args.seed)
    print(f"wrote {corpus} and {gold}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Write TREC run files of a few real retrieval systems over a BEIR collection (default SciFact).

    .venv/bin/python scripts/make_scifact_runs.py [--data /work/shared/data/scifact] [--out DIR]

Three systems, all real retrieval over the collection's corpus (`bm25s`, which must be installed:
`python -m pip install bm25s`), each written as `DIR/<name>.run` (six columns, 100 results per
query, `qid Q0 docid rank score tag`):

    bm25        BM25 (Lucene's variant), k1 = 1.2, b = 0.75, title + text
    bm25-flat   the same with b = 0.1 (weak length normalisation) and k1 = 0.9
    bm25-title  BM25 over the titles only: a clearly weaker system

Scores are written strictly decreasing along each ranking (a tie is moved down by 1e-6): tied
scores are ordered by convention, differently by trec_eval (docid descending, as harness) and
ranx, and the benchmark compares the tools' numbers, not their tie rules.

The runs are what `scripts/bench_compare_runs.py` compares with `harness compare-runs` and ranx.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

DATA = Path("/work/shared/data/scifact")
DEPTH = 100
SYSTEMS = {
    "bm25": {"k1": 1.2, "b": 0.75, "fields": ("title", "text")},
    "bm25-flat": {"k1": 0.9, "b": 0.1, "fields": ("title", "text")},
    "bm25-title": {"k1": 1.2, "b": 0.75, "fields": ("title",)},
}


def _jsonl(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def write_runs(data: Path, out: Path) -> list[Path]:
    """One TREC run file per system of SYSTEMS, over `data`'s corpus and queries."""
    import bm25s  # imported here: --help works without it

    corpus = _jsonl(data / "corpus.jsonl")
    queries = _jsonl(data / "queries.jsonl")
    doc_ids = [d.get("_id", d.get("id")) for d in corpus]
    qids = [q.get("_id", q.get("id")) for q in queries]
    query_tokens = bm25s.tokenize([q["text"] for q in queries], stopwords="en", show_progress=False)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, params in SYSTEMS.items():
        texts = [" ".join(d.get(f, "") for f in params["fields"]) for d in corpus]
        tokens = bm25s.tokenize(texts, stopwords="en", show_progress=False)
        model = bm25s.BM25(k1=params["k1"], b=params["b"], method="lucene")
        model.index(tokens, show_progress=False)
        docs, scores = model.retrieve(query_tokens, k=DEPTH, show_progress=False, n_threads=1)
        lines = []
        for qid, row, row_scores in zip(qids, docs, scores, strict=True):
            last = math.inf
            for rank, (doc, score) in enumerate(zip(row, row_scores, strict=True), start=1):
                if score <= 0:  # a document sharing no term with the query is not retrieved
                    continue
                # Strictly decreasing scores, in bm25s's order: with a tie the order would be a
                # matter of convention (trec_eval and harness: docid descending; ranx: its own),
                # and the tools would score different rankings, not differ in their numbers.
                shown = min(round(float(score), 6), round(last - 1e-6, 6))
                last = shown
                lines.append(f"{qid} Q0 {doc_ids[doc]} {rank} {shown:.6f} {name}\n")
        path = out / f"{name}.run"
        path.write_text("".join(lines), encoding="utf-8")
        written.append(path)
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help=f"a BEIR folder (default {DATA})")
    parser.add_argument("--out", type=Path, default=Path("results/scifact-runs"))
    args = parser.parse_args()
    if not (args.data / "corpus.jsonl").exists():
        print(f"make_scifact_runs: {args.data}/corpus.jsonl not found", file=sys.stderr)
        return 2
    for path in write_runs(args.data, args.out):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

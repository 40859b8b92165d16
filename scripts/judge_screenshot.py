"""Screenshot of the judging page for the docs: docs/img/judge-page.png.

Builds a pairs file of five SciFact pairs (../shared/data/scifact: claims and abstracts; made-up
text when the collection is absent), serves it with `harness.judge.page.serve` on 127.0.0.1,
opens it in the system's headless Chromium (Playwright, never a downloaded browser), grades the
first two pairs by key as a judge would, and saves the page.  Prints the path.

    .venv/bin/python scripts/judge_screenshot.py [--out docs/img/judge-page.png]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import httpx

from harness.judge.page import serve

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
CHROMIUM = Path("/usr/bin/chromium")
QUERY_IDS = ("1", "3", "5")  # three claims, their cited abstracts and one abstract they do not cite

# Ranks and reasons as `harness judge pairs` words them, for a branch that changed the ranking.
SIDES = [
    (None, 2, "the candidate ranks it #2, the baseline never returned it: unjudged, it decides "
     "ndcg@10 either way"),
    (1, 7, "the baseline's #1 fell to #7; nobody judged it"),
    (4, None, "the baseline ranked it #4, the candidate dropped it"),
    (None, 1, "the candidate's new #1 for this query, never judged"),
    (6, 3, "moved up 3 places into the candidate's top 5"),
]  # fmt: skip

MADE_UP = [
    ("0-dimensional biomaterials show inductive properties.", "Nanoparticle scaffolds and bone",
     "Zero-dimensional nanomaterials were tested as scaffolds for osteogenic differentiation..."),
    ("Aspirin lowers the risk of colorectal cancer.", "Low-dose aspirin and colorectal neoplasia",
     "In a cohort of 40,000 adults, regular low-dose aspirin use was associated with..."),
    ("Vitamin D deficiency is linked to depression.", "Serum 25(OH)D and mood disorders",
     "Cross-sectional data from 12 countries show a weak inverse association between..."),
]  # fmt: skip


def jsonl(path: Path) -> dict[str, dict[str, Any]]:
    rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line)
    return {str(row["id"]): row for row in rows}


def scifact_pairs() -> list[tuple[str, str, str, str, str]]:
    """(query_id, query, doc_id, title, text) of five SciFact pairs."""
    queries, corpus = jsonl(SCIFACT / "queries.jsonl"), jsonl(SCIFACT / "corpus.jsonl")
    cited: dict[str, list[str]] = {}
    for line in (SCIFACT / "qrels.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        query_id, doc_id, _ = line.split("\t")
        cited.setdefault(query_id, []).append(doc_id)
    chosen = [(q, d) for q in QUERY_IDS for d in cited.get(q, [])[:1]]
    chosen += [(QUERY_IDS[0], next(iter(corpus))), (QUERY_IDS[1], list(corpus)[1])]
    return [(q, queries[q]["text"], d, corpus[d]["title"], corpus[d]["text"]) for q, d in chosen]


def made_up_pairs() -> list[tuple[str, str, str, str, str]]:
    return [
        (f"q{i % 3 + 1}", MADE_UP[i % 3][0], f"doc-{100 + i}", MADE_UP[i % 3][1], MADE_UP[i % 3][2])
        for i in range(5)
    ]


def write_pairs(path: Path) -> int:
    found = scifact_pairs() if (SCIFACT / "queries.jsonl").is_file() else made_up_pairs()
    with path.open("w", encoding="utf-8") as handle:
        for order, ((qid, query, did, title, text), (base, cand, why)) in enumerate(
            zip(found[:5], SIDES, strict=False), start=1
        ):
            handle.write(json.dumps({
                "query_id": qid, "query": query, "doc_id": did, "title": title, "text": text,
                "baseline_rank": base, "candidate_rank": cand, "why": why, "order": order,
                "comparison": "main (3f2a9c1) vs rerank-bm25f (8b01d4e)",
            }) + "\n")  # fmt: skip
    return min(len(found), 5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "judge-page.png")
    args = parser.parse_args(argv)
    from playwright.sync_api import expect, sync_playwright

    out = args.out.resolve()
    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)  # the page shows the labels path as given: a short one, as a judge types
        pairs, labels = Path("pairs.jsonl"), Path("labels.jsonl")
        count = write_pairs(pairs)
        urls: queue.Queue[str] = queue.Queue()
        thread = threading.Thread(
            target=serve, args=(pairs, labels), kwargs={"by": "ana", "on_ready": urls.put},
            daemon=True,
        )  # fmt: skip
        thread.start()
        url = urls.get(timeout=30)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(
                    executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"]
                )
                page = browser.new_page(viewport={"width": 1280, "height": 860})
                page.goto(url, wait_until="load")
                expect(page.locator("#progress")).to_have_text(f"0 of {count} judged")
                for key, judged in (("2", 1), ("0", 2)):
                    page.keyboard.press(key)
                    expect(page.locator("#progress")).to_have_text(f"{judged} of {count} judged")
                out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(out), full_page=True)
                browser.close()
        finally:
            httpx.post(url + "done", json={})
            thread.join(timeout=30)
            os.chdir(ROOT)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

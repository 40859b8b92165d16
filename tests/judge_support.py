"""A small saved comparison on a pooled gold set, for tests/judge/test_judge*.py: four queries,
top 3.

    q1  baseline [a1 x1 x2] hits; candidate [j1 n1 n2] misses: n1, n2 are reach pairs on a
        query whose hit@3 differs (flipped)
    q2  both miss: baseline [j2 m1 m2], candidate [j2 m1 m3]: m2 (the baseline's alone) and m3
        (the candidate's alone) are reach pairs; m1 both show, so it cannot flip either side
    q3  both hit: baseline [u1 a3 u2] ranks the unjudged u1 above its relevant a3 (an "above"
        pair); candidate [a3 u2 u5]
    q4  both [a4 v1 v2]: v1, v2 only with --all
"""

from __future__ import annotations

from pathlib import Path

from harness.gold import load_gold, write_native
from harness.report.saved import save_comparison
from harness.values.types import GoldQuery, GoldSet, QueryResult, RefRun, Repeat
from harness.verdict.comparison import CompareSettings
from harness.verdict.decide import compare

RELEVANT = {
    "q1": {"a1": 1, "j1": 0},
    "q2": {"a2": 1, "j2": 0},
    "q3": {"a3": 1},
    "q4": {"a4": 1},
}
BASELINE = {"q1": ("a1", "x1", "x2"), "q2": ("j2", "m1", "m2"), "q3": ("u1", "a3", "u2"),
            "q4": ("a4", "v1", "v2")}
CANDIDATE = {"q1": ("j1", "n1", "n2"), "q2": ("j2", "m1", "m3"), "q3": ("a3", "u2", "u5"),
             "q4": ("a4", "v1", "v2")}


def write_gold(path: Path) -> GoldSet:
    queries = [GoldQuery(qid, f"question {qid}", relevant=grades)
               for qid, grades in RELEVANT.items()]
    write_native(queries, path)
    text = path.read_text(encoding="utf-8").splitlines(keepends=True)
    # a pool: what some system returned was judged
    text[0] = text[0].replace('"version": 1', '"version": 1, "judged": "pooled"')
    path.write_text("".join(text), encoding="utf-8")
    return load_gold(path)


def _run(gold: GoldSet, answers: dict[str, tuple[str, ...]], sha: str) -> RefRun:
    results = tuple(QueryResult(qid, ids, status=200, latency_ns=1_000_000 + i)
                    for i, (qid, ids) in enumerate(answers.items()))
    return RefRun(sha, sha * 40, "c" * 64, gold.hash, None, "t", {}, (Repeat(0, results),))


def saved_comparison(tmp: Path) -> tuple[Path, Path]:
    """(comparison directory, gold file)."""
    gold_path = tmp / "gold.jsonl"
    gold = write_gold(gold_path)
    base, cand = _run(gold, BASELINE, "a"), _run(gold, CANDIDATE, "b")
    c = compare(gold, base, cand, CompareSettings(k=(3,), resamples=200, min_effect=0.12))
    return save_comparison(tmp / "results", c, (base, cand)), gold_path


CORPUS = "".join(
    f'{{"id": "{d}", "title": "T {d}", "text": "text of {d}, with a comma"}}\n'
    for d in ("a1", "x1", "x2", "j1", "n1", "n2", "j2", "m1", "m2", "m3", "u1", "a3", "u2", "u5",
              "a4", "v1", "v2", "a2")
)

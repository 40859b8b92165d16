"""`harness metrics`: a run file scored against a gold set, as trec_eval scores it.

TREC qrels (without a topics file) and a TREC run are read column-wise
(`harness.score.runfile.evaluate_trec_files`: no Python object per line); any other gold set or
run, or a file the exact readers must name a problem of, is read by those readers, whose
file:line errors the user then sees. Both give the same numbers, to the last bit.
"""

from __future__ import annotations

import argparse
from pathlib import Path

EXAMPLES = {
    "metrics": "harness metrics --gold gold/example.jsonl --run gold/example-run.jsonl"
    "\n  harness metrics --gold qrels.txt --run bm25.run --metrics ndcg_cut_10,P_5,map"
    "\n  harness metrics --gold qrels.txt --run new.run --metrics \"Judged@10,bpref,ndcg'@10\"",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gold", required=True, type=Path, help="native JSONL, BEIR dir or TREC qrels")
    p.add_argument("--run", required=True, type=Path, help="TREC run file or native JSONL run")
    p.add_argument(
        "--queries",
        type=Path,
        help="topics file for TREC qrels (optional: scoring needs no query text; with it, "
        "per-query output shows the texts)",
    )
    p.add_argument("--corpus", type=Path, help="corpus JSONL: also check judged ids exist")
    p.add_argument(
        "--metrics",
        default="hit@5,recall@10,mrr@10,ndcg@10,p@5",
        help="comma-separated, in harness's, ir_measures' or trec_eval's names (nDCG@10, P_5, "
        "map, recip_rank); how much was judged and judged ids only: Judged@10, bpref, "
        "ndcg'@10 (quote the prime); default hit@5,recall@10,mrr@10,ndcg@10,p@5",
    )
    p.add_argument("--rel-level", type=int, default=1, help="minimum grade that counts as relevant")
    p.add_argument("--per-query", action="store_true", help="also every query's value")
    p.add_argument(
        "--format",
        choices=("text", "json", "csv", "table"),
        default="text",
        help="text (tables; 'table' is the old name, still accepted), json or csv",
    )


def run(args: argparse.Namespace) -> int:
    from harness.cli.exits import EXIT_OK
    from harness.cli.plan import metric_specs
    from harness.gold import load_gold
    from harness.report.runs import render_evaluation
    from harness.score.evaluation import evaluate
    from harness.score.runfile import (
        evaluate_trec_files,
        require_gold_queries,
        start_loading_run,
    )

    specs = metric_specs(args.metrics)
    if args.queries is None and args.corpus is None:
        fast = evaluate_trec_files(args.gold, args.run, specs, args.rel_level)
        if fast is not None:
            print(render_evaluation(fast[0], args.format, args.per_query, gold=fast[1]), end="")
            return EXIT_OK
    pending = start_loading_run(args.run)  # read beside the gold set; its errors come after
    # Scoring reads no query text: TREC qrels score without a topics file (`trec_eval qrels run`).
    gold = load_gold(args.gold, queries=args.queries, corpus=args.corpus, texts=False)
    run = pending()
    require_gold_queries(run, gold, args.gold)
    evaluation = evaluate(
        gold, run.rankings, specs, args.rel_level, scores=run.scores, judged_as_zero=True
    )
    print(render_evaluation(evaluation, args.format, args.per_query, gold=gold), end="")
    return EXIT_OK

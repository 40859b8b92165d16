"""`harness metrics`: a run file scored against a gold set, as trec_eval scores it.

TREC qrels (without a topics file) and a TREC run are read column-wise
(`harness.score.runfile.evaluate_trec_files`: no Python object per line); any other gold set or
run, or a file the exact readers must name a problem of, is read by those readers, whose
file:line errors the user then sees. Both give the same numbers, to the last bit.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from harness.cli.exits import EXIT_OK
from harness.report.runs import render_evaluation
from harness.score.metrics import MetricSpec
from harness.score.runfile import evaluate_trec_files, require_gold_queries, start_loading_run


def metrics(args: argparse.Namespace, specs: Sequence[MetricSpec]) -> int:
    if args.queries is None and args.corpus is None:
        fast = evaluate_trec_files(args.gold, args.run, specs, args.rel_level)
        if fast is not None:
            print(render_evaluation(fast[0], args.format, args.per_query, gold=fast[1]), end="")
            return EXIT_OK
    from harness.gold import load_gold
    from harness.score.evaluation import evaluate

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

"""Numbers from rankings, pure: metrics per query and their aggregates.

    metrics.py     the metric registry (`parse_metric("ndcg@10")`), one function per metric,
                   per-query values (trec_eval's conventions, checked against pytrec_eval);
                   judged@k, bpref and the condensed (primed) metrics that see unjudged ids
    judged.py      the rankings judged once (deduplicated, grades looked up, ideal gains, which
                   ranks were judged at all): what every metric reads
    evaluation.py  a gold set and a ranking per query in, an Evaluation (per query, per slice,
                   overall) out
    context.py     answer spans in returned texts: the characters of the context metrics
    definition.py  the evaluation-definition hash, per part, and which part differs
    runfile.py     reading TREC and native run files into rankings (`harness metrics`); the one
                   module here that reads files
    arrowrun.py    a well-formed TREC run's text read by pyarrow's CSV reader (ids kept in Arrow)
    columns.py     the same by pandas' tokenizer, for runs pyarrow does not take (tabs, runs of
                   spaces); either declines anything the line reader of runfile.py would report

In: judgements and rankings. Out: numbers. metrics and evaluation do no I/O, read no clock and
draw no random number.
"""

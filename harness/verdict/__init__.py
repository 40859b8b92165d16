"""Is the difference real: two RefRuns in, a Comparison with its verdicts out. Pure.

    decide.py      compare(gold, baseline, candidate, settings) -> Comparison
    validity.py    what makes a run unusable (failures, errored answers) and the invalid verdict
    repeats.py     which repeats a verdict uses, and a repeat's answers by query id
    scopes.py      metrics per scope (overall, each slice) with their paired tests
    details.py     flips, drift, answers to unanswerable queries, outranks pairs, latency
                   (paired only for runs measured together), throughput, the machine's load
    summary.py     the quality and latency verdicts and their reasons
    stats.py       the tests themselves: McNemar exact, sign-flip randomization, bootstrap, Holm
    sequential.py  the resampling tests, batched and stopping once each answer is settled
    distributions.py  binomial tails and pmf (exact integers), Student's t quantile: no scipy
    latency.py     percentiles, per-round paired ratios and the t test over rounds, throughput
    order_effect.py  how much slower the second of a time-paired exchange is (from the data)
    latency_rule.py  rounds until the latency answer is clear: the group-sequential rule
    latency_bounds.py  its plans' last boundaries, precomputed for the budget advice (a table
                   in latency_bounds_{mean,tail,equivalence}.py, by scripts/latency_bounds.py)
    comparison.py  the Comparison value tree that report/ renders and results/ stores
    twobytwo.py    retrieval vs generation: a run's top-k hits against answer grades, movement
    same_definition.py  whether two saved comparisons share their evaluation definition
    systems.py     run files of several systems, each compared with the first: Holm across
                   systems x cutoffs (`harness compare-runs`)
    threshold.py   `harness threshold`: top scores of answerable vs unanswerable queries, a cutoff

No I/O, no clock, no subprocess; the only randomness is numpy's default_rng(seed), so a verdict
is a function of its inputs and the seed.  (The latency verdict uses no randomness at all.)
"""

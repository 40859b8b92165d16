"""How we ask, N rounds: the gold set replayed over HTTP against booted services.

    client.py  one query: the request built from the config, the answer's ids, scores and
               latency, every failure kind named (never a score)
    runner.py  RefSession (one ref: worktree, build, boots) and run_interleaved (the rounds of
               several refs interleaved), into RefRun records flushed under results/

In: a RunPlan (config, gold set, refs) and a repeat count. Out: RefRun values, one per ref,
each holding every repeat's QueryResults and any RunFailure. Scores nothing.
"""

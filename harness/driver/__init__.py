"""The run driver: refs checked out, built, booted round after round, asked, and recorded.

    plan.py    RunPlan, what the runs of one invocation share (the config, the queries to ask,
               not the judgements: `run_plan(config, gold, ...)`), and SharedReading, the
               requests and answers the sessions measured together share
    session.py RefSession (one ref: worktree, build, a boot per round) into a RefRun record
               flushed under results/
    pairs.py   one time-paired round: every ref booted, the warm-up in pairs, then each query
               to all of them back to back (the clock on the exchanges only)
    blocks.py  quality rounds asked block by block (compare --sequential), then latency rounds
               on the queries asked
    runner.py  run_pair / run_interleaved: rounds of sessions measured together, latency-only
               rounds until the latency rule decides (latency_rounds.py)
    load_rounds.py  the load phase's rounds (compare --rate)
    remote.py  --ray: each round one Ray task (both sides booted on one worker), its Repeats
               gathered back into the driver's sessions and records
    ended.py   how a service that stopped answering ended: its exit status, in words
    adapter_check.py  the first answers held against query.ids before the next boot
    recovery.py  cleaning up after a run that died holding worktrees, temp dirs, processes

In: a RunPlan (config, the gold set's queries), refs and a repeat count. Out: RefRun values,
one per ref, each holding every repeat's QueryResults and any RunFailure. Scores nothing. The
top stage: it imports checkout, boot, replay and results, and none of them imports it.
"""

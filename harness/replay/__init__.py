"""How we ask, N rounds: the gold set replayed over HTTP against booted services.

    client.py  one query: the answer's ids, scores and latency, every failure kind named
               (never a score); the timed path (Channel) connects before the clock (one
               keep-alive socket per service, or a new one per query for a service that
               closes it) with every request encoded beforehand
    request.py the request built from the config, and its bytes, encoded once per ref
    wire.py    one keep-alive HTTP/1.1 connection and the exchange timed over it
    runner.py  RefSession (one ref: worktree, build, boots) and run_interleaved (time-paired
               rounds: each boots every ref, then each query goes to all of them back to back),
               into RefRun records flushed under results/
    order.py   who goes first in each query's exchange: balanced per round, drawn per compare
    remote.py  --ray: each round one Ray task (both sides booted on one worker), its Repeats
               gathered back into the driver's sessions and records

In: a RunPlan (config, gold set, refs) and a repeat count. Out: RefRun values, one per ref,
each holding every repeat's QueryResults and any RunFailure. Scores nothing.
"""

"""How we ask, N rounds: the gold set replayed over HTTP against booted services.

    client.py  one query: the answer's ids, scores and latency, every failure kind named
               (never a score); the timed path (Channel) connects before the clock (one
               keep-alive socket per service, or a new one per query for a service that
               closes it) with every request encoded beforehand
    request.py the request built from the config, and its bytes, encoded once per ref; a
               query that would break a header refused by id before anything boots
    wire.py    one keep-alive HTTP/1.1 connection and the exchange timed over it
    session.py RefSession (one ref: worktree, build, a boot per round) into a RefRun record
               flushed under results/
    ended.py   how a service that stopped answering ended: its exit status, in words
    pairs.py   one time-paired round: every ref booted, the warm-up in pairs, then each query
               to all of them back to back (the clock on the exchanges only)
    runner.py  run_pair / run_interleaved: rounds of sessions measured together, latency-only
               rounds until the latency rule decides (latency_rounds.py)
    order.py   who goes first in each query's exchange: balanced per round, drawn per compare
    remote.py  --ray: each round one Ray task (both sides booted on one worker), its Repeats
               gathered back into the driver's sessions and records

In: a RunPlan (config, gold set, refs) and a repeat count. Out: RefRun values, one per ref,
each holding every repeat's QueryResults and any RunFailure. Scores nothing.
"""

"""How we ask: the gold set's queries sent over HTTP to a running service, and its answers read.

    client.py  one query: the answer's ids, scores and latency, every failure kind named
               (never a score); the timed path (Channel) connects before the clock (one
               keep-alive socket per service, or a new one per query for a service that
               closes it) with every request encoded beforehand
    request.py the request built from the config, and its bytes, encoded once per ref; a
               query that would break a header refused by id before anything boots
    wire.py    one keep-alive HTTP/1.1 connection and the exchange timed over it
    paths.py   JMESPath expressions of the answer (query.ids, scores, texts), compiled once
    ids.py     ids from any answer: JSON fields, id templates, HTML selectors
    order.py   who goes first in each query's exchange: balanced per round, drawn per compare
    open_loop.py, schedule.py   the load phase: requests fired on an arrival schedule

In: a QueryConfig, the queries and a way to reach a service. Out: QueryResults. Boots nothing,
records nothing: the run driver (`harness.driver`) decides when and to whom.
"""

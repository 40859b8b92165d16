"""`harness judge`: the (query, document) pairs a comparison's verdict waits on, judged and merged.

    pairs    from a saved comparison, the unjudged pairs that decide its verdict, most decisive
             first, as JSONL or CSV (`harness.judge.pairs`)
    page     a local judging page on 127.0.0.1, keyboard grades 0-3 (`harness.judge.page`)
    label    a user's command pre-labels pairs: machine labels, kept apart (`harness.judge.machine`)
    merge    the labels into the gold set, with provenance (`harness.judge.merge`)
"""

"""`harness history`: metrics and latency per commit over a results directory (asv's graph, for
retrieval).

    collect.py   the I/O: run records (results/runs/*.json) or saved comparisons, and the commit
                 order and parents from git (`git rev-list --topo-order --reverse --parents`),
                 or the order they were measured in when git has none of them
    points.py    pure: one run record scored against the gold set, or one side of a comparison,
                 as a Point (per-query values, per-boot latency p50)
    table.py     pure: the Points aggregated per commit with pandas, in commit order
    graph.py     pure: the measured commits' graph (nearest measured ancestors, lanes)
    render.py    the table as text, Markdown, CSV, or an HTML page with one plot per metric

In: a results directory (and the gold set, to score run records). Out: a pandas DataFrame, one
row per commit, rendered.  Numbers from different times are not a pair: the page shows levels
per commit, and gives no verdict (that is `compare`'s, time-paired).
"""

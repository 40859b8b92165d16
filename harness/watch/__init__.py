"""harness watch: a branch watched over time (asv's regression detection, for retrieval, with
every flag confirmed by a paired compare and bisected).

    path = branch_path(repo, "main", depth=50)                 # harness.watch.commits
    todo = choose(path, measured, budget=10)                   # what to measure this run
    series = build(points, [c.sha for c in path], metrics)     # harness.watch.series
    result = watch(path, series, detections, compare_pair, latency_name=LATENCY)  # .run
    render_watch(result, "text")                               # harness.watch.render

What enters: the branch's first-parent commits, the history's points (run records scored on the
gold set: `harness.history.points`), the scan's settings per series (`Detection`: false-alarm
rate, band), and a `compare_pair(before, after)` callback that measures two commits together by
`harness compare`'s engine.
What leaves: a `Watch`: every flag with its range, the scan's p, the fresh compare's verdict,
whether it was confirmed, and for a confirmed step the bisection inside its range and the
culprit; `harness.cli.watch` maps a confirmed regression to exit 1.
What it never does: report a flag the fresh compare did not call, or bisect outside a flagged
range.  `changepoint`, `series` and `run` are pure (the scan is seeded); `commits` reads git and
the results directory, `saved` writes the report.
"""

"""harness bisect: which commit of a branch made it regress (asv's `find`, git's `bisect`).

    good, bad, path = first_parent_path(repo, "v1.2", "main")       # harness.bisect.path
    bisection = bisect(good, bad, path, Criterion("hit@5"), step)    # harness.bisect.run
    render_bisection(bisection, "text")                              # harness.bisect.render

What enters: two refs of the user's repository, what decides a step (a metric, latency, or the
quality verdict), and a `step(commit)` callback that compares the good end with a commit by
`harness compare`'s engine (`harness.compare`: measured together, the same statistics, builds
cached).
What leaves: a `Bisection`: every step with its verdict and mark, and the outcome (found,
ambiguous, not found, invalid) that `harness.cli.exits.bisect_status` maps to 0, 1, 1, 3.
What it never does: guess.  An inconclusive or invalid step is a skip (`harness.bisect.walk`);
the choice of commit and the reading of a verdict (`walk`, `judge`) are pure.
"""

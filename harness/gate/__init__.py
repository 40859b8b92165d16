"""`harness gate`: fail CI when a ref falls below a committed baseline by more than the noise.

    measured = measure(gold, run, ("mrr@10", "recall@10"), max_errors=0)   # measure (pure)
    result = check(read_baseline(path), measured, strict=False)           # rule (pure)
    render_gate(result, "text" | "markdown" | "json")                      # render (pure)
    write_baseline(path, measured.baseline)     # baseline_file: --update-baseline, byte-stable

The package: `measure` (a run scored per scope, with its noise; the Baseline values), `rule`
(every row's status and the outcome; `update` for --update-baseline), `paired` (rows decided
by compare's tests), `rows` (one row), `baseline_file` (the
committed file: byte-stable text, strict reading, atomic rewrite) and `render` (text, Markdown,
JSON).  Nothing is imported from here: import each name from its module.

What is measured (`measure`): the gold queries answered without error in every usable repeat
(a repeat whose only failure is an unconfirmed teardown is usable; any other failed repeat, a
build failure, or more errored answers than `max_errors` make the run invalid, as in compare).
Each repeat is scored with `harness.score.evaluation.evaluate` on those queries; a scope's value for
a metric is the mean over repeats of that repeat's mean over the scope's answerable queries, and its
noise is the range of those repeat means (max - min: 0 with one repeat, or with a service that
answers identically every time). Scopes are "overall" and every slice with at least one answerable
query.

The baseline file is JSON with sorted keys, every number rounded to 6 decimals, and no clock,
host or path in it, so the same measurement always gives the same bytes. It holds the gold
set's sha256, the gated metrics, the commit it was measured on and its repeats, and one line per
scope and metric ("overall mrr@10", "slice rare mrr@10": n, value, noise), so that its diff in a
pull request is the before/after table, one line per number that moved.

The rule is compare's (`paired`): the file also holds each analysed query's value per gated
metric (one line per metric and query), and each row is decided by the paired test compare uses
for that metric on the queries analysed on both sides (McNemar exact / exact sign-flip on hit
rates for hit@k, randomization test with a bootstrap CI for the rest), Holm-adjusted across the
gated metrics overall and across the slices per metric, at compare.alpha and compare.seed:
"regressed" fails, "improved" passes, and a change the test cannot tell from noise is "ok"
whatever its size, unless --max-drop X is given ("dropped": a drop of more than X fails).  A
row still fails when it falls to zero from above zero (compare's slice collapse) or its slice
vanishes.  A [gate.floors] floor fails the gate as it fails compare.  With margins
(--non-inferior, [gate] non_inferior) an overall row of a metric with one passes only when its
one-sided interval shows it not worse than the margin ("worse than margin" fails; "not shown
within margin" is the outcome NOT_SHOWN, exit 4, never a pass; `paired` states it).

The noise rule below applies with --strict (tolerance 0), and to a baseline file written before
per-query values (the result says so and how to re-record it).  For every scope of the baseline
and every gated metric, with before and after rounded to 6 decimals and tolerance =
max(noise recorded, noise now), or 0 with `strict`:

- the slice has no analysed answerable query now  -> "vanished", fails;
- before > 0 and after == 0                       -> "fell to zero", fails whatever the noise;
- before - after > tolerance                      -> "dropped", fails;
- after - before > tolerance                      -> "improved", passes (update the baseline);
- otherwise                                       -> "ok" (inside the noise), passes.

The file also holds the gate's evaluation definition (`measure.gate_definition`: gold set,
corpus, query settings, metric version); a run under another definition is NOT_COMPARABLE,
naming the part that differs (a file written before definitions has none and is compared as
before).  A gold set whose sha256 differs from the baseline's, or a gated metric the baseline
does not hold, is NOT_COMPARABLE: never a pass. An invalid run is INVALID: never a pass either.
"""

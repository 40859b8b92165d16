"""`harness sweep`: set a ranking knob from measurement, one isolated run per value.

    grid = read_grid(["SINK=0,1,20"], None)            # params: NAME=V1,V2,...; several: a grid
    runs = run_sweep(plan, "baseline", "main", grid.points, repeats=3)    # run: the runner (I/O)
    sweep, comparisons = summarise(gold, grid.points, runs, grid.reference, metrics, settings)
    render_sweep(sweep, "text" | "markdown" | "json")                    # render (pure)
    save_sweep(results_dir, sweep, comparisons)                          # run: files (I/O)

The package, in the order a sweep goes through it: `params` (parsing --param and --reference
into grid points; pure), `run` (each point a variant, run and saved by the engine: the I/O),
`summary` (every value compared with the reference, the best of each column marked; pure) and
`render` (text, Markdown and the JSON document; pure). What a sweep and a matrix both do (run
the variants, compare each with the reference, lay out and save the table) is the engine in
`harness.variants`; this package says only what a sweep's variants are and what its page
shows. Nothing is imported from here: import each name from its module, so that loading a pure
module never loads the runner.

How a value reaches the service: as an environment pin NAME=value on the side's
`service.env` (replacing any pin of that name from the config), so each value has its own
config hash, its own run record and its own reusable measurements. A start command reads it
from the environment, e.g. `start = "{python} svc.py --port {port} --rrf-k $RRF_K"` (the
command runs under /bin/sh); `{NAME}` placeholders are not supported, since the config schema
accepts only the harness's own placeholders.

Runs: one RefSession per value, opened together, repeats interleaved (v1, v2, ..., v1, v2, ...)
so that machine drift hits every value alike, as `run_pair` does for two refs
(`harness.variants.run`).

Statistics: every value is compared with the reference value (the first, or `--reference`) by
`harness.verdict.decide`, the reference playing the baseline: the same paired tests, power
and Holm correction across slices as `harness compare`. The swept metrics are added to
compare's `gate_on`, so that it computes them at any cutoff (and lets them decide each value's
quality verdict). The reference row's numbers are the baseline side of the first valid
comparison.

The table, one per metric: one row per value, one column per scope (overall, then each slice
with an answerable query, in gold order). A cell holds the value's mean (compare's numbers:
hit@k from modal outcomes, other metrics as the mean over queries of the per-query mean over
repeats), then `+` / `-` when the paired test calls it improved / regressed against the
reference, `*` when it is the highest in its column among the valid rows (every value tied at
the top is marked, after rounding to 6 decimals), and `!` when compare flags that slice as
collapsed (fell to zero from non-zero, or regressed while the overall row did not). An invalid
value (a boot failure, too many errored queries) shows "invalid" in every cell, is never best,
and makes `harness sweep` exit 3.
"""

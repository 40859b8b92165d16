"""The engine `harness sweep` and `harness matrix` share: variants of one ref's config run
together against one gold set, each compared with a reference variant, laid out per variant,
metric and scope, rendered and saved.

    runs = run_variants(side, ref, variants, repeats=3)                   # run: the runner (I/O)
    table, comparisons = compare_variants(gold, names, runs, reference, metrics, settings,
                                          family="values", unmatched="...")    # summary (pure)
    render(renderers(layout_of, to_dict), value, "text" | "markdown" | "json")  # render (pure)
    save_variants(results_dir, "sweep", document, report, comparisons)     # run: files (I/O)

What enters: a `Variant` per row (its name, the plan it runs under, its env pins), then the
runs and the gold set. What leaves: a `Table` (the rows' cells by scope then metric, and what
makes the rows comparable), each variant's `Comparison` with the reference, and the files
`results/<kind>_<UTC stamp>/` (<kind>.json, report.md, vs_<name>.json). What it never does:
read a command line or a file the user names, or decide what a variant is.

The front ends say only what differs: `harness.sweep` makes a variant of each grid point
(`harness.sweep.params`) and marks the best of each column; `harness.matrix` makes one of each
named configuration of the matrix file (`harness.matrix.spec`), adjusts the overall tests by
Holm across its rows and checks the constraints. Each lays its own page out and names its own
JSON document.

The rules both follow. Runs: one RefSession per variant, opened together, repeats interleaved
(v1, v2, ..., v1, v2, ...) so that machine drift hits every variant alike
(`harness.driver.runner.run_interleaved`); each record's `ref` is "REF [NAME]", and a variant
whose record exists for exactly these inputs (its pins and overrides are part of the config
hash) is reused unless `fresh`. Statistics: every variant is compared with the reference by
`harness.verdict.decide` (the paired tests of `harness compare`), the headline tests of all of
them Holm-adjusted as one family (`harness.verdict.systems.judged_together`); the compared
metrics are added to compare's `gate_on`, so that it computes them at any cutoff. The scopes are
"overall", then each slice with an answerable query, in gold order. The reference row's numbers
are the baseline side of the first valid comparison; when no variant could be compared with it,
it is invalid too.

Nothing is imported from here: import each name from its module, so that loading a pure module
(`summary`, `render`) never loads the runner (`run`).
"""

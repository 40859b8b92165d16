"""`harness matrix`: an ablation matrix, named configurations of one ref, each against a named
reference, with constraints that fail the run.

    matrix = read_matrix(Path("ablation.toml"))                      # spec: the file (exit 2)
    runs = run_matrix(plan, "baseline", "main", matrix, repeats=3)    # run: the runner (I/O)
    result, comparisons = summarise(gold, matrix, runs, metrics, settings)       # summary (pure)
    render_matrix(result, "text" | "markdown" | "json")                          # render (pure)
    save_matrix(results_dir, result, comparisons)                                # run: files

A separate command, not `sweep --matrix`: a sweep's rows are the values of knobs and it picks
the best; a matrix's rows are named, hand-written configurations (env pins and service/query
overrides), compared with one reference, Holm-corrected across the rows, and gated by
constraints. The machinery is the sweep's, the engine both share (`harness.variants`): one
RefSession per configuration, repeats interleaved (`harness.driver.runner.run_interleaved`),
every configuration compared with the reference by `harness.verdict.decide` (the paired tests
of `harness compare`), and the records saved like a sweep's (`results/matrix_<stamp>/`). This
package says only what differs: the matrix file (`spec`, `values`), each configuration's plan
and its run (`run`), Holm across the rows and the constraints (`summary`), and its page and
JSON document (`render`).

Statistics: per metric, the overall p of every non-reference configuration is Holm-adjusted
across the configurations (`harness.verdict.stats.holm`); an improved/regressed call whose
adjusted p is not below alpha becomes "no measurable difference", saying why. The reference
row's numbers are the baseline side of the first valid comparison.

Constraints (`[[constraint]]`): `max_drop` bounds the paired difference against the reference
(reference - configuration, the point estimate of that pair, to 6 decimals); `min` / `max` bound
the configuration's own mean. Per slice with `slice = NAME`, else overall. A constraint that
cannot be checked (an invalid run, a slice with no analysed query) fails. Exit statuses (the
README's table): 3 when any configuration's run is invalid, else 1 when a constraint failed
(like a regression), else 0; 2 for a bad matrix file, located as file:line: field, before
anything is built.
"""

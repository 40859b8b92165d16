"""`harness compare`'s engine: two refs (or two running deployments) measured together, then
compared, checked against the floors and the answer grades.

    settings = ref_differences(config, settings, "main", "feat/x")   # settings: [ref."PATTERN"]
    grades = answer_grades(baseline_answers, candidate_answers, k, gold)   # answer_grades: first
    order, why_not = sequential_order(plan, settings, reuse=False)    # measure: ask all, or not
    runs = measure(plan, settings, "main", "feat/x", repeats=3, order=order)
    comparison, cached = analyse(plan, settings, floors, runs, redact=False)   # analysis
    comparison = with_twobytwo(comparison, gold, runs, grades, k)              # answer_grades

The package, in the order a compare goes through it: `settings` (what the config and the two
refs make of the comparison's settings, and the checks on them before anything is built; pure
but for resolving a ref), `measure` (the way both sides are measured: block by block under
compare.sequential, two deployments by URL, or two refs checked out, built and booted; the
runner's I/O), `analysis` (scored and tested, read back from the comparison cache when nothing
changed, the [gate.floors] checked on the candidate) and `answer_grades` (the retrieval/generation
2x2 of each side and the movement between them, from the answer grades).  Saving and rendering
are the stages' (`harness.report.saved.save_comparison`, `harness.report.page.render`).

What enters: the driver's RunPlan (config, the queries, results directory, progress), the gold
set, CompareSettings and the two refs or URLs.  What leaves: the two RefRuns and the
Comparison.  What it never does: print (the CLI says what happened: a comparison read back, a
run that cannot be sequential) or decide an exit status.  Nothing is imported from here:
import each name from its module.
"""

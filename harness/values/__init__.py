"""The values that travel between stages and the few values two stages share: frozen, and
importing no stage (nor `harness.process`: a value is made and read, it never acts).

    types.py    the frozen values between stages: GoldSet, RefRun, Repeat, Definition, Verdict...
    answers.py  a repeat's answers held as columns (`Answers`, re-exported by `types`)
    costs.py    what one boot cost (`Usage`), apart so the boot stage makes one without numpy
    limits.py   the upper bound of every duration and count a user gives
    urls.py     a deployment's base URL (`BaseUrl`), parsed once and checked
    budget.py   a compare's latency budget (`LatencyBudget`, `parse_budget`)
    swing.py    the smallest net swing an exact paired test can call

They may import `harness.errors` and `harness.text`, nothing else of the harness. This face
imports nothing, so `harness.values.limits` loads no numpy.
"""

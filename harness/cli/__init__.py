"""The command line, on top of the pipeline: parse, call the stages and tools, render, exit.

    main.py      main(argv) -> exit status: parse, run the named command, map errors and signals
    parser.py    the tree of commands (`harness --help` builds no command's arguments)
    options.py   the arguments several commands share (run options, --side, --ray, ...)
    plan.py      a running command's arguments made a RunPlan, gold set and CompareSettings
    output.py    where a report goes: stdout, or a file never overwritten unless --force
    exits.py     every exit status, the one mapping from outcomes to them, and their --help
    progress.py  what a person watching a terminal sees while runs boot and replay

and one module per command, each declaring its arguments (`add_arguments`, `EXAMPLES`) and
running it (`run`): compare, run, report, metrics, compare_runs, gold (check, build, convert,
stats), sweep, matrix, gate, bisect, threshold, history, twobytwo, export, schema, clean, demo.

In: argv and the environment. Out: text on stdout, notes and errors on stderr, an exit status.
It decides and computes nothing (compare's engine is `harness.compare`, the others' their tool
or stage): a HarnessError becomes `harness: error: ...` and status 2.
"""

"""The command line, on top of the pipeline: parse, call the stages, render, exit.

    main.py      main(argv) -> exit status; one cmd_* per subcommand (load, call, render, return)
    parser.py    the argparse tree (`harness --help` loads no stage)
    exits.py     every exit status, and the one mapping from verdicts to them
    progress.py  what a person watching a terminal sees while runs boot and replay

In: argv and the environment. Out: text on stdout, notes and errors on stderr, an exit status.
It decides and computes nothing: a HarnessError becomes `harness: error: ...` and status 2.
"""

"""Where a ref runs: a git worktree of one commit, built once.

    worktree.py  resolve a ref to its full SHA; `with worktree(repo, sha) as path` (a detached
                 worktree outside the user's tree, removed on exit)
    build.py     the build command (and the optional venv) run once per SHA, cached by its key
    delta.py     what a build wrote into its checkout, stored with the cached build and restored
                 into each fresh checkout

The build runs isolated as a service does (`harness.boot.isolation`, `harness.boot.processes`,
`harness.boot.interpreter`): checkout imports boot, never the reverse.

In: the user's repository, a ref, the side's ServiceConfig. Out: a path holding that commit,
built. Never touches the user's own working tree or index.
"""

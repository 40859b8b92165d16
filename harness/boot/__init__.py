"""One service up, isolated, and ended confirmed dead.

    isolation.py  throwaway HOME/TMPDIR/XDG root, the data copy, the allowlisted environment,
                  placeholders of `start` and `prepare`
    sandbox.py    bubblewrap per boot (own network and PID namespace, read-only files, the home
                  hidden) or plain; SandboxLink: sockets made inside, httpx transport over them
    mounts.py     what a sandbox shows of the host's files: the hidden folders, what is mounted
                  back (the service's interpreter, asked of it), why a named path is not there
    enclosure.py  one boot's sandbox assembled: its own uid (root's), tmpfs folders, limits, argv
    seccomp.py    the filter refusing a new user namespace where bwrap cannot
    inside.py     the sandbox's first process: confines, then starts the service, hands out
                  its sockets
    ports.py      a port leased for a boot's life: locked against other boots, held in the kernel
    spawn.py      `/bin/sh -c` in a new session, log offsets and tails
    service.py    `with running_service(spec, worktree) as svc`: boot, ready, prepare, teardown
    advice.py     what a failed boot tells the user to do (a missing module, an unkillable pid)
    probe.py      the readiness GET over a plain socket (no httpx on a compare's path)
    transport.py  the httpx transport over sandbox sockets (`RunningService.transport()`)
    processes.py  finding every process of a boot and killing the whole tree
    interpreter.py  service.python found and identified (the venv's interpreter, in the build
                  key; {python} in `start`)
    deployed.py   a service already running at a URL: readiness checked, nothing started
    loader.py     [service.load]: the corpus posted over HTTP in batches, then an index call

In: a ServiceConfig and a built worktree. Out: a RunningService (its URL, pid, log, sandbox mode,
and `transport()` / `open_socket` / `connect()` to reach it) for the duration of a with-block,
then a TeardownReport. Sends no query of the gold set.
"""

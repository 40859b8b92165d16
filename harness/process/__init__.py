"""The harness process's own primitives: how it reads a file a user names, treats a signal,
keeps what a live run holds on disk, and loads an optional dependency. Every stage uses them;
none imports a stage.

    inputs.py     the one way a file a user names is read: a regular file, under its kind's cap
    signals.py    SIGTERM and SIGHUP unwind like Ctrl-C; the blocks no signal may cut short
    leftovers.py  what a live run holds on disk, so a run killed with SIGKILL is cleaned up after
    extras.py     the optional dependencies, and the one-line error when one is missing

They may import `harness.errors`, `harness.text` and `harness.values`. This face imports nothing.
"""

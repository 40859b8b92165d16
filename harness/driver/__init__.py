"""The run driver: what checks refs out, builds and boots them, has replay ask, and records.

    recovery.py   cleaning up after a run that died holding worktrees, temp dirs, processes

The top stage: it imports the stages below it (checkout, boot, replay, results) and none of
them imports it.
"""

"""One boot's bubblewrap sandbox, assembled: who the service is inside it, what it sees, and
the argv that makes it.

    mounts, prefix = enclose(link, spec, run_id=..., root=root, worktree=wt,
                             readable=[venv, ...], bound=[data], isolation=env)

Run as root, the boot gets a uid and gid of its own (`harness.boot.sandbox.service_ids`): its
root (the data copy) is given to them, and the sandbox's /etc/passwd and /etc/group name them.
HOME, TMPDIR and the XDG_* folders become tmpfs of `service.max_folder_bytes` (so does
/dev/shm), made afresh inside by the sandbox's first process, which also limits the processes
to `service.max_processes` and leaves uid 0 (`harness.boot.inside.confine`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from harness.boot.isolation import ROOT_DIRS, SCRATCH, account_files, give_root
from harness.boot.mounts import Mounts
from harness.boot.sandbox import Confine, SandboxLink, bwrap_prefix, plan_mounts, service_ids
from harness.config import ServiceConfig


def enclose(
    link: SandboxLink,
    spec: ServiceConfig,
    *,
    run_id: str,
    root: Path,
    worktree: Path,
    readable: Iterable[Path],
    bound: Iterable[Path],
    isolation: Mapping[str, str],
) -> tuple[Mounts, list[str]]:
    """The sandbox's mounts and the argv before `/bin/sh -c START` (see the module docstring);
    `readable` is mounted back read-only where it lies, `bound` bound read-only in place."""
    ids = service_ids(run_id)  # the harness is root: the service is not
    files = []
    if ids is not None:
        give_root(root, ids)
        files = account_files(root, ids, isolation["HOME"])
    mounts = plan_mounts(
        root=root,
        worktree=worktree,
        readable=readable,
        bound=bound,
        scratch=[root / name for name in SCRATCH],
        scratch_bytes=spec.max_folder_bytes,
        files=files,
    )
    confine = Confine(
        max_processes=spec.max_processes,
        dirs=tuple(isolation[name] for name in ROOT_DIRS),
        ids=ids,
    )
    prefix = bwrap_prefix(
        link.child_fd,
        root=root,
        worktree=worktree,
        mounts=mounts,
        confine=confine,
        filter_fd=link.filter_fd,
    )
    return mounts, prefix

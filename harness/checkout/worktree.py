"""The git stage: resolve a ref to a commit, and check it out somewhere the user will never notice.

    resolve_ref(repo, "feat/x")  ->  ResolvedRef(ref="feat/x", sha=<40 hex>, dirty=False)
    with checkout(repo, resolved) as path:   # a detached `git worktree` under the cache dir
        ...                                  # build, boot, query
    # gone: `git worktree remove --force --force`, then `git worktree prune`

The user's repository is only ever read, never changed: no checkout, no stash, no reset, no branch,
no write to its working tree, index or config. Commands run with `GIT_OPTIONAL_LOCKS=0` (so even a
read cannot refresh the index), `GIT_TERMINAL_PROMPT=0` (nothing may wait on a password) and
`core.hooksPath=/dev/null` (a user's post-checkout hook must not run against a harness worktree).
The only writes are git's own bookkeeping of the linked worktree (`.git/worktrees/<name>/`), which
removal deletes again. It works on a dirty tree, with staged changes, untracked files, a detached
HEAD, and in the middle of a rebase or merge: none of that is looked at except by `WORKTREE`.

The special ref `WORKTREE` names the user's uncommitted tree: every tracked file as it is on disk
(deleted ones left out) plus every untracked file that is not ignored (`git ls-files --cached
--others --exclude-standard`). It resolves to HEAD's sha with `dirty=True` and a `content_hash`;
a record names it `<sha>+dirty.<hash12>` (`ResolvedRef.key`), so two different dirty states are
never mistaken for one another, nor for the clean commit.

Layout under `cache_dir()` (which must lie outside the repository):

    <cache>/worktrees/<sha12>-<random>/                 a detached worktree of one commit
    <cache>/snapshots/<sha12>+dirty.<hash12>-<random>/  a copy of a WORKTREE snapshot (no .git)
    <cache>/builds/<key>/                               per-commit builds, see
    harness.checkout.build

Both kinds of checkout are removed on leaving the `with` block, normally, on error and on
KeyboardInterrupt, unless `keep=True`.

Submodules (best effort): when the commit has a `.gitmodules`, its top-level submodules are fetched
with `git submodule update --recursive`, their URLs passed as `-c` options (the user's own
`submodule.<name>.url` if set, else the `.gitmodules` URL resolved against the remote), so nothing
is written to the shared `.git/config`. A failure is logged as a warning and the checkout goes on
without them. A WORKTREE snapshot copies submodule directories as they are on disk, minus `.git`.

Git itself is driven through subprocesses (argument lists, never a shell string) where gitpython has
no API (worktree, ls-files flags, submodule update with -c) or where its pure-Python rev-parse would
differ from git's (abbreviated SHAs, `@{u}`), and where git finds the working tree (`rev-parse
--show-toplevel`); gitpython lists the refs an unknown ref's error suggests.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import logging
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.errors import RefError, clip
from harness.process import leftovers

log = logging.getLogger(__name__)

WORKTREE = "WORKTREE"
"""The ref that names the user's uncommitted tree."""

_GIT_ENV = {"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}
_GIT_OPTS = ("-c", "core.hooksPath=/dev/null")


@dataclass(frozen=True)
class ResolvedRef:
    """A ref as the user wrote it, and the commit (or dirty snapshot) it stands for."""

    ref: str
    sha: str  # 40 hex; for WORKTREE, HEAD's sha
    dirty: bool = False
    content_hash: str | None = None  # sha256 of a WORKTREE snapshot's paths and bytes

    @property
    def key(self) -> str:
        """How a record names it: the sha, or `<sha>+dirty.<hash12>` for a WORKTREE snapshot."""
        if self.dirty and self.content_hash:
            return f"{self.sha}+dirty.{self.content_hash[:12]}"
        return self.sha

    @property
    def short(self) -> str:
        """The first 12 hex of the sha, plus `+dirty.<hash12>` for a snapshot: a directory name."""
        return self.sha[:12] + self.key[len(self.sha) :]


# --------------------------------------------------------------------------- resolving


def resolve_option(repo: Path, ref: str, option: str) -> ResolvedRef:
    """`resolve_ref`, its RefError naming the option the ref was given by (--candidate)."""
    try:
        return resolve_ref(repo, ref)
    except RefError as exc:
        raise RefError(f"{option} {clip(ref, 80)}: {exc.message}", exc.details) from None


def resolve_ref(repo: Path, ref: str) -> ResolvedRef:
    """Resolve a branch, tag, full or abbreviated SHA, `HEAD`, remote branch or `WORKTREE`.

    Anything `git rev-parse` accepts and that names a commit resolves (an annotated tag peels to its
    commit). An unknown ref raises RefError listing close branch, tag and remote-branch names;
    an ambiguous abbreviated SHA raises RefError saying so. A path that is not inside a git
    repository raises RefError too.
    """
    root = _toplevel(repo)
    if ref == WORKTREE:
        head = _rev_parse(root, "HEAD")
        if head is None:
            raise RefError(
                f"{root}: WORKTREE needs a commit to stand on, and HEAD has none yet",
                ["commit once (`git commit`), then retry"],
            )
        return ResolvedRef(ref=ref, sha=head, dirty=True, content_hash=_snapshot(root))
    if not ref or ref.startswith("-"):
        raise RefError(f"{root}: {ref!r} is not a git ref", _ref_hints(root, ref))
    proc = _git(root, "rev-parse", "--verify", "--end-of-options", f"{ref}^{{commit}}", check=False)
    if proc.returncode == 0:
        return ResolvedRef(ref=ref, sha=proc.stdout.decode().strip())
    stderr = proc.stderr.decode(errors="replace")
    if "ambiguous" in stderr:
        raise RefError(
            f"{root}: {ref!r} is an ambiguous abbreviated SHA",
            ["give more hex digits, or the full SHA (`git rev-parse <longer prefix>`)"],
        )
    raise RefError(f"{root}: unknown ref {ref!r}", _ref_hints(root, ref))


def _ref_hints(root: Path, ref: str) -> list[str]:
    import git  # imported on use (a tenth of a second): only an unknown ref lists the refs

    with git.Repo(root) as repo:
        names = sorted({r.name for r in repo.references if not r.name.endswith("/HEAD")})
    close = difflib.get_close_matches(ref, names, n=3, cutoff=0.6)
    hints = [f"did you mean {', '.join(repr(n) for n in close)}?"] if close else []
    hints.append(f"list refs with `git -C {root} branch -a` and `git -C {root} tag`")
    return hints


def _toplevel(repo: Path) -> Path:
    """The top of the working tree holding `repo` (a folder in it), as git finds it."""
    if not Path(repo).is_dir():
        raise RefError(f"{repo}: no such directory", ["check `repo` in harness.toml"])
    proc = _git(Path(repo), "rev-parse", "--is-bare-repository", "--show-toplevel", check=False)
    said = proc.stdout.decode(errors="replace").splitlines()
    if "\n" in str(Path(repo).resolve()) or (proc.returncode == 0 and len(said) > 2):
        # git's answers (this one, `worktree list`) are one path a line: a newline in the
        # path would split it, and the worktree harness made could not be found again.
        raise RefError(
            f"{str(repo)!r}: the repository's path holds a newline, which harness cannot "
            "hand to git and read back one path a line",
            ["move or rename the folder (or a folder above it) to a name without a newline"],
        )
    if proc.returncode == 0 and len(said) == 2:
        return Path(said[1]).resolve()
    if said[:1] == ["true"]:
        raise RefError(f"{repo}: a bare repository has no working tree to compare from")
    stderr = proc.stderr.decode(errors="replace").strip()
    if "not a git repository" in stderr:
        raise RefError(
            f"{repo}: not a git repository",
            [
                "run harness inside a git checkout (its harness.toml's folder), or name one "
                "with --repo DIR (`git -C DIR status` to check)"
            ],
        )
    raise RefError(
        f"{repo}: git finds no working tree here (`git rev-parse --show-toplevel` exited with "
        f"status {proc.returncode})",
        [f"  {line}" for line in stderr.splitlines()[-5:]],
    )


def _rev_parse(root: Path, spec: str) -> str | None:
    proc = _git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", spec, check=False)
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


# What to do when git cannot check a commit out (docs/compare.md, "When a checkout fails").
CHECKOUT_ADVICE = (
    "objects missing from a partial clone or a mirror: fetch them first "
    "(git fetch --refetch origin)",
    "LFS pointers, or paths the service does not need: leave them out with a sparse checkout "
    "of your clone (git sparse-checkout set --no-cone '/*' '!/assets/'); harness's worktrees "
    "inherit its patterns",
)


def _git(
    cwd: Path, *args: str, check: bool = True, extra: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[bytes]:
    """Run one git command in `cwd`; with check=True a failure is a RefError quoting git."""
    cmd = ["git", *_GIT_OPTS, *extra, *args]
    proc = subprocess.run(
        cmd, cwd=cwd, env={**os.environ, **_GIT_ENV}, capture_output=True, check=False
    )
    if check and proc.returncode != 0:
        lines = proc.stderr.decode(errors="replace").strip().splitlines()[-5:]
        raise RefError(
            f"{cwd}: `git {' '.join(args)}` exited with status {proc.returncode}",
            [f"  {line}" for line in lines],
        )
    return proc


# --------------------------------------------------------------------------- WORKTREE snapshots

# An entry is (posix path relative to the top, kind, bytes): kind "f" file, "x" executable file,
# "l" symlink (bytes = its target).
_Entry = tuple[str, str, bytes]


def _snapshot_entries(root: Path) -> Iterator[_Entry]:
    """Every file of the uncommitted tree, sorted by path, read once."""
    listed = _git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").stdout
    rels: set[str] = set()
    for raw in listed.split(b"\0"):
        if not raw:
            continue
        rel = os.fsdecode(raw)
        path = root / rel
        if path.is_dir() and not path.is_symlink():  # a submodule: take what is on disk
            for sub in _walk_files(path):
                rels.add(sub.relative_to(root).as_posix())
        elif path.is_symlink() or path.is_file():
            rels.add(rel)  # a tracked file deleted on disk is left out
    for rel in sorted(rels):
        path = root / rel
        if path.is_symlink():
            yield rel, "l", os.fsencode(os.readlink(path))
        else:
            mode = path.stat().st_mode
            yield rel, "x" if mode & stat.S_IXUSR else "f", path.read_bytes()


def _walk_files(top: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            if name != ".git":
                yield Path(dirpath) / name


def _snapshot(root: Path, copy_to: Path | None = None) -> str:
    """The sha256 of the uncommitted tree; with `copy_to`, also write each entry there.

    Each entry is hashed as `path NUL kind NUL length NUL bytes`: length-prefixed, so no two
    different snapshots give the same byte stream; modification times do not count.
    """
    digest = hashlib.sha256()
    for rel, kind, data in _snapshot_entries(root):
        digest.update(b"%s\0%s\0%d\0" % (os.fsencode(rel), kind.encode(), len(data)))
        digest.update(data)
        if copy_to is None:
            continue
        target = copy_to / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if kind == "l":
            os.symlink(os.fsdecode(data), target)
        else:
            target.write_bytes(data)
            target.chmod(0o755 if kind == "x" else 0o644)
    return digest.hexdigest()


def _copy_snapshot(root: Path, dest: Path, resolved: ResolvedRef) -> None:
    copied = _snapshot(root, copy_to=dest)
    if copied != resolved.content_hash:
        raise RefError(
            f"{root}: the uncommitted tree changed since WORKTREE was resolved "
            f"(was {resolved.key}, now +dirty.{copied[:12]})",
            ["leave the tree alone while the harness runs, then retry"],
        )


# --------------------------------------------------------------------------- checkout


@contextlib.contextmanager
def checkout(repo: Path, resolved: ResolvedRef, *, keep: bool = False) -> Iterator[Path]:
    """Yield a private directory holding `resolved`; remove it on exit unless `keep`.

    A commit becomes `git worktree add --detach <cache>/worktrees/<sha12>-<random>`; a WORKTREE
    snapshot is copied to `<cache>/snapshots/<sha12>+dirty.<hash12>-<random>` (not a git checkout)
    and must still hash to `resolved.content_hash`. Removal (`git worktree remove --force --force`,
    then deleting whatever is left and `git worktree prune`) runs on normal exit, on error and on
    KeyboardInterrupt. With keep=True the directory stays after the `with` block and its path is
    logged; the caller has it from the `as` target. A checkout that fails half-way is always
    removed.
    """
    root = _toplevel(repo)
    cache = leftovers.cache_dir().resolve()
    if cache == root or root in cache.parents:
        raise RefError(
            f"{root}: the harness cache {cache} lies inside the repository",
            ["set HARNESS_CACHE_DIR (or XDG_CACHE_HOME) to a directory outside it"],
        )
    kind = "snapshots" if resolved.dirty else "worktrees"
    parent = cache / kind
    parent.mkdir(parents=True, exist_ok=True)
    held = "dir" if resolved.dirty else "worktree"
    # Recorded before it exists (and so before git knows of it): a signal or a SIGKILL at any
    # point leaves it for `recover()`. Run as root, the harness boots a sandboxed service as a
    # uid of its own (harness.boot.sandbox.service_ids), which must be able to enter it.
    shared = os.geteuid() == 0
    path = leftovers.make_dir(held, parent, f"{resolved.short}-", repo=root, shared=shared)
    entered = False
    try:
        if resolved.dirty:
            _copy_snapshot(root, path, resolved)
        else:
            try:
                _git(root, "worktree", "add", "--detach", str(path), resolved.sha)
            except RefError as exc:
                raise RefError(exc.message, [*exc.details, *CHECKOUT_ADVICE]) from None
            if (path / ".gitmodules").is_file():
                _update_submodules(root, path)
        entered = True
        yield path
    finally:
        from harness.process.signals import signals_deferred

        # A second (third) Ctrl-C must not cut the removal short: held until it is done.
        with signals_deferred():
            if keep and entered:
                log.info("kept the checkout of %s (%s) at %s", resolved.ref, resolved.key, path)
                gone = True  # the user's now, not a leftover
            elif resolved.dirty:
                shutil.rmtree(path, ignore_errors=True)
                gone = not os.path.lexists(path)
            else:
                gone = remove_worktree(root, path)
            if gone:  # else it stays recorded: the next run (or `harness clean`) removes it
                leftovers.untrack(held, path)


def listed_worktrees(root: Path) -> set[Path]:
    """The (resolved) paths git in `root` lists as its worktrees, the main one included."""
    proc = _git(root, "worktree", "list", "--porcelain", check=False)
    return {
        Path(os.fsdecode(line[len(b"worktree ") :])).resolve()
        for line in proc.stdout.splitlines()
        if line.startswith(b"worktree ")
    }


def remove_worktree(root: Path, path: Path) -> bool:
    """`git worktree remove --force --force` of `path` in the repository `root`, whatever is left
    deleted, then `git worktree prune`; failures are logged, never raised. True once `path` is
    gone from the disk and from `git worktree list`.

    A `git worktree add` cut short (a Ctrl-C) leaves its entry locked ("initializing"), which
    prune skips: when the entry outlives the prune, it is unlocked and pruned again."""
    # Never let a failed cleanup hide the exception that ended the `with` body: log instead.
    proc = _git(root, "worktree", "remove", "--force", "--force", str(path), check=False)
    if proc.returncode != 0 and path.exists():
        log.debug("git worktree remove %s: %s", path, proc.stderr.decode(errors="replace"))
    shutil.rmtree(path, ignore_errors=True)
    pruned = _git(root, "worktree", "prune", check=False)
    listed = path.resolve() in listed_worktrees(root)
    if listed:
        _git(root, "worktree", "unlock", str(path), check=False)
        pruned = _git(root, "worktree", "prune", check=False)
        listed = path.resolve() in listed_worktrees(root)
    if path.exists() or listed or pruned.returncode != 0:
        log.warning(
            "could not fully remove the worktree at %s; run `git -C %s worktree prune`", path, root
        )
    return not (path.exists() or listed)


def _update_submodules(root: Path, worktree: Path) -> None:
    """Best effort: fetch top-level submodules without writing the user's shared config."""
    urls = ("config", "-z", "-f", ".gitmodules", "--get-regexp", r"^submodule\..*\.url$")
    listed = _git(worktree, *urls, check=False).stdout
    extra: list[str] = []
    for item in listed.split(b"\0"):
        if not item:
            continue
        key, _, url = item.decode(errors="replace").partition("\n")
        name = key[len("submodule.") : -len(".url")]
        user_url = _git(root, "config", "--get", f"submodule.{name}.url", check=False)
        resolved = user_url.stdout.decode().strip() or _join_url(_remote_url(root), url)
        extra += ["-c", f"submodule.{name}.url={resolved}", "-c", f"submodule.{name}.active=true"]
    proc = _git(worktree, "submodule", "update", "--recursive", check=False, extra=tuple(extra))
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-3:]
        log.warning(
            "submodules of %s were not checked out (best effort, going on): %s",
            worktree,
            " | ".join(tail),
        )


def _remote_url(root: Path) -> str:
    """Where relative submodule URLs are resolved from: origin's URL, else the repository itself."""
    proc = _git(root, "config", "--get", "remote.origin.url", check=False)
    return proc.stdout.decode().strip() or str(root)


def _join_url(base: str, url: str) -> str:
    """Resolve a `./x` or `../x` submodule URL against `base` as git does; others unchanged."""
    if not url.startswith(("./", "../")):
        return url
    head, sep, rest = base.rstrip("/").partition("://")
    if not sep:  # a local path, or scp-like host:path
        head, rest = "", base.rstrip("/")
    parts = rest.split("/")
    for piece in url.split("/"):
        if piece == "..":
            parts = parts[:-1] if len(parts) > 1 else parts
        elif piece not in ("", "."):
            parts.append(piece)
    return f"{head}{sep}{'/'.join(parts)}"


# --------------------------------------------------------------------------- did a boot write here?

# What a service may leave in its checkout without it counting: Python's bytecode caches.
_IGNORED_DIRS = frozenset({".git", "__pycache__"})


def tree_fingerprint(top: Path) -> dict[str, tuple[int, int]]:
    """Every file under `top` (but .git and __pycache__) by relative path: (size, mtime_ns).

    Taken after the build and again after each boot: a boot that changes its own checkout (an
    index written next to the code, a config rewritten) makes the next boot see a different
    service, so the runner reports it (`tree_changes`) and the run is invalid.
    """
    found: dict[str, tuple[int, int]] = {}
    for folder, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d not in _IGNORED_DIRS]
        for name in files:
            path = Path(folder, name)
            try:
                info = path.lstat()
            except OSError:
                continue
            found[path.relative_to(top).as_posix()] = (info.st_size, info.st_mtime_ns)
    return found


def tree_changes(
    before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]
) -> list[str]:
    """What changed between two fingerprints: "added x", "removed y", "modified z", sorted."""
    changes = [f"added {p}" for p in after.keys() - before.keys()]
    changes += [f"removed {p}" for p in before.keys() - after.keys()]
    changes += [f"modified {p}" for p in before.keys() & after.keys() if before[p] != after[p]]
    return sorted(changes, key=lambda c: c.split(" ", 1)[1])

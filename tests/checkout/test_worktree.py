"""harness.checkout.worktree against real throwaway git repositories built in tmp_path."""

from __future__ import annotations

import logging
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.checkout.worktree import WORKTREE, checkout, resolve_ref
from harness.errors import RefError
from harness.process.leftovers import cache_dir


def git(cwd: Path, *args: str) -> str:
    # GIT_OPTIONAL_LOCKS=0: the test's own reads must not refresh the index it compares.
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return proc.stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def new_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Harness Test")
    git(path, "config", "user.email", "test@example.invalid")
    return path


@dataclass(frozen=True)
class Repo:
    root: Path
    c1: str
    c2: str


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private cache, and no global or system git config leaking into the repositories."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(cache))
    empty = tmp_path / "gitconfig"
    empty.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return cache


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    """main: c1 (a.txt "one", tags v1 annotated + light, branch feat/x) -> c2 (a.txt "two")."""
    root = new_repo(tmp_path / "repo")
    (root / "a.txt").write_text("one\n")
    (root / "gone.txt").write_text("tracked, deleted later\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    (root / ".gitignore").write_text("*.log\n")
    c1 = commit_all(root, "c1")
    git(root, "tag", "-a", "v1", "-m", "version one")
    git(root, "tag", "light")
    git(root, "branch", "feat/x")
    (root / "a.txt").write_text("two\n")
    c2 = commit_all(root, "c2")
    return Repo(root, c1, c2)


def make_dirty(root: Path) -> None:
    """A stash entry, an unstaged edit, a staged file, a deletion, untracked and ignored files."""
    (root / "a.txt").write_text("stashed\n")
    git(root, "stash", "push", "-q", "-m", "the user's stash")
    (root / "a.txt").write_text("uncommitted edit\n")
    (root / "staged.txt").write_text("staged\n")
    git(root, "add", "staged.txt")
    (root / "gone.txt").unlink()
    (root / "new.txt").write_text("untracked\n")
    (root / "debug.log").write_text("ignored\n")


def user_state(root: Path) -> dict[str, object]:
    """Everything of the user's that the harness must leave byte-identical."""
    dot = root / ".git"
    files = {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }
    return {
        "files": files,
        "index": (dot / "index").read_bytes(),
        "HEAD": (dot / "HEAD").read_bytes(),
        "config": (dot / "config").read_bytes(),
        "refs": git(root, "for-each-ref", "--format=%(refname) %(objectname)"),
        "branches": git(root, "branch", "-a", "-v", "--no-abbrev"),
        "stash": git(root, "stash", "list", "--format=%H %gs"),
    }


def worktree_paths(root: Path) -> list[str]:
    listing = git(root, "worktree", "list", "--porcelain")
    return [line.split(" ", 1)[1] for line in listing.splitlines() if line.startswith("worktree ")]


# --------------------------------------------------------------------------- cache_dir


def test_cache_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("HARNESS_CACHE_DIR")
    assert cache_dir() == tmp_path / "xdg" / "harness"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "harness"


# --------------------------------------------------------------------------- resolve_ref


def test_resolves_every_kind_of_ref(repo: Repo) -> None:
    git(repo.root, "update-ref", "refs/remotes/origin/feat", repo.c1)
    expected = {
        "main": repo.c2,
        "HEAD": repo.c2,
        "HEAD~1": repo.c1,
        "feat/x": repo.c1,
        "v1": repo.c1,  # annotated: peeled to its commit, not the tag object
        "light": repo.c1,
        "origin/feat": repo.c1,
        repo.c1: repo.c1,
        repo.c1[:7]: repo.c1,
    }
    for ref, sha in expected.items():
        resolved = resolve_ref(repo.root, ref)
        assert (resolved.ref, resolved.sha, resolved.dirty) == (ref, sha, False)
        assert resolved.content_hash is None
        assert resolved.key == sha
    assert git(repo.root, "rev-parse", "v1") != repo.c1  # so the peeling above is real


def test_resolves_from_a_subdirectory(repo: Repo) -> None:
    (repo.root / "sub").mkdir()
    assert resolve_ref(repo.root / "sub", "feat/x").sha == repo.c1


def test_unknown_ref_lists_close_matches_and_how_to_list(repo: Repo) -> None:
    with pytest.raises(RefError) as caught:
        resolve_ref(repo.root, "feat/y")
    text = str(caught.value)
    assert "unknown ref 'feat/y'" in text
    assert "did you mean 'feat/x'?" in text
    assert f"git -C {repo.root} branch -a" in text


def test_unknown_ref_far_from_everything_suggests_nothing(repo: Repo) -> None:
    with pytest.raises(RefError) as caught:
        resolve_ref(repo.root, "qqqqqqqqqqqq")
    assert "did you mean" not in str(caught.value)
    assert "branch -a" in str(caught.value)


@pytest.mark.parametrize("ref", ["", "--all", "-h"])
def test_option_like_or_empty_ref_is_refused(repo: Repo, ref: str) -> None:
    with pytest.raises(RefError, match="is not a git ref"):
        resolve_ref(repo.root, ref)


def test_tree_object_is_not_a_commit(repo: Repo) -> None:
    tree = git(repo.root, "rev-parse", "HEAD^{tree}")
    with pytest.raises(RefError, match="unknown ref"):
        resolve_ref(repo.root, tree)


def test_not_a_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(RefError, match="not a git repository"):
        resolve_ref(plain, "main")
    with pytest.raises(RefError, match="no such directory"):
        resolve_ref(tmp_path / "missing", "main")
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    with pytest.raises(RefError, match="a bare repository has no working tree"):
        resolve_ref(bare, "main")


def test_worktree_needs_a_commit(tmp_path: Path) -> None:
    root = new_repo(tmp_path / "empty")
    with pytest.raises(RefError, match="WORKTREE needs a commit"):
        resolve_ref(root, WORKTREE)


def test_worktree_ref_hash_tells_dirty_states_apart(repo: Repo) -> None:
    clean = resolve_ref(repo.root, WORKTREE)
    assert (clean.sha, clean.dirty) == (repo.c2, True)
    assert clean.content_hash is not None
    assert re.fullmatch(rf"{repo.c2}\+dirty\.[0-9a-f]{{12}}", clean.key)
    assert resolve_ref(repo.root, WORKTREE) == clean  # deterministic

    (repo.root / "a.txt").write_text("edited\n")
    edited = resolve_ref(repo.root, WORKTREE)
    assert edited.content_hash != clean.content_hash
    (repo.root / "a.txt").write_text("two\n")
    assert resolve_ref(repo.root, WORKTREE) == clean  # content, not mtime

    (repo.root / "ignored.log").write_text("not part of it\n")
    assert resolve_ref(repo.root, WORKTREE) == clean
    (repo.root / "run.sh").chmod(0o644)
    assert resolve_ref(repo.root, WORKTREE) != clean  # the executable bit counts
    (repo.root / "run.sh").chmod(0o755)
    (repo.root / "a.txt").rename(repo.root / "b.txt")
    assert resolve_ref(repo.root, WORKTREE) != clean  # same bytes, other path


# --------------------------------------------------------------------------- checkout


def test_checkout_yields_each_commits_files(repo: Repo, isolated: Path) -> None:
    first, second = resolve_ref(repo.root, "feat/x"), resolve_ref(repo.root, "main")
    with checkout(repo.root, first) as one, checkout(repo.root, second) as two:
        assert (one / "a.txt").read_text() == "one\n"
        assert (two / "a.txt").read_text() == "two\n"
        assert one.parent == two.parent == isolated.resolve() / "worktrees"
        assert one.name.startswith(repo.c1[:12] + "-")
        assert git(one, "rev-parse", "HEAD") == repo.c1
        assert len(worktree_paths(repo.root)) == 3
    assert not one.exists() and not two.exists()
    assert worktree_paths(repo.root) == [str(repo.root)]
    assert list((isolated / "worktrees").iterdir()) == []


def test_checkout_is_detached(repo: Repo) -> None:
    with checkout(repo.root, resolve_ref(repo.root, "main")) as path:
        detached = subprocess.run(
            ["git", "symbolic-ref", "-q", "HEAD"], cwd=path, capture_output=True, check=False
        )
        assert detached.returncode == 1  # no branch checked out, so `main` stays the user's


@pytest.mark.parametrize("detach", [False, True])
def test_user_repository_is_byte_identical_afterwards(repo: Repo, detach: bool) -> None:
    if detach:
        git(repo.root, "checkout", "-q", "--detach", repo.c1)
    make_dirty(repo.root)
    before = user_state(repo.root)
    for ref in ("main", "feat/x", "v1", WORKTREE):
        with checkout(repo.root, resolve_ref(repo.root, ref)) as path:
            (path / "written-by-the-build").write_text("x")
    assert user_state(repo.root) == before
    assert worktree_paths(repo.root) == [str(repo.root)]


def test_user_hooks_do_not_run(repo: Repo) -> None:
    hook = repo.root / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\necho ran >> {repo.root / 'hook-ran'}\n")
    hook.chmod(0o755)
    git(repo.root, "checkout", "-q", "feat/x")  # the hook is live for git itself...
    assert (repo.root / "hook-ran").read_text() == "ran\n"
    with checkout(repo.root, resolve_ref(repo.root, "main")) as path:
        assert (path / "a.txt").read_text() == "two\n"
    assert (repo.root / "hook-ran").read_text() == "ran\n"  # ...but not for the harness


@pytest.mark.parametrize("error", [ValueError, KeyboardInterrupt])
def test_worktree_removed_when_the_body_raises(
    repo: Repo, isolated: Path, error: type[BaseException]
) -> None:
    seen: list[Path] = []
    with pytest.raises(error), checkout(repo.root, resolve_ref(repo.root, "main")) as path:
        seen.append(path)
        assert path.is_dir()
        raise error("boom")
    assert seen and not seen[0].exists()
    assert worktree_paths(repo.root) == [str(repo.root)]
    assert list((isolated / "worktrees").iterdir()) == []


def test_keep_leaves_the_worktree(repo: Repo, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="harness.checkout.worktree")
    with checkout(repo.root, resolve_ref(repo.root, "feat/x"), keep=True) as path:
        pass
    try:
        assert (path / "a.txt").read_text() == "one\n"
        assert str(path) in worktree_paths(repo.root)
        assert str(path) in caplog.text
    finally:
        git(repo.root, "worktree", "remove", "--force", str(path))


def test_worktree_snapshot_is_what_is_on_disk(repo: Repo, isolated: Path) -> None:
    make_dirty(repo.root)
    resolved = resolve_ref(repo.root, WORKTREE)
    with checkout(repo.root, resolved) as path:
        assert path.parent == isolated.resolve() / "snapshots"
        assert path.name.startswith(f"{repo.c2[:12]}+dirty.{resolved.key[-12:]}-")
        assert (path / "a.txt").read_text() == "uncommitted edit\n"
        assert (path / "staged.txt").read_text() == "staged\n"
        assert (path / "new.txt").read_text() == "untracked\n"
        assert (path / "run.sh").stat().st_mode & 0o100
        assert not (path / "debug.log").exists()
        assert not (path / "gone.txt").exists()
        assert not (path / ".git").exists()
    assert not path.exists()


def test_snapshot_refused_when_the_tree_changed_since_resolving(repo: Repo, isolated: Path) -> None:
    resolved = resolve_ref(repo.root, WORKTREE)
    (repo.root / "a.txt").write_text("changed meanwhile\n")
    with pytest.raises(RefError, match="changed since WORKTREE was resolved"):  # noqa: SIM117
        with checkout(repo.root, resolved):
            pytest.fail("the body must not run")
    assert list((isolated / "snapshots").iterdir()) == []


def test_cache_inside_the_repository_is_refused(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(repo.root / ".cache"))
    with pytest.raises(RefError, match="inside the repository"):  # noqa: SIM117
        with checkout(repo.root, resolve_ref(repo.root, "main")):
            pytest.fail("the body must not run")
    assert not (repo.root / ".cache").exists()


# --------------------------------------------------------------------------- submodules


def test_submodule_checked_out_without_touching_user_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = new_repo(tmp_path / "sub")
    (sub / "inner.txt").write_text("from the submodule\n")
    commit_all(sub, "inner")
    sup = new_repo(tmp_path / "sup")
    (sup / "top.txt").write_text("top\n")
    git(sup, "-c", "protocol.file.allow=always", "submodule", "add", "-q", "../sub", "sub")
    commit_all(sup, "with a submodule")
    # As if the user never ran `git submodule init`: the URL must come from .gitmodules (relative).
    git(sup, "config", "--remove-section", "submodule.sub")
    # Local file:// submodules are off by default since git 2.38.1; allow them for this test only.
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "protocol.file.allow")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "always")
    before = user_state(sup)
    with checkout(sup, resolve_ref(sup, "HEAD")) as path:
        assert (path / "sub" / "inner.txt").read_text() == "from the submodule\n"
    assert not path.exists()
    assert user_state(sup) == before
    assert worktree_paths(sup) == [str(sup)]


def test_broken_submodule_is_best_effort(
    repo: Repo, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    (repo.root / ".gitmodules").write_text(
        f'[submodule "lib"]\n\tpath = lib\n\turl = {tmp_path / "no-such-repo"}\n'
    )
    git(repo.root, "update-index", "--add", "--cacheinfo", f"160000,{repo.c1},lib")
    git(repo.root, "add", ".gitmodules")  # not `add -A`: it would drop the gitlink (no lib/)
    git(repo.root, "commit", "-q", "-m", "a submodule that cannot be fetched")
    c3 = git(repo.root, "rev-parse", "HEAD")
    assert "160000 commit" in git(repo.root, "ls-tree", c3, "lib")
    with checkout(repo.root, resolve_ref(repo.root, c3)) as path:
        assert (path / "a.txt").read_text() == "two\n"
    assert "submodules of" in caplog.text and "best effort" in caplog.text
    assert not path.exists()
    assert worktree_paths(repo.root) == [str(repo.root)]


def test_a_commit_git_cannot_check_out_is_a_ref_error_with_both_fixes(tmp_path: Path) -> None:
    # A blob missing from the object store (as a partial clone or a broken mirror leaves it):
    # `git worktree add` fails; the error quotes git and says what to do.
    repo = new_repo(tmp_path / "repo")
    (repo / "big.bin").write_text("a large asset\n")
    sha = commit_all(repo, "with an asset")
    blob = git(repo, "rev-parse", f"{sha}:big.bin")
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    (repo / "big.bin").unlink()
    with pytest.raises(RefError) as caught, checkout(repo, resolve_ref(repo, sha)):
        pass
    said = str(caught.value)
    assert "git worktree add" in said and "exited with status" in said
    assert "git fetch --refetch" in said and "git sparse-checkout set" in said


def test_a_sparse_checkout_is_inherited_so_the_paths_left_out_are_never_read(
    tmp_path: Path,
) -> None:
    repo = new_repo(tmp_path / "repo")
    (repo / "assets").mkdir()
    (repo / "assets" / "big.bin").write_text("a large asset\n")
    (repo / "svc.py").write_text("print('service')\n")
    sha = commit_all(repo, "service and assets")
    git(repo, "sparse-checkout", "set", "--no-cone", "/*", "!/assets/")
    with checkout(repo, resolve_ref(repo, sha)) as path:
        assert (path / "svc.py").is_file()
        assert not (path / "assets").exists()

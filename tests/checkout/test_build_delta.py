"""Builds that stay built: what a build writes into its checkout comes back with the cached build.

Unit tests drive harness.checkout.build with real shell builds in plain folders; the end-to-end
test runs the real CLI twice on a real git repository whose build writes an index that `start`
needs, each run in a fresh worktree, the second on the cached build.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
from pathlib import Path
from typing import Any

import pytest
from e2e_support import build_sandbox, config_text, git, load_json, record_paths

from harness.checkout.build import DELTA, build, build_key
from harness.config import ServiceConfig
from harness.errors import BuildError


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(path))
    return path


def checkout(tmp_path: Path, name: str) -> Path:
    """A fresh 'checkout' of the same commit: the tracked files only."""
    path = tmp_path / name
    path.mkdir()
    (path / "app.py").write_text("print('hello')\n")
    (path / "stale.txt").write_text("the build removes me\n")
    (path / "conf").mkdir()
    (path / "conf" / "settings.ini").write_text("mode = source\n")
    return path


# Writes new files (an ignored index), a folder with nothing in it, an executable, a symlink, a
# read-only file; rewrites a tracked file; deletes another.
BUILD = " && ".join(
    [
        "mkdir -p index/shards empty",
        "echo '{\"docs\": 3}' > index/meta.json",
        "head -c 5000 /dev/urandom > index/shards/0.bin",
        "printf '#!/bin/sh\\necho go\\n' > run.sh && chmod 755 run.sh",
        "ln -s index/meta.json current",
        "echo locked > ro.txt && chmod 444 ro.txt",
        "echo 'mode = built' > conf/settings.ini",
        "rm stale.txt",
    ]
)


def service(command: str = BUILD, **kw: Any) -> ServiceConfig:
    return ServiceConfig(start="true", ready="/health", build=command, **kw)


def run(worktree: Path, tmp_path: Path, svc: ServiceConfig) -> Any:
    return build(worktree, sha_key="b" * 40, service=svc, log_dir=tmp_path / "logs")


def snapshot(top: Path) -> dict[str, tuple[str, int, bytes]]:
    """Every path under top: kind, mode, bytes (a symlink's target)."""
    found = {}
    for folder, dirs, files in os.walk(top):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            info = path.lstat()
            rel = path.relative_to(top).as_posix()
            if stat.S_ISLNK(info.st_mode):
                found[rel] = ("l", 0, os.readlink(path).encode())
            elif stat.S_ISDIR(info.st_mode):
                found[rel] = ("d", stat.S_IMODE(info.st_mode), b"")
            else:
                found[rel] = ("f", stat.S_IMODE(info.st_mode), path.read_bytes())
    return found


def test_a_cached_build_restores_what_the_build_wrote(tmp_path: Path) -> None:
    first_tree = checkout(tmp_path, "first")
    first = run(first_tree, tmp_path, service())
    assert not first.cached
    fresh = checkout(tmp_path, "second")
    second = run(fresh, tmp_path, service())
    assert second.cached and second.note is None
    assert snapshot(fresh) == snapshot(first_tree)  # bytes, modes, symlinks, deletions
    assert not (fresh / "stale.txt").exists()
    assert (fresh / "current").is_symlink() and os.readlink(fresh / "current") == "index/meta.json"
    assert stat.S_IMODE((fresh / "run.sh").stat().st_mode) == 0o755
    assert (fresh / "empty").is_dir()
    assert (fresh / "conf" / "settings.ini").read_text() == "mode = built\n"
    assert second.restored is not None and second.restored.deleted == 1


def test_declared_outputs_restore_only_those(tmp_path: Path) -> None:
    svc = service(build_outputs=("index/", "current"))
    first_tree = checkout(tmp_path, "first")
    run(first_tree, tmp_path, svc)
    fresh = checkout(tmp_path, "second")
    assert run(fresh, tmp_path, svc).cached
    assert (fresh / "index" / "meta.json").read_text() == '{"docs": 3}\n'
    assert (fresh / "index" / "shards" / "0.bin").read_bytes() == (
        first_tree / "index" / "shards" / "0.bin"
    ).read_bytes()
    assert (fresh / "current").is_symlink()
    assert (fresh / "stale.txt").exists() and not (fresh / "run.sh").exists()  # not declared
    assert build_key("b" * 40, svc) != build_key("b" * 40, service())


def test_a_declared_output_the_build_did_not_write_fails_the_build(
    tmp_path: Path, cache: Path
) -> None:
    svc = service("echo nothing", build_outputs=("index/",))
    with pytest.raises(BuildError, match=r"did not write index/, named in service.build_outputs"):
        run(checkout(tmp_path, "first"), tmp_path, svc)
    assert not (cache / "builds" / build_key("b" * 40, svc)).exists()


@pytest.mark.parametrize("damage", ["remove", "truncate", "manifest"])
def test_a_damaged_cache_entry_is_rebuilt_and_says_so(
    tmp_path: Path, cache: Path, damage: str
) -> None:
    counter = tmp_path / "counter"
    svc = service(f"echo ran >> {shlex.quote(str(counter))} && " + BUILD)
    run(checkout(tmp_path, "first"), tmp_path, svc)
    store = cache / "builds" / build_key("b" * 40, svc) / DELTA
    shard = store / "tree" / "index" / "shards" / "0.bin"
    if damage == "remove":
        shard.unlink()
    elif damage == "truncate":
        shard.write_bytes(shard.read_bytes()[:10])
    else:
        (store / "delta.json").write_text("{")
    fresh = checkout(tmp_path, "second")
    again = run(fresh, tmp_path, svc)
    assert not again.cached
    assert again.note is not None and "was incomplete" in again.note
    assert "built again" in again.note
    assert counter.read_text() == "ran\n" * 2
    assert (fresh / "index" / "shards" / "0.bin").stat().st_size == 5000
    assert run(checkout(tmp_path, "third"), tmp_path, svc).cached  # whole again


def test_a_marker_of_the_old_cache_layout_is_rebuilt(tmp_path: Path, cache: Path) -> None:
    svc = service()
    run(checkout(tmp_path, "first"), tmp_path, svc)
    marker = cache / "builds" / build_key("b" * 40, svc) / "built.json"
    old = json.loads(marker.read_text())
    marker.write_text(json.dumps({**old, "schema_version": 1}))  # no delta was stored then
    assert not run(checkout(tmp_path, "second"), tmp_path, svc).cached


def test_a_failed_build_quotes_its_log_once(tmp_path: Path) -> None:
    long_line = "x" * 5000
    command = f"echo {long_line}; echo 'it broke'; exit 4"
    with pytest.raises(BuildError) as caught:
        run(checkout(tmp_path, "first"), tmp_path, service(command))
    error = caught.value
    assert error.exit_status == 3
    assert error.message.count("build failed") == 1
    assert "(log: " in error.message and ".log)" in error.message
    tail = [d for d in error.details if d.startswith("  | ")]
    assert tail[-1] == "  | it broke"
    assert all(len(line) < 300 for line in tail)  # a 5000-character line is clipped


def test_pip_wanting_another_python_hints_at_service_python(tmp_path: Path) -> None:
    said = "ERROR: Package 'svc' requires a different Python: 3.11.2 not in '>=3.12'"
    with pytest.raises(BuildError) as caught:
        run(checkout(tmp_path, "first"), tmp_path, service(f"echo {shlex.quote(said)}; exit 1"))
    assert any("set service.python" in d for d in caught.value.details)


# --------------------------------------------------------------------------- end to end

INDEXED_START = (
    "./bin/go && test -f index/ready && test -L current && test ! -e stale.txt && "
    "{python} svc.py --port {port} --data {data}"
)
INDEX_BUILD = (
    "mkdir -p index bin && echo ok > index/ready && "
    "printf '#!/bin/sh\\nexit 0\\n' > bin/go && chmod 755 bin/go && "
    "ln -s index current && rm stale.txt"
)


def test_a_cached_build_boots_like_a_fresh_one_in_a_new_worktree(tmp_path: Path) -> None:
    sandbox = build_sandbox(tmp_path / "x", {})
    repo = sandbox.repo
    (repo / "stale.txt").write_text("present in the commit; the build removes it\n")
    with open(repo / ".gitignore", "a") as f:
        f.write("index/\nbin/\ncurrent\n")
    git(repo, "add", "--all", home=sandbox.home)
    git(repo, "commit", "--quiet", "-m", "a build that writes an index", home=sandbox.home)
    config = sandbox.root / "harness.toml"
    text = config_text(gold=str(repo / "gold" / "gold.jsonl"), build=INDEX_BUILD, repeats=1)
    start = 'start = "{python} svc.py --port {port} --data {data}"'
    assert start in text
    config.write_text(text.replace(start, f"start = {json.dumps(INDEXED_START)}"))

    first = sandbox.harness("run", "--ref", "main", "--repeats", "1", config=config)
    assert first.returncode == 0, first.stderr
    assert sandbox.worktrees() == []  # the worktree is gone: the next run gets a new one
    second = sandbox.harness("run", "--ref", "main", "--repeats", "1", config=config)
    assert second.returncode == 0, second.stderr
    records = [load_json(p) for p in record_paths(sandbox.results)]
    assert [r["build_cached"] for r in records] == [False, True]
    assert all(r["build_failure"] is None for r in records)
    assert sandbox.worktrees() == [] and sandbox.leftovers() == []

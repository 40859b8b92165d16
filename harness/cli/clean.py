"""`harness clean`: the cache's worktrees and builds listed with their sizes, and removed
(harness.checkout.cache)."""

from __future__ import annotations

import argparse

EXAMPLES = {"clean": "harness clean --dry-run\n  harness clean --builds --older-than 30"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--builds", action="store_true", help="also remove builds (per-commit venvs), not in use"
    )
    p.add_argument(
        "--older-than",
        type=float,
        metavar="DAYS",
        help="only what was last used DAYS days ago or more",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="list what would be removed, remove nothing"
    )


def run(args: argparse.Namespace) -> int:
    from harness.checkout.cache import cache_entries, clean, render_clean
    from harness.cli.exits import EXIT_OK
    from harness.process.leftovers import anything_left, cache_dir

    cache = cache_dir()
    if args.dry_run:
        entries = cache_entries(cache, builds=args.builds, older_than_days=args.older_than)
        removable = [e for e in entries if e.why_kept is None]
        kept = [e for e in entries if e.why_kept is not None]
        text = render_clean(cache, removable, kept).replace("  removed ", "  would remove ")
        print(text.replace("\nremoved ", "\nwould remove "), end="")
        if anything_left():  # recovery is skipped under --dry-run: said instead
            from harness.driver.recovery import left_by_dead_runs

            for line in left_by_dead_runs():
                print(line)
        return EXIT_OK
    removed, kept = clean(cache, builds=args.builds, older_than_days=args.older_than)
    print(render_clean(cache, removed, kept), end="")
    return EXIT_OK

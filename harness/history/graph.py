"""The commit graph of the measured commits: which measured commit each one descends from, and a
lane (a row of the graph) per line of descent.  Pure: SHAs in, row numbers out.

    measured_graph(parents, rows) -> (links, lanes)

`parents` maps a commit to its parents as git lists them (`git rev-list --parents`, the first
parent first); `rows` are the measured commits in the history's order (oldest first, parents
before children).  A commit's links are the rows of its nearest measured ancestors, reached
through commits nobody measured (the first parent's line first); two siblings each link to their
common parent, so the page draws a fork, never one line through both (a V read as a sequence).

Lanes, as `git log --graph` gives them: a commit continues the lane of its first link unless a
sibling already did, and then opens the next lane; a commit with no measured ancestor opens one
too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def measured_graph(
    parents: Mapping[str, Sequence[str]], rows: Sequence[str]
) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]:
    row = {sha: i for i, sha in enumerate(rows)}
    nearest: dict[str, tuple[int, ...]] = {}

    def reach(sha: str) -> tuple[int, ...]:
        # Iterative over the unmeasured ancestors (a long history would overflow recursion).
        stack = [sha]
        while stack:
            top = stack[-1]
            pending = [p for p in parents.get(top, ()) if p not in row and p not in nearest]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            found: list[int] = []
            for p in parents.get(top, ()):
                for r in (row[p],) if p in row else nearest[p]:
                    if r not in found:
                        found.append(r)
            nearest[top] = tuple(found)
        return nearest[sha]

    links = tuple(reach(sha) for sha in rows)
    lanes: list[int] = []
    continued: set[int] = set()  # rows whose lane a child already continues
    opened = 0
    for i, linked in enumerate(links):
        first = linked[0] if linked else None
        if first is not None and first < i and first not in continued:
            continued.add(first)
            lanes.append(lanes[first])
        else:
            lanes.append(opened)
            opened += 1
    return links, tuple(lanes)

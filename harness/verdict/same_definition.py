"""Whether two saved comparisons measured the same thing: their evaluation definitions.

Pure: the comparisons come in loaded.  `same_definition` raises NotComparableError naming each
part that differs ("the gold set differs; k differs"), or that one was saved before definitions
were recorded; otherwise it returns the line that says they match.
"""

from __future__ import annotations

from harness.errors import NotComparableError
from harness.score.definition import differing
from harness.verdict.comparison import Comparison


def same_definition(a: Comparison, a_path: object, b: Comparison, b_path: object) -> str:
    """Raise unless `a` and `b` (saved at the paths named) have equal definitions."""
    da, db = a.header.definition, b.header.definition
    if da is None or db is None:
        old = a_path if da is None else b_path
        raise NotComparableError(
            f"{old} was saved before evaluation definitions were recorded: whether it measured "
            "the same thing cannot be told",
            ["run that compare again to record one"],
        )
    differ = differing(da, db)
    if differ:
        raise NotComparableError(
            f"{a_path} and {b_path} have different evaluation definitions: {'; '.join(differ)}",
            [f"  {a_path}: sha256 {da.sha256}", f"  {b_path}: sha256 {db.sha256}"],
        )
    return f"{a_path} and {b_path} have the same evaluation definition (sha256 {da.sha256})"

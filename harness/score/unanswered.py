"""What a run did with the gold set's unanswerable queries and its outranks pairs
(`harness.score.evaluation` fills them); plain values.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NoAnswerSummary:
    """The unanswerable queries of a gold set, in gold order, and what the run did with them."""

    query_ids: tuple[str, ...] = ()
    returned_any: tuple[bool, ...] = ()
    above_threshold: tuple[bool | None, ...] = ()
    threshold: float | None = None

    @property
    def n(self) -> int:
        return len(self.query_ids)

    @property
    def false_positives(self) -> int:
        return sum(self.returned_any)

    @property
    def rate(self) -> float | None:
        """Share of unanswerable queries that returned anything; None without any."""
        return self.false_positives / self.n if self.n else None

    @property
    def n_scored(self) -> int:
        return sum(a is not None for a in self.above_threshold)

    @property
    def above(self) -> int:
        return sum(a is True for a in self.above_threshold)

    @property
    def above_rate(self) -> float | None:
        """Share, of the queries that had scores, with a score above the threshold."""
        return self.above / self.n_scored if self.n_scored else None


@dataclass(frozen=True)
class OutranksSummary:
    """Every (query_id, correct, stale) pair in gold order, and whether it held."""

    pairs: tuple[tuple[str, str, str], ...] = ()
    held: tuple[bool, ...] = ()

    @property
    def n(self) -> int:
        return len(self.pairs)

    @property
    def n_held(self) -> int:
        return sum(self.held)

    @property
    def rate(self) -> float | None:
        return self.n_held / self.n if self.n else None

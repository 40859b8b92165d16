"""One row of the gate: a scope and metric, before and after, and what the rule said of it."""

from __future__ import annotations

from dataclasses import dataclass

from harness.gate.measure import rounded

NOT_SHOWN = "not shown within margin"


@dataclass(frozen=True)
class GateRow:
    """One scope and metric: before, after, the tolerance applied, and what the rule says."""

    scope: str
    metric: str
    before: float | None
    after: float | None
    tolerance: float | None  # None where no comparison is made ("new", "vanished")
    # "ok" | "improved" | "regressed" | "dropped" | "fell to zero" | "vanished" | "new";
    # with a margin (--non-inferior): "not worse" | "worse than margin" | NOT_SHOWN
    status: str
    p: float | None = None  # compare's paired test (Holm-adjusted), when the row was tested
    test: str = ""  # which test, in words: "McNemar exact b=2 c=0"
    margin: float | None = None  # --non-inferior: the row's margin, and its interval's ends
    low: float | None = None
    high: float | None = None

    @property
    def failed(self) -> bool:
        return self.status in (
            "regressed",
            "dropped",
            "fell to zero",
            "vanished",
            "worse than margin",
            NOT_SHOWN,
        )

    @property
    def unshown(self) -> bool:
        """A margin not shown: a failure, the gate's "not shown" outcome (exit 4) when alone."""
        return self.status == NOT_SHOWN

    @property
    def change(self) -> float | None:
        if self.before is None or self.after is None:
            return None
        return rounded(self.after - self.before)

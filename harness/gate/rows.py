"""One row of the gate: a scope and metric, before and after, and what the rule said of it."""

from __future__ import annotations

from dataclasses import dataclass

from harness.gate.measure import rounded


@dataclass(frozen=True)
class GateRow:
    """One scope and metric: before, after, the tolerance applied, and what the rule says."""

    scope: str
    metric: str
    before: float | None
    after: float | None
    tolerance: float | None  # None where no comparison is made ("new", "vanished")
    # "ok" | "improved" | "regressed" | "dropped" | "fell to zero" | "vanished" | "new"
    status: str
    p: float | None = None  # compare's paired test (Holm-adjusted), when the row was tested
    test: str = ""  # which test, in words: "McNemar exact b=2 c=0"

    @property
    def failed(self) -> bool:
        return self.status in ("regressed", "dropped", "fell to zero", "vanished")

    @property
    def change(self) -> float | None:
        if self.before is None or self.after is None:
            return None
        return rounded(self.after - self.before)

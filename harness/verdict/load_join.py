"""The load verdict joined to a comparison (compare --rate): `harness.verdict.load` decides,
this puts it where the report and the exit status read it.

    comparison = with_load(comparison, load)    # the latency line names a regressed rate

Pure, like the rest of harness.verdict.
"""

from __future__ import annotations

from dataclasses import replace

from harness.values.types import Verdict
from harness.verdict.comparison import Comparison
from harness.verdict.load import Load


def with_load(comparison: Comparison, load: Load) -> Comparison:
    """The comparison carrying `load`; when the load verdict regressed, the latency verdict is
    REGRESSED too and its line names the rate (a valid run's only: an invalid one stays so);
    a rate the client could not keep is a warning."""
    warnings = (*comparison.warnings, *(r.lag_note for r in load.rates if r.lag_note))
    out = replace(comparison, load=load, warnings=warnings)
    if load.verdict is not Verdict.REGRESSED or comparison.verdict_latency is Verdict.INVALID:
        return out
    reason = f"{comparison.latency_reason}; under load: {load.words}"
    return replace(out, verdict_latency=Verdict.REGRESSED, latency_reason=reason)

"""The quality headline: the verdict the headline's rows make, and its words.  Pure.

    verdict, reason, power = quality_headline(overall, settings, collapses, holes)

Part of `harness.verdict.decide` (its docstring states every rule): a regression among the
headline's rows (hit@k at every k, every gate_on metric, Holm across them) is "regressed", else
an improvement "improved"; a call a pooled gold set's condensed lists do not support is
"inconclusive: judgments incomplete" (`condensed.unheld`); "no measurable difference" needs
every row's equivalence interval inside the band and, on a pool, the holes unable to carry it
out (`holes.hidden`); anything else is "inconclusive", saying what the interval rules out.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.values.types import Verdict
from harness.verdict.comparison import CompareSettings, Holes, MetricRow, Scope
from harness.verdict.condensed import unheld
from harness.verdict.holes import hidden
from harness.verdict.power import Power


def quality_headline(
    overall: Scope, settings: CompareSettings, collapses: Sequence[str], found: Holes | None = None
) -> tuple[Verdict, str, Power | None]:
    decisive = settings.decisive()
    rows = [r for r in map(overall.row, decisive) if r is not None]
    regressed = [r for r in rows if r.verdict is Verdict.REGRESSED]
    improved = [r for r in rows if r.verdict is Verdict.IMPROVED]
    powers = [r.power for r in rows if r.power is not None]
    # The mde is advice for planning, never what decides "no measurable difference".
    weakest = max(powers, key=lambda p: p.mde - p.effect, default=None)
    held = [r for r in rows if r.equivalence is not None]
    doubt = None if found is None else unheld(regressed or improved, found.condensed,
                                               "regressed" if regressed else "improved")
    if doubt is not None:  # a pooled gold set's call made by its holes alone
        verdict, reason = Verdict.INCONCLUSIVE, doubt
    elif regressed:
        verdict, reason = Verdict.REGRESSED, _called(regressed, "regressed")
    elif improved:
        verdict, reason = Verdict.IMPROVED, _called(improved, "improved") + ", none regressed"
    elif held and all(r.equivalence.inside for r in held if r.equivalence is not None):
        holes = hidden(found, held, settings.min_effect)  # a pooled gold set's holes, too wide?
        verdict = Verdict.NO_DIFFERENCE if holes is None else Verdict.INCONCLUSIVE
        reason = _equivalent(held, settings) if holes is None else holes
    else:
        verdict, reason = Verdict.INCONCLUSIVE, _undecided(held, settings, weakest)
    if collapses:  # "but" against a call that did not see it, "and" beside a regression
        joined = "and" if verdict is Verdict.REGRESSED else "but"
        reason += f"; {joined} slice collapse: {', '.join(collapses)}"
    return verdict, reason, weakest


def _interval(row: MetricRow) -> str:
    eq = row.equivalence
    assert eq is not None
    return f"{row.metric} {row.delta:+.3f}, {eq.confidence:.0%} CI [{eq.low:+.3f}, {eq.high:+.3f}]"


def _called(rows: Sequence[MetricRow], how: str) -> str:
    """"hit@10 improved", with the band named when a called change lies inside it: a change
    the test sees is a call, however small, never "no measurable difference"."""
    said = f"{', '.join(r.metric for r in rows)} {how}"
    inside = [r for r in rows if r.equivalence is not None and r.equivalence.inside]
    if inside:
        band = inside[0].equivalence.band if inside[0].equivalence else 0.0
        changes = ", ".join(f"{r.metric} {r.delta:+.3f}" for r in inside)
        said += f" ({changes}: inside the ±{band:g} band)"
    return said


def _equivalent(rows: Sequence[MetricRow], settings: CompareSettings) -> str:
    intervals = "; ".join(_interval(r) for r in rows)
    return (
        f"no change of ±{settings.min_effect:g} or more in {', '.join(r.metric for r in rows)} "
        f"({intervals}: each inside the band, two one-sided tests at "
        f"{settings.tost_alpha:g})"
    )


def _undecided(
    rows: Sequence[MetricRow], settings: CompareSettings, weakest: Power | None
) -> str:
    """What the interval does rule out, and about how many queries would rule out the band."""
    band = settings.min_effect
    outside = [r for r in rows if r.equivalence is not None and not r.equivalence.inside]
    if not outside:  # no interval at all (no answerable query)
        n = weakest.n if weakest is not None else 0
        return f"with {n} queries no change can be ruled out or seen"
    worst = max(outside, key=lambda r: r.equivalence.ruled_out if r.equivalence else 0.0)
    eq = worst.equivalence
    assert eq is not None
    said = (
        f"{worst.metric}: no change larger than {eq.ruled_out:.3f} either way ({_interval(worst)})"
        f", so a change of ±{band:g} is not ruled out"
    )
    if eq.queries_needed is None:
        said += (
            "; the change seen is not smaller than the band, and more queries would more "
            "likely call it than rule it out"
        )
    else:
        more = max(1, eq.queries_needed - eq.n)
        said += (
            f"; ruling out {band:g} needs about {eq.queries_needed} queries ({more} more: "
            "harness gold build mines candidates to judge)"
        )
    return said


def collapsed(slices: Sequence[Scope]) -> list[str]:
    """Each slice with a collapsed row, in words: "name (metric and 2 more)"."""
    collapses = []
    for scope in slices:
        fell = [r.metric for r in scope.rows if r.collapse]
        if fell:
            more = f" and {len(fell) - 1} more" if len(fell) > 1 else ""
            collapses.append(f"{scope.name} ({fell[0]}{more})")
    return collapses

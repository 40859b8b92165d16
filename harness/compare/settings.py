"""The settings of a comparison as a config, the command line and the two refs make them, and
the checks on them before anything is built.

    check_cutoffs(config, gate_on, from_cli=False)     # ConfigError: a cutoff above query.limit
    context = context_metrics(config, gold, sides, gate_on)  # are the context metrics measured
    settings = ref_differences(config, settings, "main", "feat/x")  # [ref."PATTERN"] as run
    settings = with_margins(settings, 0.02)       # compare --non-inferior, [gate] non_inferior
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from harness.config import HarnessConfig, effective_side
from harness.config.margins import Margins
from harness.config.overrides import labelled
from harness.errors import ConfigError
from harness.score.metrics import parse_metric
from harness.values.types import GoldSet
from harness.verdict.comparison import CompareSettings


def check_cutoffs(config: HarnessConfig, gate_on: Sequence[str], *, from_cli: bool) -> None:
    """A cutoff above what a side asks for (query.limit) would score a shorter list as if it
    were whole: a configuration error, before anything starts."""
    cutoffs = [*config.compare.k]
    for name in gate_on:
        try:
            k = parse_metric(name).k
        except ValueError:
            continue  # CompareSettings reports unknown names
        if k is not None:  # an uncut metric reads whatever was returned
            cutoffs.append(k)
    where = "--k" if from_cli else f"{config.path}: compare.k"
    for side in ("baseline", "candidate"):
        limit = config.side(side).query.limit
        too_deep = sorted({k for k in cutoffs if k > limit})
        if too_deep:
            raise ConfigError(
                f"{where}: cutoff {too_deep[-1]} is above query.limit = {limit} of the {side}: "
                f"its hit@{too_deep[-1]} would be computed from {limit} results",
                hint=f"raise query.limit to {too_deep[-1]} or more, or lower the cutoff",
            )


def context_metrics(
    config: HarnessConfig, gold: GoldSet, sides: Sequence[str], gate_on: Sequence[str]
) -> bool:
    """Whether the context metrics are measured: the gold set has answer spans and every side
    measured sets query.texts.  Gating on one without query.texts is a configuration error."""
    without = [s for s in sides if config.side(s).query.texts is None]
    for name in gate_on:
        try:
            needs = parse_metric(name).needs_texts
        except ValueError:
            continue  # CompareSettings reports unknown names
        if needs and without:
            raise ConfigError(
                f"{name} reads the returned context text, but the {without[0]} sets no query.texts",
                hint="set query.texts to the JMESPath of each result's text, e.g. "
                'texts = "results[].text"',
            )
    return not without and any(q.spans for q in gold.queries)


def ref_differences(
    config: HarnessConfig, settings: CompareSettings, baseline: str, candidate: str
) -> CompareSettings:
    """`settings` naming the keys that differ between the sides as they run these two refs."""
    from harness.checkout.worktree import resolve_option

    resolved = [
        (name, ref, resolve_option(config.repo, ref, f"--{name}").sha)
        for name, ref in (("baseline", baseline), ("candidate", candidate))
    ]
    sides = [effective_side(config, name, ref, sha) for name, ref, sha in resolved]
    keys = labelled(config, config.differences(*sides), [(ref, sha) for _, ref, sha in resolved])
    return replace(settings, query_differences=tuple(keys))


def with_margins(settings: CompareSettings, margins: Margins | None) -> CompareSettings:
    """`settings` with its non-inferiority margins (`harness.config.margins`): one number is
    every headline metric's margin; a table gives its metrics theirs, and a metric it names that
    is not in the headline joins it, as a --gate-on metric does (its row then decides too)."""
    if margins is None:
        return settings
    if not isinstance(margins, Mapping):
        every = tuple((m, float(margins)) for m in settings.decisive())
        return replace(settings, non_inferior=every)
    named = {parse_metric(name): float(margin) for name, margin in margins.items()}
    headline = {parse_metric(m) for m in settings.decisive()}
    joining = tuple(str(spec) for spec in named if spec not in headline)
    settings = replace(settings, gate_on=(*settings.gate_on, *joining))
    chosen = {m: named[spec] for m in settings.decisive() if (spec := parse_metric(m)) in named}
    return replace(settings, non_inferior=tuple(chosen.items()))

"""The comparison page as `harness.report.layout` blocks, built once for every format that shows
a page: text and Markdown (`harness.report.page`) and HTML (`harness.report.html_page`).

    page_blocks(comparison, redact, local=False) -> [Block]

Top to bottom: any reason the run is invalid, the verdicts in words, what was compared, then the
numbers, written as `harness.report.numbers` says.  It formats; it computes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.report import layout
from harness.report.diagnosis import error_lines, prepare_lines
from harness.report.layout import Block
from harness.report.load import load_blocks
from harness.report.numbers import floor_lines, ms, p_value, queries, rank, rate, signed
from harness.report.resources import resource_blocks, resource_verdicts
from harness.report.twobytwo import movement_blocks
from harness.values.types import Verdict
from harness.verdict.comparison import Comparison, Flip, HitDetail, MetricRow, Scope
from harness.verdict.latency_tail import TailRow
from harness.verdict.order_effect import order_words
from harness.verdict.power import Power

SHOWN_FLIPS = 50  # per cutoff in text and Markdown; JSON keeps every one


# --------------------------------------------------------------------------- the page


def _hit_line(row: MetricRow, hit: HitDetail) -> str:
    t = hit.test
    net = f"{t.net:+.0f}" if t.net == int(t.net) else f"{t.net:+.1f}"
    line = (
        f"{row.metric}: {rate(row.baseline)} -> {rate(row.candidate)} "
        f"({net} queries, b={t.b} c={t.c}, {t.exact} p={p_value(t.p)}): {row.verdict.value}"
    )
    return f"{line}; {row.note}" if row.note else line


def _metric_table(scope: Scope, ci: str, slices: bool) -> tuple[Block, list[str]]:
    headers = ["metric", "baseline", "candidate", "delta", ci, "p"]
    headers += ["Holm p"] if slices else []
    rows, notes = [], []
    for r in scope.rows:
        interval = (
            "" if r.ci_low is None or r.ci_high is None else f"[{r.ci_low:+.3f}, {r.ci_high:+.3f}]"
        )
        verdict = r.verdict.value + (" *" if r.note else "") + (" COLLAPSE" if r.collapse else "")
        if not r.deciding and r.verdict in (Verdict.IMPROVED, Verdict.REGRESSED):
            verdict += " (not deciding)"  # its own uncorrected test: information, not a verdict
        cells = [
            r.metric,
            rate(r.baseline),
            rate(r.candidate),
            signed(r.delta),
            interval,
            p_value(r.p),
        ]
        cells += [p_value(r.p_adjusted)] if slices else []
        rows.append((*cells, verdict))
        if r.note and (slices or r.hit is None):  # the hit@k lines above already say it
            notes.append(f"* {r.metric}: {r.note}")
    if any("(not deciding)" in row[-1] for row in rows):
        notes.append(
            "(not deciding): the row's own test, not corrected across the others; the verdict "
            "is decided by the headline's rows (hit@k and every gate_on metric, Holm)"
        )
    align = ("left", *["right"] * (len(headers) - 1), "left")
    return Block("table", headers=(*headers, "verdict"), rows=tuple(rows), align=align), notes


def _flip_rows(flips: Sequence[Flip], redact: bool) -> tuple[tuple[str, ...], ...]:
    rows = []
    for f in flips[:SHOWN_FLIPS]:
        cells = [
            f.query_id,
            f.slice,
            f"{rank(f.rank_before)} -> {rank(f.rank_after)}",
            f.direction.value,
        ]
        rows.append(tuple(cells if redact else [*cells, " ".join((f.text or "").split())]))
    return tuple(rows)


def page_blocks(c: Comparison, redact: bool, *, local: bool = False) -> list[Block]:
    """The report, top to bottom: why it is invalid, the verdicts, what was compared, numbers."""
    h = c.header
    title = (
        f"harness: {h.baseline.ref} ({h.baseline.short_sha}) -> "
        f"{h.candidate.ref} ({h.candidate.short_sha})"
    )
    out = [Block("title", (title,))]
    if not c.valid:
        why = ("INVALID: no verdict can be given, because:", *(f"- {r}" for r in c.invalid_reasons))
        out.append(Block("alert", why))
    verdicts = (
        (f"quality: {c.verdict_quality.value}", c.quality_reason),
        (f"latency: {c.verdict_latency.value}", c.latency_reason),
        *resource_verdicts(c),
        *margin_verdicts(c),
    )
    out.append(Block("verdicts", rows=verdicts))
    if c.sequential is not None:
        out.append(Block("lines", (f"sequential: {c.sequential.said}",)))
    if c.findings:
        out.append(Block("lines", tuple(f"finding: {f}" for f in c.findings)))
    out += layout.section("Errored answers, by kind", error_lines(c.errors, redact=redact))
    mark = "" if c.valid else " [invalid run: for diagnosis only]"
    out += _folded("What was compared", [Block("lines", _about(c, local=local))])
    if c.floors:
        failed = sum(not f.passed for f in c.floors)
        head = "Floors of [gate.floors] on the candidate: " + (
            f"{failed} of {len(c.floors)} not met" if failed else "all met"
        )
        out += [Block("heading", (head,)), Block("lines", floor_lines(c.floors))]
    costs = resource_blocks  # what each ref costs (harness.report.resources)
    for section in (_quality, _answers, _latency, load_blocks, costs, _noise, _judged, _changed):
        out += section(c, mark)
    out += _flip_blocks(c, mark, redact)
    if c.twobytwo is not None:
        out += movement_blocks(c.twobytwo)
    return out


def margin_verdicts(c: Comparison) -> tuple[tuple[str, str], ...]:
    """compare --non-inferior's line ("non-inferiority: not worse", its sentence); none when
    no margin was asked for; when asked for on an invalid run, that nothing was shown."""
    if c.noninferiority is not None:
        return ((f"non-inferiority: {c.noninferiority.claim.value}", c.noninferiority.said),)
    if c.settings.non_inferior:
        return (("non-inferiority: could not show not worse", "the run is invalid"),)
    return ()


def _tail(rows: Sequence[TailRow]) -> list[Block]:
    """The tail rows (harness.verdict.latency_tail) as a table: each percentile's per-round
    geometric mean on each side, the ratio, its interval and the row's verdict."""
    if not rows:
        return []
    cells = []
    for r in rows:
        if r.ratio is None or r.ci_low is None or r.ci_high is None:
            cells.append((r.name, "", "", "", "", f"cannot tell: {r.answers} answers a side, "
                          f"needs {r.needed}"))  # fmt: skip
            continue
        cells.append((
            r.name, ms(r.baseline_ms or 0.0), ms(r.candidate_ms or 0.0), f"{r.ratio:.2f}",
            f"{100 * r.confidence:g}% CI {r.ci_low:.2f}-{r.ci_high:.2f}", r.verdict.value,
        ))  # fmt: skip
    headers = ("tail, candidate/baseline", "baseline", "candidate", "ratio", "interval", "verdict")
    return [Block("table", headers=headers, rows=tuple(cells),
                  align=("left", "right", "right", "right", "left", "left"))]  # fmt: skip


def _folded(summary: str, blocks: list[Block]) -> list[Block]:
    """`blocks` folded under `summary` in Markdown (the terminal shows them as they are)."""
    return [Block("fold", (summary,)), *blocks, Block("end")] if blocks else []


def _shown_path(path: str | None, local: bool) -> str:
    """A path as a report shows it: whole for the terminal, its name in a pull-request comment
    (an absolute path on the machine that ran harness means nothing to a reviewer)."""
    if path is None:
        return "an earlier run"
    # Plain string work: the renderers import no I/O module, pathlib included.
    return path.rstrip("/").rsplit("/", 1)[-1] if local and path.startswith("/") else path


def _about(c: Comparison, *, local: bool = False) -> tuple[str, ...]:
    h, s = c.header, c.settings
    reused = [
        f"{ref.side} reused from {_shown_path(ref.record_path, local)}"
        for ref in (h.baseline, h.candidate)
        if ref.reused
    ]
    gates = f"; gate on {', '.join(s.gate_on)}" if s.gate_on else ""
    lines = [
        f"baseline: {h.baseline.ref} {h.baseline.sha}",
        f"candidate: {h.candidate.ref} {h.candidate.sha}",
        f"gold set: {_shown_path(h.gold.source, local)} (sha256 {h.gold.hash[:12]}), "
        f"{queries(h.gold.n)}: {h.gold.n_answerable} answerable, "
        f"{h.gold.n_unanswerable} unanswerable",
        f"repeats used for quality: baseline {h.baseline.usable_repeats} of "
        f"{h.baseline.repeats}, candidate {h.candidate.usable_repeats} of {h.candidate.repeats}"
        + (
            " (the rest: latency-only rounds, or failed)"
            if (h.baseline.usable_repeats, h.candidate.usable_repeats)
            != (h.baseline.repeats, h.candidate.repeats)
            else ""
        )
        + (f" ({'; '.join(reused)})" if reused else ""),
        f"settings: k {', '.join(map(str, s.k))}; alpha {_alpha(c)}; band (minimum effect) "
        f"±{s.min_effect:g}; latency tolerance "
        f"±{s.latency_tolerance:.0%}; max errors {s.max_errors}; seed {s.seed}; "
        f"up to {s.resamples} resamples (fewer once a test is settled){gates}",
        "query differences between the sides: " + (", ".join(h.query_differences) or "none"),
    ]
    if h.definition is not None:
        lines.append(f"evaluation definition: sha256 {h.definition.sha256}")
    if h.baseline.sandbox or h.candidate.sandbox:
        lines.append(isolation_line(h.baseline.sandbox, h.candidate.sandbox))
    if h.excluded:
        shown = ", ".join(h.excluded[:10]) + (", ..." if len(h.excluded) > 10 else "")
        lines.append(f"left out (an errored or missing answer): {len(h.excluded)} ({shown})")
    lines += [f"warning: {w}" for w in c.warnings]
    return tuple(lines)


def _alpha(c: Comparison) -> str:
    """The compare's alpha; a sequential one's with its split between the looks and the rest."""
    seq = c.sequential
    if seq is None or not seq.alpha:
        return f"{c.settings.alpha:g}"
    looks = seq.alpha - c.settings.alpha
    return (
        f"{seq.alpha:g} (sequential: {looks:g} on the looks, {c.settings.alpha:g} on the tables "
        "and the last test)"
    )


ISOLATION = {
    "bubblewrap": "each boot in a bubblewrap sandbox (own network, PID namespace, read-only files)",
    "plain": "plain (allowlisted environment and temp dirs; no network, process or file sandbox)",
    "mixed": "mixed (some boots sandboxed, some plain)",
    "deployed": "none: running deployments compared by URL (nothing was checked out, built, "
    "booted or isolated by harness)",
}


def isolation_line(baseline: str | None, candidate: str | None) -> str:
    """`isolation: ...` for the about block: one mode for both sides, else each side's."""
    if baseline == candidate:
        return f"isolation: {ISOLATION.get(str(baseline), str(baseline))}"
    return f"isolation: baseline {baseline or 'unrecorded'}, candidate {candidate or 'unrecorded'}"


def _quality(c: Comparison, mark: str) -> list[Block]:
    if not c.hit_rows:
        return []
    lines = [_hit_line(r, r.hit) for r in c.hit_rows if r.hit]
    family = [r for r in c.overall.rows if r.p_adjusted is not None]
    if len(family) > 1:
        lines.append(
            f"Holm across the {len(family)} headline tests: "
            + ", ".join(f"{r.metric} p={p_value(r.p_adjusted)}" for r in family)
        )
    if _rule_decided(c):
        lines.append(
            "(the fixed-sample tests of the queries asked, at the alpha the looks left: the "
            "sequential rule's own tests decided the quality verdict above)"
        )
    out = [
        Block("heading", (f"hit@k over {queries(c.overall.n)}{mark}",)),
        Block("lines", tuple(lines)),
    ]
    collapses = [
        f"slice collapse: {scope.name} {r.metric} {rate(r.baseline)} -> "
        f"{rate(r.candidate)} ({r.collapse})"
        for scope, r in c.collapses
    ]
    out += layout.section(f"Slice collapses{mark}", collapses)
    ci = f"{100 * (1 - c.settings.alpha):g}% CI"
    table, notes = _metric_table(c.overall, ci, slices=False)
    out += [Block("heading", (f"Metrics, all {queries(c.overall.n)}{mark}",)), table]
    out += [Block("lines", tuple(notes))] if notes else []
    # One slice holding every query is the overall table again: not printed twice.
    slices = [] if len(c.slices) == 1 and c.slices[0].n == c.overall.n else c.slices
    if c.slices and not slices:
        out.append(
            Block(
                "lines",
                (f"every query is in slice {c.slices[0].name}: its table is the one above",),
            )
        )
    per_slice: list[Block] = []
    for scope in slices:
        table, notes = _metric_table(scope, ci, slices=True)
        per_slice += [Block("heading", (f"Slice {scope.name} (n={scope.n}){mark}",)), table]
        per_slice += [Block("lines", tuple(notes))] if notes else []
    return out + _folded(f"Metrics per slice ({len(slices)} slices)", per_slice)


def _answers(c: Comparison, mark: str) -> list[Block]:
    na, o = c.no_answer, c.outranks
    lines = []
    if na.n:
        lines.append(
            f"unanswerable queries returning anything: baseline {na.baseline} of {na.n} "
            f"({rate(na.baseline_rate)}), candidate {na.candidate} of {na.n} "
            f"({rate(na.candidate_rate)})"
        )
    if o.n:
        lines.append(
            f"outranks pairs holding (correction above the stale fact): baseline "
            f"{o.baseline} of {o.n}, candidate {o.candidate} of {o.n}"
        )
    return layout.section(f"Unanswerable queries and outranks pairs{mark}", lines)


def _round_does(c: Comparison) -> str:
    """What a time-paired round did to both sides: deployments by URL are asked, never booted."""
    deployed = c.header.baseline.sandbox == "deployed" and c.header.candidate.sandbox == "deployed"
    return "asking" if deployed else "booting"


def _latency(c: Comparison, mark: str) -> list[Block]:
    lat = c.latency
    queueing = " (under --concurrency, queueing included)" if lat.concurrency > 1 else ""
    out = [Block("heading", (f"Latency, ms (errored answers excluded){queueing}{mark}",))]
    rows = tuple(
        (side, str(x.n), ms(x.p50), ms(x.p95), ms(x.p99), ms(x.max), ms(x.mean))
        for side, x in (("baseline", lat.baseline), ("candidate", lat.candidate))
        if x
    )
    if rows:
        headers = ("ref", "n", "p50", "p95", "p99", "max", "mean")
        out.append(Block("table", headers=headers, rows=rows, align=("left", *["right"] * 6)))
    lines = []
    if lat.test is not None:
        rounds = len(lat.test.rounds)
        paired = f"candidate/baseline, paired trimmed mean over {queries(lat.n_paired)}"
        if rounds:  # a comparison saved before issue 12 has no rounds
            paired = (
                f"candidate/baseline, time-paired trimmed mean over {queries(lat.n_paired)}, "
                f"{rounds} round{'s' * (rounds != 1)} (each {_round_does(c)} both)"
            )
        lines.append(f"{paired}: {lat.test.reason}: {lat.test.verdict.value}")
        if rounds:
            lines.append(f"per-round ratios: {', '.join(f'{r:.2f}' for r in lat.test.rounds)}")
        if lat.order_effect is not None:
            n = lat.order_seed
            seed = (
                ""
                if n is None
                else f"; order seed {n} (--seed)"
                if n == c.settings.seed
                else f"; order seed {n}, drawn for this compare (--seed N fixes it, and with it "
                "the query order and the resamples)"
            )
            lines.append(f"order within pairs: {order_words(lat.order_effect)}{seed}")
    elif lat.not_compared is not None:
        lines.append(f"candidate/baseline: not compared: {lat.words}")
    else:
        lines.append(f"candidate/baseline: {lat.words}")
    for side, flow in (
        ("baseline", lat.throughput_baseline),
        ("candidate", lat.throughput_candidate),
    ):
        if flow is not None:
            lines.append(
                f"throughput {side} at concurrency {flow.concurrency}: {flow.qps:,.0f} queries/s "
                f"(95% CI {flow.ci_low:,.0f}-{flow.ci_high:,.0f}, {flow.rounds} rounds)"
            )
    if lat.machine is not None:
        m = lat.machine
        load = f"load average up to {m.load_max:.2f}" if m.load_max >= 0 else "load unknown"
        busy = ": busy, see the warning" if m.busy else ""
        lines.append(
            f"machine: {load} on {m.cpu_count} CPUs{busy}; "
            f"client CPU {m.client_cpu_ms:.3f} ms per query"
        )
    out.append(Block("lines", tuple(lines)))
    out += _tail(lat.tail)
    out += layout.section(
        "Before the queries (prepare commands and loading; not part of latency), seconds",
        prepare_lines(c.prepare),
    )
    return _folded("Latency details", out)


def _mde(p: Power | None) -> str:
    return "-" if p is None else f"{p.mde:.3f}"


def _rule_decided(c: Comparison) -> bool:
    """Whether the sequential rule gave the quality verdict (the tables are then the
    fixed-sample tests of the queries asked, which did not decide it)."""
    return c.valid and c.sequential is not None and c.sequential.decided


def _noise(c: Comparison, mark: str) -> list[Block]:
    lines = [
        f"{r.metric}: drift baseline {r.hit.drift_baseline}, candidate {r.hit.drift_candidate} "
        f"(top-{r.metric.partition('@')[2]} lists changed: {r.hit.topk_drift_baseline}, "
        f"{r.hit.topk_drift_candidate}); smallest change it could see at 80% power "
        f"{_mde(r.power)}"
        for r in c.hit_rows
        if r.hit
    ]
    if c.boots is not None:
        per_side = f"{c.boots.repeats[0]} baseline, {c.boots.repeats[1]} candidate"
        lines.append(f"variation between boots ({per_side}): {c.boots.words}")
    p = c.power
    if p is not None:
        # Advice for planning: "no measurable difference" is decided by the intervals, not this.
        plan = (
            f"a gold set of about {p.queries_needed} would see ±{p.effect:g}"
            if not p.enough
            else f"enough to see ±{p.effect:g}"
        )
        lines.append(
            f"minimum detectable effect of the headline: {p.mde:.3f} in {p.metric} over "
            f"{queries(p.n)} (80% power; for planning: {plan})"
        )
    for scope in c.slices:
        row = scope.row(f"hit@{c.settings.k[0]}")
        if row is not None and row.power is not None:
            lines.append(
                f"slice {scope.name} ({queries(scope.n)}): smallest {row.metric} change it "
                f"could see at 80% power {row.power.mde:.3f}"
            )
    return _folded("Drift and power", layout.section(f"Drift and power{mark}", lines))


def _judged(c: Comparison, mark: str) -> list[Block]:
    """How much of each side's top k was judged, per scope (`harness.verdict.holes`)."""
    h = c.holes
    if h is None or not h.shares:
        return []

    def share(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    rows = [
        (s.scope, str(s.n), share(s.baseline), share(s.candidate),
         str(s.unjudged_baseline), str(s.unjudged_candidate))
        for s in h.shares
    ]  # fmt: skip
    head = (
        f"share of each side's top-{h.k} documents with a judgement (ir_measures' Judged@{h.k}, "
        "pooled over queries and repeats); an unjudged document counts as not relevant"
    )
    table = Block(
        "table",
        headers=(
            "scope", "queries", "baseline", "candidate", "unjudged pairs: baseline", "candidate"
        ),
        rows=tuple(rows),
    )
    reach = [
        f"hit@{r.k}: up to +{r.up:.3f} / -{r.down:.3f}, were the unjudged documents that one side "
        f"alone ranks where it misses relevant ({r.queries} queries, {r.documents} pairs)"
        for r in h.reach
    ]
    said = ("how far the holes could move the headline:", *reach)
    after = [Block("lines", said)] if reach else []
    if h.condensed:  # a pooled gold set: its calls must hold on the judged documents alone
        scope = Scope("judged only", c.overall.n, h.condensed)
        table, notes = _metric_table(scope, "95% CI", slices=True)
        head = (
            "on the judged documents alone (condensed lists, trec_eval -J: every unjudged "
            "document removed; a primed metric, hit'@k); a call must hold here too"
        )
        after += [Block("lines", (head,)), table]
        after += [Block("lines", tuple(notes))] if notes else []
    blocks = [*layout.section(f"Judged documents{mark}", [head]), table, *after]
    return _folded("Judged documents", blocks)


def _changed(c: Comparison, mark: str) -> list[Block]:
    """How much the rankings changed, per scope, and the queries that changed most."""
    ch = c.changes
    if ch is None or not ch.scopes:
        return []
    head = (
        f"the candidate's top {ch.k} against the baseline's, round by round: rank-biased overlap "
        f"(p = {ch.p:g}; 1 = the same ranking, 0 = no document in common) and Jaccard@{ch.k}; "
        "no judgement needed"
    )
    rows = tuple(
        (s.scope, str(s.n), f"{s.rbo:.3f}", f"{s.jaccard:.3f}", str(s.changed))
        for s in ch.scopes
    )
    table = Block(
        "table",
        headers=("scope", "queries", "RBO", f"Jaccard@{ch.k}", f"top {ch.k} changed"),
        rows=rows,
    )
    most = [
        f"{q.query_id} ({q.slice}): RBO {q.rbo:.3f}, Jaccard@{ch.k} {q.jaccard:.3f}"
        for q in ch.most_changed
    ]
    lines = [Block("lines", ("changed most:", *most))] if most else []
    blocks = [*layout.section(f"How much the rankings changed{mark}", [head]), table, *lines]
    return _folded("How much the rankings changed", blocks)


def _flip_blocks(c: Comparison, mark: str, redact: bool) -> list[Block]:
    out = []
    headers = ("query", "slice", "rank before -> after", "change")
    for flips in c.flips:
        if not flips.flips:
            continue
        out.append(
            Block(
                "table",
                headers=headers if redact else (*headers, "query text"),
                rows=_flip_rows(flips.flips, redact),
                fold=f"Flips at {flips.metric}: {queries(len(flips.flips))}{mark}",
            )
        )
        more = len(flips.flips) - SHOWN_FLIPS
        if more > 0:
            out.append(Block("lines", (f"... and {more} more (all of them in --format json)",)))
    return out

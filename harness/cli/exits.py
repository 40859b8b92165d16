"""Exit statuses: the one place an outcome of the harness becomes a process exit status.

    0  EXIT_OK          no regression; or a command that did its job; a latency verdict that
                        is inconclusive (too few or too noisy rounds) or not compared (a stored
                        run, --concurrency > 1): neither is a failure
    1  EXIT_REGRESSED   quality or latency regressed outside the noise; a gate row fell;
                        a matrix constraint failed
    2  EXIT_USAGE       usage, configuration or gold-set error (every HarnessError but
                        BuildError carries it as `exit_status`); a gold set that fails its check
    3  EXIT_INVALID     invalid: a failed build (recorded in the run; a BuildError carries 3
                        as its `exit_status` wherever it surfaces: could not measure), errored
                        queries, a failed boot, mismatched inputs, answers from another id space;
                        a gate that is not comparable, never a pass
    4  EXIT_INCONCLUSIVE  with --strict only: the gold set could not have seen a change of the
                        minimum effect (too few queries, too unstable); 0 without --strict;
                        with --non-inferior (or [gate] non_inferior): a margin not shown
                        (fails closed: "could not show not worse" is never a pass)
    with margins        compare: 3 invalid; 1 latency regressed, a floor missed, a metric shown
                        worse than its margin, or a headline metric without a margin regressed;
                        4 a margin not shown; else 0 (a change the difference test calls inside
                        the margins passes: `margins_status`). gate: 1 a row worse than its
                        margin or fallen; 4 a row not shown within its margin
    compare, results not saved (a full disk): the verdict's status when it is 1, 3 or 4 (a
                        regression is never hidden by the failed write), else 2: never 0, since
                        nothing of the run is on disk (`unsaved_status`)
    harness bisect      0 found, 1 not found or ambiguous, 3 invalid (2 bad input as always)
    128 + N             terminated by signal N (130: interrupted with Ctrl-C)

`harness.cli.main` returns these and nothing else turns an outcome into a number.  `HELP` is
what each command's --help says of them.
"""

from __future__ import annotations

from collections.abc import Sequence

TYPE_CHECKING = False  # typing's, without importing typing: `harness --help` loads no types
if TYPE_CHECKING:
    from harness.values.types import Verdict
    from harness.verdict.comparison import Comparison

EXIT_OK, EXIT_REGRESSED, EXIT_USAGE, EXIT_INVALID, EXIT_INCONCLUSIVE = 0, 1, 2, 3, 4

# harness gate, by harness.gate.rule.Outcome (a str enum): a pass only when nothing fell.
_GATE = {
    "pass": EXIT_OK,
    "updated": EXIT_OK,
    "fail": EXIT_REGRESSED,
    "not comparable": EXIT_INVALID,
    "invalid": EXIT_INVALID,
    "not shown": EXIT_INCONCLUSIVE,  # --non-inferior: a margin not shown, never a pass
}


def exit_status(
    verdicts: Sequence[Verdict], *, strict: bool = False, floors_failed: bool = False
) -> int:
    """harness compare and harness report, on (quality, latency): invalid beats regressed beats
    everything else (improved, no difference, inconclusive, not compared: 0), except that with
    `strict` an inconclusive quality verdict is EXIT_INCONCLUSIVE. A floor of [gate.floors] the
    candidate does not meet is EXIT_REGRESSED, as a regression is."""
    from harness.values.types import Verdict

    if Verdict.INVALID in verdicts:
        return EXIT_INVALID
    if Verdict.REGRESSED in verdicts or floors_failed:
        return EXIT_REGRESSED
    if strict and verdicts and verdicts[0] is Verdict.INCONCLUSIVE:
        return EXIT_INCONCLUSIVE
    return EXIT_OK


def comparison_status(comparison: Comparison, *, strict: bool = False) -> int:
    """harness compare and harness report on a Comparison: `margins_status` when it was asked
    for non-inferiority (settings.non_inferior), else `exit_status` on its verdicts."""
    if comparison.settings.non_inferior:
        return margins_status(comparison)
    return exit_status(
        comparison.verdicts, strict=strict, floors_failed=comparison.floors_failed
    )


def margins_status(comparison: Comparison) -> int:
    """With margins (compare --non-inferior): invalid 3; latency regressed, a floor missed, a
    metric shown worse than its margin or a headline metric without one regressed 1; a margin
    not shown 4 (also when no claim could be made at all); else 0.  The difference test's
    quality verdict gives way to the margins on the metrics they cover: a change it calls
    inside them passes, what the margin is for."""
    from harness.values.types import Verdict
    from harness.verdict.noninferiority import Claim

    quality, latency = comparison.verdicts
    if Verdict.INVALID in (quality, latency):
        return EXIT_INVALID
    margins = comparison.noninferiority
    if latency is Verdict.REGRESSED or comparison.floors_failed:
        return EXIT_REGRESSED
    if margins is not None and margins.fails:
        return EXIT_REGRESSED
    if margins is None or margins.claim is not Claim.NOT_WORSE:
        return EXIT_INCONCLUSIVE
    return EXIT_OK


def unsaved_status(status: int) -> int:
    """The exit status of a compare whose verdict has `status` but whose results could not be
    saved: a regression (1), an invalid run (3) or an inconclusive one under --strict (4)
    keeps its status, so a CI step fails for what was measured; a pass becomes EXIT_USAGE,
    since a run that left nothing on disk is no success."""
    return status if status != EXIT_OK else EXIT_USAGE


def not_saved_status(status: int) -> str:
    """The words for stderr beside `unsaved_status`: what the exit status then says."""
    if status == EXIT_OK:
        return f"exit status {EXIT_USAGE}, not {EXIT_OK}: free space and run it again"
    return (
        f"exit status {status} is the verdict's (the write failed too): free space and run it "
        "again to keep the results"
    )


# harness bisect, by harness.bisect.run.Outcome (a str enum).
_BISECT = {
    "found": EXIT_OK,
    "not found": EXIT_REGRESSED,
    "ambiguous": EXIT_REGRESSED,
    "invalid": EXIT_INVALID,
}


def bisect_status(outcome: str) -> int:
    """harness bisect: 0 found, 1 not found or ambiguous (skips left several), 3 invalid."""
    return _BISECT[outcome]


def worst_status(statuses: Sequence[int]) -> int:
    """harness compare-runs, over its candidates' statuses (each as `exit_status` gives it):
    invalid beats regressed beats inconclusive (with --strict) beats no regression."""
    for status in (EXIT_INVALID, EXIT_REGRESSED, EXIT_INCONCLUSIVE):
        if status in statuses:
            return status
    return EXIT_OK


def gate_status(outcome: str) -> int:
    """harness gate: 0 pass or updated, 1 fail, 3 not comparable or invalid."""
    return _GATE[outcome]


def valid_status(valid: bool) -> int:
    """harness run and harness sweep: 3 when anything failed or errored, else 0."""
    return EXIT_OK if valid else EXIT_INVALID


def matrix_status(valid: bool, constraint_failed: bool) -> int:
    """harness matrix: 3 when a configuration's run is invalid, else 1 when a constraint
    failed (like a regression), else 0."""
    if not valid:
        return EXIT_INVALID
    return EXIT_REGRESSED if constraint_failed else EXIT_OK


def check_status(ok: bool) -> int:
    """harness gold check: 2 when the check found an error in the gold set."""
    return EXIT_OK if ok else EXIT_USAGE


def signal_status(signum: int) -> int:
    """Terminated by signal `signum`, as a shell reports it."""
    return 128 + signum


# --------------------------------------------------------------------------- what --help says

HELP = {
    "compare": "0 no regression (improved, no measurable difference, inconclusive, not compared)"
    "\n  1 quality or latency regressed, or the candidate misses a [gate.floors] floor"
    "\n  2 usage, configuration or gold-set error"
    "\n  3 invalid: a build, boot or query failed, or the inputs do not match"
    "\n  4 with --strict: quality inconclusive; with --non-inferior: a margin not shown"
    "\n  (with --non-inferior: 1 also when a metric is shown worse than its margin, and a"
    "\n  change inside the margins passes)",
    "run": "0 every query answered\n  2 usage, configuration or gold-set error"
    "\n  3 a query failed or the service would not build or boot",
    "gate": "0 pass (or --update-baseline wrote it)"
    "\n  1 a row fell below the baseline (or its margin), or a [gate.floors] floor is not met"
    "\n  2 usage or configuration error\n  3 not comparable (another gold set) or invalid"
    "\n  4 with --non-inferior: a row not shown within its margin (never a pass)",
    "gold check": "0 no error found\n  2 the gold set has errors (or a usage error)",
}
HELP["report"] = HELP["compare"]
HELP["bisect"] = (
    "0 the first bad commit was found\n  1 not found: the bad end shows no regression, or skips"
    " left several commits (listed)\n  2 usage, configuration or gold-set error"
    "\n  3 invalid: the good end (or every step) could not be measured"
)
HELP["compare-runs"] = (
    "0 no candidate regressed (improved, no measurable difference, inconclusive)"
    "\n  1 a candidate's quality regressed\n  2 usage error or bad input (a malformed run"
    " file, a query the gold set lacks, an empty run: the message names file:line)"
    "\n  3 invalid: a run that returned nothing, or ids no judgement knows"
    "\n  4 with --strict: a candidate's quality inconclusive"
)
HELP["matrix"] = (
    "0 every constraint met\n  1 a constraint failed\n  2 usage or configuration error"
    "\n  3 a configuration's run is invalid"
)
HELP["sweep"] = HELP["run"].replace("the service", "a value's service")
HELP_DEFAULT = "0 done\n  2 usage error or bad input (the message names the file, line or option)"
HELP_TOP = (
    "exit status: 0 ok, 1 regressed or below a floor, 2 usage or input error, "
    "3 invalid run,\n  4 inconclusive with --strict, 128+N killed by signal N; "
    "each command's --help says which it uses"
)

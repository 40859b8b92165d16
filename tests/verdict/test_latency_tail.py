"""The tail rows (harness.verdict.latency_tail): p50/p95/p99 by round, beside the trimmed mean."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
from compare_support import base_ms, ranks, run_pair

from harness.values.types import GoldQuery, Verdict
from harness.verdict.latency import LatencyTest
from harness.verdict.latency_rule import ALPHA, decide, plan, round_estimate
from harness.verdict.latency_tail import (
    FAMILY_ALPHA,
    TAIL_ALPHA,
    TailRow,
    headline,
    needed_answers,
    round_percentile,
    tail_rows,
)

Rounds = list[tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]]


def _rounds(seed: int, k: int = 6, n: int = 400, slow_tail: float = 1.0) -> Rounds:
    """`k` rounds of `n` answers a side: lognormal around 1 ms with a per-round drift shared by
    both sides; the candidate's slowest 10% (by its own draw) `slow_tail` times slower."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(k):
        drift = rng.normal(0, 0.05)
        b = np.exp(rng.normal(drift, 0.3, n))
        c = np.exp(rng.normal(drift, 0.3, n))
        c[c >= np.quantile(c, 0.9)] *= slow_tail
        out.append((b, c))
    return out


def _mean(rounds: Rounds) -> LatencyTest:
    k = len(rounds)
    return decide([round_estimate(b, c) for b, c in rounds], plan(k, k))


def _row(rows: tuple[TailRow, ...], p: int) -> TailRow:
    (row,) = [r for r in rows if r.percentile == p]
    return row


def test_the_family_error_is_split_so_it_sums_to_five_percent() -> None:
    assert ALPHA + 3 * TAIL_ALPHA == pytest.approx(FAMILY_ALPHA) == pytest.approx(0.05)


def test_needed_answers_leave_ten_above_each_percentile() -> None:
    assert [needed_answers(p) for p in (50, 95, 99)] == [20, 200, 1000]


def test_a_round_percentile_and_its_order_statistic_variance_by_hand() -> None:
    values = np.arange(1.0, 101.0)  # 1..100 ms
    log_q, var = round_percentile(values, 50)
    assert log_q == pytest.approx(math.log(50.5))  # numpy "linear": between ranks 50 and 51
    # ranks 100 * 0.5 -/+ 1.96 * sqrt(100 * 0.25) = 50 -/+ 9.8: the 40th and the 60th value
    z = 1.959963984540054
    assert var == pytest.approx(((math.log(60) - math.log(40)) / (2 * z)) ** 2)


def test_equal_sides_are_not_called() -> None:
    for seed in range(8):
        rounds = _rounds(seed)
        rows = tail_rows(rounds, first=6, budget=6)
        assert not [r for r in rows if r.verdict in (Verdict.REGRESSED, Verdict.IMPROVED)]
        # p50 and p95 have the answers (2,400 a side) and a tight interval: no difference;
        # p99 too, but it is noisier.
        assert _row(rows, 50).verdict is Verdict.NO_DIFFERENCE
        verdict, _ = headline(_mean(rounds), rows)
        assert verdict in (Verdict.NO_DIFFERENCE, Verdict.INCONCLUSIVE)


def test_a_tail_only_slowdown_is_called_by_the_tail_and_not_by_the_mean() -> None:
    rounds = _rounds(3, slow_tail=3.0)
    mean = _mean(rounds)
    assert mean.verdict is not Verdict.REGRESSED  # the trim leaves the slowest fifth out
    rows = tail_rows(rounds, first=6, budget=6)
    assert _row(rows, 50).verdict is Verdict.NO_DIFFERENCE
    p95, p99 = _row(rows, 95), _row(rows, 99)
    assert p95.verdict is p99.verdict is Verdict.REGRESSED
    assert p95.ratio is not None and 2.5 < p95.ratio < 3.5
    # Oracle: the row's ratio is the geometric mean of the rounds' percentile ratios.
    per_round = [np.percentile(c, 95) / np.percentile(b, 95) for b, c in rounds]
    assert p95.ratio == pytest.approx(math.exp(np.mean(np.log(per_round))))
    assert p95.candidate_ms is not None and p95.baseline_ms is not None
    assert p95.ratio == pytest.approx(p95.candidate_ms / p95.baseline_ms)
    assert p95.ci_low is not None and p95.ci_low > 1
    verdict, words = headline(mean, rows)
    assert verdict is Verdict.REGRESSED
    worst = max((p95, p99), key=lambda r: r.ratio or 0)
    assert words.startswith(f"{worst.name} {worst.ratio:.2f}x slower (99.5% CI ")
    assert f"; mean {mean.ratio:.2f}x" in words or "; mean 1.00x" in words


def test_too_few_answers_cannot_tell() -> None:
    rounds = _rounds(1, k=3, n=60)  # 180 answers a side: p95 needs 200, p99 1000
    rows = tail_rows(rounds, first=3, budget=3)
    p95, p99 = _row(rows, 95), _row(rows, 99)
    for row, needed in ((p95, 200), (p99, 1000)):
        assert row.verdict is Verdict.INCONCLUSIVE and row.ratio is None
        assert row.words.startswith(f"p{row.percentile}: cannot tell from 180 answers a side")
        assert f"at least {needed}" in row.words
    assert _row(rows, 50).ratio is not None
    # One more round (240 a side) is enough for p95.
    assert _row(tail_rows(_rounds(1, k=4, n=60), first=3, budget=4), 95).ratio is not None


def _called(verdict: Verdict, ratio: float, p: int = 95) -> TailRow:
    return TailRow(p, 1.0, ratio, ratio, ratio * 0.9, ratio * 1.1, 0.995, verdict, f"p{p} words")


def _mean_test(verdict: Verdict, ratio: float = 1.0) -> LatencyTest:
    return LatencyTest(ratio, ratio, ratio, verdict, "mean words")


def test_headline_names_the_worst_called_and_a_tail_no_difference_needs_the_means() -> None:
    inconclusive, same = _mean_test(Verdict.INCONCLUSIVE), _mean_test(Verdict.NO_DIFFERENCE)
    quiet = _called(Verdict.NO_DIFFERENCE, 1.0)
    assert headline(inconclusive, [quiet]) == (Verdict.INCONCLUSIVE, "mean words")
    assert headline(same, [quiet]) == (
        Verdict.NO_DIFFERENCE,
        "mean words, inside the tolerance band of ±10%",
    )
    open_row = _called(Verdict.INCONCLUSIVE, 1.3, 99)
    assert headline(same, [quiet, open_row])[1].endswith(
        "the tail did not say so: p99 could not tell"
    )
    slower = _called(Verdict.REGRESSED, 2.0, 99)
    verdict, words = headline(
        _mean_test(Verdict.IMPROVED, 0.5), [_called(Verdict.REGRESSED, 1.5), slower]
    )
    assert verdict is Verdict.REGRESSED
    assert words == "p99 words; mean 2.00x faster, improved; also p95 1.50x slower"
    faster = _called(Verdict.IMPROVED, 0.5)
    assert headline(_mean_test(Verdict.REGRESSED, 3.0), [faster]) == (
        Verdict.REGRESSED,
        "mean words; tail: p95 2.00x faster",
    )
    verdict, words = headline(_mean_test(Verdict.REGRESSED, 3.0), [slower])
    assert (verdict, words) == (Verdict.REGRESSED, "mean words; tail: p99 2.00x slower")


@pytest.mark.slow
def test_aa_family_false_calls_stay_within_five_percent_at_tolerance_zero() -> None:
    # At tolerance 0 any call of the mean or a tail row is a false one under A/A.
    calls = 0
    sims = 200
    for seed in range(sims):
        rounds = _rounds(1000 + seed, k=5, n=300)
        rows = tail_rows(rounds, first=5, budget=5, tolerance=0.0)
        mean = decide([round_estimate(b, c) for b, c in rounds], plan(5, 5), tolerance=0.0)
        verdict, _ = headline(mean, rows)
        calls += verdict in (Verdict.REGRESSED, Verdict.IMPROVED)
    assert calls <= 18  # 5% of 200 is 10; a rule at 5% exceeds 18 with chance < 0.01


def _tail_slow(rep: int, q: GoldQuery) -> float:
    # The slowest queries (2 + 6 = 8 ms, one in seven) four times slower; the rest unchanged.
    return base_ms(rep, q) * (4.0 if int(q.id[1:]) % 7 == 6 else 1.0)


def test_compare_a_tail_only_slowdown_regresses_latency_naming_p95() -> None:
    c = run_pair(ranks(), ms=_tail_slow)
    test = c.latency.test
    assert test is not None and test.verdict is not Verdict.REGRESSED
    assert c.verdict_latency is Verdict.REGRESSED
    assert c.latency_reason.startswith("p95 4.00x slower (99.5% CI ")
    rows = {r.name: r for r in c.latency.tail}
    assert rows["p95"].verdict is Verdict.REGRESSED and rows["p50"].ratio == 1.0
    assert "cannot tell from 258 answers a side" in rows["p99"].words  # 3 rounds of 86
    assert not [w for w in c.warnings if w.startswith("the slowest answers got slower")]


def test_paired_answers_take_their_covariance_out_of_the_round_variance() -> None:
    from harness.verdict.latency_tail import _paired_var

    values = np.arange(1.0, 101.0)
    _, var = round_percentile(values, 95)
    # The same answers on both sides: the indicators agree, rho = 1, the ratio has no variance.
    assert _paired_var(values, values, 95, var, var) == pytest.approx(0.0, abs=1e-15)
    # Reversed pairing: below_b & below_c holds for 90 of 100 pairs (p = 0.95:
    # rho = (0.90 - 0.9025) / (0.95 * 0.05)), so the variance grows past the sum.
    rho = (0.90 - 0.95**2) / (0.95 * 0.05)
    assert _paired_var(values, values[::-1], 95, var, var) == pytest.approx(2 * var - 2 * rho * var)

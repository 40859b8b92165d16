"""harness.report.page: text, Markdown and JSON of fixed comparisons; round trips; redaction;
metrics.

Expected outputs live in tests/data/report/.  After an intended change to the layout, rewrite
them with

    HARNESS_REGEN=1 pytest tests/report/test_report.py

and review the diff (`git diff tests/data/report`) before committing it.  The comparisons are
built in memory from tests/compare_support.py's synthetic gold set and runs, with fixed seeds; no
rendered output holds a timestamp, so the files are byte-for-byte stable.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import statistics
from dataclasses import replace
from pathlib import Path
from statistics import NormalDist

import pytest
from compare_support import (
    BASE_SHA,
    CAND_SHA,
    buried,
    candidate,
    make_gold,
    make_run,
    ranks,
    regressed_candidate,
    slow,
)
from oracles import tango_reference
from purity import imported_modules, imported_names, impurities

from harness.errors import ResultsError
from harness.report import blocks, runs
from harness.report import page as report
from harness.report.numbers import p_value
from harness.report.page import RENDERERS, render
from harness.report.runs import render_evaluation, render_run
from harness.report.saved import save_comparison
from harness.results import document
from harness.results.comparisons import load_comparison
from harness.results.document import comparison_from_dict, comparison_to_dict
from harness.score.evaluation import Evaluation, evaluate
from harness.values.types import ErrorKind, RefRun, RunFailure, Verdict
from harness.verdict.comparison import CompareSettings, Comparison
from harness.verdict.decide import compare, summarise_run

EXPECTED = Path(__file__).resolve().parents[1] / "data" / "report"
REGEN = os.environ.get("HARNESS_REGEN") == "1"
SUFFIX = {"text": "txt", "markdown": "md", "json": "json"}


def check_expected(name: str, text: str) -> None:
    path = EXPECTED / name
    if REGEN:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if not path.is_file():
        pytest.fail(f"{path} is missing: write it with HARNESS_REGEN=1 pytest {__file__}")
    assert text == path.read_text(encoding="utf-8"), f"differs from {path} (HARNESS_REGEN=1)"


# --------------------------------------------------------------------------- fixed comparisons


def regressed(reused: bool = False) -> Comparison:
    """Candidate loses 12 howto answers and 2 rare ones, wins back 2, pushes q05 to rank 7, is
    1.5x slower, errors once (within max_errors); both measured together (`reused`: the
    baseline record was a stored one, so latency is not compared)."""
    gold = make_gold()
    base = replace(
        make_run(gold, ranks(buried(1, 2)), pair_id=None if reused else "measured-together"),
        reused=reused,
        record_path="results/runs/main.json",
    )
    cand = regressed_candidate(gold)
    settings = CompareSettings(max_errors=1, query_differences=("query.params.boost",))
    return compare(gold, base, cand, settings)


def invalid() -> Comparison:
    """Candidate times out on 3 answers and fails to boot once: invalid, numbers still shown."""
    gold = make_gold()
    errors = {(0, "q05"): ErrorKind.TIMEOUT, (2, "q05"): ErrorKind.TIMEOUT}
    failures = {1: RunFailure("boot", "exited with status 1 before /health answered")}
    cand = candidate(gold, ranks(buried(*range(1, 13))), errors=errors, failures=failures)
    return compare(gold, make_run(gold, ranks()), cand, CompareSettings())


def collapsed() -> Comparison:
    gold = make_gold()
    base = make_run(gold, ranks(buried(*range(1, 11))))
    return compare(gold, base, candidate(gold, ranks(buried(*range(71, 81)))), CompareSettings())


def too_small() -> Comparison:
    gold = make_gold(n=5, unanswerable=1)
    cand = candidate(gold, ranks(buried(1, 2)))
    return compare(gold, make_run(gold, ranks()), cand, CompareSettings(resamples=500))


def build_failed() -> Comparison:
    gold = make_gold()
    cand = candidate(gold, ranks(), build_failure=RunFailure("build", "make: *** [all] Error 2"))
    return compare(gold, make_run(gold, ranks()), cand, CompareSettings(resamples=500))


def stale() -> Comparison:
    """`regressed` with the stored baseline record reused: quality as before, latency not
    compared, with the reason (--reuse-runs) and the fix."""
    return regressed(reused=True)


ORDER_EFFECT = 1.05  # what the second of a pair costs in `ordered`


def _in_pairs(base: RefRun, cand: RefRun) -> tuple[RefRun, RefRun]:
    """Both runs with their order within pairs recorded (query i of round r baseline-first
    when i + r is even: balanced) and the second of each pair ORDER_EFFECT times slower."""

    def placed(run: RefRun, first_when: int) -> RefRun:
        reps = []
        for rep in run.repeats:
            places = tuple(
                0 if (i + rep.index) % 2 == first_when else 1 for i in range(len(rep.results))
            )
            results = tuple(
                replace(r, latency_ns=round(r.latency_ns * ORDER_EFFECT)) if p else r
                for r, p in zip(rep.results, places, strict=True)
            )
            reps.append(replace(rep, results=results, positions=places))
        return replace(run, repeats=tuple(reps), order_seed=1234)

    return placed(base, 0), placed(cand, 1)


def ordered() -> Comparison:
    """1.5x slower, measured together with the order within pairs recorded: the latency
    details show the order effect measured (ORDER_EFFECT put in) and the order seed."""
    gold = make_gold()
    base, cand = _in_pairs(make_run(gold, ranks()), candidate(gold, ranks(), ms=slow))
    return compare(gold, base, cand, CompareSettings(resamples=500))


CASES = {
    "regressed": regressed,
    "ordered": ordered,
    "stale": stale,
    "invalid": invalid,
    "collapsed": collapsed,
    "too_small": too_small,
    "build_failed": build_failed,
}


@pytest.fixture(scope="module")
def comparisons() -> dict[str, Comparison]:
    return {name: make() for name, make in CASES.items()}


# --------------------------------------------------------------------------- expected files


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_regressed_comparison_matches_the_expected_file(
    comparisons: dict[str, Comparison], fmt: str
) -> None:
    check_expected(f"regressed.{SUFFIX[fmt]}", render(comparisons["regressed"], fmt))


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_the_order_effect_is_shown_as_computed_independently(
    comparisons: dict[str, Comparison], fmt: str
) -> None:
    """The order-effect line (issue 24, item 4) against the estimator written out here with
    the statistics module: per round half the difference of the mean log ratios of
    baseline-first and candidate-first pairs, rounds weighted by inverse variance."""
    c = comparisons["ordered"]
    text = render(c, fmt)
    check_expected(f"ordered.{SUFFIX[fmt]}", text)
    base, cand = (
        side
        for side in _in_pairs(
            make_run(make_gold(), ranks()), candidate(make_gold(), ranks(), ms=slow)
        )
    )
    num = den = 0.0
    for b_rep, c_rep in zip(base.repeats, cand.repeats, strict=True):
        groups: dict[bool, list[float]] = {True: [], False: []}
        for b, cr, place in zip(b_rep.results, c_rep.results, b_rep.positions, strict=True):
            groups[place == 0].append(math.log(cr.latency_ns / b.latency_ns))
        first, second = groups[True], groups[False]
        estimate = (statistics.fmean(first) - statistics.fmean(second)) / 2
        var = (
            statistics.variance(first) / len(first) + statistics.variance(second) / len(second)
        ) / 4
        num, den = num + estimate / var, den + 1 / var
    expected = math.exp(num / den)
    assert abs(expected - ORDER_EFFECT) < 0.01  # what was put in comes back out
    effect = c.latency.order_effect
    assert effect is not None and math.isclose(effect.ratio, expected, rel_tol=1e-9)
    assert effect.low < expected < effect.high and effect.rounds == 3
    assert c.latency.order_seed == 1234
    if fmt == "json":
        shown = json.loads(text)["latency"]["order_effect"]["ratio"]
        assert math.isclose(shown, expected, rel_tol=1e-9)
    else:
        assert (
            f"order within pairs: the second of a pair is {(expected - 1) * 100:.1f}% slower"
            in text
        )
        assert "order seed 1234" in text


@pytest.mark.parametrize("name", ["invalid", "collapsed", "too_small"])
def test_other_comparisons_match_their_expected_text(
    comparisons: dict[str, Comparison], name: str
) -> None:
    check_expected(f"{name}.txt", render(comparisons[name], "text"))


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_a_stale_pair_says_latency_not_compared_in_every_format(
    comparisons: dict[str, Comparison], fmt: str
) -> None:
    text = render(comparisons["stale"], fmt)
    check_expected(f"stale.{SUFFIX[fmt]}", text)
    assert "not compared" in text and "--reuse-runs" in text


def test_redacted_markdown_matches_the_expected_file(comparisons: dict[str, Comparison]) -> None:
    check_expected(
        "regressed-redacted.md", render(comparisons["regressed"], "markdown", redact=True)
    )


# --------------------------------------------------------------------------- what the text says


def test_verdicts_in_words_come_first_then_the_hit_lines(
    comparisons: dict[str, Comparison],
) -> None:
    text = render(comparisons["regressed"], "text")
    lines = text.splitlines()
    assert lines[0] == f"harness: main ({BASE_SHA[:8]}) -> feat/x ({CAND_SHA[:8]})"
    assert lines[2] == "quality: regressed: hit@5, hit@10 regressed"
    assert lines[3].startswith("latency: regressed: 1.51x slower (96.5% CI 1.4")
    # b = 12 howto + 2 rare + q05 (rank 7) = 15, c = q01, q02 = 2, on 79 queries (q33 errored).
    assert "hit@5: 0.975 -> 0.810 (-13 queries, b=15 c=2, McNemar exact p=0.0023): regressed" in (
        lines
    )
    assert text.index("quality:") < text.index("hit@5:") < text.index("Flips at hit@5")


def test_the_style_guide_example_line() -> None:
    gold = make_gold()
    c = compare(
        gold,
        make_run(gold, ranks()),
        candidate(gold, ranks(buried(*range(1, 15)))),
        CompareSettings(resamples=200),
    )
    # 80 -> 66 hits: 66/80 = 0.825; p = 2 * 0.5**14 = 0.000122
    assert "hit@5: 1.000 -> 0.825 (-14 queries, b=14 c=0, McNemar exact p=0.00012): regressed" in (
        render(c, "text").splitlines()
    )


def test_an_invalid_run_says_so_above_everything_and_marks_the_numbers(
    comparisons: dict[str, Comparison],
) -> None:
    text = render(comparisons["invalid"], "text")
    lines = text.splitlines()
    assert lines[2] == "INVALID: no verdict can be given, because:"
    assert lines[3].startswith(f"- candidate feat/x ({CAND_SHA[:8]}): repeat 2 failed at boot")
    assert "quality: invalid: the run is invalid (see the reasons above)" in lines
    assert "hit@k over 79 queries [invalid run: for diagnosis only]" in lines
    markdown = render(comparisons["invalid"], "markdown")
    assert "> **INVALID: no verdict can be given, because:**" in markdown


def test_a_slice_collapse_is_reported(comparisons: dict[str, Comparison]) -> None:
    text = render(comparisons["collapsed"], "text")
    assert "slice collapse: rare hit@5 1.000 -> 0.000 (fell to zero)" in text.splitlines()
    assert "quality: inconclusive: hit@5: no change larger than 0.095 either way" in text
    assert text.splitlines()[2].endswith("; but slice collapse: rare (hit@5 and 9 more)")


def test_a_gold_set_too_small_is_said_in_words(comparisons: dict[str, Comparison]) -> None:
    text = render(comparisons["too_small"], "text")
    verdict = text.splitlines()[2]
    # 2 of 5 queries lost: Tango's 90% interval (the oracle's transcription) reaches past the
    # band on both sides, and the change seen is larger than the band: more queries would more
    # likely call it than rule it out.
    low, high = tango_reference(2, 0, 5, 0.10)
    assert verdict.startswith(
        f"quality: inconclusive: hit@5: no change larger than {-low:.3f} either way "
        f"(hit@5 -0.400, 90% CI [{low:+.3f}, {high:+.3f}])"
    )
    assert verdict.endswith("more queries would more likely call it than rule it out")
    # The mde stays, as advice: McNemar at alpha / 2 can never call 5 queries (7 needed), so it
    # is the normal bound's: x past n moves every query, x - z_a sqrt(V + x) = z_b sqrt(V), V = 2.
    assert "minimum detectable effect of the headline: 1.686 in hit@5 over 5 queries" in text
    z_a, z_b = NormalDist().inv_cdf(1 - 0.025 / 2), NormalDist().inv_cdf(0.8)
    power = comparisons["too_small"].power
    assert power is not None
    x = power.mde * 5
    assert x - z_a * math.sqrt(2 + x) == pytest.approx(z_b * math.sqrt(2), rel=1e-6)


@pytest.mark.parametrize(
    ("p", "shown"),
    [
        (1.0, "1.0"),
        (0.5, "0.50"),
        (2 * 0.5**6, "0.031"),  # 0.03125
        (2 * 0.5**12, "0.00049"),  # 0.000488
        (0.0001, "0.00010"),
        (0.000099, "<0.0001"),
        (None, "-"),
    ],
)
def test_p_values_have_two_significant_digits(p: float | None, shown: str) -> None:
    assert p_value(p) == shown


def test_an_unknown_format_is_refused(comparisons: dict[str, Comparison]) -> None:
    assert set(RENDERERS) == {"text", "markdown", "json", "html"}
    with pytest.raises(ValueError, match="unknown format 'pdf'; known: text, markdown, json, html"):
        render(comparisons["regressed"], "pdf")


@pytest.mark.parametrize(
    "source", [report.__file__, blocks.__file__, runs.__file__, document.__file__]
)
def test_report_computes_nothing(source: str) -> None:
    assert "harness.verdict.stats" not in imported_modules(source)
    from_compare = {
        name for module, name in imported_names(source) if module == "harness.verdict.decide"
    }
    assert "compare" not in from_compare  # types only


def test_the_page_and_the_document_are_built_without_io() -> None:
    pages = (
        "layout", "numbers", "blocks", "page", "runs", "html_page", "html_sections", "figures",
        "plotting",
    )  # fmt: skip
    modules = (*(f"harness.report.{page}" for page in pages), "harness.results.document")
    assert impurities(*modules) == {
        "harness.report.layout": [],
        "harness.report.numbers": [],
        "harness.report.blocks": [],
        "harness.report.page": ["importlib.util"],  # only to ask whether plotly is installed
        "harness.report.html_page": [],
        "harness.report.html_sections": [],
        "harness.report.figures": [],
        # plotting writes plotly's JSON and <div>s itself; it reads plotly.min.js and the
        # template from the plotly package, nothing else
        "harness.report.plotting": ["importlib"],
        "harness.report.runs": ["csv", "io"],  # the CSV of `harness metrics`, into an io.StringIO
        "harness.results.document": [],
    }


# --------------------------------------------------------------------------- JSON


@pytest.mark.parametrize("name", list(CASES))
def test_json_reads_back_into_an_equal_comparison(
    comparisons: dict[str, Comparison], name: str
) -> None:
    c = comparisons[name]
    assert comparison_from_dict(json.loads(render(c, "json"))) == c


def test_json_document_shape(comparisons: dict[str, Comparison]) -> None:
    text = render(comparisons["regressed"], "json")
    doc = json.loads(text)
    assert text == json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert (doc["schema"], doc["schema_version"]) == ("harness-comparison", 2)
    assert doc["verdict"] == {"quality": "regressed", "latency": "regressed"}
    assert doc["valid"] is True
    assert doc["settings"]["seed"] == 0
    vocabulary = {v.value for v in Verdict}
    assert vocabulary == {
        "improved",
        "regressed",
        "no measurable difference",
        "invalid",
        "inconclusive",
        "not compared",
    }
    for name in CASES:
        verdict = comparison_to_dict(comparisons[name])["verdict"]
        assert set(verdict.values()) <= vocabulary


def test_a_saved_comparison_loads_back_and_is_never_overwritten(
    comparisons: dict[str, Comparison], tmp_path: Path
) -> None:
    c = comparisons["regressed"]
    first = save_comparison(tmp_path, c)
    second = save_comparison(tmp_path, c)
    assert first != second  # a second save in the same second gets its own directory
    assert first.name.endswith(f"_{BASE_SHA[:8]}_{CAND_SHA[:8]}")
    assert load_comparison(first) == c
    assert load_comparison(second / "comparison.json") == c


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"schema": "harness-run"}, "not a harness comparison"),
        ({"schema_version": 1}, "schema_version 1, this harness reads 2"),
        ({"verdict": {"quality": "worse", "latency": "improved"}}, "verdict_quality: 'worse'"),
        ({"overall": {"name": "overall", "n": "eighty", "rows": []}}, "comparison.overall.n"),
        ({"flips": [{"metric": "hit@5"}]}, "comparison.flips[0]: missing"),
        ({"surprise": 1}, "unknown field 'surprise'"),
    ],
)
def test_a_malformed_comparison_names_what_is_wrong(
    comparisons: dict[str, Comparison], change: dict[str, object], message: str
) -> None:
    doc = {**comparison_to_dict(comparisons["regressed"]), **change}
    with pytest.raises(ResultsError, match=r"^saved\.json: ") as info:
        comparison_from_dict(doc, "saved.json")
    assert message in str(info.value)


# --------------------------------------------------------------------------- redaction


@pytest.mark.parametrize("fmt", list(RENDERERS))
def test_redact_leaves_query_text_out_of_every_format(
    comparisons: dict[str, Comparison], fmt: str
) -> None:
    gold = make_gold()
    texts = [q.text for q in gold.queries]
    for c in comparisons.values():
        redacted = render(c, fmt, redact=True)
        assert not [t for t in texts if t in redacted]
        assert all(f.query_id in redacted for flips in c.flips for f in flips.flips)  # ids stay
    flipped = render(comparisons["regressed"], fmt)
    assert "how do I configure widget 41" in flipped  # so the check above can fail


def test_a_redacted_json_reads_back_without_text(comparisons: dict[str, Comparison]) -> None:
    c = comparisons["regressed"]
    back = comparison_from_dict(json.loads(render(c, "json", redact=True)))
    assert all(f.text is None for flips in back.flips for f in flips.flips)
    assert back == document.redacted(c)


# --------------------------------------------------------------------------- harness metrics


@pytest.fixture(scope="module")
def evaluation() -> Evaluation:
    gold = make_gold(n=4, unanswerable=2)
    rankings = {
        "q01": ["q01-rel"],  # rank 1
        "q02": ["x", "q02-rel"],  # rank 2
        "q03": ["x"],  # a miss
        # q04 absent: scored 0
        "u1": [],
        "u2": ["x"],
    }
    return evaluate(gold, rankings, ["hit@1", "mrr@10"])


def test_evaluation_json_shape(evaluation: Evaluation) -> None:
    doc = json.loads(render_evaluation(evaluation, "json"))
    assert doc == {
        "aggregate": {"hit@1": 1 / 4, "mrr@10": (1 + 1 / 2) / 4},
        "slices": {"news": {"hit@1": 1 / 4, "mrr@10": (1 + 1 / 2) / 4, "n": 4}},
    }
    per_query = json.loads(render_evaluation(evaluation, "json", per_query=True))
    assert per_query["per_query"]["q02"] == {"hit@1": 0.0, "mrr@10": 0.5}
    assert list(per_query["per_query"]) == ["q01", "q02", "q03", "q04"]


def test_evaluation_csv_rows(evaluation: Evaluation) -> None:
    rows = list(csv.reader(io.StringIO(render_evaluation(evaluation, "csv", True))))
    assert rows[:4] == [
        ["scope", "metric", "value"],
        ["all", "hit@1", "0.25"],
        ["all", "mrr@10", "0.375"],
        ["slice:news", "n", "4"],
    ]
    assert ["query:q02", "mrr@10", "0.5"] in rows
    assert len(rows) == 1 + 2 + 3 + 4 * 2
    without = render_evaluation(evaluation, "csv")
    assert "query:" not in without


def test_evaluation_table(evaluation: Evaluation) -> None:
    text = render_evaluation(evaluation, "table")
    lines = text.splitlines()
    assert lines[0].split() == ["scope", "n", "hit@1", "mrr@10"]
    assert lines[2].split() == ["all", "4", "0.2500", "0.3750"]
    assert lines[3].split() == ["slice", "news", "4", "0.2500", "0.3750"]
    assert "unanswerable queries returning anything: 1 of 2 (0.500)" in lines
    assert "answerable queries absent from the run (scored 0): 1" in lines
    assert "q03" not in text
    assert "q03" in render_evaluation(evaluation, "table", per_query=True)


def test_render_run_table_and_json() -> None:
    gold = make_gold(n=3, unanswerable=0)
    failures = {1: RunFailure("ready", "no answer")}
    run = make_run(gold, ranks(), errors={(0, "q02"): ErrorKind.NOT_JSON}, failures=failures)
    summary = summarise_run(gold, run, CompareSettings(resamples=100))
    text = render_run(summary, "table")
    assert text.startswith(f"main ({BASE_SHA[:8]}): 3 repeats of 3 queries\n")
    assert "ready: no answer" in text
    assert "errored answers (not scored): not_json 1" in text
    document = json.loads(render_run(summary, "json"))
    assert document["sha"] == BASE_SHA and document["usable_repeats"] == 2


def test_markdown_escapes_user_text_so_tables_hold(comparisons: dict[str, Comparison]) -> None:
    c = comparisons["regressed"]
    first = c.flips[0]
    odd = replace(first.flips[0], text="pipes | and *stars* <b>")
    c = replace(c, flips=(replace(first, flips=(odd, *first.flips[1:])), *c.flips[1:]))
    row = next(x for x in render(c, "markdown").splitlines() if "pipes" in x)
    assert "pipes \\| and \\*stars\\* \\<b>" in row
    header = next(x for x in render(c, "markdown").splitlines() if x.startswith("| query "))
    assert row.replace("\\|", "").count("|") == header.count("|")  # still six cells


def test_the_markdown_comment_folds_the_long_sections_and_names_no_local_path(
    comparisons: dict[str, Comparison],
) -> None:
    c = comparisons["regressed"]
    h = c.header
    local = replace(
        h,
        gold=replace(h.gold, source="/home/me/work/repo/gold/gold.jsonl"),
        baseline=replace(h.baseline, reused=True, record_path="/home/me/work/results/runs/b.json"),
    )
    md = render(replace(c, header=local), "markdown")
    assert "/home/me" not in md
    assert "gold set: gold.jsonl (sha256" in md and "reused from b.json" in md
    for summary in ("What was compared", "Metrics per slice (3 slices)", "Latency details",
                    "Drift and power", "Flips at hit@5"):  # fmt: skip
        assert f"<details><summary>{summary}" in md, summary
    assert md.count("<details>") == md.count("</details>")
    before_folds = md.split("<details>", 1)[0]
    assert "**quality: regressed**" in before_folds  # the verdicts stay in view
    text = render(replace(c, header=local), "text")
    assert "/home/me/work/repo/gold/gold.jsonl" in text and "<details>" not in text


def test_one_slice_holding_every_query_is_not_printed_twice(
    comparisons: dict[str, Comparison],
) -> None:
    text = render(comparisons["too_small"], "text")
    assert "Slice news" not in text and "every query is in slice news" in text
    assert text.count("ndcg@10 ") == 1


def test_the_order_seed_says_whether_it_was_given_or_drawn(
    comparisons: dict[str, Comparison],
) -> None:
    c = comparisons["ordered"]  # order seed 1234, the compare's seed 0: drawn for this compare
    assert "order seed 1234, drawn for this compare (--seed N fixes it" in render(c, "text")
    given = replace(c, settings=replace(c.settings, seed=1234))
    text = render(given, "text")
    assert "order seed 1234 (--seed)" in text and "drawn for this compare" not in text

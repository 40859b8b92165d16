"""`harness metrics`' column-wise path (harness.score.trec, harness.score.tokens) against the
exact line readers and against pytrec_eval.

- On realistic data (scripts/realistic_data.py: graded qrels with judged non-relevant documents,
  distinct ids from a 10M-id space, a few score ties) and on BM25 runs over Cranfield (graded
  0-4, ties when rounded): every per-query value equals pytrec_eval's (its own parse_qrel and
  parse_run) to 1e-12, and the whole `harness metrics` output equals the exact path's (the
  line readers, `evaluate`), gold hash included (`canonical_hash`).
- On text Hypothesis writes (extra spaces, tabs, CR, blank lines, Unicode spaces, odd scores,
  duplicates, ids long and short): the column-wise readers either decline (None) or read what
  the line readers read, value for value; and the CLI's stdout, stderr and exit status are
  those of the exact path, so a malformed file gets the line readers' file:line errors.
- `tokens.decimals` is Python's float, bit for bit, on the numbers runs hold and on the cases
  that round differently in long double.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import math
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import cli_server
import numpy as np
import pytest
import pytrec_eval
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli.main import main
from harness.errors import GoldError, ResultsError
from harness.gold import load_gold
from harness.gold.canonical import canonical_hash
from harness.report.runs import render_evaluation
from harness.score import tokens, trec
from harness.score.evaluation import evaluate, evaluate_judged
from harness.score.metrics import parse_metrics
from harness.score.runfile import load_run, load_trec_tables, parse_run

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ["P_10", "recall_100", "map", "ndcg_cut_10", "recip_rank", "ndcg", "P_5", "recall_10"]
SPECS = parse_metrics(",".join([*NATIVE, "hit@5", "mrr@10", "ndcg_burges@10", "ap@20"]))


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("realistic_data", ROOT / "scripts" /
                                                  "realistic_data.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["realistic_data"] = module
    spec.loader.exec_module(module)
    return module


def padded(data: bytes) -> np.ndarray[Any, np.dtype[np.uint8]]:
    return np.frombuffer(data + bytes(8), dtype=np.uint8).copy()


def fast_output(qrels: Path, run: Path, fmt: str = "json") -> str:
    tables = load_trec_tables(qrels, run, max(s.depth for s in SPECS))
    assert tables is not None
    joined = tables.joined
    found = evaluate_judged(tables.qrels.names, joined.judged, joined.present, joined.extra, SPECS)
    return render_evaluation(found, fmt, True, gold=tables)


def exact_output(qrels: Path, run: Path, fmt: str = "json") -> str:
    gold = load_gold(qrels, texts=False)
    read = load_run(run)
    found = evaluate(gold, read.rankings, SPECS, scores=read.scores, judged_as_zero=True)
    return render_evaluation(found, fmt, True, gold=gold)


def pytrec_agrees(qrels: Path, run: Path) -> None:
    """Every native measure of every query as pytrec_eval reads and scores the same files."""
    with qrels.open() as f:
        judged = pytrec_eval.parse_qrel(f)
    with run.open() as f:
        ranked = pytrec_eval.parse_run(f)
    expected = pytrec_eval.RelevanceEvaluator(judged, set(NATIVE)).evaluate(ranked)
    tables = load_trec_tables(qrels, run, max(s.depth for s in SPECS))
    assert tables is not None
    joined = tables.joined
    found = evaluate_judged(tables.qrels.names, joined.judged, joined.present, joined.extra, SPECS)
    assert set(expected) <= set(found.query_ids)
    for qid, row in expected.items():
        got = found.per_query[qid]
        bad = {m: (got[m], row[m]) for m in NATIVE if abs(got[m] - row[m]) > 1e-12}
        assert not bad, f"query {qid}: {bad}"


@pytest.fixture(scope="module")
def realistic(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    rd = _generator()
    out = {}
    for queries, depth in ((400, 100), (60, 1000)):
        folder = tmp_path_factory.mktemp(f"realistic-{queries}x{depth}")
        paths = rd.write(rd.Shape(queries, depth, seed=7), folder)
        out[f"{queries}x{depth}"] = (paths["qrels"], paths["run"])
    return out


@pytest.mark.parametrize("size", ["400x100", "60x1000"])
def test_realistic_data_scores_as_pytrec_eval_and_as_the_exact_path(
    realistic: dict[str, tuple[Path, Path]], size: str
) -> None:
    qrels, run = realistic[size]
    data = run.read_bytes()
    ranking = _generator().run(_generator().Shape(int(size.split("x")[0]),
                                                  int(size.split("x")[1]), seed=7))
    assert (ranking.scores[:, 1:] == ranking.scores[:, :-1]).any()  # ties, broken by docid
    assert trec.read_run(padded(data)) is not None  # the fast path is the one taken
    pytrec_agrees(qrels, run)
    assert fast_output(qrels, run) == exact_output(qrels, run)
    assert fast_output(qrels, run, "text") == exact_output(qrels, run, "text")


def test_the_gold_hash_is_the_canonical_hash(realistic: dict[str, tuple[Path, Path]]) -> None:
    qrels, _ = realistic["400x100"]
    table = trec.read_qrels(padded(qrels.read_bytes()))
    assert table is not None
    assert trec.qrels_hash(table) == canonical_hash(load_gold(qrels, texts=False).queries)


def test_a_shuffled_run_is_put_in_trec_eval_order(
    realistic: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    qrels, run = realistic["400x100"]
    lines = run.read_text().splitlines(keepends=True)
    np.random.default_rng(0).shuffle(lines)  # queries interleaved, ties in file order
    shuffled = tmp_path / "shuffled.trec"
    shuffled.write_text("".join(lines))
    table = trec.read_run(padded(shuffled.read_bytes()))
    assert table is not None and trec.trec_order(table) is not None
    pytrec_agrees(qrels, shuffled)
    assert fast_output(qrels, shuffled) == exact_output(qrels, shuffled)


@pytest.mark.parametrize("docs", [
    ["doc-long-identifier-2", "doc-long-identifier-10", "doc-long-identifier-1"],  # in order
    ["doc-long-identifier-1", "doc-long-identifier-2", "doc-long-identifier-10"],  # not
    ["d9", "d10", "d1"], ["d1", "d10", "d9"], ["ab", "abc", "b"], ["b", "abc", "ab"],
])
def test_tied_scores_rank_by_docid_descending(docs: list[str], tmp_path: Path) -> None:
    # Ids alike in their first 8 bytes, prefixes of each other, in order or not.
    run = tmp_path / "run.trec"
    run.write_text("".join(f"q1 Q0 {d} {i} 1.5 t\n" for i, d in enumerate(docs))
                   + "q1 Q0 zz 9 1.0 t\n")
    table = trec.read_run(padded(run.read_bytes()))
    assert table is not None
    order = trec.trec_order(table)
    rows = range(len(docs) + 1) if order is None else order.tolist()
    got = [bytes(table.buffer[table.doc_start[i] : table.doc_start[i] + table.doc_length[i]])
           .decode() for i in rows]
    assert got == list(load_run(run).rankings["q1"]) == [*sorted(docs, reverse=True), "zz"]


def test_cranfield_bm25_scores_as_pytrec_eval(tmp_path: Path) -> None:
    from test_metrics_oracle import collection, rounded

    data = collection("cranfield")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in data.qrels.items()
                             for d, g in docs.items()))
    for name, scored in (("exact", data.run), ("rounded", rounded(data.run))):
        run = tmp_path / f"{name}.trec"
        run.write_text("".join(f"{q} Q0 {d} {i + 1} {s!r} bm25\n" for q, docs in scored.items()
                               for i, (d, s) in enumerate(docs.items())))
        pytrec_agrees(qrels, run)
        assert fast_output(qrels, run) == exact_output(qrels, run)


def test_a_jsonl_run_whose_lines_split_in_six_is_left_to_the_exact_reader(tmp_path: Path) -> None:
    # Six tokens, the fifth a number, the query judged: TREC-shaped, but a run whose first
    # character is "{" is JSONL to load_run (here a malformed one: the user must hear so).
    qrels = tmp_path / "qrels.txt"
    qrels.write_text('q0 0 d1 1\n{"id": 0 "ranking": 1\n')
    run = tmp_path / "run.jsonl"
    run.write_text('{"id": q0, "ranking": ["a", 1.5 ]}\n')
    assert trec.read_run(padded(run.read_bytes())) is not None  # the trap
    assert load_trec_tables(qrels, run, 10) is None
    with pytest.raises(ResultsError, match="malformed in JSONL run file"):
        load_run(run)


# --------------------------------------------------------------------------- numbers


@given(st.floats(allow_nan=False, allow_infinity=False, width=64))
def test_decimals_are_python_floats_of_repr(value: float) -> None:
    texts = [repr(value), f"{value:.3f}", f"{value:.6f}", f"{value:.17g}", f"{value:e}"]
    assert_decimals(texts)


@given(st.lists(st.text("0123456789", min_size=1, max_size=21), min_size=1, max_size=30),
       st.lists(st.integers(0, 22), min_size=30, max_size=30),
       st.lists(st.sampled_from(["", "-", "+"]), min_size=30, max_size=30))
def test_decimals_of_digit_strings(digits: list[str], points: list[int], signs: list[str]) -> None:
    texts = []
    for d, p, sign in zip(digits, points, signs, strict=False):
        at = min(p, len(d))
        texts.append(sign + d[:at] + "." + d[at:] if p <= len(d) else sign + d)
    assert_decimals(texts)


def test_decimals_where_long_double_rounds_to_a_tie() -> None:
    # 2**53 + 1 and friends lie halfway between two doubles: float() rounds to even.
    assert_decimals(["9007199254740993", "9007199254740995", "18014398509481990",
                     "0.30000000000000004", "1.7976931348623157", "123456789.12345678901",
                     "1.", ".5", "+.5", "-0", "-0.0", "00012.500", "1_0", "1e5", "1E-5"])


def _near_ties(count: int) -> list[str]:
    """19-digit decimals whose quotient in 64-bit-mantissa long double lands exactly halfway
    between two doubles although the decimal is not halfway: rounding that long double again
    (double rounding) would miss Python's float by one ulp."""
    from decimal import Decimal, getcontext

    getcontext().prec = 60
    found = []
    rng = np.random.default_rng(1)
    for value in rng.uniform(1.0, 1000.0, 200_000).tolist():
        halfway = (Decimal(value) + Decimal(np.nextafter(value, np.inf))) / 2
        digits = f"{halfway:.18e}".split("e")[0].replace(".", "")  # 19 significant digits
        exponent = halfway.adjusted() - 18
        if exponent >= 0 or -exponent > 27:
            continue
        text = digits[: len(digits) + exponent] + "." + digits[len(digits) + exponent :]
        m, f = int(digits), -exponent
        wide = np.longdouble(m) / np.longdouble(10**f)
        if Decimal(text) != halfway and wide == (np.longdouble(value) + np.longdouble(
                np.nextafter(value, np.inf))) / 2:
            found.append(text)
            if len(found) == count:
                break
    return found


@pytest.mark.skipif(not tokens._LONG, reason="long double has no 64-bit mantissa here")
def test_decimals_never_round_twice() -> None:
    cases = _near_ties(5)
    assert cases, "no decimal found that a second rounding would get wrong"
    once = [float((np.longdouble(int(t.replace(".", ""))) / np.longdouble(
        10 ** len(t.split(".")[1]))).astype(np.float64)) for t in cases]
    assert any(a != float(t) for a, t in zip(once, cases, strict=True))  # the trap is real
    assert_decimals(cases)


def assert_decimals(texts: list[str]) -> None:
    data = (" ".join(texts) + " ").encode()
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 32)
    starts = np.r_[0, ends[:-1] + 1]
    got = tokens.decimals(padded(data), starts, ends - starts)
    want = [float(t) for t in texts]
    assert got is not None
    for text, a, b in zip(texts, got.tolist(), want, strict=True):
        assert a == b and math.copysign(1, a) == math.copysign(1, b), (text, a, b)


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "1e400", "1.2.3", "--1", "1-", "x",
                                 ".", "+", "0x10", "1e"])
def test_decimals_decline_what_is_not_a_finite_float(bad: str) -> None:
    data = f"1.5 {bad} ".encode()
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 32)
    starts = np.r_[0, ends[:-1] + 1]
    assert tokens.decimals(padded(data), starts, ends - starts) is None


# --------------------------------------------------------------------------- odd files

IDS = st.sampled_from(["q1", "q2", "Q-3", "long-query-id-number-0004", "qé5", "q1 "[:2]])
DOCS = st.sampled_from(["d1", "d2", "D3", "doc-with-a-long-identifier-000000001",
                        "doc-with-a-long-identifier-000000002", "dé", "d\u00a0x", "d\"q"])
# Separators and line ends str.split / str.splitlines know and the column-wise readers refuse
# (\x0b, \x1c, \r alone, U+2028) among the ones both read (space, tab, newline).
SEPS = st.sampled_from([" ", " ", " ", "  ", "\t", " \t", "\x0b", "\x1c", "\u00a0"])
ENDS = st.sampled_from(["\n", "\n", "\n", "\r\n", "\n\n", " \n", "\x0c\n", "\u2028", "\r"])
SCORES = st.sampled_from(["1.5", "2", "-0.25", "1.5", "3.000", "1e-3", "nan", "x", "1_0",
                          "12.345678901234567", "+4"])
GRADES = st.sampled_from(["0", "1", "2", "3", "01", "-1", "x", "1.0"])


@st.composite
def run_text(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 12))):
        cols = [draw(IDS), "Q0", draw(DOCS), str(draw(st.integers(1, 9))), draw(SCORES), "tag"]
        if draw(st.integers(0, 15)) == 0:
            cols = cols[: draw(st.integers(1, 5))]  # a short line
        seps = [draw(SEPS) for _ in cols]
        lines.append("".join(c + s for c, s in zip(cols, seps, strict=True)).rstrip(" \t")
                     + draw(ENDS))
    text = "".join(lines)
    return text if draw(st.booleans()) else text.rstrip("\n")


@st.composite
def qrels_text(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 10))):
        cols = [draw(IDS), "0", draw(DOCS), draw(GRADES)]
        if draw(st.integers(0, 15)) == 0:
            cols = cols[: draw(st.integers(1, 3))]
        lines.append(draw(SEPS).join(cols) + draw(ENDS))
    return "".join(lines)


def _regular(text: str) -> str:
    """The text with only single spaces and newlines: what the column-wise readers take."""
    return "\n".join(" ".join(line.split()) for line in text.split("\n") if line.split()) + "\n"


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(run_text(), st.booleans())
def test_the_column_wise_run_reader_reads_what_the_line_reader_reads(text: str,
                                                                     tidy: bool) -> None:
    text = _regular(text) if tidy else text
    fast = trec.read_run(padded(text.encode()))
    try:
        exact = parse_run(text)
    except ResultsError:
        assert fast is None  # never accepts what the line reader refuses
        return
    if fast is None:
        return
    order = trec.trec_order(fast)
    rows = np.arange(len(fast.query)) if order is None else order
    got: dict[str, list[tuple[str, float]]] = {}
    for i in rows.tolist():
        s, n = int(fast.doc_start[i]), int(fast.doc_length[i])
        doc = bytes(fast.buffer[s : s + n]).decode()
        got.setdefault(fast.names[int(fast.query[i])], []).append((doc, float(fast.score[i])))
    assert exact.scores is not None
    want = {q: list(zip(ids, exact.scores[q], strict=True)) for q, ids in exact.rankings.items()}
    assert got == want
    assert list(got) == list(want)  # queries in the order the file first names them


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(qrels_text(), st.booleans())
def test_the_column_wise_qrels_reader_reads_what_the_gold_reader_reads(
    tmp_path_factory: pytest.TempPathFactory, text: str, tidy: bool
) -> None:
    text = _regular(text) if tidy else text
    path = tmp_path_factory.mktemp("qrels") / "qrels.txt"
    path.write_bytes(text.encode())
    fast = trec.read_qrels(padded(text.encode()))
    try:
        gold = load_gold(path, texts=False)
    except GoldError:
        assert fast is None
        return
    if fast is None:
        return
    got: dict[str, dict[str, int]] = {}
    for q, s, n, g in zip(fast.query.tolist(), fast.doc_start.tolist(),
                          fast.doc_length.tolist(), fast.grade.tolist(), strict=True):
        got.setdefault(fast.names[q], {})[bytes(fast.buffer[s : s + n]).decode()] = g
    assert got == {q.id: dict(q.relevant) for q in gold.queries}
    assert list(got) == [q.id for q in gold.queries]
    assert trec.qrels_hash(fast) == gold.hash


@settings(max_examples=examples(150), suppress_health_check=[HealthCheck.too_slow])
@given(qrels_text(), run_text())
def test_the_cli_says_what_the_exact_path_says(
    tmp_path_factory: pytest.TempPathFactory, qrels: str, run: str
) -> None:
    folder = tmp_path_factory.mktemp("cli")
    (folder / "qrels.txt").write_bytes(qrels.encode())
    (folder / "run.trec").write_bytes(run.encode())
    expected = _exact_cli(folder / "qrels.txt", folder / "run.trec")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(folder), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        status = main(["metrics", "--gold", "qrels.txt", "--run", "run.trec", "--metrics",
                       "P_5,map,ndcg_cut_10", "--format", "json"])
    assert (status, out.getvalue(), err.getvalue()) == expected


def test_the_cli_as_a_process_reads_realistic_files(
    realistic: dict[str, tuple[Path, Path]]
) -> None:
    qrels, run = realistic["400x100"]
    done = cli_server.run("-m harness.cli.main", ["metrics", "--gold", str(qrels), "--run",
                          str(run), "--metrics", ",".join(map(str, SPECS)), "--format", "json",
                          "--per-query"], cwd=os.getcwd(), env=os.environ, timeout=600)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == exact_output(qrels, run)


def _exact_cli(qrels: Path, run: Path) -> tuple[int, str, str]:
    """What `harness metrics` printed before the column-wise path: the exact readers."""
    from harness.score.runfile import require_gold_queries

    specs = parse_metrics("P_5,map,ndcg_cut_10")
    try:  # in the CLI's order: the gold set, then the run, then the two together
        gold = load_gold(qrels, texts=False)
        read = load_run(run)
        require_gold_queries(read, gold, "qrels.txt")
    except (GoldError, ResultsError) as exc:
        err = "".join(f"{line}\n" for line in [f"harness: error: {exc.message}", *exc.details])
        return 2, "", err.replace(str(qrels), "qrels.txt").replace(str(run), "run.trec")
    found = evaluate(gold, read.rankings, specs, scores=read.scores, judged_as_zero=True)
    out = render_evaluation(found, "json", gold=gold)
    return 0, out.replace(str(qrels), "qrels.txt"), ""


def test_the_arrow_reader_starts_no_thread_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """Arrow's CPU pool, once started, may still be tearing down at interpreter exit, and the
    process then aborts after printing its output (exit -6, "terminate called without an
    active exception": apache/arrow#34314; 2 of 240 `harness metrics` runs, six at a time).
    The run reader parses on the calling thread."""
    pcsv = pytest.importorskip("pyarrow.csv", reason="the arrow extra is not installed")
    from harness.score.arrowrun import read_trec_arrow

    seen: list[bool] = []
    real = pcsv.read_csv

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs["read_options"].use_threads)
        return real(*args, **kwargs)

    monkeypatch.setattr(pcsv, "read_csv", spy)
    assert read_trec_arrow(b"q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n") is not None
    assert seen == [False]

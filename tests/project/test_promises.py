"""Four promises that once had no test a deliberate break would fail (issue 26), each checked
against something the code under test does not compute:

- the per-query send order of a paired round is the seeded random draw, as the services
  themselves saw their requests arrive (not "baseline first, always"), in the fixed design
  (harness.driver.pairs) and in `--sequential`'s quality rounds (harness.driver.blocks);
- `compare.max_unknown_ids`, from the config file to the verdict: that many unknown ids are a
  warning, one more makes the comparison invalid;
- an unkillable survivor (a process frozen by the cgroup freezer, where SIGKILL waits) makes
  teardown "not confirmed" and names its pid;
- a round's latency ratio is paired: the trimmed mean of per-query log(c_i / b_i), computed here
  with scipy.stats.trim_mean and once by hand, never a ratio of two sides' summaries.
"""

from __future__ import annotations

import json
import math
import os
import textwrap
import time
import uuid
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from compare_support import make_gold, make_run, ranks
from e2e_support import build_sandbox, load_json, record_paths
from oracles import scipy_stats as stats

from harness.boot import processes, service
from harness.config import ServiceConfig
from harness.config.loader import load_config
from harness.errors import ServiceError
from harness.process import leftovers
from harness.replay.order import pair_orders
from harness.values.types import GoldQuery
from harness.verdict.comparison import CompareSettings
from harness.verdict.decide import compare
from harness.verdict.latency_rule import TRIM, round_estimate

# --------------------------------------------------------------------------- send order


@pytest.mark.slow
def test_each_pair_is_sent_in_the_drawn_order_as_the_services_saw_it(tmp_path: Path) -> None:
    arrivals = tmp_path / "arrivals.log"  # both services append "SIDE PID QUERY" as asked
    sandbox = build_sandbox(
        tmp_path / "x",
        {side: {"query_log": str(arrivals), "log_as": side} for side in ("base", "cand")},
    )
    done = sandbox.harness(
        "compare", "--baseline", "base", "--candidate", "cand", "--seed", "1234",
        "--repeats", "2", "--latency-budget", "2",
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    seeds = {load_json(path)["order_seed"] for path in record_paths(sandbox.results)}
    assert seeds == {1234}  # one draw for both sides, recorded
    seed = 1234
    rounds: dict[tuple[str, str], list[tuple[str, str]]] = {}  # (base pid, cand pid) -> lines
    pids: dict[str, list[str]] = {"base": [], "cand": []}
    lines = [line.split(" ", 2) for line in arrivals.read_text().splitlines()]
    for side, pid, _ in lines:
        if pid not in pids[side]:
            pids[side].append(pid)
    assert len(pids["base"]) == len(pids["cand"]) == 2  # one boot per side and round
    for index, pair in enumerate(zip(pids["base"], pids["cand"], strict=True)):
        asked = [(side, text) for side, pid, text in lines if pid in pair]
        warmup = len(asked) // 2 - 80  # each side's warm-up queries come first, side by side
        timed = asked[2 * warmup :]
        assert len(timed) == 160
        firsts = []
        for j in range(80):
            (a, text_a), (b, text_b) = timed[2 * j], timed[2 * j + 1]
            assert text_a == text_b and {a, b} == {"base", "cand"}  # a pair, back to back
            firsts.append(a)
        # The draw of harness.replay.order for this seed and round: 0 = baseline first.
        drawn = ["base" if r == 0 else "cand" for r in pair_orders(80, 2, seed, index)]
        assert firsts == drawn, f"round {index}: the sides were not asked in the drawn order"
        assert Counter(firsts) == {"base": 40, "cand": 40}
        rounds[pair] = timed
    assert len(rounds) == 2


@pytest.mark.slow
def test_sequential_rounds_send_each_pair_in_the_drawn_order_too(tmp_path: Path) -> None:
    # `compare --sequential` asks block by block (harness.driver.blocks), a second place that
    # sends pairs: its quality rounds follow the same draw, by the query's place in the gold set.
    arrivals = tmp_path / "arrivals.log"
    sandbox = build_sandbox(
        tmp_path / "x",
        {side: {"query_log": str(arrivals), "log_as": side} for side in ("base", "cand")},
    )
    done = sandbox.harness(
        "compare", "--baseline", "base", "--candidate", "cand", "--seed", "1234",
        "--repeats", "2", "--latency-budget", "2", "--sequential", "--format", "json",
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    asked = json.loads(done.stdout)["sequential"]["asked"]
    assert asked >= 20
    lines = [line.split(" ", 2) for line in arrivals.read_text().splitlines()]
    pids: dict[str, list[str]] = {"base": [], "cand": []}
    for side, pid, _ in lines:
        if pid not in pids[side]:
            pids[side].append(pid)
    # The gold set is q01..q80 in order ("tell me about topic qNN"): query NN is place NN - 1.
    place = {f"tell me about topic q{n:02d}": n - 1 for n in range(1, 81)}
    for index in range(2):  # the quality rounds (the latency-only rounds after: pairs.py's)
        pair = (pids["base"][index], pids["cand"][index])
        timed = [(side, text) for side, pid, text in lines if pid in pair][-2 * asked :]
        drawn = pair_orders(80, 2, 1234, index)
        firsts, expected = [], []
        for j in range(asked):
            (a, text_a), (b, text_b) = timed[2 * j], timed[2 * j + 1]
            assert text_a == text_b and {a, b} == {"base", "cand"}  # a pair, back to back
            firsts.append(a)
            expected.append("base" if drawn[place[text_a]] == 0 else "cand")
        assert firsts == expected, f"round {index}: the sides were not asked in the drawn order"
        assert set(firsts) == {"base", "cand"}


# --------------------------------------------------------------------------- max_unknown_ids


def _config(tmp_path: Path, max_unknown: int | None) -> CompareSettings:
    gold = tmp_path / "gold.jsonl"
    gold.write_bytes(
        (Path(__file__).resolve().parents[2] / "gold" / "example.jsonl").read_bytes()
    )
    line = "" if max_unknown is None else f"max_unknown_ids = {max_unknown}\n"
    (tmp_path / "harness.toml").write_text(
        '[service]\nstart = "svc {port}"\nready = "/health"\n\n[query]\npath = "/s"\n'
        f'ids = "ids"\n\n[gold]\npath = "{gold}"\n\n[compare]\n{line}'
    )
    config = load_config(tmp_path / "harness.toml", repo=tmp_path)
    return CompareSettings.from_config(config.compare)


@pytest.mark.parametrize("unknown", [2, 3])
def test_max_unknown_ids_from_the_config_file_to_the_verdict(tmp_path: Path, unknown: int) -> None:
    gold = make_gold()
    base = make_run(gold, ranks())
    cand = make_run(gold, ranks(), ref="feat/x", sha="2" * 40)
    ghosts = tuple(f"ghost-{i}" for i in range(unknown))
    first = cand.repeats[0]
    hit = first.results[0]
    results = (type(hit)(**{**hit.__dict__, "ids": (*hit.ids, *ghosts)}), *first.results[1:])
    cand = type(cand)(**{**cand.__dict__, "repeats": (type(first)(**{**first.__dict__,
                      "results": results}), *cand.repeats[1:])})  # fmt: skip
    returned = {
        i for run in (base, cand) for rep in run.repeats for r in rep.results for i in r.ids
    }
    corpus = frozenset(returned - set(ghosts))
    settings = _config(tmp_path, 2)
    assert settings.max_unknown_ids == 2
    c = compare(gold, base, cand, settings, corpus_ids=corpus)
    said = f"{unknown} returned ids are not in the corpus"
    if unknown <= 2:
        assert not c.invalid_reasons, c.invalid_reasons
        assert any(said in w and "within compare.max_unknown_ids" in w for w in c.warnings)
    else:
        assert any(
            said in r and "more than compare.max_unknown_ids = 2" in r for r in c.invalid_reasons
        ), c.invalid_reasons
    # Unset, the default is 0: a single unknown id is already too many.
    default = compare(gold, base, cand, _config(tmp_path, None), corpus_ids=corpus)
    assert any("more than compare.max_unknown_ids = 0" in r for r in default.invalid_reasons)


# --------------------------------------------------------------------------- teardown


FREEZER = Path("/sys/fs/cgroup/freezer")

# Serves /health; its child (a `sleep`) writes its pid where the test can find and freeze it.
SURVIVOR_SVC = textwrap.dedent(
    """
    import http.server, subprocess, sys
    child = subprocess.Popen(["sleep", "600"])
    open(sys.argv[2], "w").write(str(child.pid))

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *a):
            pass

    http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
    """
)


def _freezer_group() -> Path:
    if not (FREEZER / "tasks").exists() or not os.access(FREEZER, os.W_OK):
        pytest.skip(f"no writable cgroup v1 freezer at {FREEZER} (needs root and cgroup v1)")
    group = FREEZER / f"harness-test-{uuid.uuid4().hex[:12]}"
    group.mkdir()
    return group


def _state(group: Path, state: str) -> None:
    (group / "freezer.state").write_text(state)
    deadline = time.monotonic() + 10
    while (group / "freezer.state").read_text().strip() != state:
        assert time.monotonic() < deadline, f"the freezer never reached {state}"
        time.sleep(0.01)


def test_a_process_that_survives_sigkill_makes_teardown_unconfirmed(tmp_path: Path) -> None:
    group = _freezer_group()
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "svc.py").write_text(SURVIVOR_SVC)
    pidfile = tmp_path / "child.pid"
    spec = ServiceConfig(
        start=f"{{python}} svc.py {{port}} {pidfile}",
        ready="/health",
        ready_timeout=30.0,
        stop_timeout=0.5,
        kill_wait=0.5,
    )
    ctx = service.running_service(
        spec, tree, log_path=tmp_path / "svc.log", temp_parent=tmp_path, sandbox="plain",
        limits=service.ServiceLimits(kill_rounds=2),
    )  # fmt: skip
    child = 0
    try:
        with pytest.raises(ServiceError, match="teardown not confirmed") as caught, ctx:
            child = int(pidfile.read_text())
            (group / "tasks").write_text(str(child))
            _state(group, "FROZEN")  # from here SIGKILL waits until the process is thawed
        assert ctx.teardown is not None
        assert ctx.teardown.confirmed is False and ctx.teardown.used_sigkill
        assert ctx.teardown.survivors == (child,)
        assert f"pids {child} still running after SIGKILL" in caught.value.message
    finally:
        _state(group, "THAWED")  # the pending SIGKILL now ends it
        deadline = time.monotonic() + 10
        while child and processes.find_marked(ctx.run_id) and time.monotonic() < deadline:
            time.sleep(0.05)
        group.rmdir()
        # Unconfirmed, its run id stayed held for the next run's recovery: gone now, let it go.
        leftovers.untrack_all([("run_id", ctx.run_id)])
    assert not processes.find_marked(ctx.run_id)


# --------------------------------------------------------------------------- round ratio


def test_a_rounds_latency_ratio_is_the_trimmed_mean_of_paired_log_ratios() -> None:
    gold = make_gold()
    n = len(gold.queries)
    order = {q.id: i for i, q in enumerate(gold.queries)}
    rng = np.random.default_rng(26)
    # Baseline latencies spread 1-100 ms between queries; the candidate answers each query as
    # 1.1 x the baseline of the next slower query (the slowest: of the fastest). The sides'
    # own summaries (medians, means) are then 1.1 apart at most one place off, while each
    # pair is ~1.1 x 1.06 (and one pair far faster, trimmed): a ratio of summaries cannot
    # pass for the paired one.
    base_ms = [np.exp(rng.uniform(0, math.log(100), n)) for _ in range(3)]
    perm = []
    for rep in range(3):
        ranked = np.argsort(base_ms[rep])
        nxt = np.empty(n, dtype=int)
        nxt[ranked] = np.roll(ranked, -1)
        perm.append(nxt)

    def base(rep: int, q: GoldQuery) -> float:
        return float(base_ms[rep][order[q.id]])

    def cand(rep: int, q: GoldQuery) -> float:
        return 1.1 * float(base_ms[rep][perm[rep][order[q.id]]])

    b = make_run(gold, ranks(), ms=base)
    c = make_run(gold, ranks(), ref="feat/x", sha="2" * 40, ms=cand)
    test = compare(gold, b, c, CompareSettings(resamples=200)).latency.test
    assert test is not None
    # The oracle: scipy's trimmed mean of each round's per-query log ratios, on the same
    # nanosecond-rounded latencies the records hold.
    expected = []
    for rep in range(3):
        bn = np.array([round(base(rep, q) * 1e6) for q in gold.queries], dtype=float)
        cn = np.array([round(cand(rep, q) * 1e6) for q in gold.queries], dtype=float)
        expected.append(math.exp(stats.trim_mean(np.log(cn / bn), TRIM)))
        unpaired = float(np.median(cn) / np.median(bn))
        assert abs(unpaired - expected[-1]) > 0.02  # the data tells the two apart
    assert test.rounds == pytest.approx(expected, rel=1e-9)
    # Over rounds: the mean of the rounds' log ratios (their geometric mean).
    assert test.ratio == pytest.approx(math.exp(np.mean(np.log(expected))), rel=1e-9)


def test_a_rounds_estimate_by_hand() -> None:
    # Five queries, trim 0.2 drops one from each end. The ratios c/b are 1, 4, 1, 2, 1: the
    # logs sorted 0, 0, 0, ln 2, ln 4, kept 0, 0, ln 2, mean ln(2) / 3, ratio 2 ** (1/3) = 1.26.
    # Not median(c) / median(b) = 8 / 4 = 2, not the untrimmed 2 ** 0.6 = 1.52, not the
    # median ratio 1. Winsorized to 0, 0, 0, ln 2, ln 2: sample variance 0.3 (ln 2)^2, over
    # (1 - 2/5)^2 * 5 = 1.8, gives (ln 2)^2 / 6.
    base, cand = [1.0, 2.0, 4.0, 8.0, 16.0], [1.0, 8.0, 4.0, 16.0, 16.0]
    got = round_estimate(base, cand)
    assert got.queries == 5
    assert math.exp(got.log_ratio) == pytest.approx(2 ** (1 / 3), rel=1e-12)
    assert got.within_var == pytest.approx(math.log(2) ** 2 / 6, rel=1e-12)

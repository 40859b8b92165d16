"""The `harness` command line, declared: every subcommand, its arguments and their help.

`harness.cli.main` parses with `parse_args` and calls the command that `command` (and
`gold_command`) name; a usage error prints the usage and exits with EXIT_USAGE (2).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from harness import __version__
from harness.cli.exits import EXIT_USAGE

TYPE_CHECKING = False  # typing's, without importing typing: `harness --help` loads no typing
if TYPE_CHECKING:
    from typing import Any


class _Parser(argparse.ArgumentParser):
    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse makes a formatter for each add_argument while the tree is built, and each
        # asked the terminal its width: ~300 times for one --help.  Asked once per COLUMNS.
        width = _width(os.environ.get("COLUMNS"))
        return self.formatter_class(prog=self.prog, width=width)  # type: ignore[call-arg]

    def error(self, message: str) -> None:  # type: ignore[override]
        from harness.errors import clip  # only on a usage error: `harness --help` loads none

        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {clip(message)}\n")


def _latency_budget(text: str) -> str:
    """--latency-budget's value, checked here so a bad one is a usage error (exit 2)."""
    from harness.verdict.latency_rule import parse_budget

    try:
        parse_budget(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        type=Path,
        help="harness.toml (default: ./harness.toml or [tool.harness] in ./pyproject.toml)",
    )
    p.add_argument(
        "--repo", type=Path, help="the git repository (default: the one holding the config)"
    )
    p.add_argument(
        "--repeats", type=int, help="rounds, each booting every ref (default: compare.repeats)"
    )
    p.add_argument("--results", default="results", help="where records go (default: ./results)")
    p.add_argument(
        "--concurrency",
        type=int,
        default=1,
        help="queries in flight (default 1: latency fidelity; above 1: throughput, no latency "
        "verdict)",
    )
    p.add_argument("--keep", action="store_true", help="keep the worktrees and print where")
    p.add_argument(
        "-q", "--quiet", action="store_true", help="no progress on stderr (the report is unchanged)"
    )


def _add_record_side(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--side",
        choices=("baseline", "candidate"),
        default="candidate",
        help="in a comparison directory, which side's record (default candidate)",
    )


def _add_gold_source(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gold", type=Path, help="the gold set (default: the config's)")
    p.add_argument("--config", type=Path, help="harness.toml (default: discovered in the cwd)")
    p.add_argument("--repo", type=Path, help="the git repository (default: the config's)")


def _add_side(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--side",
        choices=("baseline", "candidate"),
        default="baseline",
        help="which side's per-side overrides apply (default baseline)",
    )


class _Unbuilt(_Parser):
    """The parser of a command that parse_args was not given: listed, with its help, in the
    tree (`harness --help`, "invalid choice"), its arguments never added."""

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        return _NOT_ADDED

    def add_subparsers(self, **kwargs: Any) -> Any:
        return _NoCommands()


class _NoCommands:
    """The subcommands of an _Unbuilt command: never parsed, never listed."""

    def add_parser(self, name: str, **kwargs: Any) -> _Unbuilt:
        return _Unbuilt(prog=name, add_help=False)


_NOT_ADDED = argparse.Action(option_strings=[], dest="_not_added")


class _Commands(argparse._SubParsersAction):  # type: ignore[type-arg]
    """The subcommands. With `only` (a command name; "" for none), every other command's parser
    is _Unbuilt: building all ~300 arguments was most of `harness --help`'s own time."""

    only: str | None = None  # None: build every command

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        if self.only is None or name == self.only:
            return super().add_parser(name, **kwargs)
        built, self._parser_class = self._parser_class, _Unbuilt
        try:
            return super().add_parser(name, **kwargs)
        finally:
            self._parser_class = built


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The `harness` parser: `command` names the subcommand (`gold_command` under `gold`).
    With `only`, only that command's arguments are built (the others are listed, unbuilt)."""
    parser = _Parser(
        prog="harness",
        description="Does a ranking branch really change a retrieval service? "
        "Quality and latency, with a verdict that refuses to cry wolf.",
    )
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    sub = parser.add_subparsers(
        dest="command", required=True, parser_class=_Parser, action=_Commands
    )
    if isinstance(sub, _Commands):
        sub.only = only

    p = sub.add_parser("compare", help="compare two refs: quality and latency verdicts")
    p.add_argument("--baseline", help="the ref to compare against (e.g. main)")
    p.add_argument("--candidate", help="the ref under review (e.g. feat/x)")
    p.add_argument(
        "--demo",
        action="store_true",
        help="run on the bundled example (main vs feat/x in a throwaway repository)",
    )
    p.add_argument(
        "--baseline-url",
        metavar="URL",
        help="compare running deployments instead of refs: the baseline's base URL "
        "(nothing is checked out, built, booted or isolated)",
    )
    p.add_argument(
        "--candidate-url", metavar="URL", help="the candidate deployment's base URL"
    )
    _add_run_options(p)
    p.add_argument(
        "--fresh",
        action="store_true",
        help="measure both sides now (the default: kept for scripts that say so)",
    )
    p.add_argument(
        "--reuse-runs",
        action="store_true",
        help="reuse matching run records instead of measuring again: quality only, latency "
        "not compared (a stored run was measured at another time)",
    )
    p.add_argument(
        "--latency-budget",
        type=_latency_budget,
        metavar="N|TIME",
        help="the most latency rounds (12) or their time (5m, 300s): rounds go on past "
        "--repeats until the latency verdict is decided (default compare.latency_budget, 15)",
    )
    _add_ray(p)
    p.add_argument(
        "--sequential",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="ask the queries block by block in a random order (from --seed) and stop as soon "
        "as the quality headline is decided, by an anytime-valid rule (the default, "
        "compare.sequential; --no-sequential asks the whole gold set)",
    )
    p.add_argument(
        "--format",
        choices=("text", "markdown", "json", "html"),
        default="text",
        help="what to print (default text); html: the self-contained page, also saved as "
        "report.html beside report.md",
    )
    p.add_argument(
        "--redact", action="store_true", help="leave query and document text out of every output"
    )
    p.add_argument("--k", type=int, action="append", help="cutoff (repeatable; default compare.k)")
    p.add_argument("--alpha", type=float, help="significance level (default compare.alpha)")
    p.add_argument(
        "--min-effect",
        type=float,
        help="smallest change the gold set must be able to see for 'no measurable difference' "
        "(default compare.min_effect, 0.10)",
    )
    _add_strict(p)
    p.add_argument(
        "--latency-tolerance",
        type=float,
        help="latency ratio band counted as no change (default 0.10)",
    )
    p.add_argument("--max-errors", type=int, help="errored queries tolerated (default 0)")
    p.add_argument(
        "--seed",
        type=int,
        help="seed of the bootstrap and randomization tests, and of the order within pairs",
    )
    p.add_argument(
        "--gate-on",
        action="append",
        metavar="METRIC",
        help="also let METRIC (e.g. mrr@10) decide the quality verdict",
    )
    p.add_argument(
        "--baseline-answers",
        type=Path,
        metavar="FILE",
        help="the baseline's answer grades (JSONL or TSV, see `harness twobytwo`): adds the "
        "retrieval/generation 2x2 of each side and how queries moved",
    )
    p.add_argument("--candidate-answers", type=Path, metavar="FILE", help="the candidate's")
    p.add_argument(
        "--answers-k", type=int, metavar="K", help="the 2x2's cutoff (default: the first k)"
    )

    p = sub.add_parser("run", help="run one ref in isolation and record every answer")
    p.add_argument("--ref", required=True, help="branch, tag, SHA, HEAD or WORKTREE")
    _add_side(p)
    _add_run_options(p)
    p.add_argument(
        "--format",
        choices=("text", "json", "table"),
        default="text",
        help="text (the terminal report; 'table' is the old name, still accepted) or json",
    )

    p = sub.add_parser("report", help="re-render a saved comparison without running anything")
    p.add_argument("dir", type=Path, help="a results/<stamp>_<sha8>_<sha8>/ directory")
    p.add_argument(
        "--format",
        choices=("text", "markdown", "json", "html"),
        default="text",
        help="default text; html: the page (on stdout self-contained, plotly.js inlined; "
        "with --output, plotly.js is copied beside FILE and loaded from there)",
    )
    p.add_argument(
        "--output",
        type=Path,
        metavar="FILE",
        help="write the page to FILE (never overwritten) instead of stdout",
    )
    p.add_argument("--redact", action="store_true")
    p.add_argument(
        "--against",
        type=Path,
        metavar="DIR",
        help="another saved comparison: both side by side, metric by metric (DIR as A, this "
        "as B), refused (naming what differs) unless both have the same evaluation definition",
    )
    _add_strict(p)

    p = sub.add_parser("metrics", help="evaluate a run file against a gold set (a trec_eval)")
    p.add_argument("--gold", required=True, type=Path, help="native JSONL, BEIR dir or TREC qrels")
    p.add_argument("--run", required=True, type=Path, help="TREC run file or native JSONL run")
    p.add_argument(
        "--queries",
        type=Path,
        help="topics file for TREC qrels (optional: scoring needs no query text; with it, "
        "per-query output shows the texts)",
    )
    p.add_argument("--corpus", type=Path, help="corpus JSONL: also check judged ids exist")
    p.add_argument("--metrics", default="hit@5,recall@10,mrr@10,ndcg@10,p@5")
    p.add_argument("--rel-level", type=int, default=1, help="minimum grade that counts as relevant")
    p.add_argument("--per-query", action="store_true")
    p.add_argument(
        "--format",
        choices=("text", "json", "csv", "table"),
        default="text",
        help="text (tables; 'table' is the old name, still accepted), json or csv",
    )

    p = sub.add_parser(
        "compare-runs",
        help="compare run files of two or more systems: the paired tests of compare, Holm "
        "across systems",
    )
    p.add_argument(
        "runs",
        nargs="+",
        type=Path,
        metavar="RUN",
        help="TREC or native JSONL run files: the first is the baseline, each later one a "
        "candidate compared with it",
    )
    p.add_argument("--gold", required=True, type=Path, help="native JSONL, BEIR dir or TREC qrels")
    p.add_argument(
        "--queries", type=Path, help="topics file for TREC qrels (optional: query texts in flips)"
    )
    p.add_argument(
        "--corpus", type=Path, help="corpus JSONL or BEIR dir: returned ids must be in it"
    )
    p.add_argument("--k", type=int, action="append", help="cutoff (repeatable; default 5 and 10)")
    p.add_argument(
        "--gate-on",
        "--metric",
        dest="gate_on",
        action="append",
        metavar="METRIC",
        help="also let METRIC (e.g. ndcg@10) decide the quality verdict (repeatable)",
    )
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument(
        "--min-effect",
        type=float,
        default=0.10,
        help="smallest change the gold set must be able to see for 'no measurable difference' "
        "(default 0.10)",
    )
    _add_strict(p)
    p.add_argument("--rel-level", type=int, default=1, help="minimum grade that counts as relevant")
    p.add_argument(
        "--max-unknown-ids",
        type=int,
        default=0,
        help="with --corpus: returned ids absent from it tolerated per run (default 0)",
    )
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the bootstrap and randomization tests (0)"
    )
    p.add_argument(
        "--format",
        choices=("text", "markdown", "json", "html"),
        default="text",
        help="what to write (default text); html: one self-contained page per candidate",
    )
    p.add_argument(
        "--output",
        "-o",
        type=Path,
        metavar="PATH",
        help="write the report here instead of stdout (html with several candidates: a "
        "directory, one page per candidate and index.html)",
    )
    p.add_argument(
        "--force", action="store_true", help="overwrite --output if it exists"
    )
    p.add_argument(
        "--redact", action="store_true", help="leave query text out of every output"
    )

    gold = sub.add_parser("gold", help="gold-set tools").add_subparsers(
        dest="gold_command", required=True, parser_class=_Parser
    )
    p = gold.add_parser("check", help="integrity, staleness, winnability, leaks, controls, power")
    p.add_argument("gold", type=Path, help="native JSONL, BEIR dir or TREC qrels")
    p.add_argument("--corpus", type=Path, help="corpus JSONL or BEIR dir")
    p.add_argument("--queries", type=Path, help="topics/queries file for TREC qrels")
    p.add_argument("--split", default="test", help="BEIR qrels split (default test)")
    p.add_argument("--alpha", type=float, default=0.05, help="for the power check (0.05)")
    p.add_argument(
        "--require-slice",
        action="append",
        metavar="NAME",
        help="a slice that must have at least one query (repeatable)",
    )
    p.add_argument("--format", choices=("text", "json"), default="text")

    p = gold.add_parser("build", help="mine queries whose answer is known by construction")
    p.add_argument("--corpus", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--exact-rare", type=int, default=0, help="queries on a token in one doc")
    p.add_argument("--phrase", type=int, default=0, help="queries on a verbatim phrase")
    p.add_argument("--nonsense", type=int, default=0, help="unanswerable controls")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--include", type=Path, help="hand-written rows to merge (checked too)")
    p.add_argument("--min-words", type=int, default=20, help="shortest useful document")
    p.add_argument("--max-words", type=int, default=2000, help="longest useful document")
    p.add_argument("--phrase-words", type=int, default=3, help="words per phrase")
    p.add_argument("--max-phrase-docs", type=int, default=25, help="most docs a phrase may match")
    p.add_argument("--description", help="recorded in the gold header")
    p.add_argument("--force", action="store_true", help="overwrite --out")

    p = gold.add_parser("convert", help="native <-> BEIR <-> TREC, saying what was dropped")
    p.add_argument("gold", type=Path, help="native JSONL, BEIR dir or TREC qrels")
    p.add_argument(
        "--corpus",
        type=Path,
        help="corpus JSONL or BEIR dir: check every judged id and record its sha256 in the "
        "native header (what gold check needs to tell a stale gold set)",
    )
    p.add_argument("--to", choices=("native", "beir", "trec"), required=True)
    p.add_argument("--out", type=Path, required=True, help="a file (native) or a directory")
    p.add_argument("--queries", type=Path, help="topics/queries file for TREC qrels")
    p.add_argument("--split", default="test", help="BEIR split to read (default test)")
    p.add_argument("--out-split", default="test", help="BEIR split to write (default test)")
    p.add_argument(
        "--topics", choices=("jsonl", "tsv"), default="jsonl", help="TREC topics file format"
    )
    p.add_argument("--force", action="store_true", help="overwrite --out")

    p = gold.add_parser("stats", help="queries per slice, relevant per query, grades")
    p.add_argument("gold", type=Path)
    p.add_argument("--queries", type=Path, help="topics/queries file for TREC qrels")
    p.add_argument("--split", default="test")
    p.add_argument("--format", choices=("text", "json"), default="text")

    p = sub.add_parser("sweep", help="set a knob from measurement: one isolated run per value")
    p.add_argument("--ref", required=True, help="branch, tag, SHA, HEAD or WORKTREE")
    p.add_argument(
        "--param",
        required=True,
        action="append",
        metavar="NAME=V1,V2,...",
        help="an environment variable pinned on the service, and its values (repeat for a grid)",
    )
    p.add_argument(
        "--reference", help="the value the others are compared with (default: the first)"
    )
    p.add_argument(
        "--metrics", default="mrr@10,recall@10", help="columns (default: mrr@10,recall@10)"
    )
    _add_runs_against_a_reference(p)

    p = sub.add_parser("matrix", help="an ablation matrix: named configurations vs a reference")
    p.add_argument("--ref", required=True, help="branch, tag, SHA, HEAD or WORKTREE")
    p.add_argument("--matrix", required=True, type=Path, help="the matrix file (TOML)")
    p.add_argument(
        "--metrics",
        default="ndcg@10,mrr@10,recall@10,hit@5",
        help="columns, unless the file lists metrics (default: ndcg@10,mrr@10,recall@10,hit@5)",
    )
    _add_runs_against_a_reference(p)

    p = sub.add_parser("gate", help="fail when a ref drops below a committed baseline")
    p.add_argument("--ref", required=True, help="branch, tag, SHA, HEAD or WORKTREE")
    p.add_argument(
        "--baseline-file", required=True, type=Path, help="the committed baseline (JSON)"
    )
    p.add_argument(
        "--update-baseline",
        action="store_true",
        help="measure the ref and rewrite the baseline file (its diff is the before/after table)",
    )
    p.add_argument(
        "--metrics",
        help="gated metrics (default: the baseline file's; mrr@10,recall@10 for a new file)",
    )
    p.add_argument("--strict", action="store_true", help="zero tolerance: any drop fails")
    p.add_argument(
        "--max-drop",
        type=float,
        metavar="X",
        help="also fail a row that drops by more than X (e.g. 0.02), whatever the test says; "
        "by default only a drop compare's paired test calls a regression fails",
    )
    _add_side(p)
    _add_run_options(p)
    p.add_argument("--max-errors", type=int, help="errored queries tolerated (default 0)")
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text")

    p = sub.add_parser("bisect", help="find the commit that regressed: compares along the history")
    _add_bisect(p)

    p = sub.add_parser(
        "threshold", help="top-result scores of answerable vs unanswerable queries, best cutoff"
    )
    p.add_argument(
        "source", type=Path, help="a run record (results/runs/*.json) or a comparison directory"
    )
    _add_record_side(p)
    _add_gold_source(p)
    p.add_argument("--bins", type=int, default=10, help="histogram bins (default 10)")
    p.add_argument("--format", choices=("text", "json"), default="text")

    p = sub.add_parser(
        "history", help="metrics and latency per commit over the saved results (asv's graph)"
    )
    p.add_argument("--results", type=Path, default=Path("results"), help="default ./results")
    p.add_argument(
        "--metrics",
        default="hit@5,mrr@10,ndcg@10,recall@10",
        help="columns (default hit@5,mrr@10,ndcg@10,recall@10)",
    )
    p.add_argument(
        "--gold",
        type=Path,
        help="the gold set to score the run records on (default: the config's; with neither, "
        "the saved comparisons' numbers are used)",
    )
    p.add_argument("--config", type=Path, help="harness.toml (default: discovered in the cwd)")
    p.add_argument("--repo", type=Path, help="the git repository giving the commit order")
    p.add_argument(
        "--ref",
        metavar="REV",
        help="only the commits of REV (a branch, or a range A..B), in its order "
        "(default: every commit measured, in git's order)",
    )
    p.add_argument(
        "--format", choices=("text", "markdown", "csv", "html"), default="text",
        help="default text; html: a page with the plots (on stdout self-contained; with "
        "--output, plotly.js is copied beside FILE and loaded from there)",
    )
    p.add_argument(
        "--output", type=Path, help="write to FILE (never overwritten) instead of stdout"
    )

    p = sub.add_parser(
        "twobytwo", help="retrieval vs generation: a run's top-k hits against answer grades"
    )
    p.add_argument(
        "--run", required=True, type=Path, help="a run record, or a comparison directory"
    )
    p.add_argument(
        "--answers",
        required=True,
        type=Path,
        help='answer grades: JSONL {"query_id": ..., "correct": true} or TSV qid<TAB>1/0',
    )
    p.add_argument("--k", type=int, help="retrieved = a relevant document in the top K "
                   "(default: the config's first compare.k, else 5)")
    _add_record_side(p)
    _add_gold_source(p)
    p.add_argument("--rel-level", type=int, default=1, help="minimum grade that counts as relevant")
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text")

    p = sub.add_parser(
        "export", help="a run record as a TREC run file, or its per-query results as CSV/Parquet"
    )
    p.add_argument(
        "run", type=Path, help="a run record (results/runs/*.json) or a comparison directory"
    )
    _add_record_side(p)
    p.add_argument(
        "--format",
        choices=("trec", "csv", "parquet"),
        default="trec",
        help="trec: qid Q0 docid rank score tag (one repeat); csv, parquet: one row per "
        "repeat and query (default trec)",
    )
    p.add_argument(
        "--output", type=Path, help="write here (default: stdout; parquet needs a file)"
    )
    p.add_argument("--force", action="store_true", help="overwrite --output")
    p.add_argument(
        "--repeat",
        type=int,
        help="trec: which repeat (round) to write, by its index in the record, from 0 "
        "(default: the first)",
    )
    p.add_argument(
        "--gold", type=Path, help="csv, parquet: add slice and per-query metric columns"
    )
    p.add_argument(
        "--metrics",
        default="hit@5,recall@10,mrr@10,ndcg@10",
        help="csv, parquet with --gold: the metric columns "
        "(default hit@5,recall@10,mrr@10,ndcg@10)",
    )

    p = sub.add_parser(
        "schema", help="print the JSON Schema of comparison.json, a run record or harness.toml"
    )
    p.add_argument(
        "name",
        choices=("comparison", "run", "config"),
        help="comparison: comparison.json; run: results/runs/*.json; config: harness.toml",
    )

    p = sub.add_parser("clean", help="list the cache's worktrees and builds, sizes; remove them")
    p.add_argument(
        "--builds", action="store_true", help="also remove builds (per-commit venvs), not in use"
    )
    p.add_argument(
        "--older-than",
        type=float,
        metavar="DAYS",
        help="only what was last used DAYS days ago or more",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="list what would be removed, remove nothing"
    )

    p = sub.add_parser("demo", help="write the bundled example repository to DIR, to copy from")
    p.add_argument("dir", type=Path)
    _document(parser)
    return parser


# --------------------------------------------------------------------------- help: the words

_FORMAT = "output format (default text: the terminal report)"
_HELP: dict[tuple[str, str], str] = {  # (command, option or positional) -> help, where unset
    ("compare", "--format"): f"{_FORMAT}; markdown for a pull request; json: comparison.json",
    ("report", "--format"): f"{_FORMAT}; markdown; json",
    ("report", "--redact"): "leave query and document text out of the output",
    ("metrics", "--metrics"): "comma-separated, in harness's, ir_measures' or trec_eval's "
    "names (nDCG@10, P_5, map, recip_rank); default hit@5,recall@10,mrr@10,ndcg@10,p@5",
    ("metrics", "--per-query"): "also every query's value",
    ("gold check", "--format"): f"{_FORMAT} or json",
    ("gold build", "--corpus"): "corpus JSONL or BEIR dir to mine queries from",
    ("gold build", "--out"): "the native gold file to write",
    ("gold build", "--seed"): "seed of the sampling (default 0; one corpus, one seed: one set)",
    ("gold convert", "--to"): "target format",
    ("gold stats", "gold"): "native JSONL, BEIR dir or TREC qrels",
    ("gold stats", "--split"): "BEIR qrels split (default test)",
    ("gold stats", "--format"): f"{_FORMAT} or json",
    ("sweep", "--format"): f"{_FORMAT}; markdown; json: sweep.json",
    ("gate", "--format"): f"{_FORMAT}; markdown; json",
    ("threshold", "--format"): f"{_FORMAT} or json",
    ("demo", "dir"): "a new or empty directory",
    ("twobytwo", "--format"): f"{_FORMAT}; markdown; json",
    ("matrix", "--format"): f"{_FORMAT}; markdown; json",
    ("bisect", "--format"): f"{_FORMAT}; markdown; json (report.md, .json, .html are saved)",
}

_EXITS = {
    "compare": "0 no regression (improved, no measurable difference, inconclusive, not compared)"
    "\n  1 quality or latency regressed, or the candidate misses a [gate.floors] floor"
    "\n  2 usage, configuration or gold-set error"
    "\n  3 invalid: a build, boot or query failed, or the inputs do not match"
    "\n  4 with --strict: quality inconclusive",
    "run": "0 every query answered\n  2 usage, configuration or gold-set error"
    "\n  3 a query failed or the service would not build or boot",
    "gate": "0 pass (or --update-baseline wrote it)"
    "\n  1 a row fell below the baseline, or a [gate.floors] floor is not met"
    "\n  2 usage or configuration error\n  3 not comparable (another gold set) or invalid",
    "gold check": "0 no error found\n  2 the gold set has errors (or a usage error)",
}
_EXITS["report"] = _EXITS["compare"]
_EXITS["bisect"] = (
    "0 the first bad commit was found\n  1 not found: the bad end shows no regression, or skips"
    " left several commits (listed)\n  2 usage, configuration or gold-set error"
    "\n  3 invalid: the good end (or every step) could not be measured"
)
_EXITS["compare-runs"] = (
    "0 no candidate regressed (improved, no measurable difference, inconclusive)"
    "\n  1 a candidate's quality regressed\n  2 usage error or bad input (a malformed run"
    " file, a query the gold set lacks, an empty run: the message names file:line)"
    "\n  3 invalid: a run that returned nothing, or ids no judgement knows"
    "\n  4 with --strict: a candidate's quality inconclusive"
)
_EXITS["matrix"] = (
    "0 every constraint met\n  1 a constraint failed\n  2 usage or configuration error"
    "\n  3 a configuration's run is invalid"
)
_EXITS["sweep"] = _EXITS["run"].replace("the service", "a value's service")
_DEFAULT_EXITS = "0 done\n  2 usage error or bad input (the message names the file, line or option)"

_EXAMPLES = {
    "": "compare --demo"
    "\n  compare --baseline main --candidate feat/x --format markdown > comment.md"
    "\n  harness metrics --gold qrels.txt --run bm25.run --metrics nDCG@10,P@5,map",
    "compare": "compare --demo\n  compare --baseline main --candidate feat/x"
    "\n  compare --baseline main --candidate WORKTREE --repeats 10 --format markdown > c.md",
    "run": "harness run --ref main\n  harness run --ref WORKTREE --repeats 1 --format json",
    "report": "harness report results/20261201T124618Z_920c2aee_e930409f --format markdown",
    "compare-runs": "harness compare-runs bm25.run dense.run --gold qrels.txt"
    "\n  harness compare-runs base.run a.run b.run --gold beir/scifact --format markdown",
    "metrics": "harness metrics --gold gold/example.jsonl --run gold/example-run.jsonl"
    "\n  harness metrics --gold qrels.txt --run bm25.run --metrics ndcg_cut_10,P_5,map",
    "gold check": "harness gold check gold/example.jsonl --corpus gold/example-corpus.jsonl",
    "gold build": "harness gold build --corpus corpus.jsonl --out gold/mined.jsonl "
    "--exact-rare 100 --nonsense 30",
    "gold convert": "harness gold convert gold/example.jsonl --to beir --out /tmp/beir"
    "\n  harness gold convert qrels.txt --queries topics.tsv --corpus corpus.jsonl "
    "--to native --out gold.jsonl",
    "gold stats": "harness gold stats gold/example.jsonl",
    "sweep": "harness sweep --ref main --param RRF_K=20,60,100",
    "gate": "harness gate --ref main --baseline-file ci/baseline.json --update-baseline"
    "\n  harness gate --ref HEAD --baseline-file ci/baseline.json",
    "threshold": "harness threshold results/runs/<record>.json",
    "export": "harness export results/runs/<record>.json > run.trec"
    "\n  harness export results/<stamp>_<sha8>_<sha8>/ --format parquet --output q.parquet "
    "--gold gold/gold.jsonl",
    "schema": "harness schema comparison > comparison.schema.json",
    "clean": "harness clean --dry-run\n  harness clean --builds --older-than 30",
    "demo": "harness demo /tmp/harness-demo",
    "history": "harness history --ref main --format markdown"
    "\n  harness history --format html --output history.html",
    "matrix": "harness matrix --ref main --matrix ablation.toml",
    "bisect": "harness bisect --good v1.2 --bad main --metric hit@5"
    "\n  harness bisect --good HEAD~20 --bad HEAD --latency",
    "twobytwo": "harness twobytwo --run results/runs/RECORD.json --answers answers.tsv --k 5",
}


def _document(parser: argparse.ArgumentParser, name: str = "") -> None:
    """Help on every option that has none, and an epilog of examples and exit statuses on every
    command (argparse keeps its layout: RawDescriptionHelpFormatter)."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parts = []
    if name in _EXAMPLES:
        parts.append("examples:\n  " + _EXAMPLES[name])
    if name:
        parts.append("exit status:\n  " + _EXITS.get(name, _DEFAULT_EXITS))
    else:
        parts.append(
            "exit status: 0 ok, 1 regressed or below a floor, 2 usage or input error, "
            "3 invalid run,\n  4 inconclusive with --strict, 128+N killed by signal N; "
            "each command's --help says which it uses"
        )
    if parts and not parser.epilog:
        parser.epilog = "\n\n".join(parts)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                _document(sub, f"{name} {sub_name}".strip())
        elif action.help is None:
            key = action.option_strings[-1] if action.option_strings else action.dest
            action.help = _HELP.get((name, key))


@functools.cache
def _width(columns: str | None) -> int:
    """What argparse's HelpFormatter takes as its width (`columns`: $COLUMNS, the cache key)."""
    import shutil

    return shutil.get_terminal_size().columns - 2


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """`argv` (default sys.argv[1:]) parsed; a usage error exits with EXIT_USAGE."""
    if argv is None:
        argv = sys.argv[1:]
    if list(argv) == ["--version"]:  # what argparse prints, without building the whole tree
        print(f"harness {__version__}")
        raise SystemExit(0)
    # The command is the first word (the top level takes no option with a value): only its
    # arguments are built; an unknown word builds none and argparse names it, as before.
    parser = build_parser(only=next((a for a in argv if not a.startswith("-")), ""))
    args = parser.parse_args(argv)
    if args.command == "compare":
        _check_compare_sides(parser, args)
    if args.command == "compare-runs" and len(args.runs) < 2:
        parser.error(
            f"compare-runs needs a baseline and at least one candidate run file, not "
            f"{len(args.runs)}: harness compare-runs BASELINE.run CANDIDATE.run --gold GOLD"
        )
    return args


def _check_compare_sides(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    urls = (args.baseline_url, args.candidate_url)
    if any(urls):
        if not all(urls):
            parser.error("--baseline-url and --candidate-url go together: give both")
        if args.demo or args.baseline or args.candidate:
            parser.error(
                "--baseline-url/--candidate-url compare running deployments: drop --demo, "
                "--baseline and --candidate"
            )
    elif args.demo and (args.baseline or args.candidate):
        parser.error(
            "--demo compares the bundled example's own refs (main and feat/x): drop --baseline "
            "and --candidate, or drop --demo to compare your refs"
        )
    elif not args.demo and not (args.baseline and args.candidate):
        parser.error("compare needs --baseline and --candidate (or --demo, or the two --*-url)")
    if args.reuse_runs and args.fresh:
        parser.error("--reuse-runs and --fresh contradict each other: give one")
    if args.reuse_runs and any(urls):
        parser.error(
            "--reuse-runs: a deployment is never reused (what answers at a URL changes without "
            "a commit): drop --reuse-runs"
        )


def _add_strict(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--strict", action="store_true", help="exit 4 when the quality verdict is inconclusive"
    )


def _add_runs_against_a_reference(p: argparse.ArgumentParser) -> None:
    """What sweep and matrix share: one ref measured in several settings, each against one."""
    _add_side(p)
    _add_run_options(p)
    p.add_argument("--fresh", action="store_true", help="never reuse earlier run records")
    p.add_argument(
        "--redact",
        action="store_true",
        help="no query text in the saved comparisons; records keep no error details",
    )
    _add_ray(p)
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    p.add_argument("--alpha", type=float, help="significance level (default compare.alpha)")
    p.add_argument("--max-errors", type=int, help="errored queries tolerated (default 0)")
    p.add_argument(
        "--seed",
        type=int,
        help="seed of the bootstrap and randomization tests, and of the order within pairs",
    )


def _add_bisect(p: argparse.ArgumentParser) -> None:
    p.add_argument("--good", required=True, help="a commit without the regression (e.g. v1.2)")
    p.add_argument("--bad", required=True, help="a later commit with it (e.g. main)")
    decide = p.add_mutually_exclusive_group()
    decide.add_argument(
        "--metric",
        metavar="METRIC",
        help="decide each step on this metric's verdict (e.g. hit@5, ndcg@10); default: the "
        "quality verdict",
    )
    decide.add_argument(
        "--latency", action="store_true", help="decide each step on the latency verdict"
    )
    _add_run_options(p)
    p.add_argument(
        "--latency-budget",
        type=_latency_budget,
        metavar="N|TIME",
        help="each step's most latency rounds or their time (default compare.latency_budget)",
    )
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    p.add_argument("--k", type=int, action="append", help="cutoff (repeatable; default compare.k)")
    p.add_argument("--alpha", type=float, help="significance level (default compare.alpha)")
    p.add_argument(
        "--min-effect", type=float, help="smallest change the gold set must be able to see"
    )
    p.add_argument(
        "--latency-tolerance", type=float, help="latency ratio band counted as no change"
    )
    p.add_argument("--max-errors", type=int, help="errored queries tolerated (default 0)")
    p.add_argument(
        "--seed",
        type=int,
        help="seed of the bootstrap and randomization tests, and of the order within pairs",
    )


def _add_ray(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ray",
        metavar="auto|ADDRESS",
        help="run each round as a Ray task (the [ray] extra): auto finds a running cluster or "
        "starts a local one; ADDRESS is a cluster's (host:port, ray://...)",
    )

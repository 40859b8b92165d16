"""`harness judge pairs|label|merge|page`: what to judge, machine pre-labels, the merge into the
gold set, and the judging page; one function each (`run` dispatches). A grade, everywhere: 0 not
relevant, 1 relevant, 2 highly relevant, 3 perfectly relevant (TREC-style)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

EXAMPLES = {
    "judge pairs": "harness judge pairs results/20261206T070000Z_1a2b3c4d_5e6f7a8b "
    "--corpus corpus.jsonl --out pairs.jsonl",
    "judge label": "harness judge label pairs.jsonl --out machine.jsonl --command "
    "\"python3 grade.py\"",
    "judge merge": "harness judge merge gold/gold.jsonl labels.jsonl --out gold/gold-v2.jsonl",
    "judge page": "harness judge page pairs.jsonl --labels labels.jsonl --by ana",
}
GRADES = "0 not relevant, 1 relevant, 2 highly relevant, 3 perfectly relevant"
GRADES_LINE = f"grades (TREC-style): {GRADES}"


def add_arguments(p: argparse.ArgumentParser) -> None:
    judge = p.add_subparsers(dest="judge_command", required=True, parser_class=type(p))
    p = judge.add_parser("pairs", help="the unjudged pairs that decide a saved comparison",
                         description="The unjudged (query, document) pairs that decide a saved "
                         f"comparison, most decisive first.\n{GRADES_LINE}")
    p.add_argument("dir", type=Path, help="a results/<stamp>_<sha8>_<sha8>/ directory")
    p.add_argument("--gold", type=Path, help="the gold set (default: the comparison's)")
    p.add_argument("--corpus", type=Path, help="corpus JSONL or BEIR dir: titles and texts")
    p.add_argument("--out", type=Path, help="FILE.jsonl or FILE.csv (default: JSONL on stdout; "
                   "never overwritten)")
    p.add_argument("--all", action="store_true",
                   help="also every other unjudged document in either side's top k")

    p = judge.add_parser("label", help="machine pre-labels from a command of yours")
    p.add_argument("pairs", type=Path, help="a pairs file, JSONL or CSV (harness judge pairs)")
    p.add_argument("--out", type=Path, required=True, help="the labels file to write (new)")
    p.add_argument("--command", dest="labeller", metavar="COMMAND",
                   help='reads the pairs on stdin, prints one {"query_id", "doc_id", "grade"} '
                   f"line per pair, grade {GRADES} (default: [judge] command)")
    p.add_argument("--config", type=Path, help="harness.toml (default: discovered)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds (default 600)")

    p = judge.add_parser("merge", help="labels into a native gold set, with provenance")
    p.add_argument("gold", type=Path, help="a native gold set")
    p.add_argument("labels", type=Path, nargs="+", help=f"labels files (JSONL; grades {GRADES})")
    p.add_argument("--out", type=Path, required=True, help="the merged gold set")
    p.add_argument("--with-machine", action="store_true",
                   help="machine grades score where no person judged the pair")
    p.add_argument("--prefer", metavar="NAME", help="where persons disagree, NAME's grade")
    p.add_argument("--force", action="store_true", help="replace --out (GOLD itself too)")

    p = judge.add_parser("page", help="a local judging page on 127.0.0.1",
                         description="Grade the pairs in a local page on 127.0.0.1, keyboard "
                         f"only (j/k or the arrows to move).\n{GRADES_LINE}")
    p.add_argument("pairs", type=Path, help="a pairs file, JSONL or CSV (harness judge pairs)")
    p.add_argument("--labels", type=Path, required=True,
                   help="the labels file each grade is appended to (created when missing)")
    p.add_argument("--by", metavar="NAME",
                   help="your name, recorded with each grade (default: your login)")
    p.add_argument("--port", type=int, default=0, metavar="N", help="0: any free port (default)")


def run(args: argparse.Namespace) -> int:
    return {"pairs": pairs, "label": label, "merge": merge, "page": page}[args.judge_command](args)


def pairs(args: argparse.Namespace) -> int:
    from harness.cli.exits import EXIT_OK
    from harness.errors import HarnessError
    from harness.judge.pairs import decisive_pairs
    from harness.judge.pairs_file import load_saved, pair_rows, render_rows, write_new

    out: Path | None = args.out
    fmt = "csv" if out is not None and out.suffix.lower() == ".csv" else "jsonl"
    if out is not None and out.exists():  # before anything is read
        raise HarnessError(f"{out}: already exists; pairs files are never overwritten: choose "
                           "another --out, or remove it")
    saved = load_saved(args.dir, args.gold)
    settings = saved.comparison.settings
    found = decisive_pairs(saved.gold, saved.baseline, saved.candidate, settings.k,
                           settings.rel_level, every=args.all,
                           excluded=saved.comparison.header.excluded)
    corpus = None
    if args.corpus is not None:
        from harness.gold.corpus import load_corpus

        corpus = load_corpus(args.corpus)
    else:
        print("harness: no --corpus: the title and text columns are empty", file=sys.stderr)
    text = render_rows(pair_rows(found, saved.gold, corpus, saved.name), fmt)
    if out is None:
        sys.stdout.write(text)
    else:
        write_new(out, text)
    reach = sum(p.tier == "reach" for p in found)
    queries = len({p.query_id for p in found})
    ks = "/".join(f"hit@{k}" for k in settings.k)
    print(f"harness: {len(found)} pairs on {queries} queries ({reach} could each move {ks})"
          + (f"; wrote {out}" if out is not None else ""), file=sys.stderr)
    return EXIT_OK


def label(args: argparse.Namespace) -> int:
    from harness.cli.exits import EXIT_OK
    from harness.config.judge import judge_command
    from harness.errors import HarnessError
    from harness.judge.labels import Label, now_utc, write_labels_new
    from harness.judge.machine import labeller, machine_name, parse_grades, run_labeller
    from harness.judge.pairs_file import read_pairs

    if not args.timeout > 0:
        raise HarnessError(f"--timeout {args.timeout:g}: a number of seconds > 0, e.g. "
                           "--timeout 600")
    if args.out.exists():
        raise HarnessError(f"{args.out}: already exists; labels are never overwritten: choose "
                           "another --out (merge takes several labels files)")
    command = args.labeller or judge_command(args.config)
    if not command:
        raise HarnessError("no labelling command: pass --command \"python3 grade.py\", or set "
                           "[judge] command in harness.toml")
    argv = labeller(command)
    rows = read_pairs(args.pairs)
    asked = [(str(r["query_id"]), str(r["doc_id"])) for r in rows]
    stdin = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)  # as read
    grades = parse_grades(run_labeller(argv, stdin, timeout_s=args.timeout), asked, argv)
    at, by = now_utc(), machine_name(argv)
    labels = [
        Label(q, d, grades[q, d], by, "machine", at,
              str(r.get("comparison") or "") or args.pairs.name)
        for (q, d), r in zip(asked, rows, strict=True)
    ]
    write_labels_new(args.out, labels)
    print(f"harness: {len(labels)} machine labels by {by} written to {args.out}",
          file=sys.stderr)
    return EXIT_OK


def merge(args: argparse.Namespace) -> int:
    from harness.cli.exits import EXIT_OK
    from harness.judge.merge import merge_file

    result = merge_file(args.gold, args.labels, args.out, with_machine=args.with_machine,
                        prefer=args.prefer, force=args.force)
    print(f"harness: merged into {args.out}: {result.summary()}", file=sys.stderr)
    return EXIT_OK


def page(args: argparse.Namespace) -> int:
    import getpass

    from harness.errors import HarnessError
    from harness.judge.page import serve

    if not 0 <= args.port <= 65535:
        raise HarnessError(f"--port {args.port}: 0 (any free port) to 65535")

    def ready(url: str) -> None:
        print(f"judging page: {url} \N{EM DASH} Ctrl-C to stop", flush=True)

    # Until Ctrl-C or the page's "stop": every grade the page showed saved is on disk; 0 either way.
    return serve(args.pairs, args.labels, by=args.by or getpass.getuser(), port=args.port,
                 on_ready=ready)

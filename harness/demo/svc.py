"""A small retrieval service over an engineering wiki: the system under test of `compare --demo`.

    python svc.py --port 8080 --data DIR        # DIR/corpus.jsonl: {"id","title","text","age_days"}
    RANKING=lexical python svc.py ...           # one channel only: lexical, concept; or hybrid

    RANKING (environment) selects the channels fused in step 3: "hybrid" (the default: both),
    "lexical" (step 1 alone) or "concept" (step 2 alone), for an ablation of the channels.

    GET /health                 200 {"status": "ok"} once the index is built, 503 while loading
    GET /search?q=TEXT&k=N      200 {"results": [{"id": ..., "score": ...}, ...]}, best first

Standard library only, so it runs under any Python >= 3.11 with SQLite's FTS5 compiled in.

Ranking, in three steps:

1. Lexical channel: FTS5 over (title, text), `bm25()` with the title weighted 2.0. Tokens are
   Unicode letters and digits, with inner hyphens kept (`ledger-sync`, `err-48213` are one token).
   The query is sanitised into quoted tokens joined by OR, minus stop words, so user text can never
   be FTS syntax.
2. Concept channel: a hand-written thesaurus maps surface words to concept ids ("reboot",
   "restart", "bounce" -> `restart`). Each document is indexed a second time by the concepts its
   words belong to, and the query's concepts are matched against that index with `bm25()`. This
   is what answers a paraphrase that shares no word with its answer.
3. Reciprocal Rank Fusion: score(d) = sum over channels of 1 / (RRF_K + rank(d)), ranks from 1,
   each channel cut at CHANNEL_DEPTH. A document must reach MIN_FUSED_SCORE (the score of rank
   MIN_RANK in a single channel) to be returned, so a query nothing matches gets an empty list.
   Ties break on corpus order, so the ranking is deterministic.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sqlite3
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from urllib.parse import parse_qs, urlsplit

RANKINGS = {"hybrid": ("lexical", "concept"), "lexical": ("lexical",), "concept": ("concept",)}
RRF_K = 60
CHANNEL_DEPTH = 40
MIN_RANK = 30
MIN_FUSED_SCORE = 1.0 / (RRF_K + MIN_RANK)
TITLE_WEIGHT = 2.0
DEFAULT_K = 10
MAX_K = 100

# A word list reads better as text than as a 90-line literal.
STOPWORDS = frozenset(
    """a about after all also am an and any are as at be been before but by can could did do does
doing for from had has have he her his how i if in into is it its me my no not of on or our
she should so than that the their them then there these they this those to up us was we were
what when where which while who whom why will with would you your""".split()  # noqa: SIM905
)

# concept id -> the surface words that express it. Keep the word lists disjoint.
THESAURUS: dict[str, tuple[str, ...]] = {
    # actions
    "restart": ("restart", "reboot", "bounce"),
    "rollback": ("rollback", "revert", "undo"),
    "rotate": ("rotate", "renew", "reissue"),
    "restore": ("restore", "recover", "reinstate"),
    "purge": ("purge", "flush", "invalidate"),
    "failover": ("failover", "switchover", "promote"),
    "scale": ("scale", "resize", "enlarge"),
    "migrate": ("migrate", "relocate", "transfer"),
    "silence": ("silence", "mute", "snooze"),
    "retry": ("retry", "resend", "replay"),
    "drain": ("drain", "evacuate", "cordon"),
    "diagnose": ("diagnose", "troubleshoot", "investigate"),
    # objects
    "queue": ("queue", "backlog", "inbox"),
    "certificate": ("certificate", "cert", "x509"),
    "database": ("database", "datastore", "rdbms"),
    "backup": ("backup", "snapshot", "dump"),
    "cache": ("cache", "memoization", "lru"),
    "password": ("password", "passphrase", "credential"),
    "replica": ("replica", "follower", "standby"),
    "container": ("container", "pod", "sandbox"),
    "dashboard": ("dashboard", "panel", "grafana"),
    "webhook": ("webhook", "callback", "hook"),
    "dns": ("dns", "nameserver", "resolver"),
    "disk": ("disk", "volume", "storage"),
    "apikey": ("apikey", "token", "bearer"),
    "vpn": ("vpn", "tunnel", "wireguard"),
    "email": ("email", "mail", "smtp"),
    "logs": ("logs", "journal", "syslog"),
    # conditions
    "stuck": ("stuck", "wedged", "frozen", "gummed"),
    "expired": ("expired", "lapsed", "outdated"),
    "full": ("full", "exhausted", "saturated"),
    "slow": ("slow", "sluggish", "laggy"),
    "failing": ("failing", "broken", "erroring", "kaput", "borked"),
    "missing": ("missing", "absent", "vanished"),
    "duplicated": ("duplicated", "doubled", "repeated"),
    "leaking": ("leaking", "bloating", "ballooning"),
    "flaky": ("flaky", "intermittent", "unreliable"),
    "corrupted": ("corrupted", "damaged", "mangled"),
    "overloaded": ("overloaded", "swamped", "hammered"),
    "unreachable": ("unreachable", "offline", "hosed"),
}

CONCEPT_OF: dict[str, str] = {
    word: concept for concept, words in THESAURUS.items() for word in words
}

_TOKEN = re.compile(r"[^\W_]+(?:-[^\W_]+)*")


def tokens(text: str) -> list[str]:
    """Lower-cased tokens as the index sees them: letters and digits, inner hyphens kept."""
    return _TOKEN.findall(text.lower())


def content_tokens(text: str) -> list[str]:
    """Tokens minus stop words, first occurrence order, no duplicates."""
    return list(dict.fromkeys(t for t in tokens(text) if t not in STOPWORDS))


def concepts(text: str) -> list[str]:
    """Concept ids of every thesaurus word in `text`, one per occurrence, in text order."""
    return [CONCEPT_OF[t] for t in tokens(text) if t in CONCEPT_OF]


def fts_or_query(terms: Iterable[str]) -> str:
    """An FTS5 query matching any of `terms`, each quoted so it is never read as syntax."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


@dataclass(frozen=True)
class Doc:
    id: str
    age_days: float


class Index:
    """Both channels in one in-memory SQLite database, guarded by a lock (one connection)."""

    def __init__(self, ranking: str = "hybrid") -> None:
        self.channels = RANKINGS[ranking]
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._lock = threading.Lock()
        self._docs: list[Doc] = []  # rowid - 1 -> Doc
        self.ready = threading.Event()

    def load(self, corpus: Path) -> None:
        """Index every line of a corpus.jsonl file; sets `ready` when done."""
        docs: list[Doc] = []
        lexical_rows: list[tuple[int, str, str]] = []
        concept_rows: list[tuple[int, str]] = []
        with corpus.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    doc = Doc(str(row["id"]), float(row.get("age_days", 0.0)))
                    title, text = str(row.get("title", "")), str(row.get("text", ""))
                except (ValueError, KeyError, TypeError, AttributeError) as error:
                    raise ValueError(
                        f"{corpus}:{number}: {type(error).__name__}: {error}; each line must be "
                        'a JSON object with "id" and optional "title", "text", "age_days"'
                    ) from None
                docs.append(doc)
                lexical_rows.append((len(docs), title, text))
                concept_rows.append((len(docs), " ".join(concepts(f"{title} {text}"))))
        with self._lock:
            self._db.execute(
                "CREATE VIRTUAL TABLE lexical USING fts5("
                "title, text, tokenize = \"unicode61 tokenchars '-'\")"
            )
            self._db.execute("CREATE VIRTUAL TABLE concept USING fts5(concepts)")
            self._db.executemany(
                "INSERT INTO lexical(rowid, title, text) VALUES (?, ?, ?)", lexical_rows
            )
            self._db.executemany("INSERT INTO concept(rowid, concepts) VALUES (?, ?)", concept_rows)
            self._db.commit()
            self._docs = docs
        self.ready.set()

    def _channel(self, sql: str, terms: list[str]) -> list[int]:
        name = sql.split(" WHERE ")[1].split()[0]  # the channel's table: lexical or concept
        if not terms or name not in self.channels:
            return []
        with self._lock:
            rows = self._db.execute(sql, (fts_or_query(terms), CHANNEL_DEPTH)).fetchall()
        return [int(rowid) for (rowid,) in rows]

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """The top `k` (doc id, fused score) pairs for `query`, best first."""
        lexical = self._channel(
            "SELECT rowid FROM lexical WHERE lexical MATCH ? "
            f"ORDER BY bm25(lexical, {TITLE_WEIGHT}, 1.0), rowid LIMIT ?",
            content_tokens(query),
        )
        concept = self._channel(
            "SELECT rowid FROM concept WHERE concept MATCH ? ORDER BY bm25(concept), rowid LIMIT ?",
            list(dict.fromkeys(concepts(query))),
        )
        fused: dict[int, float] = {}
        for ranking in (lexical, concept):
            for rank, rowid in enumerate(ranking, start=1):
                fused[rowid] = fused.get(rowid, 0.0) + 1.0 / (RRF_K + rank)
        kept = [(rowid, score) for rowid, score in fused.items() if score >= MIN_FUSED_SCORE]
        kept.sort(key=lambda pair: (-pair[1], pair[0]))
        return [(self._docs[rowid - 1].id, score) for rowid, score in kept[:k]]


class Server(ThreadingHTTPServer):
    daemon_threads = True
    # The listen backlog: connections the kernel completes before the server accepts them.
    # The standard library's 5 made 6-9 of 16 simultaneous connects (--concurrency 16) wait
    # for a SYN retry, about 1 s, each.
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], index: Index) -> None:
        super().__init__(address, Handler)
        self.index = index


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the harness measures search, not TCP set-up
    # Headers and body go out in two writes; with Nagle on, a keep-alive client would wait for
    # a delayed ACK (~40 ms) on every request and we would be measuring TCP, not ranking.
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        index = self.server.index if isinstance(self.server, Server) else None
        url = urlsplit(self.path)
        if index is None or url.path not in ("/health", "/search"):
            self._send(404, {"error": f"no route {url.path}"})
        elif not index.ready.is_set():
            self._send(503, {"status": "loading"})
        elif url.path == "/health":
            self._send(200, {"status": "ok"})
        else:
            params = parse_qs(url.query)
            query = params.get("q", [""])[0]
            raw_k = params.get("k", [str(DEFAULT_K)])[0]
            if not raw_k.isdigit() or not 1 <= int(raw_k) <= MAX_K:
                self._send(400, {"error": f"k must be an integer from 1 to {MAX_K}, not {raw_k!r}"})
                return
            hits = index.search(query, int(raw_k))
            self._send(200, {"results": [{"id": i, "score": s} for i, s in hits]})

    def _send(self, status: int, body: object) -> None:
        payload = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        sys.stderr.write(f"svc: {self.address_string()} {format % args}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--data", type=Path, required=True, help="folder holding corpus.jsonl")
    args = parser.parse_args(argv)
    ranking = os.environ.get("RANKING", "hybrid")
    if ranking not in RANKINGS:
        parser.error(f"RANKING={ranking!r}: expected one of {', '.join(RANKINGS)}")

    index = Index(ranking)
    server = Server((args.host, args.port), index)
    failed: list[BaseException] = []

    def load() -> None:
        try:
            index.load(args.data / "corpus.jsonl")
        except Exception as error:  # reported, then the process exits non-zero
            failed.append(error)
            sys.stderr.write(f"svc: cannot load {args.data / 'corpus.jsonl'}: {error}\n")
            server.shutdown()

    def stop(signum: int, frame: FrameType | None) -> None:
        # shutdown() waits for serve_forever() to return, which runs in this (main) thread.
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    threading.Thread(target=load, daemon=True).start()
    sys.stderr.write(f"svc: listening on http://{args.host}:{server.server_port}\n")
    try:
        server.serve_forever(poll_interval=0.05)
    finally:
        server.server_close()
    sys.stderr.write("svc: stopped\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""A wrong adapter caught in the first answers of the first boot, before the rest of the run.

    ids = id_adapter(query, config, side_name)    # how its answers become corpus ids
    check = AdapterCheck(config, side_name, query, ids, judged, redact=False)   # once per ref
    check(results, where)      # AdapterError (exit 3) when the answers say the adapter is wrong

The answers a config reads (`query.ids`, and `id_pattern` / `id_field` after it) are wrong, not
the service, when:

- every answer checked is NO_MATCH or BAD_SHAPE: the ids path matches nothing (or not a list of
  ids) in what the service sends: the error quotes the answer (truncated) and the config line;
  when every one read its ids but not its scores (a NaN, one score too few) or its texts, the
  error names query.scores or query.texts instead;
- the answers hold ids, but none of them is a document id the gold set judges or the corpus
  holds (with `gold.corpus`; without one, the gold set's judged ids): ids from another field,
  which would score 0 on both sides and read as "no change".

Anything else (an HTTP error, a timeout, a mix) is the service's business, measured as usual.
The runner checks once per ref: the warm-up answers of round 1, read right after that side's
boot (so a wrong adapter stops before the next service boots), or, with query.warmup = 0 or a
sequential run, the first round's recorded answers.  Nothing here is measured or recorded.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence

from harness.config import HarnessConfig, QueryConfig
from harness.config.reader import key_line
from harness.errors import AdapterError, clip
from harness.gold.corpus import document_fields, load_corpus_ids
from harness.replay.ids import IdAdapter, adapter_for
from harness.values.types import ErrorKind, QueryResult

PROBE_ANSWERS = 3
"""Warm-up answers of round 1 read and checked per side (at most query.warmup of them)."""

_SHAPE = (ErrorKind.NO_MATCH, ErrorKind.BAD_SHAPE)
_FIX = {
    "ids": "the JMESPath of each result's document id in that answer",
    "scores": "the JMESPath of each result's score: one finite number per id; remove it if "
    "the service sends none",
    "texts": "the JMESPath of each result's text: one string (or null) per id",
}


def _blamed(results: Sequence[QueryResult]) -> str:
    """The key whose path read these answers wrong: query.scores or query.texts when every
    detail names it ("query.scores: scores[0] is a number (nan)", `harness.replay.client`: the
    ids were read), else query.ids."""
    keys = {(r.detail or "").partition(":")[0] for r in results}
    key = keys.pop() if len(keys) == 1 else ""
    return key.removeprefix("query.") if key in ("query.scores", "query.texts") else "ids"


def id_adapter(query: QueryConfig, config: HarnessConfig, side: str) -> IdAdapter:
    """The side's IdAdapter (`harness.replay.ids`), reading gold.corpus's fields when
    query.id_field asks; a problem of id_field is a ConfigError at the line that sets it."""
    corpus = config.corpus
    fields_of = None if corpus is None else functools.partial(document_fields, corpus)
    found = key_line(config.path, [f"{side}.query.id_field", "query.id_field"])
    where = "query.id_field" if found is None else f"{config.path}:{found[1]}: {found[0]}"
    return adapter_for(query.id_pattern, query.id_field, fields_of, where=where)


class AdapterCheck:
    """The check of one ref's answers (see the module); `done` once it has looked."""

    def __init__(
        self,
        config: HarnessConfig,
        side: str,
        query: QueryConfig,
        ids: IdAdapter | None,
        judged: frozenset[str],
        *,
        redact: bool = False,
    ) -> None:
        """`judged`: every document id the gold set's judgements name (`Asked.judged`)."""
        self.config, self.side, self.query, self.ids = config, side, query, ids
        self.judged = judged
        self.redact = redact  # --redact: no answer (document text) is quoted
        self.done = False

    def __call__(self, results: Sequence[QueryResult], where: str) -> None:
        """Look at `results` (raw, before the id adapter), once; AdapterError when wrong."""
        if self.done or not results:
            return
        self.done = True
        if all(r.error in _SHAPE for r in results):
            first = results[0]
            key = _blamed(results)
            said = f"query.{key} = {json.dumps(getattr(self.query, key))} read no " + (
                "ids" if key == "ids" else f"usable {key}"
            )
            said += f" in any of the first {len(results)} answers" + (
                "" if key == "ids" else " (their ids were read)"
            )
            raise AdapterError(
                f"{where}: {said}: stopped after the first boot, before the rest of the run",
                [
                    f"  {first.query_id}: {self._sample(first.detail or '')}",
                    self._fix(key, _FIX[key]),
                ],
            )
        answered = [r for r in results if r.error is None and r.ids]
        if not answered:
            return
        returned = [doc for r in answered for doc in (self.ids.apply(r.ids) if self.ids else r.ids)]
        known = self.judged
        if known.intersection(returned):
            return
        corpus = self.config.corpus
        if not known and corpus is None:
            return  # nothing judged yet, no corpus: no id space to check against (a new pool)
        if corpus is not None and load_corpus_ids(corpus)[0].intersection(returned):
            return
        space = "the gold set's judgements" + (" or the corpus" if corpus is not None else "")
        first = answered[0]
        shown = ", ".join(json.dumps(i) for i in first.ids[:5])
        more = ", ..." if len(first.ids) > 5 else ""
        key = (
            "id_field" if self.query.id_field else "id_pattern" if self.query.id_pattern else "ids"
        )
        raise AdapterError(
            f"{where}: none of the {len(returned)} ids in the first {len(answered)} answers is a "
            f"document id of {space}: stopped after the first boot, before the rest of the run",
            [
                f"  {first.query_id} answered [{self._sample(shown + more)}]",
                self._fix(key, "it must pick (or map to) the document id of each result"),
            ],
        )

    def _sample(self, text: str) -> str:
        return "(the answer is not quoted under --redact)" if self.redact else clip(text, 300)

    def _fix(self, key: str, what: str) -> str:
        """`fix harness.toml:12: query.ids = "..." (what)`, naming the line that sets it."""
        value = getattr(self.query, key)
        keys = [f"{self.side}.query.{key}", f"query.{key}"]
        found = key_line(self.config.path, keys)
        where = str(self.config.path) if found is None else f"{self.config.path}:{found[1]}"
        name = keys[1] if found is None else found[0]
        return f"  fix {where}: {name} = {json.dumps(value)} ({what})"


def probe_count(query: QueryConfig, items: Sequence[object]) -> int:
    """How many warm-up answers of round 1 are read for the check (0: none are sent)."""
    return min(query.warmup, PROBE_ANSWERS) if items else 0


__all__ = ["PROBE_ANSWERS", "AdapterCheck", "id_adapter", "probe_count"]

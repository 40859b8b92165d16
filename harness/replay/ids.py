"""Ids from any answer: what turns a service's reply into the ranked document ids of one query.

    html_document(body, selector) -> list[dict]      an HTML page as JSON, for `query.ids`
    IdAdapter(pattern, by_field).apply(values)       a returned value -> a corpus id

Most services answer JSON and `query.ids` (JMESPath) picks the ids out of it. The rest:

- **HTML** (`query.select`, a CSS selector): the answer is parsed with BeautifulSoup and becomes
  a JSON array with one object per selected element, in page order: `{"text": its text with
  whitespace collapsed, ATTRIBUTE: value for each of its attributes}`; `query.ids` then picks
  from that, e.g. `select = "a.result"`, `ids = "[].href"`.
- **A value that holds the id** (`query.id_pattern`, a regular expression with one capture
  group): each value is searched and the group is the id (`file:///notes/(\\w+)\\.txt`); a value
  it does not match is kept whole, so it counts as an id the corpus does not know (never
  silently dropped: see compare.max_unknown_ids).
- **A value that is a document's text** (`query.id_field`: a corpus field, "text" or "title",
  or a template over the fields of a corpus line, "{title} {text}", for a service that returns
  the text it indexed): each value is looked up by exact match, whitespace collapsed, in that
  text of every document of the corpus (`gold.corpus`), and replaced by the document's id; an
  unmatched value is kept whole, as above. A field a line lacks (or null) is "", a string is
  itself, any other value its JSON; a field no line has is a ConfigError naming the key.

The pattern applies first, then the field lookup. Nothing here does I/O; the runner hands in
how to read the corpus's fields (`FieldsOf`), read once per side.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from harness.config.templates import id_template
from harness.errors import ConfigError
from harness.process.extras import require


def collapse(text: str) -> str:
    """Whitespace runs as single spaces, trimmed: how a text match ignores layout."""
    return " ".join(text.split())


def html_document(body: bytes, selector: str) -> list[dict[str, str]]:
    """The elements of an HTML page that `selector` picks, as JSON objects (module docstring)."""
    bs4 = require("bs4", "query.select")  # the optional [html] extra, imported when asked for
    soup = bs4.BeautifulSoup(body, "html.parser")
    found = []
    for element in soup.select(selector):
        item = {"text": collapse(element.get_text(" "))}
        for name, value in element.attrs.items():
            item[name] = " ".join(value) if isinstance(value, list) else str(value)
        found.append(item)
    return found


def compile_pattern(pattern: str, where: str = "query.id_pattern") -> re.Pattern[str]:
    """`pattern` compiled, with exactly one capture group, or a ConfigError naming `where`."""
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"{where}: not a regular expression ({exc})") from None
    if compiled.groups != 1:
        raise ConfigError(
            f"{where}: needs exactly one capture group (the id), has {compiled.groups}",
            hint='for example id_pattern = "/(\\\\w+)\\\\.txt$"',
        )
    return compiled


def field_index(documents: Iterable[tuple[str, str]]) -> dict[str, str]:
    """(id, field value) pairs -> {collapsed value: id}; the first document wins a tie, as a
    service returning a duplicated text cannot say which copy it meant."""
    index: dict[str, str] = {}
    for doc_id, value in documents:
        index.setdefault(collapse(value), doc_id)
    return index


@dataclass(frozen=True)
class IdAdapter:
    """How returned values become corpus ids (module docstring); the identity when empty."""

    pattern: re.Pattern[str] | None = None
    by_field: Mapping[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.pattern is not None or bool(self.by_field)

    def apply(self, values: Sequence[str]) -> tuple[str, ...]:
        out = []
        for value in values:
            if self.pattern is not None and (match := self.pattern.search(value)):
                value = match.group(1)
            if self.by_field:
                value = self.by_field.get(collapse(value), value)
            out.append(value)
        return tuple(out)


FieldsOf = Callable[[Sequence[str]], tuple[list[tuple[str, tuple[object, ...]]], frozenset[str]]]
"""names -> (each document's id and values of those fields, every key of the corpus's lines):
`harness.gold.corpus.document_fields` of the corpus, bound by the caller."""


def field_text(value: object) -> str:
    """A corpus field's value as text: a string as it is, null or absent "", else its JSON."""
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value, ensure_ascii=False)


def adapter_for(
    id_pattern: str | None,
    id_field: str | None,
    fields_of: FieldsOf | None,
    *,
    where: str = "query.id_field",
) -> IdAdapter:
    """The IdAdapter a side's query settings ask for; `fields_of` reads the corpus, needed for
    `id_field` (a field or a template over fields, `harness.config.templates.id_template`),
    whose problems are ConfigErrors starting with `where` (file:line: key)."""
    pattern = compile_pattern(id_pattern) if id_pattern else None
    if not id_field:
        return IdAdapter(pattern)
    try:
        template, names = id_template(id_field)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if fields_of is None:
        raise ConfigError(
            f"{where} needs the corpus to look the returned values up in",
            hint="set gold.corpus to the corpus file the service indexes",
        )
    rows, keys = fields_of(names)
    missing = [name for name in names if name not in keys]
    if missing:
        close = difflib.get_close_matches(missing[0], sorted(keys), n=1)
        mean = f" (did you mean {{{close[0]}}}?)" if close else ""
        known = " ".join(f"{{{k}}}" for k in sorted(keys)[:_SHOWN_KEYS])
        raise ConfigError(
            f"{where} = {json.dumps(id_field)}: no document of the corpus has a field "
            f"{{{missing[0]}}}{mean}; its documents have {known}",
            hint='name the fields of the corpus lines the service returns, e.g. "{title} {text}"',
        )
    pairs = (
        (doc_id, template.format_map(dict(zip(names, map(field_text, values), strict=True))))
        for doc_id, values in rows
    )
    return IdAdapter(pattern, field_index(pairs))


_SHOWN_KEYS = 20  # of a corpus's field names, in the message of a field it lacks

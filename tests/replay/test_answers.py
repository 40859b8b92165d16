"""harness.replay.ids: ids from any answer (HTML pages, ids inside values, documents' text),
by hand, and end to end against the fixture service answering text and HTML."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from e2e_support import Sandbox, build_sandbox, corpus_lines
from hypothesis import given
from hypothesis import strategies as st

from harness.config import load_config
from harness.config.rewrite import rewritten
from harness.errors import ConfigError
from harness.replay.ids import IdAdapter, collapse, compile_pattern, field_index, html_document

PAGE = b"""<html><body><ol>
  <li><a class="hit" href="file:///n/a1.txt" data-rank="1">First
     result</a></li>
  <li><a class="ad" href="https://ads.example/x">buy</a></li>
  <li><a class="hit big" href="file:///n/b2.txt">Second</a></li>
</ol></body></html>"""


def test_an_html_page_becomes_the_selected_elements_as_json() -> None:
    assert html_document(PAGE, "a.hit") == [
        {"text": "First result", "class": "hit", "href": "file:///n/a1.txt", "data-rank": "1"},
        {"text": "Second", "class": "hit big", "href": "file:///n/b2.txt"},
    ]
    assert html_document(PAGE, "table td") == []


def test_a_pattern_takes_its_group_and_keeps_what_it_does_not_match() -> None:
    adapter = IdAdapter(compile_pattern(r"/(\w+)\.txt$"))
    assert adapter.apply(["file:///n/a1.txt", "https://ads.example/x", "/b2.txt"]) == (
        "a1",
        "https://ads.example/x",  # unmatched: kept whole, so it counts as an unknown id
        "b2",
    )


def test_a_documents_text_is_looked_up_with_whitespace_collapsed() -> None:
    index = field_index([("d1", "Tea  is\nbrewed"), ("d2", "coffee"), ("d3", "coffee")])
    adapter = IdAdapter(by_field=index)
    # exact but for layout; the first of two equal texts wins; an unknown text is kept
    assert adapter.apply([" Tea is\n brewed ", "coffee", "milk"]) == ("d1", "d2", "milk")
    assert adapter.apply(["tea is brewed"]) == ("tea is brewed",)  # case counts
    assert not IdAdapter() and adapter


@given(st.text())
def test_collapse_is_idempotent_and_trims(text: str) -> None:
    once = collapse(text)
    assert collapse(once) == once and once == once.strip()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('id_pattern = "(unclosed"', "query.id_pattern: is not a regular expression"),
        ('id_pattern = "no group"', "needs exactly one capture group (the id), has 0"),
        ('id_field = "title text"', "'title text' is not a field name; name one field"),
        ('id_field = "{title!r}"', "{title} takes no !conversion or :format"),
        ('id_field = "{} {text}"', "{} is not a corpus field"),
    ],
)
def test_bad_answer_settings_are_configuration_errors(
    tmp_path: Path, line: str, message: str
) -> None:
    config = tmp_path / "harness.toml"
    config.write_text(
        '[service]\nstart = "x {port}"\nready = "/"\n[query]\npath = "/s"\nids = "[]"\n'
        f'{line}\n[gold]\npath = "g.jsonl"\n'
    )
    with pytest.raises(ConfigError) as caught:
        load_config(config, repo=tmp_path)
    assert message in str(caught.value)


# --------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    branches = {
        "text": {"answer": "text"},
        "html": {"answer": "html"},
        "titled": {"answer": "title text"},
    }
    return build_sandbox(tmp_path_factory.mktemp("answers") / "s", branches, repeats=1)


def _config(sandbox: Sandbox, name: str, query: dict[str, str]) -> Path:
    path = sandbox.write_config(name)
    text = path.read_text().replace('ids = "results[].id"\n', "")
    if "select" in query:  # an HTML page has no scores
        text = text.replace('scores = "results[].score"\n', "")
    for key, value in query.items():
        text = text.replace("[query]\n", f"[query]\n{key} = {json.dumps(value)}\n")
    corpus = sandbox.repo / "data" / "corpus.jsonl"
    text = text.replace("[gold]\n", f"[gold]\ncorpus = {json.dumps(str(corpus))}\n")
    path.write_text(text)
    return path


@pytest.mark.slow
@pytest.mark.parametrize(
    ("ref", "query"),
    [
        ("text", {"ids": "results[].text", "id_field": "text"}),
        # A service returning the text it indexed: "Topic q07 this document covers topic q07"
        ("titled", {"ids": "results[].text", "id_field": "{title} {text}"}),
        ("html", {"select": "a.hit", "ids": "[].href", "id_pattern": r"/notes/(\w+)\.txt$"}),
    ],
)
def test_a_service_answering_text_or_html_is_scored_on_its_ids(
    sandbox: Sandbox, tmp_path: Path, ref: str, query: dict[str, str]
) -> None:
    assert len(corpus_lines()) > 80
    config = _config(sandbox, f"{ref}.toml", query)
    done = sandbox.harness("run", "--ref", ref, "--format", "json", results=tmp_path, config=config)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    # The fixture ranks every query's own document first: hit@5 is 1.0, as with JSON ids.
    assert re.search(r'"hit@5": 1\.0', json.dumps(summary)), done.stdout


def test_a_template_field_no_document_has_is_exit_2_at_its_line(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    query = {"ids": "results[].text", "id_field": "{titel} {text}"}
    config = _config(sandbox, "misspelt.toml", query)
    line = 1 + config.read_text().splitlines().index('id_field = "{titel} {text}"')
    boots = sandbox.boots()
    done = sandbox.harness("run", "--ref", "titled", results=tmp_path, config=config)
    assert done.returncode == 2, done.stderr
    assert (
        f'{config}:{line}: query.id_field = "{{titel}} {{text}}": no document of the corpus has '
        "a field {titel} (did you mean {title}?); its documents have {id} {text} {title}"
    ) in done.stderr
    assert "Traceback" not in done.stderr and sandbox.boots() == boots  # before any boot


def test_a_template_joins_fields_and_reads_missing_ones_as_empty() -> None:
    from harness.replay.ids import adapter_for

    rows = [("d1", ("Tea", "is brewed", 3)), ("d2", (None, "coffee", None))]
    adapter = adapter_for(None, "{title}: {text} ({n})", lambda names: (rows, frozenset(names)))
    assert adapter.apply(["Tea: is  brewed (3)", ": coffee ()", "Tea"]) == ("d1", "d2", "Tea")


# --------------------------------------------------------------------------- query rewrites


def test_the_fts5_rewrite_quotes_every_term_and_ors_them() -> None:
    assert (
        rewritten('what\'s new in "v2.1"?', "fts5_or")
        == '"what\'s" OR "new" OR "in" OR "v2" OR "1"'
    )
    assert rewritten("Tea, please!", "terms") == "Tea please"
    assert rewritten("Tea", "lower") == "tea"
    assert rewritten("as typed?", None) == "as typed?"


@given(st.text())
def test_an_fts5_rewrite_is_always_a_valid_match_expression(text: str) -> None:
    # Oracle: SQLite itself parses it (an empty rewrite is the one FTS5 refuses, as it should).
    import sqlite3

    query = rewritten(text, "fts5_or")
    with sqlite3.connect(":memory:") as db:
        db.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
        db.execute("INSERT INTO t VALUES ('tea is brewed')")
        if query:
            db.execute("SELECT * FROM t WHERE t MATCH ?", (query,)).fetchall()


def test_a_rewrite_is_the_same_for_both_sides_or_a_configuration_error(tmp_path: Path) -> None:
    config = tmp_path / "harness.toml"
    config.write_text(
        '[service]\nstart = "x {port}"\nready = "/"\n[query]\npath = "/s"\nids = "[]"\n'
        'rewrite = "fts5_or"\n[candidate.query]\nrewrite = "lower"\n[gold]\npath = "g.jsonl"\n'
    )
    with pytest.raises(ConfigError, match=r"query\.rewrite differs between the sides"):
        load_config(config, repo=tmp_path)
    config.write_text(config.read_text().replace('rewrite = "lower"', 'rewrite = "shout"'))
    with pytest.raises(ConfigError, match="must be one of fts5_or, lower, terms, or a hook"):
        load_config(config, repo=tmp_path)

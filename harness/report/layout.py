"""The page layout the reports share: a list of blocks, rendered as plain text or Markdown.

A renderer (`harness.report.page`, `harness.sweep.render`, `harness.gate.render`) lays its page out
once as blocks, and `text` or `markdown` turns them into a terminal page or a PR comment, so
the two always say the same things in the same order.  Pure: strings in, a string out.

    kind        text                                   Markdown
    title       as it is (underlined on request)       ## title
    heading     underlined with dashes                 ### heading
    alert       its lines                              > **first line**, then > each line
    verdicts    "label: reason" per row                **label**: reason, one per line
    lines       its lines                              - each line
    table       tabulate "simple"; under its fold      tabulate "github"; folded under
                title when it has one                  <details> when it has a fold title
    fold        nothing (what it folds stays)          <details><summary>line</summary>
    end         nothing                                </details>: the fold's end

A long page keeps its verdicts and headline in view in a pull request and folds the rest
(per-slice tables, latency details, drift and power) between a fold and its end.

`html` gives the same blocks as HTML elements (title h1, heading h3, alert a div, verdicts a dl,
lines a ul, table a table, folded under <details> with its title; a fold ... end an open
<details> that a click closes), every string escaped with
`html.escape`: the numbers part of the HTML report (`harness.report.html`).

Every piece of Markdown text is backslash-escaped (`escape_markdown`), so that what a user
named (query text, refs, slice names, paths) renders literally, in tables too; table headers
are ours and are not.  Blocks are separated by a blank line; the page ends with a newline.
In every format each string has its control characters escaped first (`harness.text.control_chars`):
a sample of what a service said, or a line of its log, never moves the cursor, retitles or
clears a terminal, or hides a line of the page.
"""

from __future__ import annotations

import html as _html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tabulate import tabulate

from harness.text.control_chars import shown


@dataclass(frozen=True)
class Block:
    """One piece of a page; `rows` are a table's cells, or (label, reason) pairs for verdicts."""

    kind: str  # "title" | "heading" | "alert" | "verdicts" | "lines" | "table" | "fold" | "end"
    lines: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    align: tuple[str, ...] | None = None  # per column, for tabulate's colalign
    fold: str | None = None  # a table's title; Markdown folds the table under it (<details>)


def section(heading: str, lines: Sequence[str]) -> list[Block]:
    """A heading and its lines; nothing at all when there are no lines."""
    if not lines:
        return []
    return [Block("heading", (heading,)), Block("lines", tuple(lines))]


# Every line of the layout starts with its own markup, so ">" and "#" need no escape.
_MARKDOWN_ESCAPES = str.maketrans({ch: "\\" + ch for ch in "\\`*_[]<|"})


def escape_markdown(text: str) -> str:
    """`text` with every Markdown-active character (\\ ` * _ [ ] < |) backslash-escaped, and
    every control character escaped (`shown`)."""
    return shown(text, lines=True).translate(_MARKDOWN_ESCAPES)


def escape_html(text: str) -> str:
    """`text` for HTML: its control characters escaped visibly (`shown`), then its markup."""
    return _html.escape(shown(text, lines=True))


def _safe(block: Block) -> Block:
    """`block` with the control characters of every string it holds escaped (`shown`)."""
    return Block(
        block.kind,
        tuple(shown(x, lines=True) for x in block.lines),
        tuple(map(shown, block.headers)),
        tuple(tuple(map(shown, row)) for row in block.rows),
        block.align,
        None if block.fold is None else shown(block.fold),
    )


def underlined(title: str) -> str:
    return f"{title}\n{'-' * len(title)}"


def text(blocks: Iterable[Block], *, underline_title: bool = False) -> str:
    """The page for a terminal."""
    parts = []
    for b in map(_safe, blocks):
        if b.kind in ("fold", "end"):
            continue
        if b.kind == "table":
            table = tabulate(
                b.rows, b.headers, tablefmt="simple", disable_numparse=True, colalign=b.align
            )
            parts.append(f"{underlined(b.fold)}\n\n{table}" if b.fold else table)
        elif b.kind == "heading" or (b.kind == "title" and underline_title):
            parts.append(underlined(b.lines[0]))
        elif b.kind == "verdicts":
            parts.append("\n".join(f"{label}: {reason}" for label, reason in b.rows))
        else:
            parts.append("\n".join(b.lines))
    return "\n\n".join(parts) + "\n"


def markdown(blocks: Iterable[Block]) -> str:
    """The page for a pull-request comment (GitHub-flavoured Markdown)."""
    md = escape_markdown
    parts = []
    for b in blocks:
        if b.kind == "title":
            parts.append(f"## {md(b.lines[0])}")
        elif b.kind == "heading":
            parts.append(f"### {md(b.lines[0])}")
        elif b.kind == "alert":
            parts.append(
                "\n".join([f"> **{md(b.lines[0])}**", *(f"> {md(x)}" for x in b.lines[1:])])
            )
        elif b.kind == "verdicts":
            parts.append("  \n".join(f"**{md(label)}**: {md(why)}" for label, why in b.rows))
        elif b.kind == "lines":
            parts.append("\n".join(f"- {md(x)}" for x in b.lines))
        elif b.kind == "fold":
            parts.append(f"<details><summary>{md(b.lines[0])}</summary>")
        elif b.kind == "end":
            parts.append("</details>")
        else:
            table = tabulate(
                [tuple(map(md, r)) for r in b.rows],
                b.headers,
                tablefmt="github",
                disable_numparse=True,
                colalign=b.align,
            )
            if b.fold:
                table = f"<details><summary>{md(b.fold)}</summary>\n\n{table}\n\n</details>"
            parts.append(table)
    return "\n\n".join(parts) + "\n"


def html(blocks: Iterable[Block]) -> str:
    """The blocks as HTML elements (a fragment, for a page's body)."""
    e = escape_html
    parts = []
    for b in blocks:
        if b.kind == "title":
            parts.append(f"<h1>{e(b.lines[0])}</h1>")
        elif b.kind == "heading":
            parts.append(f"<h3>{e(b.lines[0])}</h3>")
        elif b.kind == "alert":
            rest = "".join(f"<li>{e(x.removeprefix('- '))}</li>" for x in b.lines[1:])
            parts.append(
                f'<div class="alert"><strong>{e(b.lines[0])}</strong><ul>{rest}</ul></div>'
            )
        elif b.kind == "verdicts":
            items = "".join(f"<dt>{e(label)}</dt><dd>{e(why)}</dd>" for label, why in b.rows)
            parts.append(f"<dl>{items}</dl>")
        elif b.kind == "lines":
            parts.append("<ul>" + "".join(f"<li>{e(x)}</li>" for x in b.lines) + "</ul>")
        elif b.kind == "fold":  # as in Markdown (it used to fall through to an empty table)
            parts.append(f"<details open><summary>{e(b.lines[0])}</summary>")
        elif b.kind == "end":
            parts.append("</details>")
        else:
            align = b.align or ("left",) * len(b.headers)
            head = "".join(f"<th>{e(h)}</th>" for h in b.headers)
            body = "".join(
                "<tr>"
                + "".join(
                    f'<td class="{a}">{e(cell)}</td>' for a, cell in zip(align, row, strict=False)
                )
                + "</tr>"
                for row in b.rows
            )
            table = (
                f'<table class="numbers"><thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table>"
            )
            if b.fold:
                table = f"<details><summary>{e(b.fold)}</summary>{table}</details>"
            parts.append(table)
    return "\n".join(parts) + "\n"

"""The user's documentation as the tests read it: README.md (the front door) and every page of
the manual in docs/, with their fenced blocks (each with its page and line) and the blocks that
follow a `<!-- KIND: NAME -->` marker (a recipe, an example), wherever a page quotes them."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = (README, *sorted((ROOT / "docs").glob("*.md")))

_FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```$", re.S | re.M)


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence
    lang: str
    text: str  # dedented: a block inside a list item reads as at the margin

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(lang: str, pages: tuple[Path, ...] = PAGES) -> list[Block]:
    """Every ```LANG block of `pages`, in order."""
    found = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            if match.group(2) == lang:
                line = text.count("\n", 0, match.start()) + 1
                found.append(Block(page, line, lang, textwrap.dedent(match.group(3))))
    return found


def marked(kind: str, name: str) -> list[str]:
    """The ```toml block after every `<!-- KIND: NAME -->` in README.md and docs/, verbatim."""
    pattern = re.compile(rf"<!-- {kind}: {re.escape(name)} -->\s*```toml\n(.*?)```", re.S)
    return [m.group(1) for page in PAGES for m in pattern.finditer(page.read_text("utf-8"))]


def section(page: Path, heading: str) -> str:
    """The text under `heading` (a whole heading line, e.g. "## Run it in CI") up to the next
    heading of the same or a higher level."""
    level = heading.split(" ", 1)[0]
    text = page.read_text(encoding="utf-8").split(f"\n{heading}\n", 1)[1]
    ends = [m.start() for m in re.finditer(rf"^#{{1,{len(level)}}} ", text, re.M)]
    return text[: ends[0]] if ends else text

"""Control characters: refused where they would change a request, shown escaped everywhere else.

    shown(text, lines=False) -> str        each control character as a visible escape (\\x1b)
    one_line(text) -> str                  whitespace runs (CR, LF, tab) as one space, then shown
    control_chars(text) -> str             the control characters of `text`, each once, escaped
    header_problem(name, value) -> str     why a header cannot be sent ("" when it can)

A branch under review writes its answers and its log, and harness quotes both (error samples,
log tails, ids in messages), on a terminal, in report.md and report.html: a terminal obeys
`ESC ] 0 ; title BEL` (retitles the window), `ESC [ 2 J` (clears it) and CR (overwrites the line
just printed, an INVALID line included), so none of it may arrive raw.  `shown` writes each
control character as `\\xNN` (`\\uNNNN` above U+00FF): C0 but tab (and newline when `lines`
allows several), DEL, C1, and the Unicode line separators and bidirectional overrides that
reorder a line where it is displayed.  Everything else is kept, so a text already shown is
shown the same again; a backslash is not escaped, so the four characters `\\x1b` sent as text
read the same as an escaped ESC: the form is for reading, not for parsing.

A header is where a control character is an injection rather than a nuisance: CR LF ends the
header and starts another the service receives.  RFC 7230: a name is a token (letters, digits
and !#$%&'*+-.^_`|~), a value holds no control character but tab.
"""

from __future__ import annotations

import re

_CONTROL = "\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_ANY = re.compile(f"[{_CONTROL}\n]")
_BUT_NEWLINE = re.compile(f"[{_CONTROL}]")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_NAMES = {"\x00": "NUL", "\x07": "BEL", "\n": "LF", "\r": "CR", "\x1b": "ESC", "\x7f": "DEL"}


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def shown(text: str, lines: bool = False) -> str:
    """`text` with every control character escaped visibly; newlines kept when `lines`."""
    pattern = _BUT_NEWLINE if lines else _ANY
    return pattern.sub(_escape, text) if pattern.search(text) else text


_SPACES = re.compile(r"[ \t\r\n]+")


def one_line(text: str) -> str:
    """`text` on one line: each run of spaces, tabs, CRs and LFs one space (a pretty-printed
    error body reads as a sentence), every other control character escaped (`shown`)."""
    return shown(_SPACES.sub(" ", text))


def control_chars(text: str) -> str:
    """The control characters `text` holds (newline among them), each once in order of first
    appearance, escaped and named where a name helps: "\\x0d (CR), \\x1b (ESC)"; "" if none."""
    found = dict.fromkeys(_ANY.findall(text))
    return ", ".join(shown(ch) + (f" ({_NAMES[ch]})" if ch in _NAMES else "") for ch in found)


def header_problem(name: str, value: str) -> str:
    """Why the header `name: value` cannot be sent as it is; "" when it can."""
    if not _TOKEN.fullmatch(name):
        return (
            f"the name {name!r} is not an HTTP header name (letters, digits and "
            "!#$%&'*+-.^_`|~ only: no space, colon or control character)"
        )
    found = control_chars(value.replace("\t", ""))
    if found:
        return (
            f"the value holds {found}: a header value cannot carry a control character (CR "
            "or LF would end the header and start another the service receives)"
        )
    return ""

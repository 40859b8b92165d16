"""Which Unicode encoding a file the user gave is in, when it is UTF-16 or UTF-32 and not UTF-8.

    wide_encoding(data)          "UTF-16 LE" / "UTF-16 BE" / "UTF-32 LE" / "UTF-32 BE" or None
    encoding_problem(data, path) the one-line problem naming the encoding and the fix, or None

Every reader of a user's text file (gold, qrels, topics, corpus, harness.toml, run records) asks
this first: a UTF-16 file read as UTF-8 is either a decoding error at byte 0 or, without a
byte-order mark, ASCII with a NUL after every letter, which a reader then misreads (a native gold
file taken for TREC qrels). Pure: bytes in, a string out.
"""

from __future__ import annotations

import shlex

SAMPLE = 4096
"""Bytes of a file's start that are looked at: enough for a line or two of text."""

_BOMS = (  # UTF-32 first: its LE mark begins with UTF-16 LE's
    (b"\xff\xfe\x00\x00", "UTF-32 LE", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32 BE", "UTF-32"),
    (b"\xff\xfe", "UTF-16 LE", "UTF-16"),
    (b"\xfe\xff", "UTF-16 BE", "UTF-16"),
)


def _share_nul(lane: bytes) -> float:
    return lane.count(0) / len(lane) if lane else 0.0


def _detect(data: bytes) -> tuple[str, str, str] | None:
    """(name, how it was told, iconv's name) of a UTF-16/32 start of a file, or None."""
    for mark, name, iconv in _BOMS:
        if data.startswith(mark):
            return name, "byte-order mark", iconv
    sample = data[:SAMPLE]
    if len(sample) < 4 or 0 not in sample:
        return None
    # Without a mark: text that is mostly ASCII has NUL in fixed lanes of each 2 or 4 bytes.
    four = sample[: len(sample) // 4 * 4]
    lanes = [_share_nul(four[i::4]) for i in range(4)]
    if lanes[0] < 0.1 and min(lanes[1:]) > 0.9:
        return "UTF-32 LE", "no byte-order mark: NUL bytes in every 4", "UTF-32LE"
    if lanes[3] < 0.1 and max(lanes[:3]) > 0.9 and min(lanes[:3]) > 0.9:
        return "UTF-32 BE", "no byte-order mark: NUL bytes in every 4", "UTF-32BE"
    even, odd = _share_nul(sample[0::2]), _share_nul(sample[1::2])
    if odd > 0.4 and even < 0.1:
        return "UTF-16 LE", "no byte-order mark: a NUL byte after most characters", "UTF-16LE"
    if even > 0.4 and odd < 0.1:
        return "UTF-16 BE", "no byte-order mark: a NUL byte before most characters", "UTF-16BE"
    return None


def wide_encoding(data: bytes) -> str | None:
    """The name of the UTF-16 or UTF-32 encoding `data` (a file's first bytes) is in, or None."""
    found = _detect(data)
    return None if found is None else found[0]


def encoding_problem(data: bytes, path: object) -> str | None:
    """"is UTF-16 LE text (byte-order mark), not UTF-8: re-save it as UTF-8, e.g. `iconv ...`"
    for a UTF-16/32 file, None for anything else (UTF-8 or not, other readers judge it)."""
    found = _detect(data)
    if found is None:
        return None
    name, how, iconv = found
    quoted = shlex.quote(str(path))
    return (
        f"is {name} text ({how}), not UTF-8: re-save it as UTF-8, e.g. "
        f"`iconv -f {iconv} -t UTF-8 {quoted} > utf8.out && mv utf8.out {quoted}`"
    )

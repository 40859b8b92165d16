"""Whitespace-separated text as numpy columns: token offsets, hashes and numbers, with no Python
object per line (what `harness.score.trec` reads TREC qrels and runs with).

    regular(data)                      # only space, tab and newline separate: str.split's tokens
    for at, block in blocks(data):     # uint8 views, each ending at a line end
        starts, lengths = fields(block, 6)   # (lines, 6) of every non-blank line, or None
    hashes(padded, starts, lengths)    # a 64-bit hash of each token
    same(a, a_starts, b, b_starts, lengths)  # whether two tokens have the same bytes
    decimals(padded, starts, lengths)  # float(token) of each, exactly; None: not finite numbers
    naturals(padded, starts, lengths)  # int(token) of ASCII-digit tokens; None otherwise

`padded` is a block with 8 zero bytes after it (`padded(block)`): a token is read 8 bytes at a
time. Pure: no I/O, no clock, no randomness.

Exactness. A token is what `str.split()` yields when the text is `regular`; callers decline the
rest (a slower reader decides). `decimals` gives what Python's `float` gives, bit for bit: a
token `[+-]digits[.digits]` of at most 19 digits is m / 10**f (or m * 10**-f), one correctly
rounded operation when m < 2**53 and f <= 22 (Clinger's fast path); otherwise the quotient is
taken in 64-bit-mantissa long double and rounded once more to double, which can differ from
`float` only when the long double lands exactly halfway between two doubles, and those, like
every token of another shape (exponents, underscores, non-ASCII digits), go to `float` itself.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

U8 = npt.NDArray[np.uint8]
U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

BLOCK = 1 << 22  # bytes a block: its temporaries stay a few tens of MB
_UTF8_BREAKS = re.compile(  # what str.split/splitlines take as a break beyond ASCII
    b"\xc2[\x85\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]|\xe2\x81\x9f|\xe3\x80\x80"
)
_MUL = np.uint64(0xBF58476D1CE4E5B9)
_MAX_DIGITS = 19  # below 2**64
_EXACT = 2**53
_POW10 = 10.0 ** np.arange(23)
_LONG = np.finfo(np.longdouble).nmant >= 63  # x86-64's 80-bit long double (not on every OS)
_POW10_LONG = np.array([10**i for i in range(28)], dtype=np.longdouble)


def plain(text: U8) -> bool:
    """Whether `text` is UTF-8 without a byte-order mark and without a Unicode space or line
    break (which str.split and str.splitlines know; `fields` checks the ASCII ones)."""
    if bytes(text[:3]) == b"\xef\xbb\xbf":
        return False
    if not any(text[at : at + BLOCK].max(initial=0) >= 128 for at in range(0, len(text), BLOCK)):
        return True
    view = memoryview(text)  # type: ignore[arg-type]  # numpy arrays are buffers
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        for at in range(0, len(text), BLOCK):
            decoder.decode(view[at : at + BLOCK], final=at + BLOCK >= len(text))
    except UnicodeDecodeError:
        return False
    return _UTF8_BREAKS.search(view) is None


def blocks(text: U8, size: int = BLOCK) -> Iterator[tuple[int, U8]]:
    """(offset, view) of consecutive parts of `text`, each ending just after a newline (the
    last at the end of the text)."""
    at = 0
    while at < len(text):
        end = at + size
        while end < len(text):
            ends = np.flatnonzero(text[end - 1 : end - 1 + 65536] == 10)
            if len(ends):
                end += int(ends[0])
                break
            end += 65536
        end = min(end, len(text))
        yield at, text[at:end]
        at = end


def fields(block: U8, width: int, columns: tuple[int, ...]) -> list[tuple[I64, I64]] | None:
    """(starts, lengths) of each of `columns`, one per non-blank line of the block, or None when
    a non-blank line has other than `width` tokens or an ASCII control character other than
    tab and newline is there (CR, form feed, the separators str.split knows)."""
    sep = np.flatnonzero(block <= 32)
    kind = block[sep]
    newline = kind == 10
    if np.count_nonzero(newline | (kind == 32) | (kind == 9)) != len(sep):
        return None
    if (
        len(sep) % width == 0
        and len(sep)
        and sep[-1] == len(block) - 1
        and sep[0] > 0
        and (np.diff(sep) > 1).all()  # no empty token: one separator each time
    ):
        # The common shape: one separator between tokens, a newline after each line's last.
        grid = sep.reshape(-1, width)
        if np.count_nonzero(newline) == len(grid) and newline[width - 1 :: width].all():
            found = []
            for c in columns:
                ends = grid[:, c]
                if c == 0:
                    starts = np.empty_like(ends)
                    starts[0] = 0
                    starts[1:] = grid[:-1, -1]
                    starts[1:] += 1
                else:
                    starts = grid[:, c - 1] + 1
                found.append((starts, ends - starts))
            return found
    return _fields(block, width, columns, sep, newline)


def _fields(
    block: U8, width: int, columns: tuple[int, ...], sep: I64, newline: npt.NDArray[np.bool_]
) -> list[tuple[I64, I64]] | None:
    """`fields` of any block (runs of separators, blank lines, no final newline)."""
    bounds = np.r_[-1, sep, len(block)]
    starts = bounds[:-1] + 1
    lengths = bounds[1:] - starts
    full = lengths > 0
    starts, lengths = starts[full], lengths[full]
    before = np.searchsorted(starts, sep[newline])  # tokens before each newline
    counts = np.diff(np.r_[0, before, len(starts)])
    if ((counts != 0) & (counts != width)).any():
        return None
    return [(starts[c::width].copy(), lengths[c::width].copy()) for c in columns]


def _words(buffer: U8) -> U64:
    """words[i] = the 8 bytes from byte i, little-endian (an unaligned view, no copy)."""
    return np.ndarray((len(buffer) - 7,), dtype="<u8", buffer=buffer, strides=(1,))


_KEEP = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)


def _masked(word: U64, left: I64) -> U64:
    """`word` with only its first `left` bytes (at most 8) kept."""
    word &= _KEEP[np.minimum(left, 8)]
    return word


def hashes(buffer: U8, starts: I64, lengths: I64) -> U64:
    """A 64-bit hash of each token (`buffer` padded): equal bytes, equal hashes."""
    words = _words(buffer)
    h = lengths.astype(np.uint64) * _MUL
    rows = np.arange(len(starts))
    j = 0
    while len(rows):
        word = _masked(words[starts[rows] + j], lengths[rows] - j)
        h[rows] = mix(h[rows] ^ word)
        j += 8
        rows = rows[lengths[rows] > j]
    return mix(h)


def mix(x: U64) -> U64:
    """splitmix64's finaliser, in place: every input bit reaches every output bit."""
    shifted = np.empty_like(x)
    for shift, factor in ((30, _MUL), (27, np.uint64(0x94D049BB133111EB)), (31, None)):
        np.right_shift(x, np.uint64(shift), out=shifted)
        x ^= shifted
        if factor is not None:
            x *= factor
    return x


def first_words(buffer: U8, starts: I64, lengths: I64) -> U64:
    """The first 8 bytes of each token (fewer when shorter, zeros after), as one integer."""
    return _masked(_words(buffer)[starts], lengths)


def same(a: U8, a_starts: I64, b: U8, b_starts: I64, lengths: I64) -> npt.NDArray[np.bool_]:
    """Whether the token at each a_start of `a` has the bytes of the one at b_start of `b`,
    both `lengths` long (both buffers padded)."""
    wa, wb = _words(a), _words(b)
    equal: npt.NDArray[np.bool_] = _masked(wa[a_starts], lengths) == _masked(wb[b_starts], lengths)
    rows = np.flatnonzero(equal & (lengths > 8))  # the first 8 bytes alike: read on
    j = 8
    while len(rows):
        left = lengths[rows] - j
        differ = _masked(wa[a_starts[rows] + j], left) != _masked(wb[b_starts[rows] + j], left)
        equal[rows[differ]] = False
        j += 8
        rows = rows[(lengths[rows] > j) & ~differ]
    return equal


def naturals(buffer: U8, starts: I64, lengths: I64) -> I64 | None:
    """int(token) of tokens of 1 to 18 ASCII digits (leading zeros allowed); None when any token
    is not such."""
    if len(starts) == 0:
        return np.zeros(0, dtype=np.int64)
    width = int(lengths.max())
    if width > 18:
        return None
    value = np.zeros(len(starts), dtype=np.int64)
    for j in range(width):
        inside = j < lengths
        digit = buffer[np.minimum(starts + j, len(buffer) - 1)].astype(np.int64) - 48
        if (inside & ((digit < 0) | (digit > 9))).any():
            return None
        value = np.where(inside, value * 10 + digit, value)
    return value


def rows(buffer: U8, starts: I64, width: int) -> U8:
    """The `width` bytes from each start, as rows (starts at most len(buffer) - width)."""
    view = np.lib.stride_tricks.as_strided(
        buffer, shape=(len(buffer) - width + 1, width), strides=(1, 1), writeable=False
    )
    found: U8 = view[starts]
    return found


def strings(buffer: U8, starts: I64, lengths: I64) -> list[str]:
    """The tokens as str (of UTF-8 text: a token never splits a character)."""
    if len(starts) == 0:
        return []
    width, low = int(lengths.max()), int(starts.min())
    part = np.concatenate([buffer[low : int(starts.max()) + width], np.zeros(width, np.uint8)])
    found = rows(part, starts - low, width).copy()
    found[np.arange(width) >= lengths[:, None]] = 0
    return [token.decode("utf-8") for token in found.view(f"S{width}").ravel().tolist()]


def columns(buffer: U8, starts: I64, words: int) -> U8:
    """(8 * words, n): byte i of each token from `starts` in row i, read 8 bytes at a time
    (a padded buffer, starts at most len(buffer) - 8 * words)."""
    view = _words(buffer)
    out = np.empty((words, len(starts)), dtype=np.uint64)
    for w in range(words):
        out[w] = view[starts + 8 * w] if w else view[starts]
    found: U8 = np.ascontiguousarray(out.view(np.uint8).reshape(words, len(starts), 8)
                                     .transpose(0, 2, 1).reshape(8 * words, len(starts)))
    return found


def decimals(buffer: U8, starts: I64, lengths: I64) -> F64 | None:
    """float(token) of each token, bit for bit (see the module docstring); None when a token is
    not a finite number by Python's float."""
    n = len(starts)
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    words = -(-min(int(lengths.max()), _MAX_DIGITS + 2) // 8)  # sign, digits, point
    slow = (lengths > 8 * words) | (starts > len(buffer) - 8 * words)
    if slow.any():
        out = np.zeros(n, dtype=np.float64)
        fast = np.flatnonzero(~slow)
        out[fast], slow[fast] = _simple(columns(buffer, starts[fast], words), lengths[fast])
    else:
        out, slow = _simple(columns(buffer, starts, words), lengths)
    for i in np.flatnonzero(slow).tolist():
        token = bytes(buffer[starts[i] : starts[i] + lengths[i]]).decode("utf-8")
        try:
            out[i] = float(token)
        except ValueError:
            return None
    if not np.isfinite(out).all():
        return None
    return out


def _simple(c: U8, lengths: I64) -> tuple[F64, npt.NDArray[np.bool_]]:
    """The value of each column of `c` (a token's bytes, then anything) of the shape
    `[+-]digits[.digits]`, and which are not of it or not exact here."""
    width = c.shape[0]
    negative = c[0] == 45
    signed = negative | (c[0] == 43)
    inside = np.arange(width)[:, None] < lengths
    d = c - np.uint8(48)
    digit = (d < 10) & inside
    point = (c == 46) & inside
    other = inside & ~digit & ~point
    other[0] &= ~signed
    points = np.count_nonzero(point, axis=0)
    at = np.zeros(len(lengths), dtype=np.int64)  # where the point is (with one point)
    for j in range(1, width):
        at[point[j]] = j
    # digits after the point: all that follows it, when the token is of the shape
    fraction = np.where(points > 0, lengths - 1 - at, 0)
    digits = lengths - signed - points
    ok = ~other.any(axis=0) & (points <= 1) & (digits >= 1) & (digits <= _MAX_DIGITS)
    m = np.zeros(len(lengths), dtype=np.uint64)
    ten = np.uint64(10)
    for j in range(width):  # Horner, skipping the point, the sign and what follows
        m = np.where(digit[j], m * ten + d[j], m)
    exact = ok & (m <= _EXACT) & (fraction <= 22)
    value = m.astype(np.float64) / _POW10[np.minimum(fraction, 22)]
    inexact = ~exact
    if _LONG:
        rows = np.flatnonzero(ok & ~exact & (fraction <= 27))
        if len(rows):
            wide = m[rows].astype(np.longdouble) / _POW10_LONG[fraction[rows]]
            near = wide.astype(np.float64)
            up = np.nextafter(near, np.inf).astype(np.longdouble)
            down = np.nextafter(near, -np.inf).astype(np.longdouble)
            base = near.astype(np.longdouble)
            halfway = (wide == (base + up) / 2) | (wide == (base + down) / 2)
            value[rows] = near
            inexact[rows[~halfway]] = False
    return np.where(negative, -value, value), inexact

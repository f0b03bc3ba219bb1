"""Blocks of whole lines into values and directions, vectorised with numpy."""

from __future__ import annotations

from typing import Final

import numpy as np

from benchmarks.lib.parsers.latlog import windows
from benchmarks.lib.parsers.latlog.windows import Logging
from benchmarks.lib.parsers.model import ParseError

MAX_LINE: Final = 4096
MAX_DIGITS: Final = 18
NEWLINE, COMMA, SPACE, CR, ZERO = 10, 44, 32, 13, 48


def parse_chunk(
    chunk: bytes, lines_before: int, logging: Logging
) -> tuple[np.ndarray, np.ndarray, int]:
    """The values and directions of every non-blank line of a block of whole
    lines (``logging`` learns their block sizes, or their times when they have
    none). Fast path: every line has the same number of commas (fio writes
    one format per file), so the comma positions reshape into rows."""
    a = np.frombuffer(chunk, dtype=np.uint8)
    ends = np.flatnonzero(a == NEWLINE)
    count = int(ends.size)
    starts = np.empty_like(ends)
    starts[0], starts[1:] = 0, ends[:-1] + 1
    if int((ends - starts).max()) > MAX_LINE:
        bad = int(np.argmax(ends - starts > MAX_LINE))
        raise ParseError(
            f"line {lines_before + bad + 1}", f"longer than {MAX_LINE} bytes"
        )
    commas = np.flatnonzero(a == COMMA)
    k = commas.size // ends.size
    numbers = None  # line index of each parsed line, when blank lines were dropped
    grid = (
        commas.reshape(ends.size, k)
        if k >= 2 and commas.size == k * ends.size
        else None
    )
    if grid is not None and (grid[:, 0] > starts).all() and (grid[:, -1] < ends).all():
        c0, c1 = grid[:, 0], grid[:, 1]
        c2 = grid[:, 2] if k >= 3 else np.full(ends.size, -1)
    else:
        length = ends - starts
        keep = ~((length == 0) | ((length == 1) & (a[starts] == CR)))
        if not keep.all():
            numbers = np.flatnonzero(keep)
            starts, ends = starts[keep], ends[keep]
        if not starts.size:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), count
        first = np.searchsorted(commas, starts)
        padded = np.concatenate((commas, [a.size, a.size, a.size]))
        c0 = np.minimum(padded[first], ends)
        c1 = np.minimum(padded[first + 1], ends)
        c2 = np.where(padded[first + 2] < ends, padded[first + 2], -1)
    values, ok = _digits(a, c0, c1)
    ok &= c1 < ends  # a second comma inside the line
    d_start = np.minimum(
        c1 + 1 + (a[np.minimum(c1 + 1, a.size - 1)] == SPACE), a.size - 1
    )
    directions = a[d_start].astype(np.int64) - 48
    after = a[np.minimum(d_start + 1, a.size - 1)]
    ok &= (directions >= 0) & (directions <= 2)
    ok &= (after == COMMA) | (after == NEWLINE) | (after == CR)
    if not ok.all():
        bad = int(np.argmin(ok))
        number = lines_before + (int(numbers[bad]) if numbers is not None else bad) + 1
        text = chunk[starts[bad] : ends[bad]].decode("utf-8", "replace")[:80]
        expected = "'time, value (ns), direction 0/1/2, …'"
        raise ParseError(f"line {number}", f"not {expected}: {text!r}{_hint(text)}")
    _block_sizes(a, starts, c0, c2, values, directions, logging)
    return values, directions, count


def _hint(text: str) -> str:
    """Name fio's ``log_window_value=both`` layout (time, window mean, window
    maximum, direction, block size 0, …) when a bad line has it."""
    fields = [f.strip() for f in text.split(",")]
    if (
        len(fields) >= 5
        and all(f.isdigit() for f in fields[:5])
        and int(fields[2]) >= int(fields[1])
        and fields[3] in ("0", "1", "2")
        and fields[4] == "0"
    ):
        return (
            " (this looks like fio's log_window_value=both layout: time, window "
            "mean, window maximum, direction, …; it is not read, log with "
            "log_window_value=avg or without log_avg_msec)"
        )
    return ""


def _block_sizes(
    a: np.ndarray,
    starts: np.ndarray,
    c0: np.ndarray,
    c2: np.ndarray,
    values: np.ndarray,
    directions: np.ndarray,
    logging: Logging,
) -> None:
    """Count the lines whose block size (after the third comma; -1: none) is
    exactly ``0``, those where it is something else; give ``logging`` the
    windows (time, value) of the first and the times of the lines without a
    block size."""
    has = c2 >= 0
    last = a.size - 1
    field = np.minimum(c2 + 1 + (a[np.minimum(c2 + 1, last)] == SPACE), last)
    after = a[np.minimum(field + 1, last)]
    zero = (
        has
        & (a[field] == ZERO)
        & ((after == COMMA) | (after == NEWLINE) | (after == CR))
    )
    _note_block_sizes(a, starts, c0, has, zero, values, directions, logging)


def _note_block_sizes(
    a: np.ndarray,
    starts: np.ndarray,
    c0: np.ndarray,
    has: np.ndarray,
    zero: np.ndarray,
    values: np.ndarray,
    directions: np.ndarray,
    logging: Logging,
) -> None:
    """``_block_sizes`` once it knows which lines have a block size (``has``)
    and which have block size 0 (``zero``)."""
    logging.bs_zero += int(zero.sum())
    logging.bs_set += int(has.sum() - zero.sum())
    if zero.any() and min(logging.kept) < windows.MAX_WINDOW_POINTS:
        times, ok = _digits(a, starts[zero] - 1, c0[zero])
        logging.add_windows(times[ok], values[zero][ok], directions[zero][ok])
    missing = ~has
    if not missing.any():
        return
    logging.no_bs += int(missing.sum())
    times, ok = _digits(a, starts[missing] - 1, c0[missing])
    if not ok.all():
        logging.bad_times = True
        return
    logging.add_times(times, directions[missing])
    logging.add_windows(times, values[missing], directions[missing])


def _digits(
    a: np.ndarray, c0: np.ndarray, c1: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The unsigned integer between each pair of commas (one optional space
    after the first), read from its last digit backwards, and which are valid."""
    first = c0 + 1 + (a[np.minimum(c0 + 1, a.size - 1)] == SPACE)
    length = c1 - first
    ok = (length > 0) & (length <= MAX_DIGITS)
    length = np.where(ok, length, 0)
    values = np.zeros(c0.size, dtype=np.int64)
    worst = np.zeros(c0.size, dtype=np.uint8)  # the largest byte - 48 seen
    position = c1 - 1
    for j in range(int(length.max(initial=0))):
        char = a[position]
        char -= 48
        if j:
            char *= length > j  # outside the field: 0
            position -= 1
            values += char * np.int64(10**j)
        else:
            values += char
            position -= 1
        np.maximum(worst, char, out=worst)
    return values, ok & (worst < 10)


# --- the fast path: fio's own layout, eight bytes at a time ----------------------
#
# fio writes ``time, value, direction[, block size, …]``: one space after each
# comma. Rather than find every comma of a block, the fast path finds its
# newlines only, then reads eight bytes at a time as one little-endian integer
# (a "word"; SWAR, SIMD within a register, for every line at once with numpy):
# the word at a line's start holds the comma after the time, the word after
# that comma the value's digits (turned into a number in three multiply-and-add
# steps) and its comma, the word at that comma the direction and the start of
# the block size. A block where any line is not so (a blank line, a line
# without a space after a comma, a bad byte) is parsed again by ``parse_chunk``,
# which reads every layout it accepts and names bad lines.

PAD: Final = 64  # bytes after a block: every word read stays inside
_LANES = 0x0101010101010101
_COMMAS = np.uint64(COMMA * _LANES)
_ONES = np.uint64(_LANES)
_HIGH = np.uint64(0x80 * _LANES)
_NIBBLES = np.uint64(0xF0 * _LANES)
_ASCII_ZEROS = np.uint64(0x30 * _LANES)
_SIXES = np.uint64(0x06 * _LANES)
_BYTE, _PAIR = np.uint64(0xFF), np.uint64(0xFFFF)
_COMMA_SPACE = np.uint64(COMMA | SPACE << 8)  # ", " as the low bytes of a word
# a field of n digits (1 <= n <= 8) in a word's low bytes: shifted to its high
# bytes, the low bytes filled with '0'
_SHIFT = np.array([0] + [8 * (8 - n) for n in range(1, 9)], dtype=np.uint64)
_FILL = np.array(
    [0] + [(0x30 * _LANES) & ((1 << (8 * (8 - n))) - 1) for n in range(1, 9)],
    dtype=np.uint64,
)
# times 1 << 8k, its top byte is k: a byte's index from a mark in that byte
_BYTE_INDEX = np.uint64(0x0001020304050607)


def parse_chunk_fast(
    chunk: bytes, size: int, logging: Logging
) -> tuple[np.ndarray, np.ndarray, int] | None:
    """``parse_chunk`` of ``chunk[:size]`` (``chunk`` holds ``PAD`` more bytes)
    when every line is as fio writes it, else None (``logging`` untouched)."""
    a = np.frombuffer(chunk, dtype=np.uint8)
    ends = np.flatnonzero(a[:size] == NEWLINE)
    starts = np.empty_like(ends)
    starts[0], starts[1:] = 0, ends[:-1] + 1
    if int((ends - starts).max()) > MAX_LINE:
        return None  # parse_chunk names the line
    # words[i]: the eight bytes from byte i on (unaligned reads)
    words = np.ndarray((a.size - 7,), dtype="<u8", buffer=chunk, strides=(1,))
    c0 = _comma_from(words, starts, words[starts])
    ok = (c0 < ends) & ((words[c0] & _PAIR) == _COMMA_SPACE)
    word = words[c0 + 2]
    c1 = _comma_from(words, c0 + 2, word)
    values, ok_value = _digits_in_word(word, c1 - c0 - 2)
    longer = c1 - c0 > 9  # a value of 8 digits or more: rare, read byte by byte
    if longer.any():
        values[longer], ok_value[longer] = _digits(a, c0[longer], c1[longer])
    tail = words[np.minimum(c1, a.size - 8)]  # ", D," or ", D\n"
    directions = ((tail >> np.uint64(16)) & _BYTE) - np.uint64(ZERO)
    after = (tail >> np.uint64(24)) & _BYTE
    ok &= ok_value & (c1 < ends) & ((tail & _PAIR) == _COMMA_SPACE)
    ok &= (directions <= 2) & ((after == COMMA) | (after == NEWLINE) | (after == CR))
    if not ok.all():
        return None
    has = after == COMMA
    # the block size's first byte and the one after it (one optional space)
    spaced = ((tail >> np.uint64(32)) & _BYTE) == SPACE
    field = tail >> (np.uint64(32) + (spaced * np.uint64(8)))
    follow = (field >> np.uint64(8)) & _BYTE
    zero = has & ((field & _BYTE) == ZERO)
    zero &= (follow == COMMA) | (follow == NEWLINE) | (follow == CR)
    directions = directions.astype(np.int64)
    _note_block_sizes(a, starts, c0, has, zero, values, directions, logging)
    return values, directions, int(ends.size)


def _comma_from(words: np.ndarray, at: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The position of the first comma from each of ``at`` on (``first``: the
    words there), looked for in up to three words (``at + 24`` if none)."""
    found = at + _first_comma(first)
    rows = np.flatnonzero(found - at == 8)
    for _ in range(2):
        if not rows.size:
            break
        step = _first_comma(words[found[rows]])
        found[rows] += step
        rows = rows[step == 8]
    return found


def _first_comma(words: np.ndarray) -> np.ndarray:
    """The index (0-7) of the first comma among each word's bytes, 8 if none."""
    x = words ^ _COMMAS  # a comma's byte becomes 0
    zero = (x - _ONES) & ~x & _HIGH  # its lowest set bit marks the first 0 byte
    lowest = (zero & (~zero + np.uint64(1))) >> np.uint64(7)  # 1 << 8 * index, or 0
    index = ((lowest * _BYTE_INDEX) >> np.uint64(56)).astype(np.int64)
    index[zero == 0] = 8
    return index


def _digits_in_word(
    words: np.ndarray, length: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The unsigned integer in each word's first ``length`` bytes, and whether
    it is one (1 to 7 digits; 8 is left to the caller)."""
    ok = (length >= 1) & (length <= 7)
    n = np.where(ok, length, 0)
    x = (words << _SHIFT[n]) | _FILL[n]
    digits = (x & _NIBBLES) == _ASCII_ZEROS
    ok &= digits & (((x + _SIXES) & _NIBBLES) == _ASCII_ZEROS)
    x -= _ASCII_ZEROS
    x = (x * np.uint64(10) + (x >> np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)
    x = (x * np.uint64(100) + (x >> np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)
    x = (x * np.uint64(10000) + (x >> np.uint64(32))) & np.uint64(0xFFFFFFFF)
    return x.astype(np.int64), ok

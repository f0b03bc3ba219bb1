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

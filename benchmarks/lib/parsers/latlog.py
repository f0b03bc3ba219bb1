"""``fio-lat-log``: fio ``write_lat_log`` files -> latency percentiles, streamed.

Line format (fio HOWTO "Log File Formats"): ``time (ms), value, data
direction, block size, offset[, priority[, issue time]]``, e.g.
``1, 107800, 0, 4096, 0``. For latency logs ``value`` is in nanoseconds (fio
>= 3.0); direction 0 = read, 1 = write, 2 = trim. The file name tells which
latency it is (``*_clat.N.log`` completion, ``*_slat.N.log`` submission,
otherwise ``lat`` = total), as fio names them.

Memory stays bounded whatever the file size: the file is read in 8 MiB
chunks, each parsed with vectorised numpy (no Python per line) and folded
into a log-linear histogram per direction -- values below 2**12 exactly,
above that 2**11 buckets per power of two, so a bucket's midpoint is within
2**-12 (0.025%) of any value in it. Percentiles follow numpy's default
(linear interpolation between the two nearest order statistics), each order
statistic read from its bucket (clamped to the exact min and max), so they are
within 0.025% of ``numpy.percentile`` over the raw values. Count, mean, min
and max are exact.

Bad lines (not three or more comma-separated fields, a value that is not an
unsigned integer, a direction other than 0/1/2, a line over 4 KiB) are
problems naming the line number and showing the line.

Averaged logs. With ``log_avg_msec`` fio writes one line per direction per
window holding the window's mean latency (its maximum with
``log_window_value=max``), not one line per I/O, and fio's HOWTO says so:
percentiles computed from such averages are wrong. Such a log gives
``{direction}_{kind}_window_mean_us`` with ``min``, ``max`` and ``mean`` over
the windows (method ``recomputed:lat-log-windows``), the windows as a time
series of that name (the first ``MAX_WINDOW_POINTS`` per direction) and a
warning, never a percentile and never ``{direction}_{kind}_us``. How it is recognised:

- fio's own mark (HOWTO "Log File Formats": with windowed logging the block
  size and offset "will always contain 0"): the block-size column (4th) is
  ``0``; a per-I/O line carries the I/O's size, never 0. Any line with block
  size 0 makes the log averaged (a mix is also a warning);
- when no line has a block-size column (a hand-cut log), the timestamps: per
  direction they never repeat (but once: fio flushes the last window at the
  end) nor go back, and lines are at least 10 ms apart on average.

fio's ``log_window_value=both`` layout (time, window mean, window maximum,
direction, …) is not read; its lines are refused with a message naming it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import BinaryIO, Final

import numpy as np

from benchmarks.lib.parsers.model import (
    STANDARD_PERCENTILES,
    MetricSink,
    ParseError,
    ParseResult,
    Series,
    percentile_stat,
)

SUB_BITS: Final = 12
BUCKETS: Final = 64 << SUB_BITS
DIRECTIONS: Final = ("read", "write", "trim")
CHUNK_BYTES: Final = 4 * 1024 * 1024
MAX_LINE: Final = 4096
MAX_DIGITS: Final = 18
METHOD: Final = "recomputed:lat-log-histogram"
WINDOW_METHOD: Final = "recomputed:lat-log-windows"
# Without a block-size column: the mean gap (ms) between a direction's lines
# from which evenly spaced, never repeated timestamps are taken for windows.
MIN_WINDOW_MS: Final = 10
# An averaged log's windows also become a time series, up to this many points
# per direction (the runner keeps at most 20,000 points of a series).
MAX_WINDOW_POINTS: Final = 20_000
NEWLINE, COMMA, SPACE, CR, ZERO = 10, 44, 32, 13, 48


class LatencyHistogram:
    """Per-direction log-linear histograms plus exact count, sum, min, max."""

    def __init__(self) -> None:
        self.counts = np.zeros(len(DIRECTIONS) * BUCKETS, dtype=np.int64)
        self.total = [0] * len(DIRECTIONS)
        self.sums = [0.0] * len(DIRECTIONS)
        self.mins = [0] * len(DIRECTIONS)
        self.maxs = [0] * len(DIRECTIONS)

    def add(self, values: np.ndarray, directions: np.ndarray) -> None:
        _, exponent = np.frexp(values.astype(np.float64))
        shift = np.maximum(exponent - SUB_BITS, 0)
        index = (shift << SUB_BITS) + (values >> shift) + directions * BUCKETS
        self.counts += np.bincount(index, minlength=self.counts.size)
        counts = np.bincount(directions, minlength=len(DIRECTIONS))
        sums = np.bincount(directions, weights=values, minlength=len(DIRECTIONS))
        lows = np.full(len(DIRECTIONS), np.iinfo(np.int64).max, dtype=np.int64)
        highs = np.full(len(DIRECTIONS), -1, dtype=np.int64)
        np.minimum.at(lows, directions, values)
        np.maximum.at(highs, directions, values)
        for d in np.flatnonzero(counts):
            first = self.total[d] == 0
            self.mins[d] = int(lows[d]) if first else min(self.mins[d], int(lows[d]))
            self.maxs[d] = int(highs[d]) if first else max(self.maxs[d], int(highs[d]))
            self.total[d] += int(counts[d])
            self.sums[d] += float(sums[d])

    def percentiles(
        self, direction: int, wanted: tuple[float, ...]
    ) -> dict[float, float]:
        n = self.total[direction]
        counts = self.counts[direction * BUCKETS : (direction + 1) * BUCKETS]
        cumulative = np.cumsum(counts)
        result = {}
        for p in wanted:
            position = (n - 1) * p / 100.0
            low = int(np.floor(position))
            high = min(low + 1, n - 1)
            a, b = (
                self._order_stat(cumulative, low, direction),
                self._order_stat(cumulative, high, direction),
            )
            result[p] = a + (b - a) * (position - low)
        return result

    def _order_stat(self, cumulative: np.ndarray, k: int, direction: int) -> float:
        bucket = int(np.searchsorted(cumulative, k + 1))
        shift, sub = bucket >> SUB_BITS, bucket & ((1 << SUB_BITS) - 1)
        # the bucket holds [sub << shift, (sub + 1) << shift); its midpoint:
        value = ((sub << shift) + ((sub + 1) << shift) - 1) / 2 if shift else sub
        return min(max(value, self.mins[direction]), self.maxs[direction])


class Logging:
    """What tells a per-I/O log from an averaged one, gathered as the chunks
    go by: block-size columns that are 0, that are not, lines without one,
    and for those, per direction, the gaps between consecutive timestamps."""

    def __init__(self) -> None:
        self.bs_zero = self.bs_set = self.no_bs = 0
        self.last: list[int | None] = [None] * len(DIRECTIONS)
        self.gaps = [0] * len(DIRECTIONS)
        self.span = [0] * len(DIRECTIONS)
        self.repeats = [0] * len(DIRECTIONS)
        self.backwards = [0] * len(DIRECTIONS)
        self.bad_times = False
        # the windows' (time ms, value ns) by direction, for the time series
        self.points: list[list[tuple[np.ndarray, np.ndarray]]] = [
            [] for _ in DIRECTIONS
        ]
        self.kept = [0] * len(DIRECTIONS)

    def add_windows(
        self, times: np.ndarray, values: np.ndarray, directions: np.ndarray
    ) -> None:
        for d in np.unique(directions):
            room = MAX_WINDOW_POINTS - self.kept[d]
            mine = directions == d
            t, v = times[mine][:room], values[mine][:room]
            if t.size:
                self.points[d].append((t, v))
                self.kept[d] += int(t.size)

    def add_times(self, times: np.ndarray, directions: np.ndarray) -> None:
        for d in np.unique(directions):
            t = times[directions == d]
            previous = self.last[d]
            if previous is not None:
                t = np.concatenate((np.array([previous], dtype=np.int64), t))
            steps = np.diff(t)
            self.gaps[d] += int(steps.size)
            self.span[d] += int(steps[steps > 0].sum())
            self.repeats[d] += int((steps == 0).sum())
            self.backwards[d] += int((steps < 0).sum())
            self.last[d] = int(t[-1])

    def windowed(self) -> tuple[bool, str]:
        """Whether the lines are windows, and the evidence (for the warning)."""
        lines = self.bs_zero + self.bs_set + self.no_bs
        if self.bs_zero == lines:
            return True, "block size 0 on every line, fio's mark of a window"
        if self.bs_zero:
            return True, (
                f"{self.bs_zero} of {lines} lines have block size 0, fio's mark of a "
                "window, the others do not: averaged and per-I/O lines mixed"
            )
        if self.bs_set or self.bad_times:
            return False, ""
        seen = [d for d in range(len(DIRECTIONS)) if self.gaps[d]]
        even = bool(seen) and all(
            self.backwards[d] == 0
            and self.repeats[d] <= 1
            and self.span[d] >= MIN_WINDOW_MS * self.gaps[d]
            for d in seen
        )
        if not even:
            return False, ""
        gap = sum(self.span[d] for d in seen) / sum(self.gaps[d] for d in seen)
        return True, (
            "no block-size column, and its timestamps are evenly spaced, one line "
            f"per direction about every {gap:.0f} ms, as fio writes windows"
        )


def parse_lat_log(
    handle: BinaryIO, result: ParseResult, *, source_name: str = ""
) -> None:
    kind = _kind(source_name)
    histogram, logging = LatencyHistogram(), Logging()
    lines = [0]  # lines read so far, for messages
    for chunk in _chunks(handle, lines):
        values, directions, count = _parse_chunk(chunk, lines[0], logging)
        lines[0] += count
        if values.size:
            histogram.add(values, directions)
    if not sum(histogram.total):
        raise ParseError("", "the latency log holds no samples")
    windowed, evidence = logging.windowed()
    if windowed:
        _window_means(MetricSink(result), histogram, kind, source_name, evidence)
        _window_series(result, logging, histogram, kind, source_name)
        counts = {d: n for d, n in zip(DIRECTIONS, histogram.total, strict=True) if n}
        result.info.update(
            {"latency": kind, "logging": "windowed", "windows": counts,
             "lines": lines[0]}
        )  # fmt: skip
        return
    sink = MetricSink(result)
    for d, direction in enumerate(DIRECTIONS):
        n = histogram.total[d]
        if not n:
            continue
        name, key = f"{direction}_{kind}_us", f"{source_name or 'log'} direction {d}"
        sink.add(name, "min", histogram.mins[d] / 1000, "us", key, method=METHOD)
        sink.add(name, "max", histogram.maxs[d] / 1000, "us", key, method=METHOD)
        sink.add(name, "mean", histogram.sums[d] / n / 1000, "us", key, method=METHOD)
        for p, value in histogram.percentiles(d, STANDARD_PERCENTILES).items():
            sink.add(name, percentile_stat(p), value / 1000, "us", key, method=METHOD)
    samples = dict(zip(DIRECTIONS, histogram.total, strict=True))
    result.info.update(
        {"latency": kind, "logging": "per-io", "samples": samples, "lines": lines[0]}
    )


def _window_series(
    result: ParseResult,
    logging: Logging,
    histogram: LatencyHistogram,
    kind: str,
    source_name: str,
) -> None:
    """An averaged log's windows over time (s, us), one series per direction."""
    for d, direction in enumerate(DIRECTIONS):
        if not logging.points[d]:
            continue
        times = np.concatenate([t for t, _ in logging.points[d]]) / 1000
        values = np.concatenate([v for _, v in logging.points[d]]) / 1000
        name = f"{direction}_{kind}_window_mean_us"
        points = tuple(zip(times.tolist(), values.tolist(), strict=True))
        key = f"{source_name or 'log'} direction {d}"
        result.series.append(Series(name, "us", points, key))
        if (
            logging.kept[d] >= MAX_WINDOW_POINTS
            and histogram.total[d] > logging.kept[d]
        ):
            result.warnings.append(
                f"{name}: the time series holds the first {logging.kept[d]} of "
                f"{histogram.total[d]} windows"
            )


def _window_means(
    sink: MetricSink,
    histogram: LatencyHistogram,
    kind: str,
    source_name: str,
    evidence: str,
) -> None:
    """An averaged log's honest figures: the lowest, highest and mean window."""
    names = []
    for d, direction in enumerate(DIRECTIONS):
        n = histogram.total[d]
        if not n:
            continue
        name = f"{direction}_{kind}_window_mean_us"
        key = f"{source_name or 'log'} direction {d}"
        names.append(name)
        for stat, value in (
            ("min", histogram.mins[d]),
            ("max", histogram.maxs[d]),
            ("mean", histogram.sums[d] / n),
        ):
            sink.add(name, stat, value / 1000, "us", key, method=WINDOW_METHOD)
    sink.result.warnings.append(
        f"fio wrote this latency log with log_avg_msec ({evidence}): each line is "
        "the mean latency of one time window (its maximum with "
        "log_window_value=max), not one I/O's, so no per-I/O percentile can be "
        f"computed from it; reported as {', '.join(names)} (min, max and mean over "
        "the windows). For percentiles, log every I/O (no log_avg_msec), or use "
        "fio's json+ bins or log_hist_msec."
    )


def _kind(source_name: str) -> str:
    match = re.search(r"_(clat|slat|lat)\.\d+\.log$", source_name)
    return match.group(1) if match else "lat"


def _chunks(handle: BinaryIO, lines: list[int]) -> Iterator[bytes]:
    """Blocks of whole lines (the last one completed with a newline)."""
    rest = b""
    while block := handle.read(CHUNK_BYTES):
        data = rest + block
        cut = data.rfind(b"\n") + 1
        rest = data[cut:]
        if len(rest) > MAX_LINE:
            number = lines[0] + data.count(b"\n", 0, cut) + 1
            raise ParseError(f"line {number}", f"longer than {MAX_LINE} bytes")
        if cut:
            yield data[:cut]
    if rest.strip():
        yield rest + b"\n"


def _parse_chunk(
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
    if zero.any() and min(logging.kept) < MAX_WINDOW_POINTS:
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

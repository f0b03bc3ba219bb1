"""``fio-lat-log``: fio ``write_lat_log`` files -> latency percentiles, streamed.

Line format (fio HOWTO "Log File Formats"): ``time (ms), value, data
direction, block size, offset[, priority[, issue time]]``, e.g.
``1, 107800, 0, 4096, 0``. For latency logs ``value`` is in nanoseconds (fio
>= 3.0); direction 0 = read, 1 = write, 2 = trim. The file name tells which
latency it is (``*_clat.N.log`` completion, ``*_slat.N.log`` submission,
otherwise ``lat`` = total), as fio names them.

Memory stays bounded whatever the file size: the file is read in 1 MiB
chunks, each parsed with vectorised numpy (no Python per line; lines as fio
writes them take ``lines.parse_chunk_fast``, eight bytes at a time, any other
block ``lines.parse_chunk``) in one of two worker threads (numpy lets go of the
GIL for its array work), at most ``AHEAD`` chunks read ahead of the one being
folded. Chunks are folded in file order in the calling thread: a worker returns
its chunk's values and what its lines tell of the logging (a ``Logging`` of its
own, ``Logging.extend``-ed in order), so the figures, the evidence of averaged
logging and the line numbers in messages are those of one chunk after another
(a chunk with a bad line is parsed again, in order, to name the line by its
number in the file). Each is folded into a log-linear histogram per
direction -- values below 2**12 exactly,
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
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import BinaryIO, Final

import numpy as np

from benchmarks.lib.parsers.latlog.histogram import DIRECTIONS, LatencyHistogram
from benchmarks.lib.parsers.latlog.lines import (
    MAX_LINE,
    PAD,
    parse_chunk,
    parse_chunk_fast,
)
from benchmarks.lib.parsers.latlog.windows import Logging, window_means, window_series
from benchmarks.lib.parsers.model import (
    STANDARD_PERCENTILES,
    MetricSink,
    ParseError,
    ParseResult,
    percentile_stat,
)

CHUNK_BYTES: Final = 1024 * 1024
WORKERS: Final = 2
AHEAD: Final = 2  # blocks read and parsing beyond the one being folded
METHOD: Final = "recomputed:lat-log-histogram"

Parsed = tuple[np.ndarray, np.ndarray, int, Logging]


def parse_lat_log(
    handle: BinaryIO, result: ParseResult, *, source_name: str = ""
) -> None:
    kind = _kind(source_name)
    histogram, logging = LatencyHistogram(), Logging()
    lines = 0  # lines folded so far, for messages
    with ThreadPoolExecutor(WORKERS) as pool:
        try:
            for chunk, size, future in _parsing(handle, pool):
                try:
                    values, directions, count, chunk_logging = future.result()
                except ParseError:
                    # parsed again to name the line by its number in the file
                    parse_chunk(chunk[:size], lines, Logging())
                    raise
                lines += count
                logging.extend(chunk_logging)
                if values.size:
                    histogram.add(values, directions)
        except _TooLong as long:
            number = lines + long.newlines + 1
            raise ParseError(
                f"line {number}", f"longer than {MAX_LINE} bytes"
            ) from None
    if not sum(histogram.total):
        raise ParseError("", "the latency log holds no samples")
    windowed, evidence = logging.windowed()
    if windowed:
        window_means(MetricSink(result), histogram, kind, source_name, evidence)
        window_series(result, logging, histogram, kind, source_name)
        counts = {d: n for d, n in zip(DIRECTIONS, histogram.total, strict=True) if n}
        result.info.update(
            {"latency": kind, "logging": "windowed", "windows": counts,
             "lines": lines}
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
        {"latency": kind, "logging": "per-io", "samples": samples, "lines": lines}
    )


def _kind(source_name: str) -> str:
    match = re.search(r"_(clat|slat|lat)\.\d+\.log$", source_name)
    return match.group(1) if match else "lat"


def _parse(chunk: bytes, size: int) -> Parsed:
    """One block's values, directions, line count and what its lines tell of
    the logging (in a worker thread: touches nothing shared)."""
    logging = Logging()
    parsed = parse_chunk_fast(chunk, size, logging)
    if parsed is None:  # not all as fio writes it: the general path says why
        parsed = parse_chunk(chunk[:size], 0, logging)
    return (*parsed, logging)


def _parsing(
    handle: BinaryIO, pool: ThreadPoolExecutor
) -> Iterator[tuple[bytes, int, Future[Parsed]]]:
    """The blocks in order with their parse in ``pool``, ``AHEAD`` more read
    and submitted before each is handed over (memory stays bounded). A line
    too long is raised once the blocks before it are handed over: a bad line
    in those comes first, as when parsed one by one."""
    pending: deque[tuple[bytes, int, Future[Parsed]]] = deque()
    try:
        for chunk, size in _chunks(handle):
            pending.append((chunk, size, pool.submit(_parse, chunk, size)))
            if len(pending) > AHEAD:
                yield pending.popleft()
    except _TooLong:
        yield from pending
        raise
    yield from pending


class _TooLong(Exception):
    """A line over ``MAX_LINE`` bytes, ``newlines`` lines after the blocks
    handed over before it."""

    def __init__(self, newlines: int) -> None:
        super().__init__(newlines)
        self.newlines = newlines


def _chunks(handle: BinaryIO) -> Iterator[tuple[bytes, int]]:
    """Blocks of whole lines (the last one completed with a newline), each
    followed by ``PAD`` zero bytes, with its size without them. A block is
    copied once: the start of a line left from the previous read and this
    read's whole lines are joined with the padding."""
    rest, padding = b"", bytes(PAD)
    while block := handle.read(CHUNK_BYTES):
        cut = block.rfind(b"\n") + 1
        if not cut:  # a line longer than the read goes on
            rest += block
            if len(rest) > MAX_LINE:
                raise _TooLong(0)
            continue
        data = b"".join((rest, memoryview(block)[:cut], padding))
        size = len(rest) + cut
        rest = block[cut:]
        if len(rest) > MAX_LINE:
            raise _TooLong(data.count(b"\n", 0, size))
        yield data, size
    if rest.strip():
        yield rest + b"\n" + padding, len(rest) + 1

"""stdout/stderr of a harness, line by line, with a byte budget and a kept tail.

Every complete line goes to ``on_line(stream, line)`` (the runner's live tail)
and, on stdout, through ``parse_progress``. Lines longer than ``MAX_LINE`` bytes
are cut into pieces so that memory stays bounded whatever the harness prints.
Once ``limit`` bytes have been seen, nothing more is kept or passed on and
``exceeded`` turns true: the runner then stops the harness.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Final

from benchmarks.lib.sandbox.limits import parse_progress

MAX_LINE: Final = 64 * 1024
TAIL_BYTES: Final = 64 * 1024
TAIL_LINES: Final = 400

LineCallback = Callable[[str, str], None]
# stderr lines that say a fork failed (dash, bash, Python): how a harness at
# RLIMIT_NPROC shows it when no pids cgroup counts the failures.
FORK_FAILURES: Final = (
    "Cannot fork",
    "fork: Resource temporarily unavailable",
    "fork: retry",
    "BlockingIOError: [Errno 11]",
)


class _Stream:
    def __init__(self, name: str) -> None:
        self.name = name
        self.pending = bytearray()
        self.tail: deque[str] = deque()
        self.tail_bytes = 0

    def keep(self, line: str) -> None:
        self.tail.append(line)
        self.tail_bytes += len(line) + 1
        while len(self.tail) > TAIL_LINES or (
            self.tail_bytes > TAIL_BYTES and len(self.tail) > 1
        ):
            self.tail_bytes -= len(self.tail.popleft()) + 1

    def text(self) -> str:
        return "\n".join(self.tail)


class OutputCapture:
    def __init__(self, *, limit: int, on_line: LineCallback | None) -> None:
        self.limit = limit
        self.on_line = on_line
        self.seen = 0  # bytes the harness wrote, including those over the limit
        self.used = 0  # bytes kept and passed on
        self.progress: float | None = None
        self.fork_failure: str | None = None  # first stderr line saying a fork failed
        self.streams = {name: _Stream(name) for name in ("stdout", "stderr")}

    @property
    def exceeded(self) -> bool:
        return self.seen > self.limit

    def feed(self, name: str, data: bytes) -> None:
        self.seen += len(data)
        room = self.limit - self.used
        if room <= 0:
            return
        data = data[:room]
        self.used += len(data)
        stream = self.streams[name]
        stream.pending += data
        while True:
            cut = stream.pending.find(b"\n")
            if cut < 0:
                if len(stream.pending) >= MAX_LINE:
                    cut = MAX_LINE
                    line = bytes(stream.pending[:cut])
                    del stream.pending[:cut]
                    self._line(stream, line)
                    continue
                break
            line = bytes(stream.pending[:cut])
            del stream.pending[: cut + 1]
            self._line(stream, line)

    def flush(self) -> None:
        for stream in self.streams.values():
            if stream.pending:
                line, stream.pending = bytes(stream.pending), bytearray()
                self._line(stream, line)

    def _line(self, stream: _Stream, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").rstrip("\r")
        stream.keep(line)
        if stream.name == "stdout":
            value = parse_progress(line)
            if value is not None:
                self.progress = value
        elif self.fork_failure is None and any(m in line for m in FORK_FAILURES):
            self.fork_failure = line
        if self.on_line is not None:
            self.on_line(stream.name, line)

    def tail(self, name: str) -> str:
        return self.streams[name].text()

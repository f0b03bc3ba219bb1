"""What a worker tells the database while it holds a run: a sign of life, the
progress the harness prints (``::progress:: 0.42``) and the tail of its output,
written at most every ``RUNNER_PROGRESS_WRITE_SECONDS``. Every write names the
worker's attempt and is refused once the run was cancelled, re-queued or
finished: from then on ``stopped`` is true and the worker stops the harness."""

from __future__ import annotations

import time
from collections import deque
from typing import Final

from benchmarks import conf
from benchmarks.sandbox import parse_progress
from benchmarks.services.runs import run_report

MAX_LINE_CHARS: Final = 2000


class RunStopped(Exception):
    """Raised by ``RunReporter.beat`` outside the harness: stop preparing."""


def clean_text(text: str) -> str:
    """Text fit for any database column (PostgreSQL refuses NUL)."""
    return text.replace("\x00", "\ufffd")


class RunReporter:
    def __init__(self, run_id: int, attempt: int) -> None:
        self.run_id, self.attempt = run_id, attempt
        self.stopped = False
        self.progress: float | None = None
        self._lines: deque[str] = deque()
        self._chars = 0
        self._limit = conf.log_tail_chars()
        self._interval = conf.progress_write_seconds()
        self._last = time.monotonic()
        self._dirty = False

    # -- the sandbox's callbacks -------------------------------------------------

    def on_line(self, stream: str, line: str) -> None:
        if stream == "stdout":
            value = parse_progress(line)
            if value is not None:
                self.progress = value
        line = clean_text(line[:MAX_LINE_CHARS])
        self._keep(line if stream == "stdout" else f"[stderr] {line}")
        self.write()

    def should_cancel(self) -> bool:
        self.write()
        return self.stopped

    # -- elsewhere -----------------------------------------------------------------

    def beat(self) -> None:
        """A sign of life while preparing or parsing; raises ``RunStopped``."""
        self.write()
        if self.stopped:
            raise RunStopped

    def write(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if self.stopped or (not force and now - self._last < self._interval):
            return
        self._last = now
        tail = self.log_tail() if self._dirty else None
        self._dirty = False
        if not run_report(
            run_id=self.run_id,
            attempt=self.attempt,
            progress=self.progress,
            log_tail=tail,
        ):
            self.stopped = True

    def log_tail(self) -> str:
        return "\n".join(self._lines)

    def _keep(self, line: str) -> None:
        self._lines.append(line)
        self._chars += len(line) + 1
        while self._chars > self._limit and len(self._lines) > 1:
            self._chars -= len(self._lines.popleft()) + 1
        self._dirty = True

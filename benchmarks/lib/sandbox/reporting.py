"""What a runner tells the server while it holds a run, Django-free: the
progress the harness prints (``::progress:: 0.42``) and the tail of its output,
sent at most every ``interval`` seconds. The lab agent sends it over the runner
API (``reprogate_agent.execute``, subclassing ``HarnessReporter`` with its
``send``). Once a send is refused (the run was cancelled, re-queued or finished)
``stopped`` is true and the runner stops the harness."""

from __future__ import annotations

import json
import time
from collections import deque
from typing import Any, Final

from benchmarks.lib.sandbox.limits import parse_progress

MAX_LINE_CHARS: Final = 2000


class RunStopped(Exception):
    """Raised by ``HarnessReporter.beat`` outside the harness: stop preparing."""


def clean_text(text: str) -> str:
    """Text fit for any database column (PostgreSQL refuses NUL)."""
    return text.replace("\x00", "\ufffd")


def json_safe(value: Any) -> Any:
    """A JSON value without NUL characters (PostgreSQL's jsonb refuses them);
    what JSON cannot hold becomes its ``str``."""
    text = json.dumps(value, default=str).replace("\\u0000", "\\ufffd")
    return json.loads(text)


class HarnessReporter:
    def __init__(self, *, log_tail_chars: int, interval: float) -> None:
        self.stopped = False
        self.progress: float | None = None
        self._lines: deque[str] = deque()
        self._chars = 0
        self._limit = log_tail_chars
        self._interval = interval
        self._last = time.monotonic()
        self._dirty = False

    def send(self, progress: float | None, log_tail: str | None) -> bool | None:
        """Deliver a report: True to go on, False when the run must stop, None
        when it was not delivered (the tail is sent again with the next one)."""
        raise NotImplementedError

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
        delivered = self.send(self.progress, tail)
        if delivered is None:
            self._dirty = self._dirty or tail is not None
        elif not delivered:
            self.stopped = True

    def log_tail(self) -> str:
        return "\n".join(self._lines)

    def _keep(self, line: str) -> None:
        self._lines.append(line)
        self._chars += len(line) + 1
        while self._chars > self._limit and len(self._lines) > 1:
            self._chars -= len(self._lines.popleft()) + 1
        self._dirty = True

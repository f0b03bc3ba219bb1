"""A byte-count progress display on stderr: a redrawn bar on a terminal, a line
every 10 % otherwise (CI logs, pipes)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

BAR_WIDTH = 30
REDRAW_SECONDS = 0.1


def human_bytes(count: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    raise AssertionError("unreachable")


class Progress:
    """``update(n)`` after each chunk, ``finish()`` once at the end."""

    def __init__(self, total: int, *, label: str, stream: TextIO | None = None) -> None:
        self.total = total
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0
        self.started = time.monotonic()
        self._drawn_at = 0.0
        self._decile = -1
        self._tty = _is_tty(self.stream)

    @property
    def fraction(self) -> float:
        return min(self.done / self.total, 1.0) if self.total > 0 else 1.0

    def update(self, count: int) -> None:
        self.done += count
        if self._tty:
            now = time.monotonic()
            if now - self._drawn_at >= REDRAW_SECONDS:
                self._drawn_at = now
                self._draw()
        else:
            self._line_per_decile()

    def finish(self) -> None:
        if self._tty:
            self._draw()
            self.stream.write("\n")
        else:
            self._line_per_decile()
        self.stream.flush()

    def _rate(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-6)
        return f"{human_bytes(self.done / elapsed)}/s"

    def _draw(self) -> None:
        filled = int(self.fraction * BAR_WIDTH)
        bar = "#" * filled + " " * (BAR_WIDTH - filled)
        self.stream.write(
            f"\r{self.label} [{bar}] {self.fraction:4.0%} "
            f"{human_bytes(self.done)} / {human_bytes(self.total)} {self._rate()}  "
        )
        self.stream.flush()

    def _line_per_decile(self) -> None:
        decile = int(self.fraction * 10)
        if decile > self._decile:
            self._decile = decile
            self.stream.write(
                f"{self.label}: {decile * 10}% ({self.done} of {self.total} bytes)\n"
            )
            self.stream.flush()


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False

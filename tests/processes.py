"""A program a test starts, kills and starts again (the fault tests, the
production smoke test): its own process group, its output appended to ``log``
with a marker at each start."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Self

PROJECT_DIR = Path(__file__).resolve().parents[1]


def signal_group(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signum)


@dataclass
class Process:
    name: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    cwd: Path = PROJECT_DIR
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    def start(self) -> Self:
        self.starts += 1
        with self.log.open("ab") as out:
            out.write(f"\n==> start #{self.starts}\n".encode())
            out.flush()
            self.process = subprocess.Popen(
                self.argv,
                cwd=self.cwd,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def text(self) -> str:
        try:
            return self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def since_last_start(self) -> str:
        return self.text().rsplit(f"==> start #{self.starts}\n", 1)[-1]

    def tail(self, chars: int = 3000) -> str:
        return f"--- {self.name} ---\n{self.text()[-chars:]}"

    def kill(self) -> None:
        """SIGKILL to the program's process group (its children too), as the
        kernel's OOM killer or a crashed host would end it."""
        if self.process is None or self.process.poll() is not None:
            return
        try:
            signal_group(self.process.pid, signal.SIGKILL)
        finally:
            self.process.wait(timeout=10)

    def terminate(self) -> None:
        """SIGTERM to the program's process group."""
        if self.alive():
            signal_group(self.pid, signal.SIGTERM)

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds."""
        if not self.alive():
            return
        assert self.process is not None
        self.terminate()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()

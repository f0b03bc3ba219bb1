"""What a worker with database access tells the database while it holds a run:
a sign of life, progress and the log tail (``benchmarks.lib.sandbox.reporting``),
written at most every ``RUNNER_PROGRESS_WRITE_SECONDS``. Every write names the
worker's attempt and is refused once the run was cancelled, re-queued or
finished: from then on ``stopped`` is true and the worker stops the harness."""

from __future__ import annotations

from benchmarks import conf
from benchmarks.lib.sandbox.reporting import HarnessReporter
from benchmarks.services.runs import run_report


class RunReporter(HarnessReporter):
    def __init__(self, run_id: int, attempt: int) -> None:
        super().__init__(
            log_tail_chars=conf.log_tail_chars(),
            interval=conf.progress_write_seconds(),
        )
        self.run_id, self.attempt = run_id, attempt

    def send(self, progress: float | None, log_tail: str | None) -> bool:
        return run_report(
            run_id=self.run_id,
            attempt=self.attempt,
            progress=progress,
            log_tail=log_tail,
        )

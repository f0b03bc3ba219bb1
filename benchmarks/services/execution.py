"""Executing one run on a runner worker (``benchmarks.execute_run``):

1. claim the queued run for this attempt (``run_claim``): a redelivered or
   stale task stops here, so a run never executes twice;
2. preparing: fetch the bundle archive, check it, extract it safely into a fresh
   directory (``services.workspace``), capture the host's environment and diff it
   with the bundle's environment manifest, drop the page cache for cold-cache
   scenarios (recording whether the host allowed it);
3. running: the harness in the sandbox with ``REPROGATE_SCENARIO``,
   ``REPROGATE_OUTPUT_DIR`` and ``REPROGATE_RUN_ID``; progress lines and the log
   tail go to the run (``RunReporter``), a cancellation kills the harness's whole
   process group within a poll;
4. parsing: the outputs are copied out, stored and parsed, and the run ends in
   one transaction with its metrics and escrow deposit (``run_finish``).

Whatever happens, the working directory is deleted and the run ends in a final
state with a reason — unless it moved on to another attempt meanwhile, in which
case this worker leaves it alone. A worker that dies is the reaper's business."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from artifacts.conf import bundle_environment_max_bytes
from benchmarks import conf
from benchmarks.lib.environment import capture_environment
from benchmarks.lib.sandbox import (
    HarnessResult,
    SandboxLimits,
    drop_page_cache,
    run_harness,
)
from benchmarks.lib.sandbox.reporting import RunStopped, clean_text, json_safe
from benchmarks.lib.sandbox.workspace import declared_environment
from benchmarks.models import Run
from benchmarks.services.common import StaleAttempt
from benchmarks.services.pools import WorkerIdentity, host_ensure
from benchmarks.services.reporter import RunReporter
from benchmarks.services.results import (
    declared_outputs,
    outputs_parse,
    outputs_store,
    run_finish,
)
from benchmarks.services.run_environment import running_fields
from benchmarks.services.runs import run_claim, run_transition
from benchmarks.services.workspace import (
    Beat,
    Collection,
    Workspace,
    WorkspaceError,
    collect_outputs,
    extract_bundle,
    fetch_archive,
    make_executable,
)

logger = logging.getLogger(__name__)

POLL_SECONDS: Final = 0.5
S = Run.State


def run_execute(*, run_id: int, attempt: int | None, worker: WorkerIdentity) -> str:
    """Execute the run if this attempt may; returns what happened (for logs)."""
    run = Run.objects.select_related("campaign__pool").filter(pk=run_id).first()
    if run is None:
        return "missing"
    attempt = attempt or run.attempt
    host = host_ensure(pool=run.campaign.pool, worker=worker)
    if run_claim(run_id=run_id, attempt=attempt, host=host) is None:
        logger.info("run %s attempt %s is not queued: skipped", run_id, attempt)
        return "skipped"
    reporter = RunReporter(run_id, attempt)
    try:
        with tempfile.TemporaryDirectory(
            prefix="reprogate-run-", dir=conf.work_dir(), ignore_cleanup_errors=True
        ) as tmp:
            Path(tmp).chmod(0o711)  # a dropped uid may reach its two folders
            return _execute(
                _load(run_id), attempt, Workspace.create(Path(tmp)), reporter
            )
    except StaleAttempt:
        return "stale"
    except Exception as error:
        logger.exception("run %s attempt %s failed in the runner", run_id, attempt)
        message = f"The runner failed: {type(error).__name__}: {error}"
        return _give_up(run_id, attempt, "runner_error", message, reporter)


def _load(run_id: int) -> Run:
    return Run.objects.select_related(
        "campaign__bundle__archive_blob",
        "campaign__pool__lab_organisation",
        "campaign__rfp__buyer_organisation",
    ).get(pk=run_id)


def _execute(run: Run, attempt: int, space: Workspace, reporter: RunReporter) -> str:
    try:
        prepared = _prepare(run, space, reporter)
    except WorkspaceError as error:
        return run_end_unprepared(
            run, attempt, error.stop_reason, error.message, reporter.log_tail()
        )
    except RunStopped:
        return _stopped(run, attempt, [], {"log_tail": reporter.log_tail()})
    run = run_transition(run=run, to=S.RUNNING, attempt=attempt, fields=prepared)
    result = run_harness(
        bundle_dir=space.bundle_dir,
        entrypoint=_manifest(run)["harness"]["entrypoint"],
        output_dir=space.output_dir,
        env=_harness_env(run),
        limits=_limits(run),
        on_line=reporter.on_line,
        should_cancel=reporter.should_cancel,
        poll_seconds=POLL_SECONDS,
    )
    outcome = _outcome(result, reporter)
    if outcome.stopped and _stale(run, attempt):
        return "stale"
    collection = collect_outputs(space, reporter.write)
    return run_conclude(
        run=run,
        attempt=attempt,
        outcome=outcome,
        collection=collection,
        beat=reporter.write,
    )


@dataclass(frozen=True)
class Outcome:
    """How the harness ended, as the runner saw it (a local worker's sandbox,
    or a remote agent's report): the run's result fields, and ``stopped`` when
    it was cancelled or the worker was told to stop."""

    exit_code: int | None
    stop_reason: str
    isolation: dict[str, Any]
    duration_s: float | None
    output_truncated: bool
    log_tail: str
    progress: float
    message: str = ""
    stopped: bool = False

    @property
    def succeeded(self) -> bool:
        return self.stop_reason == "exited" and self.exit_code == 0

    def failure_message(self) -> str:
        if self.stop_reason == "exited":
            return f"The harness exited with status {self.exit_code}."
        return self.message or f"The harness was stopped ({self.stop_reason})."

    def fields(self) -> dict[str, Any]:
        return {
            "exit_code": self.exit_code,
            "stop_reason": self.stop_reason,
            "isolation": json_safe(self.isolation),
            "duration_s": self.duration_s,
            "output_truncated": self.output_truncated,
            "log_tail": clean_text(self.log_tail),
            "progress": min(1.0, max(0.0, self.progress)),
        }


def run_conclude(
    *,
    run: Run,
    attempt: int,
    outcome: Outcome,
    collection: Collection,
    beat: Beat,
) -> str:
    """Keep the outputs, then end the run as the harness's outcome says: the one
    way a run ends after its harness ran, on a local worker or a remote agent."""
    if outcome.stopped and _stale(run, attempt):
        return "stale"
    fields = outcome.fields()
    declared = declared_outputs(_manifest(run))
    stored = outputs_store(collection, declared, beat)
    if outcome.stopped:
        return _stopped(run, attempt, stored, fields)
    if outcome.stop_reason == "timeout":
        why = f"Stopped at the wall-clock limit of {run.wall_limit_s} s."
        return _end(run, attempt, S.TIMED_OUT, stored, "timeout", why, fields)
    if not outcome.succeeded:
        why, stop = outcome.failure_message(), outcome.stop_reason
        return _end(run, attempt, S.FAILED, stored, stop, why, fields)
    run = run_transition(run=run, to=S.PARSING, attempt=attempt, fields=fields)
    parsed = outputs_parse(collection, declared, beat)
    failed = bool(parsed.problems)
    run_finish(
        run=run,
        attempt=attempt,
        to=S.FAILED if failed else S.SUCCEEDED,
        stored=stored,
        parsed=parsed,
        reason="Outputs missing or unreadable: " + " ".join(parsed.problems[:5])
        if failed
        else "",
        fields={
            "stop_reason": "parse_failed" if failed else "exited",
            "progress": run.progress if failed else 1.0,
        },
    )
    return S.FAILED if failed else S.SUCCEEDED


def run_end_unprepared(
    run: Run, attempt: int, stop_reason: str, reason: str, log_tail: str
) -> str:
    """End a run whose preparation failed (the bundle, or the runner itself)."""
    fields = {"log_tail": clean_text(log_tail)}
    return _end(run, attempt, S.FAILED, [], stop_reason, reason, fields)


def run_end_cancelled_unprepared(run: Run, attempt: int, log_tail: str) -> str:
    """Record a cancellation seen while preparing ("stale" if it moved on)."""
    return _stopped(run, attempt, [], {"log_tail": clean_text(log_tail)})


def _manifest(run: Run) -> dict[str, Any]:
    return run.campaign.bundle.manifest or {}


def _prepare(run: Run, space: Workspace, reporter: RunReporter) -> dict[str, Any]:
    bundle = run.campaign.bundle
    archive = space.root / "archive"
    fetch_archive(bundle, archive, reporter.beat)
    extract_bundle(archive, bundle, space.bundle_dir, reporter.beat)
    archive.unlink()
    make_executable(space.bundle_dir, _manifest(run))
    reporter.beat()
    environment = capture_environment()
    reporter.beat()
    declared = declared_environment(
        _manifest(run).get("files") or [],
        space.bundle_dir,
        bundle_environment_max_bytes(),
    )
    cold = run.scenario.get("cache") == "cold"
    return running_fields(
        run, environment, declared, drop_page_cache() if cold else None
    )


def _harness_env(run: Run) -> dict[str, str]:
    return {
        "REPROGATE_SCENARIO": json.dumps(run.scenario, sort_keys=True),
        "REPROGATE_RUN_ID": str(run.public_id),
    }


def _limits(run: Run) -> SandboxLimits:
    cpus = os.cpu_count() or 1
    return SandboxLimits(
        wall_seconds=run.wall_limit_s,
        cpu_seconds=int(run.wall_limit_s * cpus),
        file_bytes=conf.output_limit_bytes(),
    )


def _outcome(result: HarnessResult, reporter: RunReporter) -> Outcome:
    reporter.write(force=True)
    return Outcome(
        exit_code=result.exit_code,
        stop_reason=result.stop_reason,
        isolation=result.isolation,
        duration_s=result.duration_s,
        output_truncated=result.output_truncated,
        log_tail=reporter.log_tail() or _tails(result),
        progress=reporter.progress if reporter.progress is not None else 0.0,
        message=result.message,
        stopped=result.stop_reason == "cancelled" or reporter.stopped,
    )


def _tails(result: HarnessResult) -> str:
    err = "\n".join(f"[stderr] {line}" for line in result.stderr_tail.splitlines())
    return "\n".join(part for part in (result.stdout_tail, err) if part)[
        -conf.log_tail_chars() :
    ]


def _end(
    run: Run,
    attempt: int,
    to: str,
    stored: list[Any],
    stop_reason: str,
    reason: str,
    fields: dict[str, Any],
) -> str:
    fields = {**fields, "stop_reason": stop_reason}
    run_finish(
        run=run, attempt=attempt, to=to, stored=stored, reason=reason, fields=fields
    )
    return to


def _stale(run: Run, attempt: int) -> bool:
    """The run moved on to another attempt or out of its active states."""
    return not Run.objects.filter(
        pk=run.pk, attempt=attempt, state__in=(S.PREPARING, S.RUNNING, S.PARSING)
    ).exists()


def _stopped(
    run: Run,
    attempt: int,
    stored: list[Any],
    fields: dict[str, Any],
) -> str:
    """The reporter was refused: cancelled (record it) or moved on (leave it)."""
    if _stale(run, attempt):
        return "stale"
    who = (
        Run.objects.filter(pk=run.pk)
        .values_list("cancel_requested_by__username", flat=True)
        .first()
    )
    why = (
        f"Cancelled by {who or 'a lab operator'}; the harness's processes were killed."
    )
    return _end(run, attempt, S.CANCELLED, stored, "cancelled", why, fields)


def _give_up(
    run_id: int, attempt: int, stop_reason: str, message: str, reporter: RunReporter
) -> str:
    """End the run as failed after an error of the runner itself."""
    try:
        run = Run.objects.get(pk=run_id)
        fields = {"stop_reason": stop_reason, "log_tail": reporter.log_tail()}
        run_transition(
            run=run, to=S.FAILED, attempt=attempt, reason=message, fields=fields
        )
    except Exception:  # stale, finished, or the database is gone: the reaper decides
        logger.exception(
            "run %s attempt %s could not be marked failed", run_id, attempt
        )
        return "error"
    return S.FAILED

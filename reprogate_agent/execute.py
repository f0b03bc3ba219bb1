"""One run on the lab host, the server owning every state change:

1. claim the attempt (409: the run is not queued with it, nothing to do);
2. preparing: stream the bundle into a fresh working directory, checking its
   size and SHA-256 before anything is extracted; extract it safely against the
   manifest's files (``benchmarks.lib.sandbox.workspace``); capture the host's
   environment; drop the page cache for a cold-cache scenario;
3. running: tell the server (it computes the drift), run the harness in the
   sandbox, reporting its progress and log tail every ``progress_write_seconds``;
   a refused report (cancelled, re-queued, finished) kills the harness; the
   telemetry sampler runs from just before the harness to just after it, and
   its blob is written in the workspace root, out of the harness's reach;
4. upload the outputs copied out of the output directory and the runner's
   artefacts (the telemetry blob) through their own route, then finish with the
   run's statement signed by the host key (``reprogate_agent.statement``): the
   server checks it, stores, parses and ends the run.

The pool's policy (devices, endpoints) comes with the claim and is resolved
here against the host's CDI specs (``benchmarks.lib.lab``); one that cannot be
applied fails the run with a named stop reason before anything is fetched. A
preparation that fails is reported with ``fail``. A 409 at any step means the
run moved on without this host: the agent stops and leaves it alone. The
working directory is always deleted."""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from artifacts.lib.archive import ArchiveLimits
from benchmarks.lib.environment import capture_environment
from benchmarks.lib.lab.artefacts import SCENARIO, TELEMETRY, artefact_digests
from benchmarks.lib.lab.devices import (
    PolicyRefused,
    block_device_names,
    policy_extras,
)
from benchmarks.lib.lab.scenarios import DRIVERS, run_scenario
from benchmarks.lib.lab.scenarios.base import (
    SCENARIO_FAILED,
    STEADY,
    ScenarioError,
    ScenarioOutcome,
    scenario_kind,
)
from benchmarks.lib.sandbox import (
    HarnessResult,
    SandboxLimits,
    drop_page_cache,
)
from benchmarks.lib.sandbox.reporting import (
    HarnessReporter,
    RunStopped,
    clean_text,
    json_safe,
)
from benchmarks.lib.sandbox.workspace import (
    Collection,
    Workspace,
    WorkspaceError,
    collect_outputs,
    copy_checked,
    declared_environment,
    extract_archive,
    make_executable,
)
from reprogate_agent.client import (
    ClientError,
    Conflict,
    RunnerClient,
    ServerRefused,
    TokenRefused,
    Unreachable,
)
from reprogate_agent.scenario import AgentContext, scenario_artefact
from reprogate_agent.statement import signed_statement, utc_now
from reprogate_agent.telemetry import RunTelemetry, upload_artefacts

logger = logging.getLogger(__name__)

POLL_SECONDS: Final = 0.5
ENVIRONMENT_MAX_BYTES: Final = 1024 * 1024
# The reader's limits for an archive the server accepted already (its own limits
# were checked at ingest; these only bound a hostile server's answer).
ARCHIVE_LIMITS: Final = ArchiveLimits(
    max_member_bytes=8 << 30,
    max_members=100_000,
    max_total_bytes=32 << 30,
    max_ratio=1000.0,
)


@dataclass(frozen=True)
class Terms:
    """What the server's ``hello`` said this host works with."""

    worker_name: str
    heartbeat_seconds: float = 10.0
    progress_write_seconds: float = 1.0
    log_tail_chars: int = 16_000
    output_limit_bytes: int = 1 << 30
    max_output_files: int = 1000
    host_key: Ed25519PrivateKey | None = None  # signs each run's statement

    @classmethod
    def from_hello(
        cls,
        worker_name: str,
        answer: Mapping[str, Any],
        host_key: Ed25519PrivateKey | None = None,
    ) -> Terms:
        def number(key: str, default: float, low: float) -> float:
            value = answer.get(key, default)
            if isinstance(value, bool) or not isinstance(value, int | float):
                return default
            return max(low, float(value))

        return cls(
            worker_name=worker_name,
            heartbeat_seconds=number("heartbeat_seconds", 10.0, 0.1),
            progress_write_seconds=number("progress_write_seconds", 1.0, 0.0),
            log_tail_chars=int(number("log_tail_chars", 16_000, 100)),
            output_limit_bytes=int(number("output_limit_bytes", 1 << 30, 1)),
            max_output_files=int(number("max_output_files", 1000, 1)),
            host_key=host_key,
        )


class Reporter(HarnessReporter):
    """Progress and the log tail over the runner API; a refused token stops the
    harness and is raised again once it is stopped (``beat`` raises it too)."""

    def __init__(
        self, client: RunnerClient, run_id: int, attempt: int, terms: Terms
    ) -> None:
        super().__init__(
            log_tail_chars=terms.log_tail_chars,
            interval=terms.progress_write_seconds,
        )
        self.client, self.run_id, self.attempt = client, run_id, attempt
        self.refused: TokenRefused | None = None

    def send(self, progress: float | None, log_tail: str | None) -> bool | None:
        try:
            return self.client.report(self.run_id, self.attempt, progress, log_tail)
        except TokenRefused as refused:  # raised again once the harness is stopped
            self.refused = refused
            return False
        except ClientError as error:  # the next report tries again
            logger.warning("run %s: report not delivered: %s", self.run_id, error)
            return None

    def beat(self) -> None:
        self.write()
        if self.refused is not None:
            raise self.refused
        super().beat()


def execute_run(
    client: RunnerClient, terms: Terms, work_dir: Path, run_id: int, attempt: int
) -> str:
    """Execute the run if this attempt may; what happened, for the log.
    ``TokenRefused`` and ``Unreachable`` are the caller's business."""
    try:
        run = client.claim(run_id, attempt, terms.worker_name)
    except Conflict as refused:
        logger.info("run %s attempt %s not claimed: %s", run_id, attempt, refused)
        return "skipped"
    except ServerRefused as refused:
        if isinstance(refused, TokenRefused):
            raise
        logger.warning("run %s attempt %s refused: %s", run_id, attempt, refused)
        return "refused"
    reporter = Reporter(client, run_id, attempt, terms)
    with tempfile.TemporaryDirectory(
        prefix="reprogate-run-", dir=work_dir, ignore_cleanup_errors=True
    ) as tmp:
        Path(tmp).chmod(0o711)  # a dropped uid may reach its two folders
        space = Workspace.create(Path(tmp))
        try:
            return _execute(client, terms, run_id, run, attempt, space, reporter)
        except Conflict:
            logger.info("run %s attempt %s moved on: stopped", run_id, attempt)
            return "stale"
        except (TokenRefused, Unreachable):
            raise
        except Exception as error:
            logger.exception("run %s attempt %s failed in the agent", run_id, attempt)
            message = f"The runner failed: {type(error).__name__}: {error}"
            return _fail(client, run_id, attempt, "runner_error", message, reporter)


def _execute(
    client: RunnerClient,
    terms: Terms,
    run_id: int,
    run: dict[str, Any],
    attempt: int,
    space: Workspace,
    reporter: Reporter,
) -> str:
    """``run_id`` is the message's: the claim's answer describes it."""
    try:
        extras, _ = policy_extras(
            run.get("policy") or {}, root=os.geteuid() == 0, environ=os.environ
        )
    except PolicyRefused as unusable:
        message = "The pool's policy cannot be applied on this host: " + "; ".join(
            unusable.problems
        )
        return _fail(client, run_id, attempt, unusable.stop_reason, message, reporter)
    kind = scenario_kind(run.get("scenario"))
    if kind not in DRIVERS:
        message = (
            f"This host's agent has no driver for scenario kind {kind[:40]!r} "
            f"(it knows {', '.join(sorted(DRIVERS))})."
        )
        return _fail(client, run_id, attempt, SCENARIO_FAILED, message, reporter)
    try:
        prepared = _prepare(client, run, attempt, space, reporter)
    except WorkspaceError as error:
        return _fail(
            client, run_id, attempt, error.stop_reason, error.message, reporter
        )
    except RunStopped:
        why = "Cancelled while the host was preparing the run."
        return _fail(client, run_id, attempt, "cancelled", why, reporter)
    answer = client.running(run_id, {"attempt": attempt, **prepared})
    watched = [*(run.get("telemetry_devices") or []), *block_device_names(extras)]
    telemetry = RunTelemetry(
        {**run, "telemetry_devices": watched}, space.root, lambda: reporter.progress
    )
    context = AgentContext(
        run=run,
        run_id=run_id,
        space=space,
        extras=extras,
        limits=_limits(run),
        reporter=reporter,
        telemetry=telemetry,
        poll_seconds=POLL_SECONDS,
    )
    started = utc_now()
    telemetry.start()
    try:
        outcome = _drive(context)
    finally:
        blob = telemetry.stop()
    ended = utc_now()
    reporter.write(force=True)
    if reporter.refused is not None:
        raise reporter.refused
    if outcome is None:  # the driver stopped before the harness ran
        why = context.failure or "Cancelled before the harness started."
        reason = "cancelled" if context.failure is None else SCENARIO_FAILED
        return _fail(client, run_id, attempt, reason, why, reporter)
    collection = collect_outputs(
        space,
        reporter.write,
        max_files=terms.max_output_files,
        limit_bytes=terms.output_limit_bytes,
    )
    refused = _upload(client, run_id, attempt, collection, reporter)
    artefacts = {TELEMETRY: blob}
    if scenario_kind(run.get("scenario")) != STEADY:
        artefacts[SCENARIO] = scenario_artefact(run, outcome, space.root)
    artefact_warnings = upload_artefacts(
        client, run_id, attempt, artefacts, reporter.write
    )
    result = _result(outcome, reporter, terms)
    body = {
        "attempt": attempt,
        "result": result,
        "warnings": [*collection.warnings, *refused.values(), *artefact_warnings],
    }
    if terms.host_key is not None:
        uploaded = {f.path: f.sha256 for f in collection.files if f.path not in refused}
        body["statement"] = signed_statement(
            terms.host_key,
            run=run,
            run_id=run_id,
            attempt=attempt,
            worker_name=terms.worker_name,
            environment=prepared["environment"],
            running_answer=answer,
            result=result,
            outputs=uploaded,
            artefacts=artefact_digests(artefacts) if not artefact_warnings else {},
            started=started,
            ended=ended,
            actions=_actions(run, outcome),
        )
    answer = client.finish(run_id, body)
    return str(answer.get("state") or "finished")


def _prepare(
    client: RunnerClient,
    run: dict[str, Any],
    attempt: int,
    space: Workspace,
    reporter: Reporter,
) -> dict[str, Any]:
    bundle = run.get("bundle") or {}
    archive = space.root / "archive"
    sha256, size = str(bundle.get("sha256") or ""), int(bundle.get("size") or 0)

    def consume(headers: dict[str, str], chunks: Iterator[bytes]) -> None:
        check_headers(headers, sha256, size)
        with archive.open("wb") as sink:
            copy_checked(
                chunks, sink, sha256, size, reporter.beat, where="The downloaded bundle"
            )

    client.download(str(bundle.get("url") or ""), consume)
    files = [f for f in run.get("files") or [] if isinstance(f, dict)]
    extract_archive(archive, files, space.bundle_dir, ARCHIVE_LIMITS, reporter.beat)
    archive.unlink()
    make_executable(
        space.bundle_dir,
        {"files": files, "harness": {"entrypoint": run.get("entrypoint") or ""}},
    )
    reporter.beat()
    environment = json_safe(capture_environment())
    reporter.beat()
    cache_dropped = None
    if (run.get("cold_cache") is True) or (run.get("scenario") or {}).get(
        "cache"
    ) == "cold":
        cache_dropped = drop_page_cache()
    return {
        "environment": environment,
        "declared_environment": json_safe(
            declared_environment(files, space.bundle_dir, ENVIRONMENT_MAX_BYTES)
        ),
        "cache_dropped": cache_dropped,
    }


def check_headers(headers: Mapping[str, str], sha256: str, size: int) -> None:
    """Refuse an answer that says it is not the bundle the claim named."""
    said = headers.get("x-bundle-sha256", "").strip().lower()
    if said and said != sha256.lower():
        raise WorkspaceError(
            "bundle_corrupt",
            f"The server sent a bundle with SHA-256 {said[:64]}, not {sha256}.",
        )
    length = headers.get("content-length", "").strip()
    if length and length != str(size):
        raise WorkspaceError(
            "bundle_corrupt",
            f"The server sent {length[:20]} bytes for a bundle of {size} bytes.",
        )


def _limits(run: dict[str, Any]) -> SandboxLimits:
    wall = float(run.get("wall_limit_s") or 3600)
    return SandboxLimits(
        wall_seconds=wall,
        cpu_seconds=int(run.get("cpu_seconds") or wall),
        file_bytes=int(run.get("file_bytes") or (8 << 30)),
    )


def _upload(
    client: RunnerClient,
    run_id: int,
    attempt: int,
    collection: Collection,
    reporter: Reporter,
) -> dict[str, str]:
    """Each kept output to the server; the refused ones (path → warning) are
    left out of the statement (a 409 stops the run: it moved on)."""
    warnings: dict[str, str] = {}
    for item in collection.files:
        reporter.write()  # a sign of life between files
        try:
            client.upload(run_id, attempt, item.path, item.local)
        except (Conflict, TokenRefused):
            raise
        except ServerRefused as refused:
            warnings[item.path] = f"{item.path}: refused by the server ({refused})."
    return warnings


def _drive(context: AgentContext) -> ScenarioOutcome | None:
    """The scenario's driver; a ``ScenarioError`` after the main phase ran is
    the outcome's failure, one before it (or a cancellation) leaves None and
    the reason on the context."""
    try:
        return run_scenario(context)
    except (ScenarioError, RunStopped) as error:
        failure = str(error) if isinstance(error, ScenarioError) else None
        if context.main_result is None:
            context.failure = failure
            return None
        return ScenarioOutcome(
            result=context.main_result,
            record={"error": failure or "cancelled"},
            failure=failure,
        )


def _actions(run: Mapping[str, Any], outcome: ScenarioOutcome) -> list[Any]:
    """The statement's scenario actions: what the driver recorded doing (the
    steady kind: the scenario's own ``actions``, as before kinds)."""
    if scenario_kind(run.get("scenario")) == STEADY:
        actions = (run.get("scenario") or {}).get("actions")
    else:
        actions = outcome.record.get("actions")
    return json_safe(actions) if isinstance(actions, list) else []


def _result(
    outcome: ScenarioOutcome, reporter: Reporter, terms: Terms
) -> dict[str, Any]:
    result = outcome.result
    stop_reason, message = result.stop_reason, result.message
    if reporter.stopped:
        stop_reason = "cancelled"
    elif outcome.failure and result.succeeded:
        stop_reason, message = SCENARIO_FAILED, outcome.failure
    return {
        "exit_code": result.exit_code,
        "stop_reason": stop_reason,
        "isolation": json_safe(result.isolation),
        "duration_s": result.duration_s,
        "output_truncated": result.output_truncated,
        "log_tail": reporter.log_tail() or clean_text(_tails(result, terms)),
        "progress": reporter.progress if reporter.progress is not None else 0.0,
        "message": message,
    }


def _tails(result: HarnessResult, terms: Terms) -> str:
    err = "\n".join(f"[stderr] {line}" for line in result.stderr_tail.splitlines())
    text = "\n".join(part for part in (result.stdout_tail, err) if part)
    return text[-terms.log_tail_chars :]


def _fail(
    client: RunnerClient,
    run_id: int,
    attempt: int,
    stop_reason: str,
    message: str,
    reporter: Reporter,
) -> str:
    body = {
        "attempt": attempt,
        "stop_reason": stop_reason,
        "message": message,
        "log_tail": reporter.log_tail(),
    }
    try:
        answer = client.fail(run_id, body)
    except Conflict:
        return "stale"
    return str(answer.get("state") or "failed")

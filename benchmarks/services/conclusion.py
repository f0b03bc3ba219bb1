"""How a run ends once a lab host reported on it, the server's side of the one
run path (the lab agent, ``reprogate_agent``, executes every run and talks to the
runner API, ``services.remote``; what a run records as its harness starts is
``services.run_environment``):

- ``run_conclude``: the outputs kept, then the run ended as the harness's
  ``Outcome`` says (stored, parsed, metrics and escrow deposit in one
  transaction, ``results.run_finish``), or left alone when it moved on to another
  attempt meanwhile;
- ``run_end_unprepared`` / ``run_end_cancelled_unprepared``: a run whose host
  could not prepare it, or saw it cancelled while preparing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from benchmarks.lib.sandbox.reporting import clean_text, json_safe
from benchmarks.models import Run
from benchmarks.services.results import (
    declared_outputs,
    outputs_parse,
    outputs_store,
    run_finish,
)
from benchmarks.services.runs import run_transition
from benchmarks.services.workspace import Beat, Collection

S = Run.State


@dataclass(frozen=True)
class Outcome:
    """How the harness ended, as the host's agent reported it: the run's result
    fields, and ``stopped`` when it was cancelled or the agent was told to stop."""

    exit_code: int | None
    stop_reason: str
    isolation: dict[str, Any]
    duration_s: float | None
    output_truncated: bool
    log_tail: str
    progress: float
    message: str = ""
    stopped: bool = False
    checks: list[Any] = field(default_factory=list)  # the anti-gaming checks

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
            "checks": self.checks,
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
    way a run ends after its harness ran."""
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

"""The run state machine: every (from, to) pair of RUN_TRANSITIONS through
``run_transition``, with its audit row; and nothing else sets ``.state``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from accounts.exceptions import InvalidTransition
from accounts.models import AuditEvent
from benchmarks.models import RUN_TRANSITIONS, LabPool, Run
from benchmarks.services.common import StaleAttempt
from benchmarks.services.runs import run_transition
from tests.benchmarks.runner.support import runs_of, start
from tests.transition_moves import Move

pytestmark = pytest.mark.django_db
PAIRS = [(a, b) for a in Run.State.values for b in Run.State.values]


@pytest.fixture
def run(bundle: Any, pool: LabPool, labops: Any) -> Run:
    return runs_of(start(bundle, pool, labops))[0]


@pytest.mark.parametrize(("current", "to"), PAIRS)
def test_run_transition_follows_the_table(
    run: Run, current: str, to: str, transition_moves: list[Move]
) -> None:
    Run.objects.filter(pk=run.pk).update(state=current)
    allowed = to in RUN_TRANSITIONS[current]
    rows = AuditEvent.objects.count()

    if allowed:
        moved = run_transition(run=run, to=to, reason="test")
        assert moved.state == to
        assert AuditEvent.objects.count() == rows + 1  # one call, one row
        event = AuditEvent.objects.get(action="run.transitioned", target_id=str(run.pk))
        assert event.data["from"] == current
        assert event.data["to"] == to
        assert event.organisation == run.campaign.rfp.buyer_organisation
    else:
        with pytest.raises(InvalidTransition):
            run_transition(run=run, to=to)
        assert Run.objects.get(pk=run.pk).state == current
        assert AuditEvent.objects.count() == rows
    assert transition_moves == (
        [Move("benchmarks.run", current, to)] if allowed else []
    )


def test_a_verbs_run_move_is_its_one_row_with_its_details(run: Run) -> None:
    rows = AuditEvent.objects.count()

    run_transition(
        run=run, to=Run.State.CANCELLED, action="run.verbed", data={"detail": 42}
    )

    assert AuditEvent.objects.count() == rows + 1
    event = AuditEvent.objects.get(action="run.verbed")
    assert (event.data["from"], event.data["to"]) == ("queued", "cancelled")
    assert event.data["detail"] == 42


def test_final_states_stamp_finished_at(run: Run) -> None:
    moved = run_transition(run=run, to=Run.State.CANCELLED)

    assert moved.finished_at is not None


def test_a_stale_attempt_changes_nothing(run: Run) -> None:
    Run.objects.filter(pk=run.pk).update(attempt=2)

    with pytest.raises(StaleAttempt):
        run_transition(run=run, to=Run.State.PREPARING, attempt=1)

    assert Run.objects.get(pk=run.pk).state == Run.State.QUEUED
    assert not AuditEvent.objects.filter(action="run.transitioned").exists()


def test_only_services_assign_a_run_state() -> None:
    root = Path(__file__).resolve().parents[3] / "benchmarks"
    offenders = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if re.search(r"\.state\s*=[^=]", path.read_text())
        and "services" not in path.parts
    ]

    assert offenders == []

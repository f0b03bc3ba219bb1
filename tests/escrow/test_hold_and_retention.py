"""Legal hold on/off and retention (extend only): each is one audited change
and one log entry naming the deposit."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from accounts.exceptions import ApplicationError, StateConflict
from accounts.models import AuditEvent
from artifacts.lib.evidence.layout import format_time
from artifacts.models import Deposit, EscrowEvent
from artifacts.models.log import LogEntry
from artifacts.services.escrow import deposit_legal_hold_set, deposit_retention_extend

pytestmark = pytest.mark.django_db


def _leaf(event: EscrowEvent) -> dict[str, Any]:
    return json.loads(bytes(event.leaf))


def test_legal_hold_placed_is_logged_and_audited(
    deposit: Deposit, auditor: Any
) -> None:
    deposit = deposit_legal_hold_set(
        deposit=deposit, hold=True, actor=auditor, reason="dispute 2026-14"
    )

    event = EscrowEvent.objects.get()
    assert deposit.legal_hold is True
    assert event.action == "legal_hold.set"
    assert bytes(LogEntry.objects.get(index=event.log_index).leaf) == bytes(event.leaf)
    assert _leaf(event)["deposits"] == [
        {"deposit": str(deposit.public_id), "leaf_index": deposit.log_index}
    ]
    assert _leaf(event)["actor"] == "auditor"
    assert _leaf(event)["reason"] == "dispute 2026-14"
    audit = AuditEvent.objects.get(action="deposit.legal_hold.set")
    assert audit.actor == auditor
    assert audit.organisation == deposit.rfp.buyer_organisation
    assert audit.data["event_index"] == event.log_index


def test_legal_hold_released_after_placed(deposit: Deposit, buyer: Any) -> None:
    deposit_legal_hold_set(deposit=deposit, hold=True, actor=buyer, reason="dispute")

    deposit = deposit_legal_hold_set(
        deposit=deposit, hold=False, actor=buyer, reason="settled"
    )

    assert deposit.legal_hold is False
    assert list(
        EscrowEvent.objects.order_by("log_index").values_list("action", flat=True)
    ) == [
        "legal_hold.set",
        "legal_hold.released",
    ]


def test_legal_hold_unchanged_is_a_conflict(deposit: Deposit, buyer: Any) -> None:
    with pytest.raises(StateConflict) as raised:
        deposit_legal_hold_set(deposit=deposit, hold=False, actor=buyer, reason="x")

    assert raised.value.code == "hold_unchanged"
    assert not EscrowEvent.objects.exists()


@pytest.mark.parametrize("reason", ["", "   "])
def test_legal_hold_needs_a_reason(deposit: Deposit, buyer: Any, reason: str) -> None:
    with pytest.raises(ApplicationError) as raised:
        deposit_legal_hold_set(deposit=deposit, hold=True, actor=buyer, reason=reason)

    assert raised.value.code == "reason_required"
    deposit.refresh_from_db()
    assert deposit.legal_hold is False


def test_retention_extended_is_logged_and_audited(deposit: Deposit, buyer: Any) -> None:
    before = deposit.retain_until
    later = before + timedelta(days=365)

    deposit = deposit_retention_extend(
        deposit=deposit, retain_until=later, actor=buyer, reason="contract extended"
    )

    deposit.refresh_from_db()
    assert deposit.retain_until == later
    leaf = _leaf(EscrowEvent.objects.get(action="retention.extended"))
    assert leaf["retain_until"] == format_time(later)
    assert leaf["previous_retain_until"] == format_time(before)
    assert AuditEvent.objects.filter(action="deposit.retention.extended").count() == 1


@pytest.mark.parametrize("days", [0, -1, -3650])
def test_retention_is_never_shortened(deposit: Deposit, buyer: Any, days: int) -> None:
    before = deposit.retain_until

    with pytest.raises(ApplicationError) as raised:
        deposit_retention_extend(
            deposit=deposit,
            retain_until=before + timedelta(days=days),
            actor=buyer,
            reason="shorter",
        )

    assert raised.value.code == "retention_not_extended"
    deposit.refresh_from_db()
    assert deposit.retain_until == before
    assert not EscrowEvent.objects.exists()


def test_hold_and_retention_leave_the_leaf_untouched(
    deposit: Deposit, buyer: Any
) -> None:
    leaf = bytes(deposit.leaf)

    deposit_legal_hold_set(deposit=deposit, hold=True, actor=buyer, reason="audit")
    deposit_retention_extend(
        deposit=deposit,
        retain_until=deposit.retain_until + timedelta(days=1),
        actor=buyer,
        reason="audit",
    )

    deposit.refresh_from_db()
    assert bytes(deposit.leaf) == leaf
    assert bytes(LogEntry.objects.get(index=deposit.log_index).leaf) == leaf

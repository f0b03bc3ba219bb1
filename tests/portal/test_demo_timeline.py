"""The seeded RFP-DEMO-2 reads as a tender in order: published, bids and bundles
before the deadline, closed after it, the opening requested and then confirmed,
every recorded time and audit row after the one before and none in the future;
its page shows the deadline as passed, never "in N minutes" beside Opened."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from accounts.models import AuditEvent
from portal.demo import LAB_RFP, demo_seed
from procurement.models import Rfp

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@pytest.fixture
def lab_rfp(settings: Any, tmp_path: Path) -> Rfp:
    settings.VAR_DIR = tmp_path
    demo_seed()  # the real clock, as `manage.py seed_demo` runs
    return Rfp.objects.select_related("opening").get(reference=LAB_RFP)


def _trail(rfp: Rfp) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(rfp_reference=rfp.reference).order_by("id"))


def _first(trail: list[AuditEvent], action: str, **data: str) -> AuditEvent:
    return next(
        e
        for e in trail
        if e.action == action and all(e.data.get(k) == v for k, v in data.items())
    )


def test_the_lab_trail_is_in_chronological_order(lab_rfp: Rfp) -> None:
    trail = _trail(lab_rfp)

    times = [e.occurred_at for e in trail]
    assert times == sorted(times)
    rfp_moves = ("rfp.transitioned", "rfp.opening_confirmed")  # each one row
    moves = [e.data["to"] for e in trail if e.action in rfp_moves]
    assert moves == ["published", "closed", "opened"]


def test_bids_precede_the_deadline_and_the_opening_follows_the_close(
    lab_rfp: Rfp,
) -> None:
    trail = _trail(lab_rfp)
    closed = _first(trail, "rfp.transitioned", to="closed")
    requested = _first(trail, "rfp.opening_requested")
    confirmed = _first(trail, "rfp.opening_confirmed")
    bids = [e for e in trail if e.action == "bid.submitted"]

    assert len(bids) == 2
    assert all(e.occurred_at < lab_rfp.submission_deadline for e in bids)
    assert max(e.id for e in bids) < closed.id < requested.id < confirmed.id
    assert lab_rfp.submission_deadline <= closed.occurred_at


def test_the_recorded_times_agree_with_the_trail_and_are_past(lab_rfp: Rfp) -> None:
    trail = _trail(lab_rfp)
    opening = lab_rfp.opening
    closed = _first(trail, "rfp.transitioned", to="closed")
    requested = _first(trail, "rfp.opening_requested")
    now = timezone.now()

    assert lab_rfp.submission_deadline <= lab_rfp.closed_at <= opening.requested_at
    assert opening.requested_at <= opening.confirmed_at <= lab_rfp.opened_at
    assert lab_rfp.closed_at <= closed.occurred_at
    assert closed.occurred_at <= opening.requested_at <= requested.occurred_at
    assert lab_rfp.opened_at <= now


def test_the_opened_lab_rfp_shows_its_deadline_as_passed(
    lab_rfp: Rfp, client_for: Any
) -> None:
    buyer = lab_rfp.opening.requested_by

    html = client_for(buyer).get(f"/rfps/{lab_rfp.public_id}/").content.decode()

    assert 'data-testid="rfp-status">Opened' in html
    time_left = html.split('data-testid="rfp-time-left">')[1].split("<")[0]
    assert time_left == "(passed)"
    assert "(in " not in html.split('data-testid="rfp-submission-deadline"')[1][:300]


def test_the_lab_rfps_bids_name_bundles_that_meet_its_condition(lab_rfp: Rfp) -> None:
    mandatory = set(
        lab_rfp.artifacts.filter(mandatory=True).values_list("kind", flat=True)
    )

    assert lab_rfp.bid_requires_bundle
    assert {"container_image", "runbook"} <= mandatory
    assert all(b.bundle_public_id for b in lab_rfp.bids.all())
    assert lab_rfp.bids.count() == 2

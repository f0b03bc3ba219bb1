"""Which release steps are open is read from ``RELEASE_TRANSITIONS`` (with the
notice period), and who may take them from the ``can_*`` predicates of
``artifacts.permissions``: the page offers exactly those steps."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client

from accounts.selectors import clock as installation_clock
from artifacts.models import Deposit, Release
from artifacts.models.release import RELEASE_TRANSITIONS
from artifacts.permissions import (
    RELEASE_STEP_TARGETS,
    release_step_open,
    release_steps_for,
)
from tests.escrow.release_support import after_notice, award_to, request_breach

STATUSES = list(Release.Status.values)


def _release(status: str, notice_left: timedelta) -> Release:
    now = installation_clock.now()
    return Release(status=status, notice_ends_at=now + notice_left)


@pytest.mark.parametrize("status", STATUSES)
@pytest.mark.parametrize("step", list(RELEASE_STEP_TARGETS))
def test_a_step_is_open_where_the_table_allows_its_move(status: str, step: str) -> None:
    during, after = _release(status, timedelta(days=1)), _release(status, -timedelta(1))
    now = installation_clock.now()

    allowed = RELEASE_STEP_TARGETS[step] in RELEASE_TRANSITIONS[status]

    opened = (release_step_open(during, step, now), release_step_open(after, step, now))
    timing = {"object": (True, False), "approve": (False, True)}.get(step, (True, True))
    assert opened == (allowed and timing[0], allowed and timing[1])


@pytest.fixture
def release(deposit: Deposit, vendor_a_org: Any, buyer: Any, clock: Any) -> Release:
    award_to(deposit.rfp, vendor_a_org, buyer)
    return request_breach(deposit.rfp, buyer)


@pytest.mark.django_db
def test_each_persona_is_offered_the_steps_its_role_and_the_status_allow(
    release: Release, buyer: Any, auditor: Any, vendor_a: Any, clock: Any
) -> None:
    during = {
        name: {
            s for s, ok in release_steps_for(user, release, clock.now()).items() if ok
        }
        for name, user in [("buyer", buyer), ("auditor", auditor), ("vendor", vendor_a)]
    }
    after_notice(clock)

    after = release_steps_for(auditor, release, clock.now())

    assert during == {
        "buyer": {"withdraw"},
        "auditor": {"reject"},
        "vendor": {"object"},
    }
    assert {s for s, ok in after.items() if ok} == {"approve", "reject"}


@pytest.mark.django_db
def test_the_page_offers_only_the_open_steps_once_approved(
    release: Release, buyer: Any, clock: Any
) -> None:
    Release.objects.filter(pk=release.pk).update(status=Release.Status.APPROVED)
    client = Client()
    client.force_login(buyer)

    page = client.get(
        f"/artifacts/escrow/releases/{release.public_id}/"
    ).content.decode()

    assert 'data-testid="execute-form"' in page
    assert 'data-testid="withdraw-form"' in page
    assert 'data-testid="approve-form"' not in page
    assert "Release needs one approval" not in page

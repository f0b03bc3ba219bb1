"""Fixity of escrow releases: a release whose rows were edited or deleted with
raw SQL no longer matches the steps the log holds, and ``escrow_verify``
says so; an untouched release is intact."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from artifacts.models import Deposit, FixityFinding, FixityRun, Release
from artifacts.services.release_execution import release_execute
from tests.escrow.release_support import (
    after_notice,
    approve_both,
    award_to,
    request_breach,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def released(
    deposit: Deposit, vendor_a_org: Any, buyer: Any, auditor: Any, clock: Any
) -> Release:
    award_to(deposit.rfp, vendor_a_org, buyer)
    release = request_breach(deposit.rfp, buyer)
    after_notice(clock)
    approve_both(release, buyer, auditor)
    return release_execute(release=release, actor=buyer)


def _kinds() -> set[str]:
    raised: CommandError | None = None
    try:
        call_command("escrow_verify", stdout=io.StringIO())
    except CommandError as error:
        raised = error
    run = FixityRun.objects.order_by("-started_at", "-id").first()
    assert run is not None
    assert (raised is None) == run.intact
    assert raised is None or raised.returncode == 1
    return set(run.findings.values_list("kind", flat=True))


def _sql(statement: str, *params: Any) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


def test_untouched_release_is_intact(released: Release) -> None:
    assert _kinds() == set()


def test_certificate_rewritten_with_sql_is_detected(released: Release) -> None:
    forged = bytes(released.certificate).replace(b'"breach"', b'"insolvency"')
    _sql(
        "UPDATE artifacts_release SET certificate = %s WHERE id = %s",
        forged,
        released.pk,
    )

    assert _kinds() == {"row.altered"}
    assert "certificate" in FixityFinding.objects.get().detail


def test_status_forced_to_released_with_sql_is_detected(
    deposit: Deposit, vendor_a_org: Any, buyer: Any
) -> None:
    award_to(deposit.rfp, vendor_a_org, buyer)
    release = request_breach(deposit.rfp, buyer)
    _sql(
        "UPDATE artifacts_release SET status = 'released', executed_at = "
        "requested_at, certificate_sha256 = %s WHERE id = %s",
        "0" * 64,
        release.pk,
    )

    assert _kinds() == {"row.altered"}
    finding = FixityFinding.objects.get()
    assert finding.buyer_organisation == deposit.rfp.buyer_organisation


def test_release_step_deleted_with_sql_is_detected(released: Release) -> None:
    step = released.steps.get(action="approved", role="auditor")
    _sql("DELETE FROM artifacts_releasestep WHERE id = %s", step.pk)

    assert _kinds() == {"row.altered", "row.missing"}

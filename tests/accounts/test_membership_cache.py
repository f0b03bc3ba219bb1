"""A request reads the user's memberships once, however many permission checks
ask for them; nothing is cached outside a request or past its end."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import Organisation, Role
from accounts.selectors.users import (
    memberships_cache_end,
    memberships_cache_start,
    organisation_ids_for,
    user_roles,
)
from accounts.services.users import membership_grant
from tests.accounts.factories import MembershipFactory, OrganisationFactory

pytestmark = pytest.mark.django_db


def _membership_reads(captured: CaptureQueriesContext) -> list[str]:
    return [
        q["sql"]
        for q in captured.captured_queries
        if q["sql"].startswith('SELECT "accounts_membership"."role"')
    ]


def test_the_dashboard_reads_the_users_memberships_once(
    client_for: Any, buyer: Any
) -> None:
    client = client_for(buyer)

    with CaptureQueriesContext(connection) as captured:
        assert client.get("/dashboard/").status_code == 200

    assert len(_membership_reads(captured)) == 1


def test_a_membership_granted_between_requests_counts_at_once(
    client_for: Any, buyer: Any
) -> None:
    client = client_for(buyer)
    before = client.get("/dashboard/").content.decode()
    lab = OrganisationFactory.create(slug="new-lab", kind=Organisation.Kind.LAB)
    MembershipFactory.create(user=buyer, organisation=lab, role=Role.LABOPS)

    after = client.get("/dashboard/").content.decode()

    assert 'data-testid="panel-labops"' not in before
    assert 'data-testid="panel-labops"' in after


def test_outside_a_request_every_call_reads_the_database(buyer: Any) -> None:
    before = user_roles(buyer)
    lab = OrganisationFactory.create(slug="later-lab", kind=Organisation.Kind.LAB)
    MembershipFactory.create(user=buyer, organisation=lab, role=Role.LABOPS)

    assert Role.LABOPS not in before
    assert Role.LABOPS in user_roles(buyer)
    assert lab.pk in organisation_ids_for(buyer, Role.LABOPS)


def test_a_membership_granted_within_a_request_counts_at_once(buyer: Any) -> None:
    lab = OrganisationFactory.create(slug="granted-lab", kind=Organisation.Kind.LAB)
    memberships_cache_start()
    try:
        assert Role.LABOPS not in user_roles(buyer)  # kept for this request
        membership_grant(user=buyer, organisation=lab, role=Role.LABOPS, actor=None)

        assert Role.LABOPS in user_roles(buyer)
        assert lab.pk in organisation_ids_for(buyer, Role.LABOPS)
    finally:
        memberships_cache_end()

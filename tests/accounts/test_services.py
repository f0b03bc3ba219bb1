from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction

from accounts.exceptions import ApplicationError
from accounts.models import AuditEvent, Membership, Organisation, Role
from accounts.services.users import (
    api_token_issue,
    api_token_revoke,
    membership_grant,
    organisation_create,
    organisation_engage,
    token_digest,
)

pytestmark = pytest.mark.django_db


def test_organisation_create_writes_exactly_one_event() -> None:
    org = organisation_create(
        slug="acme-flash", name="Acme", kind=Organisation.Kind.VENDOR, actor=None
    )

    events = AuditEvent.objects.filter(action="organisation.created")
    assert [(e.target_id, e.organisation_id) for e in events] == [(str(org.pk), org.pk)]


def test_organisation_create_rejects_unknown_kind_and_writes_nothing() -> None:
    with pytest.raises(ValidationError):
        organisation_create(slug="x-corp", name="X", kind="pirate", actor=None)

    assert not Organisation.objects.exists()
    assert not AuditEvent.objects.exists()


def test_failed_transaction_leaves_neither_change_nor_event() -> None:
    class Boom(Exception):
        pass

    def create_then_fail() -> None:
        with transaction.atomic():
            organisation_create(
                slug="acme-flash",
                name="Acme",
                kind=Organisation.Kind.VENDOR,
                actor=None,
            )
            raise Boom

    with pytest.raises(Boom):
        create_then_fail()

    assert not Organisation.objects.exists()
    assert not AuditEvent.objects.exists()


@pytest.mark.parametrize(
    ("kind", "role", "allowed"),
    [
        (Organisation.Kind.VENDOR, Role.VENDOR, True),
        (Organisation.Kind.VENDOR, Role.BUYER, False),
        (Organisation.Kind.BUYER, Role.EVALUATOR, True),
        (Organisation.Kind.BUYER, Role.AUDITOR, False),
        (Organisation.Kind.LAB, Role.LABOPS, True),
        (Organisation.Kind.AUDIT, Role.VENDOR, False),
    ],
)
def test_membership_grant_respects_the_organisation_kind(
    kind: str, role: str, allowed: bool, django_user_model: Any
) -> None:
    org = Organisation.objects.create(slug="org", name="Org", kind=kind)
    user = django_user_model.objects.create(username="someone")

    if allowed:
        membership_grant(user=user, organisation=org, role=role, actor=None)
    else:
        with pytest.raises(ValidationError, match="role"):
            membership_grant(user=user, organisation=org, role=role, actor=None)

    assert Membership.objects.filter(user=user).exists() is allowed
    assert AuditEvent.objects.filter(action="membership.granted").count() == allowed


def test_organisation_engage_only_links_buyers_to_labs_and_auditors(
    buyer_org: Organisation, vendor_a_org: Organisation
) -> None:
    with pytest.raises(ApplicationError):
        organisation_engage(buyer=buyer_org, provider=vendor_a_org, actor=None)

    assert not buyer_org.engages.filter(pk=vendor_a_org.pk).exists()


def test_api_token_issue_stores_only_the_digest(buyer: Any) -> None:
    token, raw = api_token_issue(user=buyer, name="ci")

    assert raw.startswith("rgt_")
    assert token.digest == token_digest(raw)
    assert raw not in {token.digest, token.prefix}
    assert AuditEvent.objects.filter(action="api_token.issued").count() == 1


def test_api_token_revoke_twice_is_refused(buyer: Any) -> None:
    token, _raw = api_token_issue(user=buyer, name="ci")
    api_token_revoke(token=token, actor=buyer)

    with pytest.raises(ApplicationError, match="already revoked"):
        api_token_revoke(token=token, actor=buyer)

    assert AuditEvent.objects.filter(action="api_token.revoked").count() == 1

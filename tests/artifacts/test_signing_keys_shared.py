"""A public key belongs to the one organisation that registered it first: another
organisation registering the same key (revoked or not, whatever its comment) is
refused with 409 ``key_registered_elsewhere``, without naming the owner, and the
database refuses a second row for one fingerprint."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import IntegrityError, transaction
from rest_framework.test import APIClient

from accounts.exceptions import StateConflict
from accounts.models import AuditEvent, Organisation
from artifacts.models import SigningKey
from artifacts.services.keys import (
    allowed_signers_text,
    signing_key_register,
    signing_key_revoke,
)
from tests.artifacts.keys import private_key, public_line

pytestmark = pytest.mark.django_db

KEYS = "/api/v1/signing-keys/"
PAGE = "/artifacts/signing-keys/"


def _register(org: Organisation, actor: Any, line: str) -> SigningKey:
    return signing_key_register(organisation=org, public_key_line=line, actor=actor)


def _owned_by_a(vendor_a_org: Organisation, vendor_a: Any) -> SigningKey:
    return _register(vendor_a_org, vendor_a, public_line("ed25519"))


def _names(org: Organisation) -> list[str]:
    return [org.slug, org.name]


def test_another_organisation_cannot_register_the_same_key(
    vendor_a: Any, vendor_a_org: Organisation, vendor_b: Any, vendor_b_org: Organisation
) -> None:
    _owned_by_a(vendor_a_org, vendor_a)
    same_key = private_key("ed25519").public.openssh + " bolt@ci"

    with pytest.raises(StateConflict) as refused:
        _register(vendor_b_org, vendor_b, same_key)

    error = refused.value
    assert error.code == "key_registered_elsewhere"
    assert [(p.code, p.path) for p in error.problems] == [(error.code, "public_key")]
    assert not any(name in error.message for name in _names(vendor_a_org))
    assert SigningKey.objects.filter(organisation=vendor_b_org).count() == 0
    assert AuditEvent.objects.filter(action="signing_key.registered").count() == 1
    exported = allowed_signers_text(vendor_b_org)
    assert private_key("ed25519").public.openssh not in exported


def test_a_key_revoked_by_its_organisation_stays_its_own(
    vendor_a: Any, vendor_a_org: Organisation, vendor_b: Any, vendor_b_org: Organisation
) -> None:
    signing_key_revoke(key=_owned_by_a(vendor_a_org, vendor_a), actor=vendor_a)

    with pytest.raises(StateConflict) as refused:
        _register(vendor_b_org, vendor_b, public_line("ed25519"))

    assert refused.value.code == "key_registered_elsewhere"


def test_the_database_holds_one_row_per_fingerprint(
    vendor_a: Any, vendor_a_org: Organisation, vendor_b_org: Organisation
) -> None:
    key = _owned_by_a(vendor_a_org, vendor_a)
    copy = SigningKey(
        organisation=vendor_b_org,
        key_type=key.key_type,
        public_key=key.public_key,
        fingerprint=key.fingerprint,
        valid_from=key.valid_from,
    )

    with pytest.raises(IntegrityError), transaction.atomic():
        copy.save()


def test_the_api_answers_409_without_naming_the_owner(
    vendor_a: Any, vendor_a_org: Organisation, vendor_b: Any, vendor_b_org: Organisation
) -> None:
    _owned_by_a(vendor_a_org, vendor_a)
    client = APIClient()
    client.force_authenticate(vendor_b)

    response = client.post(KEYS, {"public_key": public_line("ed25519")}, format="json")

    assert response.status_code == 409, response.content
    body = response.json()
    assert body["code"] == "key_registered_elsewhere"
    assert body["problems"][0]["path"] == "public_key"
    assert not any(name in response.content.decode() for name in _names(vendor_a_org))


def test_the_page_shows_why_the_key_is_refused(
    vendor_a: Any,
    vendor_a_org: Organisation,
    vendor_b: Any,
    vendor_b_org: Organisation,
    client_for: Any,
) -> None:
    _owned_by_a(vendor_a_org, vendor_a)

    response = client_for(vendor_b).post(PAGE, {"public_key": public_line("ed25519")})

    page = response.content.decode()
    assert response.status_code == 400
    assert "registered by another organisation" in page
    assert vendor_a_org.name not in page  # (its slug is the form's placeholder)
    assert not SigningKey.objects.filter(organisation=vendor_b_org).exists()

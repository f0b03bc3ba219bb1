"""The signing keys API and the vendor's "Signing keys" page."""

from __future__ import annotations

from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from rest_framework.test import APIClient

from accounts.models import AuditEvent, Organisation
from artifacts.models import SigningKey
from artifacts.services.keys import signing_key_register, signing_key_revoke
from tests.api.paging import assert_pages
from tests.artifacts.keys import private_key, public_line

pytestmark = pytest.mark.django_db

KEYS = "/api/v1/signing-keys/"
PAGE = "/artifacts/signing-keys/"


def _api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _key(org: Organisation, user: Any, kind: str = "ed25519") -> SigningKey:
    return signing_key_register(
        organisation=org, public_key_line=public_line(kind), actor=user
    )


def _rsa_1024_line() -> str:
    small = rsa.generate_private_key(public_exponent=65537, key_size=1024)  # noqa: S505
    return (
        small.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode()
    )


# --- API: register ------------------------------------------------------------------


def test_post_registers_a_key(vendor_a: Any) -> None:
    response = _api(vendor_a).post(
        KEYS, {"public_key": public_line("ecdsa-256")}, format="json"
    )

    body = response.json()
    assert response.status_code == 201
    assert body["fingerprint"] == private_key("ecdsa-256").public.fingerprint
    assert body["key_type"] == "ecdsa-sha2-nistp256"
    assert body["comment"] == "ecdsa-256-0@test"
    assert body["valid_until"] is None
    assert SigningKey.objects.get().public_id.hex == body["id"].replace("-", "")


def test_post_accepts_a_validity_end(vendor_a: Any, clock: Any) -> None:
    until = clock.advance(days=90)
    clock.advance(days=-90)

    body = (
        _api(vendor_a)
        .post(
            KEYS,
            {"public_key": public_line("ed25519"), "valid_until": until.isoformat()},
            format="json",
        )
        .json()
    )

    assert body["valid_until"].startswith(until.strftime("%Y-%m-%dT%H:%M:%S"))


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("ssh-dss AAAAB3NzaC1kc3M=", "key_type_unsupported"),
        ("ssh-ed25519 AAAA!!", "key_malformed"),
        (_rsa_1024_line(), "key_too_small"),
    ],
)
def test_post_bad_key_is_400_with_the_problem(
    vendor_a: Any, line: str, code: str
) -> None:
    response = _api(vendor_a).post(KEYS, {"public_key": line}, format="json")

    body = response.json()
    assert response.status_code == 400
    assert body["code"] == code
    assert body["problems"][0]["path"] == "public_key"
    assert not SigningKey.objects.exists()


def test_post_duplicate_is_400(vendor_a: Any, vendor_a_org: Organisation) -> None:
    _key(vendor_a_org, vendor_a)

    response = _api(vendor_a).post(
        KEYS, {"public_key": public_line("ed25519")}, format="json"
    )

    assert response.status_code == 400
    assert response.json()["code"] == "key_duplicate"


def test_post_without_a_key_is_400(vendor_a: Any) -> None:
    response = _api(vendor_a).post(KEYS, {}, format="json")

    assert response.status_code == 400
    assert response.json()["problems"][0]["path"] == "public_key"


@pytest.mark.parametrize("persona", ["evaluator", "auditor", "labops"])
def test_post_is_for_vendors_and_buyers_only(
    persona: str, request: pytest.FixtureRequest
) -> None:
    user = request.getfixturevalue(persona)

    response = _api(user).post(
        KEYS, {"public_key": public_line("ed25519")}, format="json"
    )

    assert response.status_code == 403
    assert not SigningKey.objects.exists()


def test_anonymous_is_refused() -> None:
    assert APIClient().get(KEYS).status_code in {401, 403}


# --- API: list, revoke, allowed_signers ---------------------------------------------


def test_get_lists_only_the_callers_organisation_keys(
    vendor_a: Any, vendor_a_org: Any, vendor_b: Any, vendor_b_org: Any
) -> None:
    own = _key(vendor_a_org, vendor_a)
    _key(vendor_b_org, vendor_b, "ecdsa-384")

    body = _api(vendor_a).get(KEYS).json()["results"]

    assert [k["fingerprint"] for k in body] == [own.fingerprint]
    assert body[0]["organisation"] == "acme-flash"


def test_get_pages_the_organisations_keys_newest_first(
    vendor_a: Any, vendor_a_org: Any, vendor_b: Any, vendor_b_org: Any
) -> None:
    older = _key(vendor_a_org, vendor_a)
    newer = _key(vendor_a_org, vendor_a, "ecdsa-384")
    _key(vendor_b_org, vendor_b, "ecdsa-256")

    whole = assert_pages(_api(vendor_a), KEYS)

    fingerprints = [k["fingerprint"] for k in whole["results"]]
    assert fingerprints == [newer.fingerprint, older.fingerprint]


def test_get_is_403_for_evaluators(evaluator: Any) -> None:
    assert _api(evaluator).get(KEYS).status_code == 403


def test_a_buyer_lists_its_own_organisations_keys_only(
    buyer: Any, buyer_org: Any, vendor_a: Any, vendor_a_org: Any
) -> None:
    _key(vendor_a_org, vendor_a)
    own = _key(buyer_org, buyer, "ecdsa-384")

    body = _api(buyer).get(KEYS).json()["results"]

    assert [(k["fingerprint"], k["organisation"]) for k in body] == [
        (own.fingerprint, "northwind-ai")
    ]


def test_revoke_marks_the_key_revoked(vendor_a: Any, vendor_a_org: Any) -> None:
    key = _key(vendor_a_org, vendor_a)

    response = _api(vendor_a).post(f"{KEYS}{key.public_id}/revoke/")

    assert response.status_code == 200
    assert response.json()["revoked_at"] is not None
    assert AuditEvent.objects.filter(action="signing_key.revoked").count() == 1


def test_revoke_of_another_vendors_key_is_404(
    vendor_a: Any, vendor_b: Any, vendor_b_org: Any
) -> None:
    key = _key(vendor_b_org, vendor_b)

    response = _api(vendor_a).post(f"{KEYS}{key.public_id}/revoke/")

    assert response.status_code == 404
    key.refresh_from_db()
    assert key.revoked_at is None


def test_revoke_twice_is_409(vendor_a: Any, vendor_a_org: Any) -> None:
    key = _key(vendor_a_org, vendor_a)
    signing_key_revoke(key=key, actor=vendor_a)

    response = _api(vendor_a).post(f"{KEYS}{key.public_id}/revoke/")

    assert response.status_code == 409
    assert response.json()["code"] == "key_already_revoked"


def test_revoke_of_a_vendors_key_by_the_buyer_side(
    buyer: Any, evaluator: Any, vendor_a: Any, vendor_a_org: Any
) -> None:
    key = _key(vendor_a_org, vendor_a)

    assert _api(evaluator).post(f"{KEYS}{key.public_id}/revoke/").status_code == 403
    assert _api(buyer).post(f"{KEYS}{key.public_id}/revoke/").status_code == 404


def test_allowed_signers_is_plain_text(vendor_a: Any, vendor_a_org: Any) -> None:
    key = _key(vendor_a_org, vendor_a)

    response = _api(vendor_a).get(f"{KEYS}allowed_signers", HTTP_ACCEPT="text/plain")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    assert "acme-flash namespaces=" in response.content.decode()
    assert key.public_key in response.content.decode()


def test_allowed_signers_is_403_for_evaluators(evaluator: Any) -> None:
    response = _api(evaluator).get(f"{KEYS}allowed_signers", HTTP_ACCEPT="text/plain")

    assert response.status_code == 403


def test_allowed_signers_of_an_organisation_not_managed_is_404(
    vendor_a: Any, vendor_b_org: Any
) -> None:
    response = _api(vendor_a).get(f"{KEYS}allowed_signers?organisation=bolt-storage")

    assert response.status_code == 404


# --- HTML page ----------------------------------------------------------------------


def test_page_lists_keys_with_their_state(
    vendor_a: Any, vendor_a_org: Any, client_for: Any
) -> None:
    active = _key(vendor_a_org, vendor_a)
    revoked = signing_key_revoke(
        key=_key(vendor_a_org, vendor_a, "rsa-3072"), actor=vendor_a
    )

    html = client_for(vendor_a).get(PAGE).content.decode()

    assert active.fingerprint in html
    assert revoked.fingerprint in html
    assert "revoked" in html
    assert html.count('data-testid="revoke-key"') == 1


def test_page_registers_a_pasted_key(vendor_a: Any, client_for: Any) -> None:
    response = client_for(vendor_a).post(
        PAGE, {"public_key": public_line("ecdsa-521")}, follow=True
    )

    assert response.status_code == 200
    fingerprint = private_key("ecdsa-521").public.fingerprint
    assert f"Key {fingerprint} registered." in response.content.decode()


def test_page_shows_why_a_key_is_refused(vendor_a: Any, client_for: Any) -> None:
    response = client_for(vendor_a).post(PAGE, {"public_key": "ssh-dss AAAA"})

    assert response.status_code == 400
    assert "is not accepted" in response.content.decode()
    assert not SigningKey.objects.exists()


def test_page_revoke_button_revokes(
    vendor_a: Any, vendor_a_org: Any, client_for: Any
) -> None:
    key = _key(vendor_a_org, vendor_a)

    client_for(vendor_a).post(f"{PAGE}{key.public_id}/revoke/")

    key.refresh_from_db()
    assert key.revoked_by == vendor_a


def test_page_revoke_of_another_vendors_key_is_404(
    vendor_a: Any, vendor_b: Any, vendor_b_org: Any, client_for: Any
) -> None:
    key = _key(vendor_b_org, vendor_b)

    response = client_for(vendor_a).post(f"{PAGE}{key.public_id}/revoke/")

    assert response.status_code == 404


def test_page_downloads_allowed_signers(
    vendor_a: Any, vendor_a_org: Any, client_for: Any
) -> None:
    key = _key(vendor_a_org, vendor_a)

    response = client_for(vendor_a).get(f"{PAGE}allowed_signers")

    assert "attachment" in response["Content-Disposition"]
    assert key.public_key in response.content.decode()


@pytest.mark.parametrize("persona", ["evaluator", "auditor"])
def test_page_is_for_vendors_and_buyers_only(
    persona: str, request: pytest.FixtureRequest, client_for: Any
) -> None:
    user = request.getfixturevalue(persona)

    assert client_for(user).get(PAGE).status_code == 403

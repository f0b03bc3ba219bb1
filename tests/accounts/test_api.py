from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken, AuditEvent
from accounts.services.users import api_token_issue, api_token_revoke
from tests.accounts.factories import PASSWORD

pytestmark = pytest.mark.django_db


def _token_for(user: Any) -> str:
    return api_token_issue(user=user, name="test")[1]


def test_token_obtain_returns_a_working_token(vendor_a: Any) -> None:
    api = APIClient()

    response = api.post(
        "/api/v1/auth/token/",
        {"username": "vendor-a", "password": PASSWORD},
        format="json",
    )

    assert response.status_code == 200
    api.credentials(HTTP_AUTHORIZATION=f"Token {response.json()['token']}")
    assert api.get("/api/v1/me/").json()["username"] == "vendor-a"


def test_token_obtain_with_wrong_password_is_a_400_json_error(vendor_a: Any) -> None:
    response = APIClient().post(
        "/api/v1/auth/token/",
        {"username": "vendor-a", "password": "wrong"},
        format="json",
    )

    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json()["code"] == "invalid_credentials"
    assert not ApiToken.objects.exists()
    assert AuditEvent.objects.filter(action="user.login_failed").count() == 1


def test_token_obtain_lists_every_missing_field() -> None:
    response = APIClient().post("/api/v1/auth/token/", {}, format="json")

    body = response.json()
    assert response.status_code == 400
    assert body["code"] == "invalid"
    assert {p["path"] for p in body["problems"]} == {"username", "password"}
    assert all(p["code"] == "required" for p in body["problems"])


def test_token_obtain_is_throttled_per_account_and_address(
    vendor_a: Any, vendor_b: Any
) -> None:
    api = APIClient()

    def token(username: str) -> Any:
        body = {"username": username, "password": PASSWORD}
        return api.post("/api/v1/auth/token/", body, format="json")

    statuses = [token("vendor-a").status_code for _ in range(21)]  # no failures
    refused = token("vendor-a")

    assert statuses[:20] == [200] * 20
    assert statuses[20] == 429
    assert refused.json()["code"] == "throttled"
    assert token("vendor-b").status_code == 200  # the same address, another account


def test_unauthenticated_call_gets_401_json() -> None:
    response = APIClient().get("/api/v1/rfps/")

    assert response.status_code == 401
    assert response["Content-Type"] == "application/json"
    assert response["WWW-Authenticate"] == "Token"
    assert response.json()["code"] == "not_authenticated"


@pytest.mark.parametrize("header", ["Token", "Token a b", "Token rgt_unknown"])
def test_malformed_or_unknown_token_gets_401(header: str) -> None:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=header)

    response = api.get("/api/v1/rfps/")

    assert response.status_code == 401
    assert response.json()["code"] == "authentication_failed"


def test_revoked_token_is_refused(vendor_a: Any) -> None:
    token, raw = api_token_issue(user=vendor_a, name="ci")
    api_token_revoke(token=token, actor=vendor_a)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {raw}")

    assert api.get("/api/v1/rfps/").status_code == 401


def test_expired_token_is_refused(vendor_a: Any) -> None:
    raw = _token_for(vendor_a)
    ApiToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {raw}")

    assert api.get("/api/v1/rfps/").status_code == 401


def test_token_of_a_deactivated_user_is_refused(vendor_a: Any) -> None:
    raw = _token_for(vendor_a)
    vendor_a.is_active = False
    vendor_a.save()
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {raw}")

    assert api.get("/api/v1/rfps/").status_code == 401


def test_unknown_api_path_is_a_json_404(client: Any) -> None:
    response = client.get("/api/v1/no-such-thing/")

    assert response.status_code == 404
    assert response.json() == {
        "code": "not_found",
        "message": "Not found.",
        "problems": [],
    }


def test_me_lists_memberships(vendor_a: Any) -> None:
    api = APIClient()
    api.force_authenticate(vendor_a)

    body = api.get("/api/v1/me/").json()

    assert body["memberships"] == [
        {"organisation": "acme-flash", "organisation_kind": "vendor", "role": "vendor"}
    ]

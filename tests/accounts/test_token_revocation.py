"""A password change revokes the user's API tokens, says so, and audits it once."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import ApiToken, AuditEvent
from accounts.services.users import (
    api_token_issue,
    api_token_revoke,
    user_password_change,
)
from tests.accounts.factories import PASSWORD

pytestmark = pytest.mark.django_db

NEW = "a much longer passphrase 42"


def _me(raw: str) -> int:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    return api.get("/api/v1/me/").status_code


def _change(client: Client) -> Any:
    form = {"old_password": PASSWORD, "new_password1": NEW, "new_password2": NEW}
    return client.post("/accounts/password/", form, follow=True)


def test_a_token_works_before_and_is_refused_after_a_password_change(
    client_for: Any, buyer: Any
) -> None:
    _token, raw = api_token_issue(user=buyer, name="CI uploader")
    assert _me(raw) == 200

    _change(client_for(buyer))

    assert _me(raw) == 401


def test_the_page_says_how_many_tokens_were_revoked(
    client_for: Any, buyer: Any
) -> None:
    for name in ("CI", "laptop"):
        api_token_issue(user=buyer, name=name)
    client = client_for(buyer)

    before = client.get("/accounts/password/").content.decode()
    after = _change(client).content.decode()

    assert "revokes your 2 API tokens" in before
    assert "Your 2 API tokens were revoked" in after
    assert "_auth_user_id" in client.session  # this browser stays logged in


def test_one_audit_row_names_the_count(buyer: Any) -> None:
    api_token_issue(user=buyer, name="CI")
    before = set(AuditEvent.objects.values_list("pk", flat=True))

    _user, revoked = user_password_change(user=buyer, new_password=NEW)

    assert revoked == 1
    (event,) = AuditEvent.objects.exclude(pk__in=before)
    assert (event.action, event.target_id) == ("user.password_changed", str(buyer.pk))
    assert event.data == {"api_tokens_revoked": 1}
    assert not AuditEvent.objects.filter(action="api_token.revoked").exists()


def test_only_own_active_tokens_are_revoked(buyer: Any, vendor_a: Any) -> None:
    earlier, _raw = api_token_issue(user=buyer, name="old")
    api_token_revoke(token=earlier, actor=buyer)
    earlier.refresh_from_db()
    _theirs, theirs_raw = api_token_issue(user=vendor_a, name="theirs")

    _user, revoked = user_password_change(user=buyer, new_password=NEW)

    assert revoked == 0
    assert ApiToken.objects.get(pk=earlier.pk).revoked_at == earlier.revoked_at
    assert _me(theirs_raw) == 200


def test_no_tokens_no_announcement(client_for: Any, buyer: Any) -> None:
    page = _change(client_for(buyer)).content.decode()

    assert "Your password was changed." in page
    assert "were revoked" not in page

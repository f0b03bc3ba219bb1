"""A password set in the Django admin goes through ``user_password_change`` as
the password page does: the user's API tokens are revoked and one audit row
names the admin who changed it. Disabling password sign-in revokes them too;
a refused form changes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.test import Client

from accounts.models import AuditEvent
from accounts.services.users import api_token_issue
from tests.accounts.factories import PASSWORD

pytestmark = pytest.mark.django_db

NEW = "a much longer passphrase 42"


def _url(user: Any) -> str:
    return f"/admin/auth/user/{user.pk}/password/"


def _token_works(raw: str) -> bool:
    response = Client().get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {raw}")
    assert response.status_code in (200, 401)
    return response.status_code == 200


def test_an_admin_password_change_revokes_the_users_tokens(
    admin_client: Client, admin_user: Any, buyer: Any
) -> None:
    _token, raw = api_token_issue(user=buyer, name="CI uploader")
    assert _token_works(raw)
    form = {"password1": NEW, "password2": NEW, "usable_password": "true"}

    response = admin_client.post(_url(buyer), form)

    assert response.status_code == 302
    assert not _token_works(raw)
    assert Client().login(username=buyer.username, password=NEW)
    [event] = AuditEvent.objects.filter(action="user.password_changed")
    assert (event.actor, event.target_id) == (admin_user, str(buyer.pk))
    assert event.data == {"api_tokens_revoked": 1}
    texts = [str(m) for m in get_messages(response.wsgi_request)]
    assert "1 API token was revoked with the old password." in texts


def test_disabling_password_sign_in_revokes_them_too(
    admin_client: Client, buyer: Any
) -> None:
    _token, raw = api_token_issue(user=buyer, name="CI uploader")
    form = {"usable_password": "false", "unset-password": "1"}

    response = admin_client.post(_url(buyer), form)

    assert response.status_code == 302
    buyer.refresh_from_db()
    assert not buyer.has_usable_password()
    assert not _token_works(raw)
    assert AuditEvent.objects.filter(action="user.password_changed").count() == 1


def test_a_refused_form_keeps_the_password_and_the_tokens(
    admin_client: Client, buyer: Any
) -> None:
    _token, raw = api_token_issue(user=buyer, name="CI uploader")
    form = {"password1": NEW, "password2": NEW + "x", "usable_password": "true"}

    response = admin_client.post(_url(buyer), form)

    assert response.status_code == 200  # the form again, with its error
    assert _token_works(raw)
    assert Client().login(username=buyer.username, password=PASSWORD)
    assert not AuditEvent.objects.filter(action="user.password_changed").exists()

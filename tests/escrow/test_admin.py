"""The admin shows deposits and escrow events read-only: no add, change or
delete, for superusers too."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib import admin
from django.test import Client, RequestFactory

import artifacts.admin  # noqa: F401 - registers the escrow admin
from artifacts.models import Deposit, EscrowEvent
from tests.accounts.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser() -> Any:
    return UserFactory.create(username="root", is_staff=True, is_superuser=True)


@pytest.mark.parametrize("model", [Deposit, EscrowEvent])
def test_escrow_admin_is_read_only(superuser: Any, model: Any) -> None:
    request = RequestFactory().get("/admin/")
    request.user = superuser
    model_admin = admin.site._registry[model]

    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)


def test_deposit_admin_page_shows_the_leaf(deposit: Deposit, superuser: Any) -> None:
    client = Client()
    client.force_login(superuser)

    page = client.get(f"/admin/artifacts/deposit/{deposit.pk}/change/")
    refused = client.post(
        f"/admin/artifacts/deposit/{deposit.pk}/delete/", {"post": "yes"}
    )

    assert page.status_code == 200
    assert "reprogate.deposit/v1" in page.content.decode()
    assert refused.status_code == 403
    assert Deposit.objects.filter(pk=deposit.pk).exists()

"""The log in the admin: listed and readable, never added, changed or deleted."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from artifacts.models import LogEntry
from artifacts.services.transparency import checkpoint_publish

pytestmark = pytest.mark.django_db
Append = Callable[..., list[LogEntry]]


@pytest.fixture
def admin_client_for_log(client_for: Any) -> Any:
    user = get_user_model().objects.create_superuser("root", "root@example.com", "x")
    return client_for(user)


@pytest.mark.parametrize("model", ["logentry", "lognode", "checkpoint", "logstate"])
def test_log_models_are_listed_but_cannot_be_added(
    admin_client_for_log: Any, append: Append, model: str
) -> None:
    append(b'{"a":1}')
    checkpoint_publish()

    listed = admin_client_for_log.get(f"/admin/artifacts/{model}/")
    add = admin_client_for_log.get(f"/admin/artifacts/{model}/add/")

    assert listed.status_code == 200
    assert add.status_code == 403


def test_an_entry_page_shows_its_hash_and_offers_no_save(
    admin_client_for_log: Any, append: Append
) -> None:
    (entry,) = append(b'{"a":1}')

    page = admin_client_for_log.get(f"/admin/artifacts/logentry/{entry.pk}/change/")
    deleted = admin_client_for_log.post(
        f"/admin/artifacts/logentry/{entry.pk}/delete/", {"post": "yes"}
    )

    html = page.content.decode()
    assert base64.b64encode(bytes(entry.leaf_hash)).decode() in html
    assert 'name="_save"' not in html
    assert deleted.status_code == 403
    assert LogEntry.objects.filter(pk=entry.pk).exists()

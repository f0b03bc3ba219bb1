from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core import mail

from accounts.models import Notification
from accounts.notifications import notify_users
from accounts.tasks import notification_email_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def email_templates(settings: Any, tmp_path: Path) -> None:
    (tmp_path / "emails").mkdir()
    (tmp_path / "emails" / "hello_subject.txt").write_text("Hello {{ recipient }}\n")
    (tmp_path / "emails" / "hello_body.txt").write_text("About {{ thing }}: {{ url }}")
    engine = settings.TEMPLATES[0]
    settings.TEMPLATES = [{**engine, "DIRS": [tmp_path, *engine["DIRS"]]}]


def test_notify_users_writes_one_notification_each_and_mails_after_commit(
    email_templates: None,
    buyer: Any,
    vendor_a: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        notify_users(
            users=[buyer, vendor_a, buyer],
            template="hello",
            context={"thing": "RFP"},
            url="/x/",
        )

    assert sorted(Notification.objects.values_list("subject", flat=True)) == [
        "Hello buyer",
        "Hello vendor-a",
    ]
    assert len(callbacks) == 1
    assert mail.outbox == []


def test_notification_email_task_sends_once(email_templates: None, buyer: Any) -> None:
    (notification,) = notify_users(
        users=[buyer], template="hello", context={"thing": "bids"}
    )

    assert notification_email_task(notification.pk) is True
    assert notification_email_task(notification.pk) is False

    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["buyer@example.com"]
    assert mail.outbox[0].subject.endswith("Hello buyer")


def test_notifications_page_lists_only_own_and_marks_read(
    email_templates: None, client_for: Any, buyer: Any, vendor_a: Any
) -> None:
    notify_users(users=[buyer], template="hello", context={"thing": "mine"})
    notify_users(users=[vendor_a], template="hello", context={"thing": "theirs"})
    client = client_for(buyer)

    html = client.get("/accounts/notifications/").content.decode()
    client.post("/accounts/notifications/")

    assert "About mine" in html
    assert "About theirs" not in html
    assert not Notification.objects.filter(
        recipient=buyer, read_at__isnull=True
    ).exists()
    assert Notification.objects.filter(
        recipient=vendor_a, read_at__isnull=True
    ).exists()


def test_email_links_are_absolute_and_in_app_links_relative(
    email_templates: None, buyer: Any, settings: Any
) -> None:
    settings.REPROGATE_SITE_URL = "https://reprogate.example.com"

    (notification,) = notify_users(
        users=[buyer], template="hello", context={"thing": "x"}, url="/rfps/1/"
    )

    assert notification.url == "/rfps/1/"
    assert notification.body == "About x: https://reprogate.example.com/rfps/1/"

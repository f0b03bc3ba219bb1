from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core import mail

from accounts.models import Notification
from accounts.services.notifications import notification_link_label, notify_users
from accounts.tasks import notification_email_task
from tests.procurement.factories_rfps import published_rfp

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

    assert "Hello buyer" in html
    assert "Hello vendor-a" not in html
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


# --- links follow the site's address; the in-app list shows title and link --------


def test_email_links_follow_the_site_url(
    settings: Any, buyer_org: Any, vendor_a: Any, vendor_a_org: Any
) -> None:
    settings.REPROGATE_SITE_URL = "http://127.0.0.1:8140"

    rfp = published_rfp(buyer_org, vendor_a_org)

    (notification,) = Notification.objects.filter(recipient=vendor_a)
    assert notification.url == f"/rfps/{rfp.public_id}/"
    assert f"http://127.0.0.1:8140/rfps/{rfp.public_id}/" in notification.body
    assert ":8000" not in notification.body


def _site_url_with(tmp_path: Path, **env: str) -> str:
    """``absolute_url("/rfps/")`` in a fresh interpreter with this environment."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("REPROGATE_", "DJANGO_"))
    }
    clean.update(DJANGO_DEBUG="True", REPROGATE_VAR_DIR=str(tmp_path / "var"), **env)
    code = (
        "import django; django.setup(); "
        "from accounts.conf import absolute_url; print(absolute_url('/rfps/'))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[2],
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout.strip()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "http://127.0.0.1:8000/rfps/"),
        ({"REPROGATE_PORT": "8140"}, "http://127.0.0.1:8140/rfps/"),
        (
            {"REPROGATE_HOST": "0.0.0.0", "REPROGATE_PORT": "8140"},  # noqa: S104
            "http://127.0.0.1:8140/rfps/",
        ),
        ({"REPROGATE_HOST": "demo.lan"}, "http://demo.lan:8000/rfps/"),
        (
            {"REPROGATE_SITE_URL": "https://reprogate.example.com/"},
            "https://reprogate.example.com/rfps/",
        ),
        (
            {"REPROGATE_PORT": "8140", "REPROGATE_BASE_URL": "https://old.example"},
            "https://old.example/rfps/",
        ),
    ],
)
def test_the_site_url_defaults_to_the_address_scripts_run_serves(
    tmp_path: Path, env: dict[str, str], expected: str
) -> None:
    assert _site_url_with(tmp_path, **env) == expected


def test_in_app_list_shows_title_and_link_not_the_email_body(
    settings: Any, client_for: Any, buyer_org: Any, vendor_a: Any, vendor_a_org: Any
) -> None:
    settings.REPROGATE_SITE_URL = "http://127.0.0.1:8140"
    rfp = published_rfp(buyer_org, vendor_a_org)
    (notification,) = Notification.objects.filter(recipient=vendor_a)

    html = client_for(vendor_a).get("/accounts/notifications/").content.decode()

    assert notification.subject == f"Invitation to bid: {rfp.reference} · {rfp.title}"
    assert f'<strong data-testid="notification-title">{notification.subject}' in html
    assert (
        f'<a href="/rfps/{rfp.public_id}/" data-testid="notification-link">'
        "Open the RFP →</a>"
    ) in html
    assert "Read the requirements" not in html  # a line of the e-mail body
    assert "127.0.0.1" not in html  # the in-app link stays relative


@pytest.mark.parametrize(
    ("url", "label"),
    [
        ("/rfps/00000000-0000-0000-0000-000000000001/", "Open the RFP"),
        ("/rfps/00000000-0000-0000-0000-000000000001/bids/", "Open the bids"),
        ("/no/such/page/", "Open"),
        ("https://elsewhere.example/", "Open"),
        ("", "Open"),
    ],
)
def test_link_labels_name_the_page(url: str, label: str) -> None:
    assert notification_link_label(url) == label


def test_the_upload_page_shows_the_cli_command_with_the_site_url(
    settings: Any, client_for: Any, buyer_org: Any, vendor_a: Any, vendor_a_org: Any
) -> None:
    settings.REPROGATE_SITE_URL = "https://reprogate.example.com"
    rfp = published_rfp(buyer_org, vendor_a_org)

    html = (
        client_for(vendor_a)
        .get(f"/artifacts/rfps/{rfp.public_id}/bundles/upload/")
        .content.decode()
    )

    assert "--url https://reprogate.example.com --token" in html
    assert "testserver" not in html  # not the address of this one request

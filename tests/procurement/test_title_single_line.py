"""RFP titles are one line; e-mail subjects are one line whatever the title."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from rest_framework.test import APIClient

from accounts.models import Notification
from accounts.selectors import clock
from accounts.services.notification_delivery import notification_deliver
from accounts.tasks import notification_email_task
from procurement.exceptions import ProcurementError
from procurement.models import Rfp
from procurement.services.rfps import rfp_invite_vendor, rfp_update
from tests.procurement.factories_rfps import draft_rfp, published_rfp

pytestmark = pytest.mark.django_db

BREAKS = ["Tiering\nBcc: x@example.com", "Tiering\r\nsecond", "A\rB", "A\u2028B"]


@pytest.mark.parametrize("title", BREAKS)
def test_the_api_refuses_a_title_with_a_line_break(
    buyer: Any, buyer_org: Any, title: str
) -> None:
    api = APIClient()
    api.force_authenticate(buyer)
    deadline = clock.now() + timedelta(days=14)
    body = {
        "reference": "RFP-NL-1",
        "title": title,
        "buyer_organisation": buyer_org.slug,
        "submission_deadline": deadline.isoformat(),
    }

    response = api.post("/api/v1/rfps/", body, format="json")

    assert response.status_code == 400, response.content
    problems = response.json()["problems"]
    assert [p["path"] for p in problems] == ["title"]
    assert "one line" in problems[0]["message"]
    assert not Rfp.objects.exists()


def test_editing_a_draft_refuses_a_title_with_a_line_break(
    buyer: Any, buyer_org: Any
) -> None:
    rfp = draft_rfp(buyer_org)

    with pytest.raises(ProcurementError) as refused:
        rfp_update(rfp=rfp, fields={"title": "One\ntwo"}, actor=buyer)

    assert [p.path for p in refused.value.problems] == ["title"]
    rfp.refresh_from_db()
    assert rfp.title == "KV-cache tiering"


def test_the_new_rfp_form_shows_the_refusal(
    client_for: Any, buyer: Any, buyer_org: Any
) -> None:
    deadline = (clock.now() + timedelta(days=14)).strftime("%Y-%m-%dT%H:%M")
    form = {
        "buyer_organisation": buyer_org.pk,
        "reference": "RFP-NL-2",
        "title": "One\ntwo",
        "submission_deadline": deadline,
    }

    page = client_for(buyer).post("/rfps/new/", form, follow=True).content.decode()

    assert "The title must be one line" in page
    assert not Rfp.objects.filter(reference="RFP-NL-2").exists()


def test_a_stored_title_with_a_line_break_still_gets_its_emails(
    buyer_org: Any, vendor_a: Any, vendor_a_org: Any, vendor_b_org: Any
) -> None:
    rfp = published_rfp(buyer_org, vendor_b_org)
    Rfp.objects.filter(pk=rfp.pk).update(title="Tiering\nBcc: x@example.com")
    rfp.refresh_from_db()

    rfp_invite_vendor(rfp=rfp, vendor=vendor_a_org, actor=None)
    notification = Notification.objects.get(recipient=vendor_a)

    assert notification_email_task(notification.pk) is True
    (sent,) = mail.outbox
    assert not {"\n", "\r"} & set(sent.subject)
    assert sent.subject.endswith("Tiering Bcc: x@example.com")
    assert "\n" not in notification.subject


def test_an_old_notification_with_a_line_break_is_sent_on_one_line(
    vendor_a: Any,
) -> None:
    old = Notification.objects.create(
        recipient=vendor_a, subject="Invitation\r\nto bid", body="Hello"
    )

    assert notification_deliver(notification=old) is True

    assert mail.outbox[0].subject == "[ReproGate] Invitation to bid"

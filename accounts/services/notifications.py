"""Notifications: written in the caller's transaction, e-mailed after commit by
``accounts.tasks.notification_email_task`` (``notification_delivery``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.template.loader import render_to_string
from django.urls import Resolver404, resolve

from accounts import conf
from accounts.conf import absolute_url
from accounts.models import Notification
from accounts.services.notification_delivery import one_line
from accounts.tasks import notification_email_task

# The page a notification links to, named for its link in the in-app list.
_LINK_LABELS = {
    "procurement:rfp_detail": "Open the RFP",
    "procurement:rfp_clarifications": "Open the clarifications",
    "procurement:rfp_bids": "Open the bids",
    "procurement:bid_receipt": "Open the receipt",
    "procurement:rfp_evaluation": "Open the evaluation",
    "procurement:rfp_award": "Open the award",
    "artifacts:release_detail": "Open the escrow release",
    "gates:gate": "Open the gate",
    "gates:retest": "Open the re-test obligation",
    "gates:dispute": "Open the dispute",
}


def notification_link_label(url: str) -> str:
    """``Open the RFP`` and the like for a path of this site; ``Open`` otherwise."""
    if not url.startswith("/"):
        return "Open"
    try:
        match = resolve(url.split("?", 1)[0])
    except Resolver404:
        return "Open"
    return _LINK_LABELS.get(match.view_name, "Open")


def notify_users(
    *,
    users: Iterable[User],
    template: str,
    context: dict[str, Any],
    url: str = "",
) -> list[Notification]:
    """Render ``emails/<template>_subject.txt`` and ``_body.txt`` once per recipient.

    Never put what a recipient may not know into ``context``: sealed bids stay
    sealed in notifications too."""
    created = []
    for user in {u.pk: u for u in users if u.is_active}.values():
        ctx = {
            **context,
            "recipient": user,
            # the message is read in a mail client: absolute links; the in-app
            # list keeps the relative one
            "url": absolute_url(url) if url else "",
            "site": conf.site_name(),
        }
        subject = one_line(render_to_string(f"emails/{template}_subject.txt", ctx))
        body = render_to_string(f"emails/{template}_body.txt", ctx)
        created.append(
            Notification.objects.create(
                recipient=user,
                subject=subject[:200],
                body=body,
                url=url,
            )
        )
    ids = [n.pk for n in created]
    transaction.on_commit(lambda: [notification_email_task.delay(i) for i in ids])
    return created

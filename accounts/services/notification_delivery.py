"""Notifications leave by e-mail: what ``accounts.tasks.notification_email_task``
runs after the commit that wrote them (``notifications.notify_users``)."""

from __future__ import annotations

from django.core.mail import send_mail
from django.utils import timezone

from accounts import conf
from accounts.models import Notification


def one_line(text: str) -> str:
    """``text`` with every run of white space, line breaks included, as one space:
    an e-mail subject is a header, which a line break would end (or forge)."""
    return " ".join(text.split())


def notification_deliver(*, notification: Notification) -> bool:
    """Send one notification by e-mail, once. Returns whether it was sent now."""
    if notification.emailed_at is not None or not notification.recipient.email:
        return False
    send_mail(
        subject=one_line(f"[{conf.site_name()}] {notification.subject}"),
        message=notification.body,
        from_email=conf.default_from_email(),
        recipient_list=[notification.recipient.email],
    )
    Notification.objects.filter(pk=notification.pk).update(emailed_at=timezone.now())
    return True

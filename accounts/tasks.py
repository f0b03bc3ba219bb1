from __future__ import annotations

import socket

from celery import shared_task


@shared_task(name="accounts.worker_ping", soft_time_limit=10)
def worker_ping(nonce: str) -> dict[str, str]:
    """Round-trip probe: proves a worker process consumed the queue and answered."""
    return {"nonce": nonce, "hostname": socket.gethostname()}


@shared_task(
    name="accounts.notification_email",
    soft_time_limit=60,
    autoretry_for=(OSError,),
    retry_backoff=True,
    max_retries=5,
)
def notification_email_task(notification_id: int) -> bool:
    from accounts.models import Notification
    from accounts.services.notification_delivery import notification_deliver

    notification = Notification.objects.filter(pk=notification_id).first()
    if notification is None:
        return False
    return notification_deliver(notification=notification)

"""The checkpoint each user saw last on the log page (``LogVisit``), so the next
visit can prove the log was only appended to since. A per-user bookmark, not a
change of escrow: no audit row and no log entry."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from artifacts.models import LogVisit
from procurement import clock


def log_visit_remember(
    *, user: AbstractBaseUser, size: int, root_hash: bytes
) -> LogVisit:
    visit, _ = LogVisit.objects.update_or_create(
        user=user,
        defaults={
            "size": size,
            "root_hash": bytes(root_hash).hex(),
            "visited_at": clock.now(),
        },
    )
    return visit

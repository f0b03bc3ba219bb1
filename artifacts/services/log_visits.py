"""The checkpoint each user marked as seen on the log page (``LogVisit``), so
the next visit can prove the log was only appended to since. A per-user
bookmark, not a change of escrow: no audit row and no log entry.

Marking is an explicit POST naming the checkpoint the page showed (size and
root hash), never a side effect of reading the page: the page stays a read,
and what is remembered is exactly what the user looked at."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from accounts.exceptions import ApplicationError, StateConflict
from accounts.selectors import clock
from artifacts.models import Checkpoint, LogVisit
from artifacts.selectors.proofs import compare_with_visit, signed_head


@transaction.atomic
def log_visit_mark_seen(*, user: User, size: int, root_hash: bytes) -> LogVisit:
    """Remember checkpoint (``size``, ``root_hash``) as seen by ``user``: one
    the log signed, that extends the one the user saw before."""
    checkpoint = Checkpoint.objects.filter(size=size, root_hash=root_hash).first()
    if checkpoint is None:
        raise ApplicationError(
            "The log signed no such checkpoint.", code="unknown_checkpoint"
        )
    previous = LogVisit.objects.select_for_update().filter(user=user).first()
    if previous is not None:
        consistent, _, message = compare_with_visit(previous, signed_head(checkpoint))
        if not consistent:
            raise StateConflict(message, code="log_inconsistent")
    visit, _ = LogVisit.objects.update_or_create(
        user=user,
        defaults={
            "size": size,
            "root_hash": bytes(root_hash).hex(),
            "visited_at": clock.now(),
        },
    )
    return visit

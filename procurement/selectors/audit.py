from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.contrib.contenttypes.models import ContentType
from django.db.models import Q, QuerySet

from accounts.models import AuditEvent
from accounts.selectors import audit_event_list_visible_to
from procurement.models import Rfp


def rfp_audit_events(
    user: AbstractBaseUser | AnonymousUser, *, rfp: Rfp
) -> QuerySet[AuditEvent]:
    """The RFP's trail as the user may read it: events on the RFP itself and every
    event whose data names it (``data["rfp"]``), within the user's trail scope."""
    rfp_type = ContentType.objects.get_for_model(Rfp)
    return audit_event_list_visible_to(user).filter(
        Q(target_type=rfp_type, target_id=str(rfp.pk)) | Q(data__rfp=rfp.reference)
    )

"""Who took a copy of a bundle: every download of an accepted archive is an
audit event (``bundle.downloaded``), kept in the downloader's side's trail: the
vendor's own downloads in the vendor's, everyone else's (the buyer side, after
opening) in the buyer's, so the vendor's trail stays private to the vendor."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from accounts.models import AuditEvent, Organisation, Role
from accounts.selectors.users import organisation_ids_for
from accounts.services.audit import audit_record
from artifacts.models import Bundle


def _trail_of(bundle: Bundle, actor: User) -> Organisation:
    own = organisation_ids_for(actor, Role.VENDOR, Role.ADMIN)
    if bundle.organisation_id in own:
        return bundle.organisation
    return bundle.rfp.buyer_organisation


@transaction.atomic
def bundle_record_download(*, bundle: Bundle, actor: User, via: str) -> AuditEvent:
    """Record that ``actor`` downloaded ``bundle``'s archive (``via``: "api" or
    "web"). The caller has checked that ``actor`` may see the bundle."""
    return audit_record(
        actor=actor,
        action="bundle.downloaded",
        target=bundle,
        organisation=_trail_of(bundle, actor),
        data={
            "rfp": bundle.rfp.reference,
            "vendor": bundle.organisation.slug,
            "sha256": bundle.sha256,
            "size": bundle.size,
            "via": via,
        },
    )

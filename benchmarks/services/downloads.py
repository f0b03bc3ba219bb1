"""Who took a copy of a run's raw output: every download is an audit event
(``run_output.downloaded``) in the buyer's trail."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from accounts.models import AuditEvent
from accounts.services.audit import audit_record
from benchmarks.models import RunOutput


@transaction.atomic
def run_output_record_download(
    *, output: RunOutput, actor: User, via: str
) -> AuditEvent:
    """Record that ``actor`` downloaded ``output`` (the caller checked that the
    actor may see its run)."""
    run = output.run
    campaign = run.campaign
    return audit_record(
        actor=actor,
        action="run_output.downloaded",
        target=run,
        organisation=campaign.rfp.buyer_organisation,
        data={
            "rfp": campaign.rfp.reference,
            "campaign": str(campaign.public_id),
            "path": output.path,
            "attempt": output.attempt,
            "sha256": output.blob.sha256,
            "size": output.blob.size,
            "via": via,
        },
    )

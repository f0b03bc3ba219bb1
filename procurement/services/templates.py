"""RFP templates: "save as template" and "new from template", per buyer organisation.

A template holds an RFP's configuration (``RfpTemplate.data``, the shape of
``procurement.lib.defaults.default_configuration()``): description, minimum bids,
workloads, contract terms, required artifacts, metrics and criteria. Never the
reference, title, deadlines or invitations, which belong to one tender."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction

from accounts.services.actor import Actor
from accounts.services.audit import audit_record
from procurement.exceptions import ProcurementError
from procurement.lib.defaults import CONFIGURATION_VERSION
from procurement.models import Rfp, RfpTemplate
from procurement.models.rfp import RFP_TERMS_FIELDS
from procurement.services.rfp_common import clean_or_refuse
from procurement.services.rfps import (
    CONFIGURATION_FIELDS,
    ROWS,
    rfp_create,
)


def _json_value(value: Any) -> Any:
    """Decimals keep their exact text in JSON."""
    return str(value) if hasattr(value, "as_tuple") else value


def rfp_snapshot(rfp: Rfp) -> dict[str, Any]:
    """The RFP's configuration as template data."""
    data: dict[str, Any] = {"version": CONFIGURATION_VERSION}
    data.update({f: getattr(rfp, f) for f in CONFIGURATION_FIELDS})
    data["terms"] = {f: _json_value(getattr(rfp, f)) for f in RFP_TERMS_FIELDS}
    for key, (_model, fields, _unique) in ROWS.items():
        data[key] = [
            {f: getattr(row, f) for f in fields} for row in getattr(rfp, key).all()
        ]
    return data


@transaction.atomic
def rfp_template_save(*, rfp: Rfp, name: str, actor: Actor) -> RfpTemplate:
    """Save the RFP's configuration, as stored, as a template of its buyer
    organisation."""
    name = name.strip()
    rfp = Rfp.objects.select_related("buyer_organisation").get(pk=rfp.pk)
    organisation = rfp.buyer_organisation
    if RfpTemplate.objects.filter(
        buyer_organisation=organisation, name__iexact=name
    ).exists():
        raise ProcurementError(
            f"Your organisation already has a template named {name!r}; choose "
            "another name.",
            code="duplicate_name",
        )
    template = RfpTemplate(
        buyer_organisation=organisation, name=name, data=rfp_snapshot(rfp)
    )
    clean_or_refuse(template, label="template")
    template.save()
    audit_record(
        actor=actor,
        action="rfp_template.created",
        target=template,
        organisation=organisation,
        data={"rfp": rfp.reference, "template": name},
    )
    return template


@transaction.atomic
def rfp_create_from_template(
    *,
    template: RfpTemplate,
    reference: str,
    title: str,
    submission_deadline: datetime,
    actor: Actor,
    questions_deadline: datetime | None = None,
) -> Rfp:
    """A new draft of the template's buyer organisation, pre-filled from it."""
    return rfp_create(
        reference=reference,
        title=title,
        buyer_organisation=template.buyer_organisation,
        submission_deadline=submission_deadline,
        questions_deadline=questions_deadline,
        configuration=template.data,
        actor=actor,
    )


@transaction.atomic
def rfp_template_delete(*, template: RfpTemplate, actor: Actor) -> None:
    """Delete a template; RFPs made from it keep their configuration."""
    audit_record(
        actor=actor,
        action="rfp_template.deleted",
        target=template,
        organisation=template.buyer_organisation,
        data={"template": template.name},
    )
    template.delete()

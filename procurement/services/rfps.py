"""RFP authoring (drafts, their rows, invitations). Publishing lives in
``procurement.services.rfp_lifecycle``, cancelling in
``procurement.services.cancellation``, closing at the deadline in
``procurement.services.deadlines``; opening bids with the bids."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from django.db import models, transaction

from accounts.exceptions import Problem
from accounts.models import Organisation
from accounts.selectors import clock
from accounts.services.actor import Actor
from accounts.services.audit import audit_record
from procurement.exceptions import ProcurementError, RfpNotEditable
from procurement.lib.defaults import default_configuration
from procurement.models import (
    Criterion,
    RequiredArtifact,
    RequiredMetric,
    Rfp,
)
from procurement.models.rfp import RFP_TERMS_FIELDS
from procurement.services.requirements import rfp_set_requirements
from procurement.services.rfp_common import (
    clean_or_refuse,
    locked_rfp,
    notify_vendors,
)

BASICS_FIELDS: Final = (
    "reference",
    "title",
    "description",
    "questions_deadline",
    "submission_deadline",
    "min_bids",
    "addendum_extension_days",
    "workload_requirements",
)
EDITABLE_FIELDS: Final = frozenset(BASICS_FIELDS + RFP_TERMS_FIELDS)
# what a template carries besides the terms and rows: no reference, title,
# deadlines or invitations
CONFIGURATION_FIELDS: Final = (
    "description",
    "min_bids",
    "addendum_extension_days",
    "workload_requirements",
    "bid_requires_bundle",
)
# configuration key -> (row model, the row's own fields, the field unique per RFP)
ROWS: Final[dict[str, tuple[type[models.Model], tuple[str, ...], str]]] = {
    "artifacts": (RequiredArtifact, ("kind", "title", "guidance", "mandatory"), ""),
    "metrics": (RequiredMetric, ("name", "stats", "series", "description"), "name"),
    "criteria": (Criterion, ("name", "description", "weight"), "name"),
}


# --- helpers ------------------------------------------------------------------------


def _check_deadline_order(rfp: Rfp) -> None:
    questions, submission = rfp.questions_deadline, rfp.submission_deadline
    if questions is not None and submission is not None and questions >= submission:
        message = "The questions deadline must come before the submission deadline."
        raise ProcurementError(
            message,
            code="deadline_order",
            problems=[Problem("deadline_order", message, "questions_deadline")],
        )


def _check_title_one_line(rfp: Rfp) -> None:
    """A title heads pages and e-mail subjects: no line breaks (any of Unicode's)."""
    if "".join(rfp.title.splitlines()) != rfp.title:
        message = "The title must be one line: remove its line breaks."
        raise ProcurementError(
            message, code="invalid", problems=[Problem("invalid", message, "title")]
        )


def _require_draft(rfp: Rfp) -> None:
    if rfp.status != Rfp.Status.DRAFT:
        raise RfpNotEditable(current=rfp.status)


def _configure(rfp: Rfp, configuration: Mapping[str, Any]) -> None:
    """Set the RFP's scalar settings and contract terms from a configuration."""
    for field in CONFIGURATION_FIELDS:
        if field in configuration:
            setattr(rfp, field, configuration[field])
    for field, value in configuration.get("terms", {}).items():
        if field in RFP_TERMS_FIELDS:
            setattr(rfp, field, value)


def _build_rows(rfp: Rfp, key: str, rows: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Validated, unsaved rows of one kind; ``position`` follows the given order."""
    model, fields, unique = ROWS[key]
    built, seen = [], set()
    for position, row in enumerate(rows):
        values = {f: row[f] for f in fields if f in row}
        obj = model(rfp=rfp, position=position, **values)
        clean_or_refuse(
            obj, prefix=f"{key}[{position}]", exclude=["rfp"], validate_unique=False
        )
        if unique and getattr(obj, unique) in seen:
            raise ProcurementError(
                f"{getattr(obj, unique)!r} appears twice in the {key}.",
                code="duplicate",
                problems=[Problem("duplicate", "Duplicate.", f"{key}[{position}]")],
            )
        seen.add(getattr(obj, unique) if unique else position)
        built.append(obj)
    return built


def _create_rows(rfp: Rfp, configuration: Mapping[str, Any]) -> None:
    for key, (model, _fields, _unique) in ROWS.items():
        rows = _build_rows(rfp, key, configuration.get(key, []))
        model._default_manager.bulk_create(rows)  # the model of ROWS[key]


# --- authoring ----------------------------------------------------------------------


@transaction.atomic
def rfp_create(
    *,
    reference: str,
    title: str,
    buyer_organisation: Organisation,
    submission_deadline: datetime,
    actor: Actor,
    questions_deadline: datetime | None = None,
    configuration: Mapping[str, Any] | None = None,
) -> Rfp:
    """A draft RFP, pre-filled with ``configuration`` (``procurement.lib.defaults``
    when none is given: the six artifact kinds, the metrics, the criteria and the
    contract clauses)."""
    if buyer_organisation.kind != Organisation.Kind.BUYER:
        raise ProcurementError("Only a buyer organisation issues RFPs.")
    config = default_configuration() if configuration is None else configuration
    rfp = Rfp(
        reference=reference,
        title=title,
        buyer_organisation=buyer_organisation,
        submission_deadline=submission_deadline,
        questions_deadline=questions_deadline,
    )
    _configure(rfp, config)
    _check_title_one_line(rfp)
    _check_deadline_order(rfp)
    clean_or_refuse(rfp)
    rfp.save()
    _create_rows(rfp, config)
    audit_record(
        actor=actor,
        action="rfp.created",
        target=rfp,
        organisation=buyer_organisation,
        data={"rfp": reference},
    )
    return rfp


@transaction.atomic
def rfp_update(*, rfp: Rfp, fields: Mapping[str, Any], actor: Actor) -> Rfp:
    """Change a draft's basics, workloads or contract terms (``EDITABLE_FIELDS``)."""
    unknown = set(fields) - EDITABLE_FIELDS
    if unknown:
        raise ProcurementError(f"These fields cannot be edited: {sorted(unknown)}.")
    rfp = locked_rfp(rfp)
    _require_draft(rfp)
    previous_reference = rfp.reference
    changed = sorted(f for f, v in fields.items() if getattr(rfp, f) != v)
    if not changed:
        return rfp
    for field in changed:
        setattr(rfp, field, fields[field])
    _check_title_one_line(rfp)
    _check_deadline_order(rfp)
    clean_or_refuse(rfp)
    rfp.save(update_fields=[*changed, "updated_at"])
    data = {"rfp": rfp.reference, "fields": changed}
    if rfp.reference != previous_reference:
        data["previous_reference"] = previous_reference
    audit_record(
        actor=actor,
        action="rfp.updated",
        target=rfp,
        organisation=rfp.buyer_organisation,
        data=data,
    )
    return rfp


@transaction.atomic
def _rfp_replace_rows(
    *, rfp: Rfp, key: str, rows: Sequence[Mapping[str, Any]], actor: Actor
) -> Rfp:
    rfp = locked_rfp(rfp)
    _require_draft(rfp)
    model = ROWS[key][0]
    built = _build_rows(rfp, key, rows)
    model._default_manager.filter(rfp=rfp).delete()
    model._default_manager.bulk_create(built)
    audit_record(
        actor=actor,
        action=f"rfp.{key}_changed",
        target=rfp,
        organisation=rfp.buyer_organisation,
        data={"rfp": rfp.reference, "count": len(built)},
    )
    return rfp


def rfp_set_artifacts(
    *, rfp: Rfp, artifacts: Sequence[Mapping[str, Any]], actor: Actor
) -> Rfp:
    """Replace the required-artifact checklist: ``[{kind, title, guidance,
    mandatory}]`` in order."""
    return _rfp_replace_rows(rfp=rfp, key="artifacts", rows=artifacts, actor=actor)


def rfp_set_metrics(
    *, rfp: Rfp, metrics: Sequence[Mapping[str, Any]], actor: Actor
) -> Rfp:
    """Replace the required metrics: ``[{name, stats, series, description}]`` in
    order."""
    return _rfp_replace_rows(rfp=rfp, key="metrics", rows=metrics, actor=actor)


def rfp_set_criteria(
    *, rfp: Rfp, criteria: Sequence[Mapping[str, Any]], actor: Actor
) -> Rfp:
    """Replace the evaluation criteria: ``[{name, description, weight}]``. The
    weights may add up to anything in a draft; publishing requires 100."""
    return _rfp_replace_rows(rfp=rfp, key="criteria", rows=criteria, actor=actor)


@transaction.atomic
def rfp_configure(*, rfp: Rfp, changes: Mapping[str, Any], actor: Actor) -> Rfp:
    """Several edits of a draft at once (the API's PATCH, the editor's steps), all
    or nothing; a ``requirements`` document last, over the rows just written."""
    _require_draft(locked_rfp(rfp))
    fields = {k: v for k, v in changes.items() if k not in ROWS and k != "requirements"}
    if fields:
        rfp = rfp_update(rfp=rfp, fields=fields, actor=actor)
    for key in ROWS:
        if key in changes:
            rfp = _rfp_replace_rows(rfp=rfp, key=key, rows=changes[key], actor=actor)
    if "requirements" in changes:
        rfp = rfp_set_requirements(
            rfp=rfp, document=changes["requirements"], actor=actor
        )
    return rfp


# --- invitations --------------------------------------------------------------------


@transaction.atomic
def rfp_invite_vendor(*, rfp: Rfp, vendor: Organisation, actor: Actor) -> Rfp:
    """Invite a vendor organisation. Once the RFP is published, the vendor's
    members are notified at once (before that, publishing notifies them)."""
    rfp = locked_rfp(rfp)
    if vendor.kind != Organisation.Kind.VENDOR:
        raise ProcurementError(f"{vendor} is not a vendor organisation.")
    if rfp.status != Rfp.Status.DRAFT and not rfp.takes_submissions(clock.now()):
        raise ProcurementError("Vendors can be invited only before the deadline.")
    if rfp.invited_vendors.filter(pk=vendor.pk).exists():
        raise ProcurementError(f"{vendor} is already invited.", code="already_invited")
    rfp.invited_vendors.add(vendor)
    audit_record(
        actor=actor,
        action="rfp.vendor_invited",
        target=rfp,
        organisation=rfp.buyer_organisation,
        data={"rfp": rfp.reference, "vendor": vendor.slug},
    )
    if rfp.status == Rfp.Status.PUBLISHED:
        notify_vendors(rfp, [vendor.pk], "rfp_invited")
    return rfp


@transaction.atomic
def rfp_uninvite_vendor(*, rfp: Rfp, vendor: Organisation, actor: Actor) -> Rfp:
    """Withdraw an invitation; only in a draft, which no vendor has seen yet."""
    rfp = locked_rfp(rfp)
    _require_draft(rfp)
    if not rfp.invited_vendors.filter(pk=vendor.pk).exists():
        raise ProcurementError(f"{vendor} is not invited.", code="not_invited")
    rfp.invited_vendors.remove(vendor)
    audit_record(
        actor=actor,
        action="rfp.vendor_uninvited",
        target=rfp,
        organisation=rfp.buyer_organisation,
        data={"rfp": rfp.reference, "vendor": vendor.slug},
    )
    return rfp

"""RFP authoring and lifecycle moves. Closing at the deadline lives in
``procurement.services.deadlines``; opening bids with the bids."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.urls import reverse

from accounts.audit import audit_record
from accounts.exceptions import InvalidTransition, Problem
from accounts.models import Organisation
from accounts.notifications import notify_users
from accounts.selectors import user_list_in
from procurement import clock
from procurement.defaults import default_configuration
from procurement.exceptions import ProcurementError, RfpNotEditable
from procurement.models import (
    RFP_TRANSITIONS,
    Criterion,
    RequiredArtifact,
    RequiredMetric,
    Rfp,
)

Actor = AbstractBaseUser | None

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
TERMS_FIELDS: Final = (
    "escrow_clause",
    "acceptance_clause",
    "retest_clause",
    "retest_tolerance_pct",
    "retest_vendor_funded",
    "audit_rights_clause",
    "standstill_days",
)
EDITABLE_FIELDS: Final = frozenset(BASICS_FIELDS + TERMS_FIELDS)
# what a template carries besides the terms and rows: no reference, title,
# deadlines or invitations
CONFIGURATION_FIELDS: Final = (
    "description",
    "min_bids",
    "addendum_extension_days",
    "workload_requirements",
)
# configuration key -> (row model, the row's own fields, the field unique per RFP)
ROWS: Final[dict[str, tuple[type[models.Model], tuple[str, ...], str]]] = {
    "artifacts": (RequiredArtifact, ("kind", "title", "guidance", "mandatory"), ""),
    "metrics": (RequiredMetric, ("name", "stats", "description"), "name"),
    "criteria": (Criterion, ("name", "description", "weight"), "name"),
}


# --- helpers ------------------------------------------------------------------------


def _problems(exc: ValidationError, prefix: str = "") -> list[Problem]:
    errors = exc.message_dict if hasattr(exc, "error_dict") else {"": exc.messages}
    return [
        Problem(
            code="invalid",
            message=message,
            path=".".join(p for p in (prefix, field) if p and p != "__all__") or None,
        )
        for field, messages in errors.items()
        for message in messages
    ]


def clean_or_refuse(
    obj: models.Model, *, prefix: str = "", label: str = "RFP", **options: Any
) -> None:
    """``full_clean()``, refused as a ProcurementError listing every problem."""
    try:
        obj.full_clean(**options)
    except ValidationError as exc:
        problems = _problems(exc, prefix)
        text = "; ".join(f"{p.path or 'rfp'}: {p.message}" for p in problems)
        raise ProcurementError(
            f"Invalid {label}: {text}", code="invalid", problems=problems
        ) from None


def _check_deadline_order(rfp: Rfp) -> None:
    questions, submission = rfp.questions_deadline, rfp.submission_deadline
    if questions is not None and submission is not None and questions >= submission:
        message = "The questions deadline must come before the submission deadline."
        raise ProcurementError(
            message,
            code="invalid",
            problems=[Problem("invalid", message, "questions_deadline")],
        )


def _lock(rfp: Rfp) -> Rfp:
    return Rfp.objects.select_for_update().get(pk=rfp.pk)


def _require_draft(rfp: Rfp) -> None:
    if rfp.status != Rfp.Status.DRAFT:
        raise RfpNotEditable(current=rfp.status)


def _configure(rfp: Rfp, configuration: Mapping[str, Any]) -> None:
    """Set the RFP's scalar settings and contract terms from a configuration."""
    for field in CONFIGURATION_FIELDS:
        if field in configuration:
            setattr(rfp, field, configuration[field])
    for field, value in configuration.get("terms", {}).items():
        if field in TERMS_FIELDS:
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
        model.objects.bulk_create(_build_rows(rfp, key, configuration.get(key, [])))


def rfp_url(rfp: Rfp) -> str:
    return reverse("procurement:rfp_detail", args=[rfp.public_id])


def notify_vendors(
    rfp: Rfp, vendor_ids: Iterable[int], template: str, **context: Any
) -> None:
    """Tell every member of these vendor organisations about the RFP."""
    notify_users(
        users=user_list_in(list(vendor_ids)),
        template=template,
        context={"rfp": rfp, **context},
        url=rfp_url(rfp),
    )


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
    """A draft RFP, pre-filled with ``configuration`` (``procurement.defaults``
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
    rfp = _lock(rfp)
    _require_draft(rfp)
    previous_reference = rfp.reference
    changed = sorted(f for f, v in fields.items() if getattr(rfp, f) != v)
    if not changed:
        return rfp
    for field in changed:
        setattr(rfp, field, fields[field])
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
    rfp = _lock(rfp)
    _require_draft(rfp)
    model = ROWS[key][0]
    built = _build_rows(rfp, key, rows)
    model.objects.filter(rfp=rfp).delete()
    model.objects.bulk_create(built)
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
    """Replace the required metrics: ``[{name, stats, description}]`` in order."""
    return _rfp_replace_rows(rfp=rfp, key="metrics", rows=metrics, actor=actor)


def rfp_set_criteria(
    *, rfp: Rfp, criteria: Sequence[Mapping[str, Any]], actor: Actor
) -> Rfp:
    """Replace the evaluation criteria: ``[{name, description, weight}]``. The
    weights may add up to anything in a draft; publishing requires 100."""
    return _rfp_replace_rows(rfp=rfp, key="criteria", rows=criteria, actor=actor)


@transaction.atomic
def rfp_configure(*, rfp: Rfp, changes: Mapping[str, Any], actor: Actor) -> Rfp:
    """Several edits of a draft at once (the API's PATCH), all or nothing."""
    _require_draft(_lock(rfp))
    fields = {k: v for k, v in changes.items() if k not in ROWS}
    if fields:
        rfp = rfp_update(rfp=rfp, fields=fields, actor=actor)
    for key in ROWS:
        if key in changes:
            rfp = _rfp_replace_rows(rfp=rfp, key=key, rows=changes[key], actor=actor)
    return rfp


# --- invitations --------------------------------------------------------------------


@transaction.atomic
def rfp_invite_vendor(*, rfp: Rfp, vendor: Organisation, actor: Actor) -> Rfp:
    """Invite a vendor organisation. Once the RFP is published, the vendor's
    members are notified at once (before that, publishing notifies them)."""
    rfp = _lock(rfp)
    if vendor.kind != Organisation.Kind.VENDOR:
        raise ProcurementError(f"{vendor} is not a vendor organisation.")
    open_for_bids = rfp.status == Rfp.Status.PUBLISHED and (
        rfp.submission_deadline > clock.now()
    )
    if rfp.status != Rfp.Status.DRAFT and not open_for_bids:
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
    rfp = _lock(rfp)
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


# --- lifecycle ----------------------------------------------------------------------


def rfp_publish_problems(rfp: Rfp) -> list[Problem]:
    """Why the draft cannot be published yet (empty when it can). Reads the
    criteria and invitations through ``.all()``, so prefetching them helps."""
    now, problems = clock.now(), []
    weights = sum(c.weight for c in rfp.criteria.all())
    if weights != 100:
        problems.append(Problem("weights", _weights_message(weights), "criteria"))
    if rfp.submission_deadline <= now:
        message = "The submission deadline has passed; move it into the future."
        problems.append(Problem("deadline_passed", message, "submission_deadline"))
    questions = rfp.questions_deadline
    if questions is not None and questions >= rfp.submission_deadline:
        message = "The questions deadline must come before the submission deadline."
        problems.append(Problem("questions_deadline", message, "questions_deadline"))
    elif questions is not None and questions <= now:
        message = "The questions deadline has passed; move it into the future."
        problems.append(Problem("questions_deadline", message, "questions_deadline"))
    invited = len(rfp.invited_vendors.all())
    if invited == 0:
        message = "Invite at least one vendor."
        problems.append(Problem("no_vendors", message, "invited_vendors"))
    elif invited < rfp.min_bids:
        message = (
            f"At least {rfp.min_bids} bids are required but only {invited} vendor(s) "
            "are invited: invite more vendors or lower the minimum number of bids."
        )
        problems.append(Problem("min_bids", message, "min_bids"))
    return problems


def _weights_message(total: int) -> str:
    if total == 0:
        return "Add evaluation criteria whose weights add up to 100."
    return f"The criterion weights add up to {total}; they must add up to 100."


@transaction.atomic
def rfp_publish(*, rfp: Rfp, actor: Actor) -> Rfp:
    """Publish a complete draft and notify every member of each invited vendor."""
    rfp = _lock(rfp)
    if rfp.status != Rfp.Status.DRAFT:
        raise InvalidTransition(
            entity="RFP", current=rfp.status, requested=Rfp.Status.PUBLISHED
        )
    clean_or_refuse(rfp)
    problems = rfp_publish_problems(rfp)
    if problems:
        raise ProcurementError(
            "The RFP is not ready to publish: " + " ".join(p.message for p in problems),
            code="not_ready",
            problems=problems,
        )
    rfp = rfp_transition(rfp=rfp, to=Rfp.Status.PUBLISHED, actor=actor)
    vendor_ids = rfp.invited_vendors.values_list("pk", flat=True)
    notify_vendors(rfp, vendor_ids, "rfp_invited")
    return rfp


@transaction.atomic
def rfp_cancel(*, rfp: Rfp, reason: str, actor: Actor) -> Rfp:
    """Cancel from any state that is not final; invited vendors are told why,
    unless the RFP was still a draft that they never saw."""
    reason = reason.strip()
    if not reason:
        raise ProcurementError(
            "Give a reason for cancelling; invited vendors will read it.",
            code="reason_required",
        )
    was = _lock(rfp).status
    rfp = rfp_transition(rfp=rfp, to=Rfp.Status.CANCELLED, actor=actor, note=reason)
    if was != Rfp.Status.DRAFT:
        vendor_ids = rfp.invited_vendors.values_list("pk", flat=True)
        notify_vendors(rfp, vendor_ids, "rfp_cancelled", reason=reason)
    return rfp


@transaction.atomic
def rfp_transition(*, rfp: Rfp, to: str, actor: Actor, note: str = "") -> Rfp:
    """The one place an RFP's status changes; verb services call it after
    checking their own preconditions."""
    rfp = _lock(rfp)
    if to not in RFP_TRANSITIONS[rfp.status]:
        raise InvalidTransition(entity="RFP", current=rfp.status, requested=to)
    old, rfp.status = rfp.status, to
    stamp = {Rfp.Status.CLOSED: "closed_at", Rfp.Status.OPENED: "opened_at"}.get(to)
    if stamp:
        setattr(rfp, stamp, clock.now())
    rfp.save(update_fields=["status", "updated_at", *([stamp] if stamp else [])])
    audit_record(
        actor=actor,
        action="rfp.transitioned",
        target=rfp,
        organisation=rfp.buyer_organisation,
        data={"rfp": rfp.reference, "from": old, "to": to, "note": note},
    )
    return rfp

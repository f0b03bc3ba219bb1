"""Addenda: changes to a published RFP's conditions, as Prozorro makes them.

Every addendum records a visible diff ``{field: [old, new]}`` with a public reason,
marks every submitted bid "needs re-confirmation" (the bid was made against other
conditions) and, when it lands within ``rfp.addendum_extension_days`` of the
submission deadline, pushes the deadline out so that that many days remain.

Choices the issue leaves open:
- Values equal to the current ones are left out of the diff; an addendum in which
  nothing differs is refused ("nothing changed").
- A new submission deadline the buyer sets explicitly must itself leave
  ``addendum_extension_days`` after the addendum; an earlier one is refused rather
  than silently moved (the buyer picked a date and should know it did not hold).
- The automatic extension is recorded in ``deadline_extended_to`` (and in the audit
  row with the deadline it replaced), not in ``changes``: ``changes`` holds what the
  buyer changed, the extension what the rule did.
- The requirements document (``changes["requirements"]``, a whole
  ``reprogate.rfp-requirements/v1`` document) is kept as ``[old, new]`` like any
  field, both composed and canonical; the diff shows it path by path
  (``procurement.lib.requirements.diff``) and the audit row names the paths."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models import Max
from django.urls import reverse

from accounts.exceptions import Problem
from accounts.selectors import clock
from accounts.selectors.users import user_list_in
from accounts.services.audit import audit_record
from accounts.services.notifications import notify_users
from procurement.exceptions import ProcurementError
from procurement.lib.requirements import diff as requirement_changes
from procurement.models import Addendum, Rfp
from procurement.models.rfp import RFP_TERMS_FIELDS
from procurement.selectors.clarifications import addendum_diff_rows
from procurement.selectors.requirements import requirements_document
from procurement.services.bids import bids_require_reconfirmation
from procurement.services.deadlines import rfp_apply_deadlines
from procurement.services.requirements import (
    requirements_validated,
    requirements_write,
)

AMENDABLE_FIELDS: Final[tuple[str, ...]] = (
    "title",
    "description",
    "questions_deadline",
    "submission_deadline",
    "min_bids",
    "workload_requirements",
    # every contract term but the standstill period
    *(f for f in RFP_TERMS_FIELDS if f != "standstill_days"),
)
REASON_MAX_LENGTH = 4000

# The Python types an amendable field accepts, by model field class.
_ACCEPTED_TYPES: Final[dict[type, tuple[type, ...]]] = {
    models.CharField: (str,),
    models.TextField: (str,),
    models.DateTimeField: (datetime,),
    models.PositiveSmallIntegerField: (int,),
    models.DecimalField: (Decimal, int, str),
    models.BooleanField: (bool,),
    models.JSONField: (dict,),
}


def json_safe(value: object) -> Any:
    """How a value is kept in ``Addendum.changes``: ISO datetimes in UTC, decimal
    strings; everything else as it is."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return value


def _decimal(name: str, raw: object, *, places: int) -> Decimal:
    """Padded to the field's places; more places are left for full_clean to refuse."""
    try:
        number = Decimal(str(raw))
        padded = number.quantize(Decimal(1).scaleb(-places))
        if not number.is_finite():
            raise InvalidOperation
    except InvalidOperation:
        raise ValueError(f"{name} takes a finite decimal number.") from None
    return padded if padded == number else number


def _coerce_one(name: str, raw: object) -> object:
    field = Rfp._meta.get_field(name)
    if raw is None and field.null:
        return None
    accepted = _ACCEPTED_TYPES[type(field)]
    if not isinstance(raw, accepted) or (
        isinstance(raw, bool) and bool not in accepted
    ):
        kinds = " or ".join(t.__name__ for t in accepted)
        raise ValueError(f"{name} takes {kinds}, not {type(raw).__name__}.")
    if isinstance(raw, datetime) and raw.tzinfo is None:
        raise ValueError(f"{name} needs a time zone.")
    if isinstance(field, models.DecimalField):
        return _decimal(name, raw, places=field.decimal_places)
    return raw


def _coerce(changes: dict[str, object]) -> dict[str, object]:
    """The changes as typed values, or a refusal naming every problem."""
    if not isinstance(changes, dict):
        raise ProcurementError("Changes are a mapping of field name to new value.")
    problems = [
        Problem(
            "unknown_field", f"{n} cannot be changed by an addendum.", f"changes.{n}"
        )
        for n in changes
        if n not in AMENDABLE_FIELDS
    ]
    values: dict[str, object] = {}
    for name in (n for n in changes if n in AMENDABLE_FIELDS):
        try:
            values[name] = _coerce_one(name, changes[name])
        except ValueError as exc:
            problems.append(Problem("invalid", str(exc), f"changes.{name}"))
    if problems:
        raise ProcurementError(
            "The addendum has problems: " + " ".join(p.message for p in problems),
            problems=problems,
        )
    return values


def _push_deadline(rfp: Rfp, *, explicit: bool) -> datetime | None:
    """Leave ``addendum_extension_days`` after the addendum: refuse an explicit
    deadline that does not, extend the current one that does not."""
    days = rfp.addendum_extension_days
    earliest = clock.now() + timedelta(days=days)
    if rfp.submission_deadline >= earliest:
        return None
    if explicit:
        raise ProcurementError(
            f"An addendum must leave at least {days} day(s) to the submission "
            f"deadline: set it to {earliest:%Y-%m-%d %H:%M} UTC or later.",
            code="deadline_too_soon",
        )
    rfp.submission_deadline = earliest
    return earliest


def _validate(rfp: Rfp) -> None:
    questions, submission = rfp.questions_deadline, rfp.submission_deadline
    if questions is not None and questions > submission:
        raise ProcurementError(
            "The questions deadline cannot be after the submission deadline.",
            problems=[
                Problem(
                    "invalid",
                    "After the submission deadline.",
                    "changes.questions_deadline",
                )
            ],
        )
    try:
        rfp.full_clean()
    except ValidationError as exc:
        problems = [
            Problem("invalid", message, f"changes.{name}")
            for name, messages in exc.message_dict.items()
            for message in messages
        ]
        raise ProcurementError(
            "The addendum has problems: " + " ".join(p.message for p in problems),
            problems=problems,
        ) from None


@dataclass(frozen=True)
class _Applied:
    diff: dict[str, list[Any]]
    extended_from: datetime | None
    extended_to: datetime | None


def _requirements_change(rfp: Rfp, document: object) -> dict[str, list[Any]]:
    """``{"requirements": [old, new]}`` when the document changes anything."""
    if document is None:
        return {}
    new = requirements_validated(document, prefix="changes.requirements")
    old = requirements_document(rfp)
    return {"requirements": [old, new]} if requirement_changes(old, new) else {}


def _apply(
    rfp: Rfp, values: dict[str, object], requirements: dict[str, list[Any]]
) -> _Applied:
    """Set the new values on ``rfp`` (unsaved) and say what changed."""
    diff = {
        name: [json_safe(getattr(rfp, name)), json_safe(value)]
        for name, value in values.items()
        if getattr(rfp, name) != value
    }
    diff.update(requirements)
    if not diff:
        raise ProcurementError(
            "Nothing changed: every value given equals the RFP's current one.",
            code="nothing_changed",
        )
    for name in values:
        if name in diff:
            setattr(rfp, name, values[name])
    before = rfp.submission_deadline
    extended_to = _push_deadline(rfp, explicit="submission_deadline" in diff)
    _validate(rfp)
    return _Applied(diff, before if extended_to else None, extended_to)


@transaction.atomic
def rfp_amend(
    *, rfp: Rfp, changes: dict[str, object], reason: str, actor: User
) -> Addendum:
    """Issue the next addendum of a published RFP."""
    rfp = rfp_apply_deadlines(rfp=Rfp.objects.select_for_update().get(pk=rfp.pk))
    if rfp.status != Rfp.Status.PUBLISHED:
        raise ProcurementError("Only a published RFP is amended by an addendum.")
    reason = (reason or "").strip()
    if not reason or len(reason) > REASON_MAX_LENGTH:
        raise ProcurementError(
            f"Give the reason (up to {REASON_MAX_LENGTH} characters); "
            "every invited vendor reads it.",
            code="reason",
        )
    changes = dict(changes) if isinstance(changes, dict) else changes
    document = changes.pop("requirements", None) if isinstance(changes, dict) else None
    requirements = _requirements_change(rfp, document)
    applied = _apply(rfp, _coerce(changes), requirements)
    if requirements:
        requirements_write(rfp, requirements["requirements"][1])
    fields = [f for f in applied.diff if f != "requirements"]
    rfp.save(update_fields=[*fields, "submission_deadline", "updated_at"])
    addendum = _addendum_create(rfp, applied, reason=reason, actor=actor)
    reconfirm = bids_require_reconfirmation(
        rfp=rfp, actor=actor, note=f"addendum {addendum.number}"
    )
    audit_record(
        actor=actor,
        action="addendum.issued",
        target=addendum,
        organisation=rfp.buyer_organisation,
        data={
            "rfp": rfp.reference,
            "number": addendum.number,
            "changes": applied.diff,
            "requirements_changed": [
                c.path for c in requirement_changes(*requirements["requirements"])
            ]
            if requirements
            else [],
            "reason": reason,
            "bids_needing_reconfirmation": reconfirm,
            "deadline_extended_from": json_safe(applied.extended_from),
            "deadline_extended_to": json_safe(applied.extended_to),
        },
    )
    _notify_issued(addendum)
    return addendum


def _addendum_create(
    rfp: Rfp, applied: _Applied, *, reason: str, actor: User
) -> Addendum:
    last = rfp.addenda.aggregate(last=Max("number"))["last"] or 0
    addendum = Addendum(
        rfp=rfp,
        number=last + 1,
        reason=reason,
        changes=applied.diff,
        issued_by=actor,
        issued_at=clock.now(),
        deadline_extended_to=applied.extended_to,
    )
    addendum.full_clean()
    addendum.save()
    return addendum


def _notify_issued(addendum: Addendum) -> None:
    rfp = addendum.rfp
    notify_users(
        users=user_list_in(rfp.invited_vendors.values_list("id", flat=True)),
        template="addendum_issued",
        context={
            "rfp": rfp,
            "addendum": addendum,
            "rows": addendum_diff_rows(addendum),
        },
        url=reverse("procurement:rfp_clarifications", args=[rfp.public_id]),
    )

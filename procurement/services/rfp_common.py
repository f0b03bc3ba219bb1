"""Helpers the RFP services share: refusing invalid rows with every problem, the
row lock, and telling invited vendors."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from django.urls import reverse

from accounts.exceptions import Problem
from accounts.selectors.users import user_list_in
from accounts.services.notifications import notify_users
from procurement.exceptions import ProcurementError
from procurement.models import Rfp


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


def locked_rfp(rfp: Rfp) -> Rfp:
    return Rfp.objects.select_for_update().get(pk=rfp.pk)


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

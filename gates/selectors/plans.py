"""Reading gate plans: the current (frozen) plan, the draft and the versions of
one vendor on one RFP, one plan by id for a user, and a plan's file.

Visibility (``gates.permissions``): the RFP's buyer organisation sees every
plan, drafts included; the lab and audit organisations it engages see the
frozen and superseded versions; a vendor sees its own frozen and superseded
versions only (a draft is the buyer's work in progress)."""

from __future__ import annotations

import uuid

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet

from accounts.models import Organisation
from accounts.selectors import organisation_ids_for
from gates.models import GatePlan
from gates.permissions import gate_rows_visible_q
from procurement.models import Rfp

AnyUser = AbstractBaseUser | AnonymousUser
S = GatePlan.Status


def _pair(rfp: Rfp, vendor: Organisation) -> QuerySet[GatePlan]:
    return GatePlan.objects.filter(rfp=rfp, vendor_organisation=vendor)


def plan_current(rfp: Rfp, vendor: Organisation) -> GatePlan | None:
    """The frozen plan evaluations use now (None before the first freeze)."""
    return _pair(rfp, vendor).filter(status=S.FROZEN).select_related("bundle").first()


def plan_draft(rfp: Rfp, vendor: Organisation) -> GatePlan | None:
    return _pair(rfp, vendor).filter(status=S.DRAFT).first()


def plan_versions(
    rfp: Rfp, vendor: Organisation, *, drafts: bool = True
) -> QuerySet[GatePlan]:
    """Every version, newest first, with who made and froze it."""
    plans = _pair(rfp, vendor).select_related(
        "created_by", "frozen_by", "bundle", "supersedes"
    )
    return plans if drafts else plans.exclude(status=S.DRAFT)


def plan_list_visible_to(user: AnyUser) -> QuerySet[GatePlan]:
    if not user.is_authenticated:
        return GatePlan.objects.none()
    drafts = Q(rfp__buyer_organisation_id__in=organisation_ids_for(user))
    return GatePlan.objects.filter(
        gate_rows_visible_q(user), drafts | ~Q(status=S.DRAFT)
    ).select_related(
        "rfp__buyer_organisation",
        "vendor_organisation",
        "bundle",
        "created_by",
        "frozen_by",
        "supersedes",
    )


def plan_get_visible(user: AnyUser, public_id: uuid.UUID) -> GatePlan | None:
    return plan_list_visible_to(user).filter(public_id=public_id).first()


def plan_export(plan: GatePlan) -> bytes:
    """The plan's file: exactly its stored canonical bytes, so that the file's
    SHA-256 is the plan's ``sha256`` (the digest evaluations cite)."""
    return plan.document.encode("utf-8")

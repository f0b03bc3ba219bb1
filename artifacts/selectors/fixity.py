"""Reads of fixity runs for the dashboards and the fixity pages.

The buyer organisations' buyers and admins and the auditors they engaged see
the runs (installation-wide facts: when escrow was checked and how much), and
of the findings those about their own RFPs' deposits and those that concern
every buyer (the log, objects no deposit names). Nobody else sees any."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet

from accounts.selectors import audit_trail_organisation_ids
from artifacts.models import FixityFinding, FixityRun
from artifacts.permissions import can_see_fixity

AnyUser = AbstractBaseUser | AnonymousUser


def fixity_run_list(user: AnyUser) -> QuerySet[FixityRun]:
    if not can_see_fixity(user):
        return FixityRun.objects.none()
    return FixityRun.objects.order_by("-started_at", "-id")


def fixity_run_get(user: AnyUser, public_id: uuid.UUID) -> FixityRun | None:
    return fixity_run_list(user).filter(public_id=public_id).first()


def fixity_findings_visible_to(
    user: AnyUser, run: FixityRun
) -> QuerySet[FixityFinding]:
    buyers = audit_trail_organisation_ids(user)
    return (
        run.findings.filter(
            Q(buyer_organisation__isnull=True) | Q(buyer_organisation_id__in=buyers)
        )
        .select_related("buyer_organisation")
        .order_by("id")
    )


@dataclass(frozen=True)
class FixitySummary:
    """The latest run and the findings of it the user may see (the first few)."""

    run: FixityRun | None
    findings: list[FixityFinding]
    count: int


def fixity_summary_for(user: AnyUser, *, latest: int = 5) -> FixitySummary | None:
    """None for users who see no fixity (vendors, labs, evaluators)."""
    if not can_see_fixity(user):
        return None
    run = fixity_run_list(user).first()
    if run is None:
        return FixitySummary(None, [], 0)
    findings = fixity_findings_visible_to(user, run)
    return FixitySummary(run, list(findings[:latest]), findings.count())

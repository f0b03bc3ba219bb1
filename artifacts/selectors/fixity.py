"""Reads of fixity runs for the dashboards and the fixity pages, each in the
scope of the user reading them.

The buyer organisations' buyers and admins and the auditors they engaged see
every run (when escrow was checked, and the log's facts, which its public
checkpoint states anyway) with the findings in their scope: those about their
own RFPs' escrow and those about the log itself, which every buyer relies on.
A run's verdict and finding count are those of that scope, and of the counts
they see those of their own deposits (``FixityScope``): never another buyer's
findings, their number, nor the installation-wide counts (stored objects
listed, blobs and bytes re-hashed, deposits and events checked).

Findings about stored objects no deposit names (or whose RFP is gone) carry no
organisation and may be anyone's: only the installation's operators see them
(``can_see_all_fixity``), with whole runs; they act on them. Nobody else sees
any run."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Count, F, Q, QuerySet, Sum

from accounts.selectors.users import audit_trail_organisation_ids
from artifacts.models import Blob, DepositBlob, FixityFinding, FixityRun
from artifacts.permissions import can_see_all_fixity, can_see_fixity
from artifacts.selectors.escrow import deposit_list_visible_to

AnyUser = User | AnonymousUser
LOG_KINDS = "log."  # the kinds about the log itself start so


def _finding_scope(user: AnyUser, prefix: str = "") -> Q | None:
    """The findings ``user`` sees, as a condition (with ``prefix`` on each
    lookup); None: all of them."""
    if can_see_all_fixity(user):
        return None
    buyers = audit_trail_organisation_ids(user)
    return Q(**{f"{prefix}buyer_organisation_id__in": buyers}) | Q(
        **{
            f"{prefix}buyer_organisation__isnull": True,
            f"{prefix}kind__startswith": LOG_KINDS,
        }
    )


def fixity_run_list(user: AnyUser) -> QuerySet[FixityRun]:
    """The runs, newest first, each annotated ``findings_seen``: how many of
    its findings the user sees (its verdict for them)."""
    if not can_see_fixity(user):
        return FixityRun.objects.none()
    runs = FixityRun.objects.order_by("-started_at", "-id")
    scope = _finding_scope(user, "findings__")
    if scope is None:
        return runs.annotate(findings_seen=F("findings_count"))
    return runs.annotate(findings_seen=Count("findings", filter=scope))


def fixity_run_get(user: AnyUser, public_id: uuid.UUID) -> FixityRun | None:
    return fixity_run_list(user).filter(public_id=public_id).first()


def fixity_findings_visible_to(
    user: AnyUser, run: FixityRun
) -> QuerySet[FixityFinding]:
    findings = run.findings.all()
    scope = _finding_scope(user)
    if scope is not None:
        findings = findings.filter(scope)
    return findings.select_related("buyer_organisation").order_by("id")


@dataclass(frozen=True)
class FixityScope:
    """What a run checked that the user may count: the whole installation for
    operators (``everything``), else the user's buyers' deposits in escrow when
    it started, their distinct blobs and those blobs' bytes."""

    everything: bool
    deposits: int
    blobs: int
    bytes_hashed: int


def fixity_scope_for(user: AnyUser, run: FixityRun) -> FixityScope:
    if can_see_all_fixity(user):
        return FixityScope(True, run.deposits_checked, run.blobs_checked,
                           run.bytes_hashed)  # fmt: skip
    deposits = deposit_list_visible_to(user).filter(
        rfp__buyer_organisation_id__in=audit_trail_organisation_ids(user),
        deposited_at__lte=run.started_at,
    )
    items = DepositBlob.objects.filter(deposit__in=deposits.values("pk"))
    blobs = Blob.objects.filter(pk__in=items.values("blob_id")).aggregate(
        count=Count("pk"), size=Sum("size")
    )
    return FixityScope(False, deposits.count(), blobs["count"], blobs["size"] or 0)


@dataclass(frozen=True)
class FixitySummary:
    """The latest run, what of it the user may count and the findings of it
    the user may see (the first few)."""

    run: FixityRun | None
    scope: FixityScope | None
    findings: list[FixityFinding]
    count: int


def fixity_summary_for(user: AnyUser, *, latest: int = 5) -> FixitySummary | None:
    """None for users who see no fixity (vendors, labs, evaluators)."""
    if not can_see_fixity(user):
        return None
    run = fixity_run_list(user).first()
    if run is None:
        return FixitySummary(None, None, [], 0)
    findings = fixity_findings_visible_to(user, run)
    return FixitySummary(
        run, fixity_scope_for(user, run), list(findings[:latest]), findings.count()
    )

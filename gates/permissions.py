"""Who may see and do what on an RFP's gates: pure predicates over memberships.

Reading (the board, gate and criterion pages, evaluations, obligations):

- the RFP's buyer organisation, every member whatever the role (buyers,
  evaluators, admins) — they drive the gates;
- the lab and audit organisations the buyer engages (lab operators, auditors,
  admins), read-only;
- a vendor (vendor or admin of a vendor organisation) only its own plans,
  evaluations and obligations: never another vendor's row, verdict or count;
- anyone else: nothing (the pages answer 404).

Views fetch the RFP through ``procurement``'s ``rfp_get_visible`` first, then
take the user's ``GateScope`` for it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Q

from accounts.models import Organisation, Role
from accounts.selectors.users import (
    buyer_organisation_ids_served_by,
    membership_list_for,
    organisation_ids_for,
)
from gates.models import Evaluation, Report
from procurement.models import Rfp
from procurement.permissions import can_manage_rfp
from procurement.selectors.rfps import rfp_list_visible_to

AnyUser = User | AnonymousUser

ENGAGED_ROLES: Final = (Role.LABOPS, Role.AUDITOR, Role.ADMIN)
LAB_ROLES: Final = (Role.LABOPS, Role.ADMIN)
VENDOR_ROLES: Final = (Role.VENDOR, Role.ADMIN)


@dataclass(frozen=True)
class GateScope:
    """What one user may see of one RFP's gates."""

    buyer_side: bool  # a member of the RFP's buyer organisation
    engaged: bool  # a lab operator, auditor or admin of an engaged organisation
    lab: bool  # operates a lab the buyer engages
    vendor_ids: frozenset[int]  # the vendor organisations the user acts for

    @property
    def full(self) -> bool:
        """Sees every vendor's gates (read-only unless buyer-side)."""
        return self.buyer_side or self.engaged

    @property
    def visible(self) -> bool:
        return self.full or bool(self.vendor_ids)

    def sees_vendor(self, vendor_id: int) -> bool:
        return self.full or vendor_id in self.vendor_ids


NO_SCOPE: Final = GateScope(False, False, False, frozenset())


def gate_scope(user: AnyUser, rfp: Rfp) -> GateScope:
    """The user's scope on ``rfp``'s gates (at most two queries, once per user
    object and RFP: cached on the user, as ``user_roles`` does)."""
    if not user.is_authenticated:
        return NO_SCOPE
    cache: dict[int, GateScope] = user.__dict__.setdefault("_reprogate_gates", {})
    if rfp.pk not in cache:
        cache[rfp.pk] = _scope(user, rfp)
    return cache[rfp.pk]


def _scope(user: AnyUser, rfp: Rfp) -> GateScope:
    rows = list(
        membership_list_for(user).values_list(
            "organisation_id", "role", "organisation__kind"
        )
    )
    own = {org for org, _, _ in rows}
    engaged_ids: set[int] = set()
    if own - {rfp.buyer_organisation_id}:
        through = Organisation.engages.through
        engaged_ids = set(
            through.objects.filter(
                from_organisation_id=rfp.buyer_organisation_id,
                to_organisation_id__in=own,
            ).values_list("to_organisation_id", flat=True)
        )
    return GateScope(
        buyer_side=rfp.buyer_organisation_id in own,
        engaged=any(o in engaged_ids and r in ENGAGED_ROLES for o, r, _ in rows),
        lab=any(
            o in engaged_ids and r in LAB_ROLES and k == Organisation.Kind.LAB
            for o, r, k in rows
        ),
        vendor_ids=frozenset(
            o for o, r, k in rows if k == Organisation.Kind.VENDOR and r in VENDOR_ROLES
        ),
    )


def can_view_gate_plan(user: AnyUser, rfp: Rfp, vendor: Organisation) -> bool:
    """The plans of ``vendor`` on ``rfp``: the buyer side and the engaged lab and
    audit organisations see every vendor's, a vendor its own."""
    return gate_scope(user, rfp).sees_vendor(vendor.pk)


def can_see_gate_plan_drafts(user: AnyUser, rfp: Rfp) -> bool:
    """Drafts are the buyer's work in progress: the buyer side's only."""
    return gate_scope(user, rfp).buyer_side


def can_edit_gate_plan(user: AnyUser, rfp: Rfp) -> bool:
    """Writing, freezing, importing plans: the RFP's buyers and admins."""
    return can_manage_rfp(user, rfp)


def can_view_gates(user: AnyUser, rfp: Rfp) -> bool:
    return gate_scope(user, rfp).visible


def can_decide_gates(user: AnyUser, rfp: Rfp) -> bool:
    """Decisions are the buyer side's (the services check the rules)."""
    return gate_scope(user, rfp).buyer_side


def gate_rows_visible_q(user: AnyUser) -> Q:
    """The gate rows (anything with ``rfp`` and ``vendor_organisation``: plans,
    evaluations, obligations) the user may see across every RFP they see."""
    if not user.is_authenticated:
        return Q(pk__in=[])
    full = organisation_ids_for(user)
    full |= buyer_organisation_ids_served_by(user, *ENGAGED_ROLES)
    vendors = organisation_ids_for(user, *VENDOR_ROLES)
    rfps = rfp_list_visible_to(user).values("id")
    return Q(rfp_id__in=rfps) & (
        Q(rfp__buyer_organisation_id__in=full) | Q(vendor_organisation_id__in=vendors)
    )


def lab_buyer_ids(user: AnyUser) -> set[int]:
    """The buyer organisations whose lab the user operates (lab deviations)."""
    if not user.is_authenticated:
        return set()
    labs = (
        membership_list_for(user)
        .filter(role__in=LAB_ROLES, organisation__kind=Organisation.Kind.LAB)
        .values("organisation_id")
    )
    return set(
        Organisation.objects.filter(
            kind=Organisation.Kind.BUYER, engages__in=labs
        ).values_list("id", flat=True)
    )


def can_download_report(user: AnyUser, report: Report) -> bool:
    """A signed report or certificate: whoever sees its evaluation — the buyer
    side, the engaged lab and audit organisations, and the vendor it is about
    (never another vendor)."""
    return gate_scope(user, report.rfp).sees_vendor(report.vendor_organisation_id)


def can_request_report(user: AnyUser, rfp: Rfp) -> bool:
    """Requesting (or retrying) a report: whoever may evaluate the RFP's gates —
    the buyer side and the operators of a lab the buyer engages."""
    scope = gate_scope(user, rfp)
    return scope.buyer_side or scope.lab


def can_download_evaluation_evidence(user: AnyUser, evaluation: Evaluation) -> bool:
    """An evaluation's evidence package: whoever sees the evaluation's escrow on
    its page — the RFP's buyer side and the lab and audit organisations the buyer
    engages — and the vendor the evaluation is about, which sees its documents
    and reports already and may check the verdict itself. The package holds the
    judged bundle's archive, so the user must also be one who may have that
    bundle's own package (sealed from the buyer until the bids are opened)."""
    from artifacts.selectors.escrow import evidence_bundle_get

    if evaluation.deposit_id is None:
        return False
    scope = gate_scope(user, evaluation.rfp)
    if not (scope.full or evaluation.vendor_organisation_id in scope.vendor_ids):
        return False
    return evidence_bundle_get(user, evaluation.campaign.bundle.public_id) is not None

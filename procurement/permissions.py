"""Who may do what on an RFP: pure predicates over memberships.

Views and APIs fetch the RFP through ``rfp_get_visible`` first (404 for RFPs the
caller may not know exist), then check one of these (403 when it says no)."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User

from accounts.models import Organisation, Role
from accounts.selectors.users import organisation_ids_for
from procurement.models import Rfp

AnyUser = User | AnonymousUser


def _holds(user: AnyUser, organisation_id: int, *roles: str) -> bool:
    return organisation_id in organisation_ids_for(user, *roles)


def is_buyer_side(user: AnyUser, rfp: Rfp) -> bool:
    """Any member of the buying organisation (buyers, evaluators, admins)."""
    return _holds(
        user, rfp.buyer_organisation_id, Role.BUYER, Role.EVALUATOR, Role.ADMIN
    )


def can_manage_rfp(user: AnyUser, rfp: Rfp) -> bool:
    return _holds(user, rfp.buyer_organisation_id, Role.BUYER, Role.ADMIN)


def can_evaluate(user: AnyUser, rfp: Rfp) -> bool:
    return _holds(user, rfp.buyer_organisation_id, Role.EVALUATOR)


def bidding_organisation(user: AnyUser, rfp: Rfp) -> Organisation | None:
    """The invited vendor organisation the user acts for on this RFP, if any."""
    own = organisation_ids_for(user, Role.VENDOR, Role.ADMIN)
    return rfp.invited_vendors.filter(id__in=own, kind=Organisation.Kind.VENDOR).first()

"""The fidelity matrix of an RFP, per vendor (``procurement.lib.fidelity``): the
RFP's requirements document beside what each vendor's accepted bundle declares
and what the lab captured of its latest run.

Who sees what: the buyer side sees every vendor that bid, once the bids are opened
(nothing while they are sealed); a vendor sees only its own organisation's matrix.
Read-only; a query count that does not depend on the number of vendors."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from accounts.models import Organisation
from procurement.lib.fidelity import Matrix, fidelity_matrix
from procurement.models import Bid, Rfp
from procurement.permissions import AnyUser, bidding_organisation, is_buyer_side
from procurement.selectors.evaluation import evaluation_bids
from procurement.selectors.fidelity_sources import captured_for, declared_for
from procurement.selectors.requirements import requirements_document


@dataclass(frozen=True)
class VendorFidelity:
    vendor: Organisation
    bid: Bid | None
    matrix: Matrix
    approach: str  # what its bundle declares ("" when nothing)


@dataclass(frozen=True)
class RfpFidelity:
    rfp: Rfp
    sealed: bool  # the buyer side sees nothing before the bids are opened
    vendors: list[VendorFidelity]

    def of(self, organisation_id: int) -> VendorFidelity | None:
        return next((v for v in self.vendors if v.vendor.pk == organisation_id), None)


def fidelity_for(rfp: Rfp, bids: Iterable[Bid]) -> list[VendorFidelity]:
    """The matrix of each bid's vendor (the bundle its bid names, else its newest
    accepted one), in the bids' order."""
    bids = list(bids)
    ids = [b.vendor_organisation_id for b in bids]
    named = {
        b.vendor_organisation_id: str(b.bundle_public_id)
        for b in bids
        if b.bundle_public_id is not None
    }
    return _matrices(rfp, [(b.vendor_organisation, b) for b in bids], ids, named)


def _matrices(
    rfp: Rfp,
    vendors: list[tuple[Organisation, Bid | None]],
    ids: list[int],
    named: dict[int, str],
) -> list[VendorFidelity]:
    document = requirements_document(rfp)
    declared, captured = declared_for(rfp, ids, named), captured_for(rfp, ids)
    rows = []
    for organisation, bid in vendors:
        own = declared.get(organisation.pk)
        matrix = fidelity_matrix(document, own, captured.get(organisation.pk))
        approach = str(own.manifest.get("approach") or "") if own else ""
        rows.append(VendorFidelity(organisation, bid, matrix, approach))
    return rows


def fidelity_visible_to(user: AnyUser, rfp: Rfp) -> RfpFidelity | None:
    """The matrices ``user`` may see on ``rfp`` (None: not the buyer side nor a
    bidding vendor). The RFP must come from ``rfp_get_visible``."""
    own = bidding_organisation(user, rfp)
    if own is not None:
        bid = rfp.bids.filter(vendor_organisation=own).order_by("-id").first()
        if bid is not None:
            return RfpFidelity(rfp, False, fidelity_for(rfp, [bid]))
        return RfpFidelity(rfp, False, _matrices(rfp, [(own, None)], [own.pk], {}))
    if not is_buyer_side(user, rfp):
        return None
    if rfp.is_sealed:
        return RfpFidelity(rfp, True, [])
    return RfpFidelity(rfp, False, fidelity_for(rfp, evaluation_bids(rfp)))


def fidelity_by_vendor(rfp: Rfp, bids: Iterable[Bid]) -> dict[int, VendorFidelity]:
    """Vendor organisation id -> its matrix ({} while the bids are sealed): what the
    comparison, the scoring form and the award read."""
    if rfp.is_sealed:
        return {}
    return {v.vendor.pk: v for v in fidelity_for(rfp, bids)}

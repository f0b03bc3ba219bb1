"""The RFP's submission conditions on the bundle a bid names.

An RFP with ``bid_requires_bundle`` takes a bid (submitted, replaced or
re-confirmed) only when it names an accepted bundle of the vendor on that RFP
that covers every mandatory required artifact (``RequiredArtifact.mandatory``)
with its content check passing (``artifacts.lib.content``, judged at ingest).
Otherwise the bid is refused with one problem per gap at ``bundle``, naming the
kinds, so the page can show them beside the bundle chosen and the API lists them.
The checklist is the RFP's as it stands (an addendum may have changed it)."""

from __future__ import annotations

from accounts.exceptions import Problem
from accounts.models import Organisation
from procurement.exceptions import ProcurementError
from procurement.models import Rfp
from procurement.selectors.evidence import bid_evidence_own
from procurement.selectors.evidence_sources import ChecklistItem, SignedBundle
from procurement.services.bid_inputs import bundle_choose


def _gap_problem(item: ChecklistItem) -> Problem:
    if item.present:
        code = "bundle_kind_failing"
        message = (
            f"{item.title} ({item.kind}): the bundle's files of this kind fail "
            "their content check (see the bundle's page)."
        )
    else:
        code = "bundle_kind_missing"
        message = f"{item.title} ({item.kind}): the bundle has no file of this kind."
    return Problem(code, message, "bundle")


def bid_bundle_conditions_check(
    *, rfp: Rfp, organisation: Organisation, bundle: SignedBundle | None
) -> None:
    """Raise ``ProcurementError`` unless ``bundle`` meets the RFP's conditions
    (nothing to meet without ``bid_requires_bundle``)."""
    if not rfp.bid_requires_bundle:
        return
    if bundle is None:
        message = (
            f"{rfp.reference} takes a bid only with an accepted bundle of yours "
            "that covers every mandatory artifact: upload one first."
        )
        raise ProcurementError(
            message,
            code="bundle_required",
            problems=[Problem("bundle_required", message, "bundle")],
        )
    gaps = bid_evidence_own(rfp, organisation, bundle.bundle_id).mandatory_gaps
    if gaps:
        kinds = ", ".join(item.kind for item in gaps)
        message = (
            f"{rfp.reference} takes a bid only with a bundle that covers every "
            f"mandatory artifact; bundle {bundle.bundle_id} lacks: {kinds}."
        )
        raise ProcurementError(
            message,
            code="bundle_incomplete",
            problems=[_gap_problem(item) for item in gaps],
        )


def bid_named_bundle_check(
    *, rfp: Rfp, organisation: Organisation, bundle_id: str | None
) -> None:
    """The same for the bundle a bid already names (its public id; None: none),
    when it is re-confirmed under changed conditions."""
    if not rfp.bid_requires_bundle:
        return
    bundle = None
    if bundle_id:
        bundle = bundle_choose(
            rfp=rfp, organisation_id=organisation.pk, public_id=bundle_id
        )
    bid_bundle_conditions_check(rfp=rfp, organisation=organisation, bundle=bundle)

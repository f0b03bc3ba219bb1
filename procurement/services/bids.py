"""Bids: submit, replace, withdraw and re-confirm; every action issues a receipt.

A bid's content (cover note, claims, cost inputs, documents and the signed bundle
it relies on) is committed to by a SHA-256 hash (``procurement.services.commitment``);
each
action writes a ``BidReceipt`` whose ``contents`` are exactly the committed
payload, so the vendor always sees what it submitted and can recompute the hash.

Uploads are stored *before* the transaction by ``bid_documents_store``
(``procurement.services.bid_inputs``, hashing while streaming), so that a large
file never holds the RFP's row lock. A submission that then fails leaves an
unreferenced blob behind; blobs are content-addressed (``bids/<sha256>``), so that
is harmless and the next upload of it reuses it.

Sealing: audit events of bids belong to the vendor organisation's trail; the buyer
is told only that "a bid was received" and how many there are now, nothing else;
which bundle a bid names is bid content, sealed like the rest (not in the audit
event, which a buyer-side trail may summarise).

The bundle: a bid names one of its organisation's accepted bundles on the RFP
(the newest when the vendor names none; no bundle while there is none); an RFP
with ``bid_requires_bundle`` refuses a bid whose bundle does not cover its
mandatory artifacts (``procurement.services.bid_conditions``). Its claims and
cost inputs are the bundle's manifest claims and cost model, with what the vendor
typed instead kept and flagged (``procurement.services.bid_inputs``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.urls import reverse

from accounts.models import Organisation, Role
from accounts.selectors import clock
from accounts.selectors.users import user_list_in
from accounts.services.notifications import notify_users
from accounts.services.transitions import transition, transition_check
from procurement.exceptions import ProcurementError
from procurement.lib.tco import COST_INPUT_FIELDS
from procurement.models import (
    BID_TRANSITIONS,
    Bid,
    BidDocument,
    BidReceipt,
    CostModelInput,
    Rfp,
)
from procurement.selectors.evidence_sources import SignedBundle
from procurement.selectors.rfps import rfp_submissions_closed
from procurement.services.bid_conditions import (
    bid_bundle_conditions_check,
    bid_named_bundle_check,
)
from procurement.services.bid_inputs import (
    StoredDocument,
    bundle_choose,
    claims_with_bundle,
    clean_claims,
    clean_cost_inputs,
    cost_inputs_with_bundle,
)
from procurement.services.commitment import bid_payload, commitment_of
from procurement.services.deadlines import rfp_apply_deadlines

LIVE_STATUSES = (Bid.Status.SUBMITTED, Bid.Status.NEEDS_RECONFIRMATION)
A = BidReceipt.Action


# --- the commitment ---------------------------------------------------------------


def _cost_values(bid: Bid) -> dict[str, Any] | None:
    inputs = CostModelInput.objects.filter(bid=bid).first() if bid.pk else None
    return {f: getattr(inputs, f) for f in COST_INPUT_FIELDS} if inputs else None


def _bundle_digests(bid: Bid) -> dict[str, str] | None:
    if bid.bundle_public_id is None:
        return None
    return {
        "id": str(bid.bundle_public_id),
        "sha256": bid.bundle_sha256,
        "manifest_sha256": bid.bundle_manifest_sha256,
    }


def _payload(
    bid: Bid, *, documents: Iterable[Any], inputs: Mapping[str, Any] | None
) -> dict[str, Any]:
    latest = bid.rfp.addenda.order_by("-number").values_list("number", flat=True)
    return bid_payload(
        rfp=bid.rfp.reference,
        bid=str(bid.public_id),
        version=bid.version,
        addendum=latest.first() or 0,
        cover_note=bid.cover_note,
        claims=bid.claimed_metrics,
        cost_inputs=inputs,
        documents=documents,
        bundle=_bundle_digests(bid),
    )


def _content(
    rfp: Rfp,
    organisation: Organisation,
    bundle: str | None,
    claims: Sequence[Mapping[str, Any]] | None,
    cost_inputs: Mapping[str, Any] | None,
) -> tuple[SignedBundle | None, list[dict[str, Any]], dict[str, Any], dict]:
    """The bundle the bid names, its claims and cost inputs, and where what the
    vendor typed differs from the bundle."""
    chosen = bundle_choose(rfp=rfp, organisation_id=organisation.pk, public_id=bundle)
    bid_bundle_conditions_check(rfp=rfp, organisation=organisation, bundle=chosen)
    if chosen is None:
        return (
            None,
            clean_claims(claims or []),
            clean_cost_inputs(cost_inputs or {}),
            {},
        )
    claims, claim_flags = claims_with_bundle(chosen, claims or [])
    inputs, cost_flags = cost_inputs_with_bundle(chosen, cost_inputs)
    flags = {"claims": claim_flags, "cost_inputs": cost_flags}
    return chosen, claims, inputs, {k: v for k, v in flags.items() if v}


def _name_bundle(bid: Bid, bundle: SignedBundle | None, flags: dict) -> None:
    bid.bundle_public_id = bundle.bundle_id if bundle else None
    bid.bundle_sha256 = bundle.sha256 if bundle else ""
    bid.bundle_manifest_sha256 = bundle.manifest_sha256 if bundle else ""
    bid.bundle_differences = flags


# --- moves ------------------------------------------------------------------------


def _check_move(bid: Bid, to: str) -> None:
    """Refuse a move ``BID_TRANSITIONS`` does not allow (before the verb's own
    work; ``bid_transition`` makes the move)."""
    transition_check(bid, to, table=BID_TRANSITIONS, entity="bid")


def _rfp_accepting_bids(rfp: Rfp, organisation: Organisation) -> Rfp:
    rfp = rfp_apply_deadlines(rfp=Rfp.objects.select_for_update().get(pk=rfp.pk))
    if not rfp.invited_vendors.filter(pk=organisation.pk).exists():
        raise ProcurementError(f"{organisation} is not invited to {rfp.reference}.")
    closed = rfp_submissions_closed(rfp)
    if closed is not None:
        raise ProcurementError(closed.message, code=closed.code)
    return rfp


def _own_bid(rfp: Rfp, organisation: Organisation) -> Bid:
    bid = (
        Bid.objects.select_for_update()
        .filter(rfp=rfp, vendor_organisation=organisation)
        .first()
    )
    if bid is None:
        raise ProcurementError(
            f"{organisation} has no bid on {rfp.reference}.", code="no_bid"
        )
    bid.rfp = rfp
    return bid


def _issue_receipt(
    bid: Bid,
    *,
    to: str,
    action: str,
    actor: User,
    contents: dict[str, Any],
    fields: Mapping[str, Any] | None = None,
    created: bool = False,
) -> BidReceipt:
    """The receipt, the move to ``to`` with the action's one audit row (vendor's
    trail, naming the receipt; a ``created`` bid moved from nothing) and the
    notifications."""
    receipt = BidReceipt(
        bid=bid,
        action=action,
        commitment=bid.commitment,
        issued_at=clock.now(),
        issued_to=actor,
        contents=contents,
    )
    receipt.full_clean()
    receipt.save()
    bid = bid_transition(
        bid=bid,
        to=to,
        actor=actor,
        action=f"bid.{action}",
        fields=fields,
        data={
            "version": bid.version,
            "receipt": str(receipt.public_id),
            **({"from": None} if created else {}),
        },
    )
    _notify(bid, receipt)
    return receipt


def _notify(bid: Bid, receipt: BidReceipt) -> None:
    rfp = bid.rfp
    notify_users(
        users=user_list_in([bid.vendor_organisation_id], Role.VENDOR, Role.ADMIN),
        template="bid_receipt",
        context={"rfp": rfp, "receipt": receipt, "bid": bid},
        url=reverse("procurement:bid_receipt", args=[rfp.public_id, receipt.public_id]),
    )
    if receipt.action != A.SUBMITTED:
        return
    # The buyer learns only that a bid arrived and how many there are: no name.
    notify_users(
        users=user_list_in([rfp.buyer_organisation_id], Role.BUYER, Role.ADMIN),
        template="bid_received",
        context={
            "rfp": rfp,
            "count": rfp.bids.filter(status__in=LIVE_STATUSES).count(),
        },
        url=reverse("procurement:rfp_bids", args=[rfp.public_id]),
    )


def _check_documents(
    bid: Bid, new: Sequence[StoredDocument], remove: Sequence[str]
) -> list[Any]:
    """The documents of the next version: the current ones not removed and not
    re-uploaded under the same name, plus the new ones."""
    names = [d.name for d in new]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ProcurementError(f"Two uploads are named “{twice[0]}”; rename one.")
    current = list(bid.documents.filter(superseded_at__isnull=True)) if bid.pk else []
    unknown = set(remove) - {d.name for d in current}
    if unknown:
        raise ProcurementError(f"The bid has no document “{sorted(unknown)[0]}”.")
    gone = set(remove) | set(names)
    return [d for d in current if d.name not in gone] + list(new)


def _write_documents(bid: Bid, new: Sequence[StoredDocument], keep: list[Any]) -> None:
    now = clock.now()
    kept = [d.pk for d in keep if isinstance(d, BidDocument)]
    current = bid.documents.filter(superseded_at__isnull=True)
    current.exclude(pk__in=kept).update(superseded_at=now)
    BidDocument.objects.bulk_create(
        BidDocument(bid=bid, uploaded_at=now, **asdict(d)) for d in new
    )


@transaction.atomic
def bid_submit(
    *,
    rfp: Rfp,
    organisation: Organisation,
    actor: User,
    cover_note: str,
    claims: Sequence[Mapping[str, Any]] | None = None,
    cost_inputs: Mapping[str, Any] | None = None,
    documents: Sequence[StoredDocument] = (),
    remove_documents: Sequence[str] = (),
    bundle: str | None = None,
) -> BidReceipt:
    """Submit the organisation's one bid on the RFP, or replace it with a new
    version (also after a withdrawal). Documents not removed and not re-uploaded
    under the same name carry over; replaced ones keep their row, superseded.
    ``bundle`` (a public id) names the accepted bundle the bid relies on; without
    it, the newest. Claims and cost inputs default to the bundle's."""
    rfp = _rfp_accepting_bids(rfp, organisation)
    chosen, claims, inputs, flags = _content(
        rfp, organisation, bundle, claims, cost_inputs
    )
    bid = Bid.objects.select_for_update().filter(
        rfp=rfp, vendor_organisation=organisation
    ).first() or Bid(rfp=rfp, vendor_organisation=organisation, version=0)
    bid.rfp = rfp
    created = bid.pk is None
    fresh = created or bid.status == Bid.Status.WITHDRAWN
    action = A.SUBMITTED if fresh else A.REPLACED
    _check_move(bid, Bid.Status.SUBMITTED)
    final = _check_documents(bid, documents, remove_documents)
    bid.cover_note, bid.claimed_metrics = cover_note.strip(), claims
    _name_bundle(bid, chosen, flags)
    bid.version, bid.submitted_at = bid.version + 1, clock.now()
    payload = _payload(bid, documents=final, inputs=inputs)
    bid.commitment = commitment_of(payload)
    bid.full_clean()
    bid.save()
    CostModelInput.objects.update_or_create(bid=bid, defaults=inputs)
    _write_documents(bid, documents, final)
    return _issue_receipt(
        bid,
        to=Bid.Status.SUBMITTED,
        action=action,
        actor=actor,
        contents=payload,
        created=created,
    )


@transaction.atomic
def bid_documents_add(
    *,
    rfp: Rfp,
    organisation: Organisation,
    actor: User,
    documents: Sequence[StoredDocument],
) -> BidReceipt:
    """Add documents to the current bid: a new version with the same text."""
    bid = _own_bid(_rfp_accepting_bids(rfp, organisation), organisation)
    if bid.status == Bid.Status.WITHDRAWN:
        raise ProcurementError("The bid is withdrawn; submit it again first.")
    inputs = _cost_values(bid)
    return bid_submit(
        rfp=bid.rfp,
        organisation=organisation,
        actor=actor,
        cover_note=bid.cover_note,
        claims=bid.claimed_metrics,
        cost_inputs=inputs or {},
        documents=documents,
        bundle=str(bid.bundle_public_id) if bid.bundle_public_id else None,
    )


@transaction.atomic
def bid_withdraw(*, rfp: Rfp, organisation: Organisation, actor: User) -> BidReceipt:
    """Withdraw the bid; its content stays, to be submitted again before the
    deadline. The receipt names the commitment that was withdrawn."""
    bid = _own_bid(_rfp_accepting_bids(rfp, organisation), organisation)
    _check_move(bid, Bid.Status.WITHDRAWN)
    last = bid.receipts.order_by("-issued_at", "-id").first()
    contents = last.contents if last is not None else {}
    return _issue_receipt(
        bid, to=Bid.Status.WITHDRAWN, action=A.WITHDRAWN, actor=actor, contents=contents
    )


@transaction.atomic
def bid_reconfirm(*, rfp: Rfp, organisation: Organisation, actor: User) -> BidReceipt:
    """Confirm the unchanged bid under the RFP's changed conditions: same version,
    a new commitment that binds the latest addendum number."""
    bid = _own_bid(_rfp_accepting_bids(rfp, organisation), organisation)
    if bid.status != Bid.Status.NEEDS_RECONFIRMATION:
        raise ProcurementError(
            "The bid does not need re-confirmation: no addendum changed the RFP "
            "since it was submitted.",
            code="reconfirmation_not_needed",
        )
    _check_move(bid, Bid.Status.SUBMITTED)
    named = str(bid.bundle_public_id) if bid.bundle_public_id else None
    bid_named_bundle_check(rfp=bid.rfp, organisation=organisation, bundle_id=named)
    documents = bid.documents.filter(superseded_at__isnull=True)
    payload = _payload(bid, documents=documents, inputs=_cost_values(bid))
    bid.commitment = commitment_of(payload)
    return _issue_receipt(
        bid,
        to=Bid.Status.SUBMITTED,
        action=A.RECONFIRMED,
        actor=actor,
        contents=payload,
        fields={"commitment": bid.commitment},
    )


@transaction.atomic
def bid_transition(
    *,
    bid: Bid,
    to: str,
    actor: User | None,
    action: str = "bid.transitioned",
    note: str = "",
    data: Mapping[str, Any] | None = None,
    fields: Mapping[str, Any] | None = None,
) -> Bid:
    """The one place a bid's status changes (``BID_TRANSITIONS``, through
    ``transition``): sets ``fields`` with it, saves, and writes the action's one
    audit row in the vendor's trail (the RFP, the commitment, the move and
    ``data``). Verb services pass their ``action`` (``bid.submitted`` and the
    others, naming the receipt); a bare move is ``bid.transitioned``, e.g. an
    addendum marking a bid ``needs_reconfirmation``."""
    return transition(
        bid,
        to,
        actor=actor,
        table=BID_TRANSITIONS,
        entity="bid",
        action=action,
        fields=fields,
        organisation=bid.vendor_organisation,
        data={
            "rfp": bid.rfp.reference,
            "commitment": bid.commitment,
            "note": note,
            **(data or {}),
        },
    )


@transaction.atomic
def bids_require_reconfirmation(*, rfp: Rfp, actor: User | None, note: str = "") -> int:
    """Mark every submitted bid ``needs_reconfirmation`` (after an addendum)."""
    bids = Bid.objects.filter(rfp=rfp, status=Bid.Status.SUBMITTED).order_by("pk")
    marked = [
        bid_transition(
            bid=b, to=Bid.Status.NEEDS_RECONFIRMATION, actor=actor, note=note
        )
        for b in bids.select_for_update().select_related("rfp")
    ]
    return len(marked)

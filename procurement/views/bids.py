"""The bids tab: a vendor's own bid and receipts; for everyone else the sealed count
and commitments until two buyer-side members open the bids."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.files.storage import default_storage
from django.core.paginator import Paginator
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    JsonResponse,
)
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_http_methods, require_POST

from accounts.exceptions import ApplicationError
from accounts.lib.paging import PAGE_SIZE
from accounts.models import Organisation
from accounts.views.requests import SignedInRequest
from procurement.forms.bids import BidForm
from procurement.models import BidDocument, BidReceipt, Rfp
from procurement.permissions import bidding_organisation, can_manage_rfp, is_buyer_side
from procurement.selectors.bids import (
    bid_commitments,
    bid_count_live,
    bid_document_get,
    bid_document_history,
    bid_get_own,
    bid_get_visible,
    bid_is_own,
    bid_list_opened,
    bid_opening_get,
    bid_receipt_get_visible,
    bid_receipt_list,
)
from procurement.selectors.evidence import bid_evidence_own
from procurement.selectors.evidence_sources import bundles_accepted
from procurement.selectors.rfps import rfp_get_visible_or_404, rfp_submissions_closed
from procurement.services.bid_inputs import bid_documents_store
from procurement.services.bids import bid_reconfirm, bid_submit, bid_withdraw
from procurement.services.opening import (
    bid_opening_cancel,
    bid_opening_confirm,
    bid_opening_request,
)
from procurement.views.common import rfp_page_context

VERIFY_HOW = (
    "commitment == sha256(canonical JSON of contents): keys sorted, no whitespace "
    "(separators ',' and ':'), non-ASCII as is, UTF-8."
)


def _bidder(request: HttpRequest, rfp: Rfp) -> Organisation:
    organisation = bidding_organisation(request.user, rfp)
    if organisation is None:
        raise PermissionDenied
    return organisation


def _submissions(rfp: Rfp) -> dict[str, Any]:
    """``accepting`` (the RFP takes bids now) and ``closed`` (why not)."""
    closed = rfp_submissions_closed(rfp)
    return {"accepting": closed is None, "closed": closed}


def _done(request: HttpRequest, receipt: BidReceipt) -> HttpResponse:
    messages.success(
        request,
        f"Bid {receipt.get_action_display().lower()}. Your receipt: commitment "
        f"{receipt.commitment}.",
    )
    return redirect(
        "procurement:bid_receipt", receipt.bid.rfp.public_id, receipt.public_id
    )


def _opening_context(request: HttpRequest, rfp: Rfp) -> dict[str, Any]:
    user, opening = request.user, bid_opening_get(rfp=rfp)
    pending = opening is not None and opening.confirmed_at is None
    mine = pending and opening.requested_by_id == user.pk  # type: ignore[union-attr]
    closed = rfp.status_now == Rfp.Status.CLOSED  # by the clock; writes persist it
    return {
        "opening": opening,
        "can_request_opening": closed and opening is None and can_manage_rfp(user, rfp),
        "can_confirm_opening": closed
        and pending
        and not mine
        and is_buyer_side(user, rfp),
        "can_cancel_opening": closed and mine,
    }


@login_required
def rfp_bids(request: HttpRequest, rfp_id: uuid.UUID) -> HttpResponse:
    rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
    organisation = bidding_organisation(request.user, rfp)
    if organisation is not None:
        bid = bid_get_own(rfp=rfp, organisation=organisation)
        receipts = bid_receipt_list(bid=bid)[:5] if bid is not None else []
        context = rfp_page_context(
            request,
            rfp,
            "bids",
            bid=bid,
            receipts=receipts,
            **_submissions(rfp),
            evidence=bid_evidence_own(rfp, organisation),
        )
        return render(request, "procurement/bid_vendor.html", context)
    opened = not rfp.is_sealed and is_buyer_side(request.user, rfp)
    rows = bid_list_opened(rfp=rfp) if opened else bid_commitments(rfp=rfp)
    page = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    context = rfp_page_context(
        request,
        rfp,
        "bids",
        page=page,
        opened=opened,
        count=bid_count_live(rfp=rfp),
        **_opening_context(request, rfp),
    )
    return render(request, "procurement/bid_list.html", context)


@login_required
def bid_detail(request: HttpRequest, rfp_id: uuid.UUID, bid_id: uuid.UUID):
    rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
    bid = bid_get_visible(request.user, public_id=bid_id, rfp=rfp)
    if bid is None:
        raise Http404("No such bid.")
    own = bid_is_own(request.user, bid)
    context = rfp_page_context(
        request,
        rfp,
        "bids",
        bid=bid,
        own=own,
        history=bid_document_history(bid=bid) if own else [],
    )
    return render(request, "procurement/bid_detail.html", context)


def bid_document_response(document: BidDocument) -> FileResponse:
    """Always a download, never rendered inline: the type is the vendor's word."""
    return FileResponse(
        default_storage.open(document.storage_key, "rb"),
        as_attachment=True,
        filename=document.name,
        content_type="application/octet-stream",
    )


@login_required
def bid_document(
    request: HttpRequest, rfp_id: uuid.UUID, bid_id: uuid.UUID, sha256: str
) -> FileResponse:
    rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
    bid = bid_get_visible(request.user, public_id=bid_id, rfp=rfp)
    if bid is None:
        raise Http404("No such document.")
    own = bid_is_own(request.user, bid)
    document = bid_document_get(bid=bid, sha256=sha256, own=own)
    if document is None:
        raise Http404("No such document.")
    return bid_document_response(document)


def _submit_form(
    request: SignedInRequest, rfp: Rfp, organisation: Organisation, form: BidForm
) -> BidReceipt:
    data = form.cleaned_data
    return bid_submit(
        rfp=rfp,
        organisation=organisation,
        actor=request.user,
        cover_note=data["cover_note"],
        claims=data["claims"],
        cost_inputs=form.cost_inputs(),
        documents=bid_documents_store(uploads=data["documents"]),
        remove_documents=data["remove_documents"],
        bundle=form.bundle_id(),
    )


def _bid_form(request: HttpRequest, rfp: Rfp, organisation: Organisation, bid: Any):
    """Bound to the POST, or (on GET and on "load the chosen bundle") pre-filled
    from the chosen bundle, keeping the cover note typed so far."""
    bundles = bundles_accepted(rfp, organisation.pk)
    if request.method == "POST" and "load" not in request.POST:
        return BidForm(request.POST, request.FILES or None, bid=bid, bundles=bundles)
    form = BidForm(bid=bid, bundles=bundles, load=request.POST.get("bundle", ""))
    if "cover_note" in request.POST:
        form.initial["cover_note"] = request.POST["cover_note"]
    return form


@login_required
@require_http_methods(["GET", "POST"])
def bid_edit(request: SignedInRequest, rfp_id: uuid.UUID) -> HttpResponse:
    rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
    organisation = _bidder(request, rfp)
    bid = bid_get_own(rfp=rfp, organisation=organisation)
    form = _bid_form(request, rfp, organisation, bid)
    if form.is_bound and form.is_valid():
        try:
            return _done(request, _submit_form(request, rfp, organisation, form))
        except ApplicationError as exc:
            form.add_problems(exc)
    extra = {"form": form, "bid": bid, **_submissions(rfp)}
    chosen = form.chosen_bundle  # its gaps show before submitting
    extra["chosen"] = chosen
    extra["evidence"] = bid_evidence_own(
        rfp, organisation, chosen.bundle_id if chosen else None
    )
    context = rfp_page_context(request, rfp, "bids", **extra)
    return render(request, "procurement/bid_form.html", context)


def _vendor_action(
    request: HttpRequest, rfp_id: uuid.UUID, service: Callable[..., BidReceipt]
) -> HttpResponse:
    rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
    organisation = _bidder(request, rfp)
    try:
        receipt = service(rfp=rfp, organisation=organisation, actor=request.user)
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return redirect("procurement:rfp_bids", rfp.public_id)
    return _done(request, receipt)


@login_required
@require_POST
def bid_withdraw_view(request: HttpRequest, rfp_id: uuid.UUID) -> HttpResponse:
    return _vendor_action(request, rfp_id, bid_withdraw)


@login_required
@require_POST
def bid_reconfirm_view(request: HttpRequest, rfp_id: uuid.UUID) -> HttpResponse:
    return _vendor_action(request, rfp_id, bid_reconfirm)


@login_required
def bid_receipts(request: HttpRequest, rfp_id: uuid.UUID) -> HttpResponse:
    rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
    bid = bid_get_own(rfp=rfp, organisation=_bidder(request, rfp))
    receipts = bid_receipt_list(bid=bid) if bid else BidReceipt.objects.none()
    page = Paginator(receipts, PAGE_SIZE).get_page(request.GET.get("page"))
    context = rfp_page_context(request, rfp, "bids", bid=bid, page=page)
    return render(request, "procurement/bid_receipts.html", context)


def _receipt_for(request: HttpRequest, rfp_id: uuid.UUID, receipt_id: uuid.UUID):
    rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
    receipt = bid_receipt_get_visible(request.user, public_id=receipt_id, rfp=rfp)
    if receipt is None:
        raise Http404("No such receipt.")
    return rfp, receipt


def receipt_document(receipt: BidReceipt) -> dict[str, Any]:
    return {
        "receipt": str(receipt.public_id),
        "action": receipt.action,
        "issued_at": receipt.issued_at.isoformat(),
        "issued_to": receipt.issued_to.get_username(),
        "commitment": receipt.commitment,
        "contents": receipt.contents,
        "verify": VERIFY_HOW,
    }


@login_required
def bid_receipt(
    request: HttpRequest, rfp_id: uuid.UUID, receipt_id: uuid.UUID
) -> HttpResponse:
    rfp, receipt = _receipt_for(request, rfp_id, receipt_id)
    context = rfp_page_context(
        request,
        rfp,
        "bids",
        receipt=receipt,
        contents=receipt.contents,
        verify=VERIFY_HOW,
    )
    return render(request, "procurement/bid_receipt.html", context)


@login_required
def bid_receipt_json(
    request: HttpRequest, rfp_id: uuid.UUID, receipt_id: uuid.UUID
) -> JsonResponse:
    rfp, receipt = _receipt_for(request, rfp_id, receipt_id)
    response = JsonResponse(
        receipt_document(receipt),
        json_dumps_params={"indent": 2, "ensure_ascii": False},
    )
    name = f"receipt-{rfp.reference}-{receipt.issued_at:%Y%m%dT%H%M%S}.json"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _opening_action(
    request: HttpRequest,
    rfp_id: uuid.UUID,
    service: Callable[..., Any],
    allowed: Callable[[Any, Rfp], bool],
    done: str,
) -> HttpResponse:
    rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
    if not allowed(request.user, rfp):
        raise PermissionDenied
    try:
        service(rfp=rfp, actor=request.user)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, done)
    return redirect("procurement:rfp_bids", rfp.public_id)


@login_required
@require_POST
def opening_request(request: HttpRequest, rfp_id: uuid.UUID) -> HttpResponse:
    done = "Opening requested. Another member of your team must confirm it."
    return _opening_action(request, rfp_id, bid_opening_request, can_manage_rfp, done)


@login_required
@require_POST
def opening_confirm(request: HttpRequest, rfp_id: uuid.UUID) -> HttpResponse:
    done = "Bids opened. Evaluation can start."
    return _opening_action(request, rfp_id, bid_opening_confirm, is_buyer_side, done)


@login_required
@require_POST
def opening_cancel(request: HttpRequest, rfp_id: uuid.UUID) -> HttpResponse:
    done = "Opening request cancelled."
    return _opening_action(request, rfp_id, bid_opening_cancel, can_manage_rfp, done)


urlpatterns = [
    path("<uuid:rfp_id>/bids/", rfp_bids, name="rfp_bids"),
    path("<uuid:rfp_id>/bids/<uuid:bid_id>/", bid_detail, name="bid_detail"),
    path(
        "<uuid:rfp_id>/bids/<uuid:bid_id>/documents/<str:sha256>/",
        bid_document,
        name="bid_document",
    ),
    path("<uuid:rfp_id>/bid/", bid_edit, name="bid_edit"),
    path("<uuid:rfp_id>/bid/withdraw/", bid_withdraw_view, name="bid_withdraw"),
    path("<uuid:rfp_id>/bid/reconfirm/", bid_reconfirm_view, name="bid_reconfirm"),
    path("<uuid:rfp_id>/bid/receipts/", bid_receipts, name="bid_receipts"),
    path(
        "<uuid:rfp_id>/bid/receipts/<uuid:receipt_id>/",
        bid_receipt,
        name="bid_receipt",
    ),
    path(
        "<uuid:rfp_id>/bid/receipts/<uuid:receipt_id>/json/",
        bid_receipt_json,
        name="bid_receipt_json",
    ),
    path("<uuid:rfp_id>/opening/request/", opening_request, name="opening_request"),
    path("<uuid:rfp_id>/opening/confirm/", opening_confirm, name="opening_confirm"),
    path("<uuid:rfp_id>/opening/cancel/", opening_cancel, name="opening_cancel"),
]

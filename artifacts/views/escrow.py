"""Escrow pages: deposits by RFP, vendor and kind; one deposit with its leaf
and inclusion proof (checked by the server), legal hold and retention; the log
page ("has anything been rewritten since my last visit?", a read; marking the
checkpoint seen is a POST). The evidence
package itself downloads from the API (session authentication works there).

Deposits are sealed like bundles (``artifacts.selectors.escrow``): 404 for a
deposit the user may not see, 403 for hold/retention changes by those who see
it but may not change it (vendors, evaluators, labs)."""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_POST

from accounts.exceptions import ApplicationError
from accounts.lib.paging import PAGE_SIZE
from accounts.views.requests import SignedInRequest
from artifacts.forms.escrow import (
    DepositFilterForm,
    LegalHoldForm,
    LogSeenForm,
    RetentionForm,
)
from artifacts.models import Deposit
from artifacts.permissions import can_change_hold
from artifacts.selectors.escrow import (
    DepositFilter,
    deposit_events,
    deposit_filter_choices,
    deposit_get_visible,
    deposit_items,
    deposit_list_filtered,
    log_visit_get,
)
from artifacts.selectors.proofs import b64, leaf_inclusion, log_since_visit
from artifacts.services.escrow import deposit_legal_hold_set, deposit_retention_extend
from artifacts.services.log_visits import log_visit_mark_seen
from artifacts.storage.object_lock import EscrowStorageError

logger = logging.getLogger(__name__)
LEAF_SHOWN_BYTES = 64 * 1024  # a larger leaf (a bundle of many files) downloads


@login_required
def escrow_deposits(request: HttpRequest) -> HttpResponse:
    form = DepositFilterForm(request.GET, **deposit_filter_choices(request.user))
    fields = form.cleaned_data if form.is_valid() else {}
    where = DepositFilter(**{k: fields.get(k, "") for k in ("rfp", "vendor", "kind")})
    deposits = deposit_list_filtered(request.user, where)
    page = Paginator(deposits, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {"page": page, "form": form, "query": where.query}
    return render(request, "artifacts/escrow_deposits.html", context)


def _visible(request: HttpRequest, deposit_id: uuid.UUID) -> Deposit:
    deposit = deposit_get_visible(request.user, deposit_id)
    if deposit is None:
        raise Http404("No such deposit.")
    return deposit


@login_required
def escrow_deposit_detail(request: HttpRequest, deposit_id: uuid.UUID) -> HttpResponse:
    """The deposit; its leaf shown whole up to ``LEAF_SHOWN_BYTES`` (a larger
    one downloads), its blobs a page at a time."""
    deposit = _visible(request, deposit_id)
    leaf = bytes(deposit.leaf)
    shown = len(leaf) <= LEAF_SHOWN_BYTES
    context: dict[str, Any] = {
        "deposit": deposit,
        "leaf_size": len(leaf),
        "record_json": json.dumps(json.loads(leaf), indent=2, sort_keys=True)
        if shown
        else "",
        "leaf_b64": b64(leaf) if shown else "",
        "page": Paginator(deposit_items(deposit), PAGE_SIZE).get_page(
            request.GET.get("page")
        ),
        "events": deposit_events(deposit),
        "inclusion": leaf_inclusion(deposit.log_index, bytes(deposit.leaf)),
        "can_change": can_change_hold(request.user, deposit),
        "hold_form": LegalHoldForm(
            initial={"hold": "off" if deposit.legal_hold else "on"}
        ),
        "retention_form": RetentionForm(initial={"retain_until": deposit.retain_until}),
    }
    return render(request, "artifacts/escrow_deposit.html", context)


@login_required
def escrow_deposit_leaf(request: HttpRequest, deposit_id: uuid.UUID) -> HttpResponse:
    """The leaf's bytes exactly as logged (its SHA-256 after 0x00 is the leaf hash)."""
    deposit = _visible(request, deposit_id)
    name = f"deposit-{deposit.log_index}-leaf.json"
    return HttpResponse(
        bytes(deposit.leaf),
        content_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


def _changeable(request: HttpRequest, deposit_id: uuid.UUID) -> Deposit:
    deposit = _visible(request, deposit_id)
    if not can_change_hold(request.user, deposit):
        raise PermissionDenied("Only the buyer and its auditors change escrow holds.")
    return deposit


def _apply(request: HttpRequest, change: Any, done: str) -> None:
    try:
        change()
    except ApplicationError as error:
        messages.error(request, error.message)
    except EscrowStorageError:
        logger.exception("escrow storage failed")
        messages.error(request, "The storage refused the lock; nothing was changed.")
    else:
        messages.success(request, done)


@login_required
@require_POST
def escrow_deposit_hold(
    request: SignedInRequest, deposit_id: uuid.UUID
) -> HttpResponse:
    deposit = _changeable(request, deposit_id)
    form = LegalHoldForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Give the reason for the legal hold.")
    else:
        hold = form.cleaned_data["hold"]
        _apply(
            request,
            lambda: deposit_legal_hold_set(
                deposit=deposit,
                hold=hold,
                actor=request.user,
                reason=form.cleaned_data["reason"],
            ),
            "Legal hold placed." if hold else "Legal hold released.",
        )
    return redirect("artifacts:escrow_deposit", deposit_id=deposit.public_id)


@login_required
@require_POST
def escrow_deposit_retention(
    request: SignedInRequest, deposit_id: uuid.UUID
) -> HttpResponse:
    deposit = _changeable(request, deposit_id)
    form = RetentionForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Give a later date and the reason.")
    else:
        _apply(
            request,
            lambda: deposit_retention_extend(
                deposit=deposit, actor=request.user, **form.cleaned_data
            ),
            "Retention extended.",
        )
    return redirect("artifacts:escrow_deposit", deposit_id=deposit.public_id)


@login_required
def escrow_log(request: HttpRequest) -> HttpResponse:
    """The latest checkpoint against the one this user marked as seen: the
    consistency proof, verified here. A read: marking is ``escrow_log_seen``."""
    since = log_since_visit(log_visit_get(request.user))
    return render(request, "artifacts/escrow_log.html", {"since": since})


@login_required
@require_POST
def escrow_log_seen(request: SignedInRequest) -> HttpResponse:
    """Remember the checkpoint the page showed (its size and root hash, posted
    back) as seen; refused unless it extends the one seen before."""
    form = LogSeenForm(request.POST)
    if not form.is_valid():
        messages.error(request, "That checkpoint could not be read; reload the page.")
        return redirect("artifacts:escrow_log")
    try:
        visit = log_visit_mark_seen(user=request.user, **form.cleaned_data)
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        messages.success(
            request,
            f"Checkpoint of size {visit.size} marked as seen: your next visit is "
            "checked against it.",
        )
    return redirect("artifacts:escrow_log")


urlpatterns = [
    path("escrow/", escrow_deposits, name="escrow_deposits"),
    path("escrow/log/", escrow_log, name="escrow_log"),
    path("escrow/log/seen/", escrow_log_seen, name="escrow_log_seen"),
    path(
        "escrow/deposits/<uuid:deposit_id>/",
        escrow_deposit_detail,
        name="escrow_deposit",
    ),
    path(
        "escrow/deposits/<uuid:deposit_id>/leaf.json",
        escrow_deposit_leaf,
        name="escrow_deposit_leaf",
    ),
    path(
        "escrow/deposits/<uuid:deposit_id>/legal-hold/",
        escrow_deposit_hold,
        name="escrow_deposit_hold",
    ),
    path(
        "escrow/deposits/<uuid:deposit_id>/retention/",
        escrow_deposit_retention,
        name="escrow_deposit_retention",
    ),
]

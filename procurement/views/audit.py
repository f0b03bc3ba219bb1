from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path

from accounts.permissions import can_view_audit_trail
from procurement.permissions import bidding_organisation
from procurement.selectors.audit import rfp_audit_events
from procurement.views.common import rfp_for_request, rfp_page_context


@login_required
def rfp_audit(request: HttpRequest, rfp_id: uuid.UUID) -> HttpResponse:
    rfp = rfp_for_request(request, rfp_id)
    if not can_view_audit_trail(request.user) or bidding_organisation(
        request.user, rfp
    ):
        raise PermissionDenied
    events = rfp_audit_events(request.user, rfp=rfp)
    page = Paginator(events, 50).get_page(request.GET.get("page"))
    context = rfp_page_context(request, rfp, "audit", page=page, query="")
    return render(request, "procurement/rfp_audit.html", context)


urlpatterns = [path("<uuid:rfp_id>/audit/", rfp_audit, name="rfp_audit")]

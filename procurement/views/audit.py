from __future__ import annotations

import uuid
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path

from accounts.permissions import can_view_audit_trail
from accounts.views.users import audit_page_context
from procurement.permissions import bidding_organisation
from procurement.selectors.audit import rfp_audit_events
from procurement.selectors.rfps import rfp_get_visible_or_404
from procurement.views.common import rfp_page_context


@login_required
def rfp_audit(request: HttpRequest, rfp_id: uuid.UUID) -> HttpResponse:
    rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
    if not can_view_audit_trail(request.user) or bidding_organisation(
        request.user, rfp
    ):
        raise PermissionDenied
    events = rfp_audit_events(request.user, rfp=rfp)
    export = urlencode({"rfp": rfp.reference})  # the trail page's exports
    context = rfp_page_context(request, rfp, "audit")
    context.update(audit_page_context(request, events, export_query=export))
    return render(request, "procurement/rfp_audit.html", context)


urlpatterns = [path("<uuid:rfp_id>/audit/", rfp_audit, name="rfp_audit")]
